"""Packaging: what the wheel ships, and importing gpusparse without a usable GPU.

The declarations in ``pyproject.toml`` are checked statically (every package
of the source tree listed, every CUDA source covered by package data); a
``slow`` test builds the wheel and looks inside. ``import gpusparse`` is run
in subprocesses where CuPy is missing, where importing it raises ``OSError``
(a broken CUDA installation), where it imports but finds no device, and
with the real CuPy when one is installed; each time ``show_config()`` must
say why CUDA is unavailable and the CPU must still work.
"""

from __future__ import annotations

import doctest
import fnmatch
import importlib.util
import io
import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KERNEL_DIR = ROOT / "cuda_kernels"
KERNEL_PACKAGE = "gpusparse._cuda_kernels"

def _pyproject() -> dict:
    toml = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
    with open(ROOT / "pyproject.toml", "rb") as f:
        return toml.load(f)


@pytest.fixture(scope="module")
def setuptools_config() -> dict:
    return _pyproject()["tool"]["setuptools"]


def _kernel_files() -> "list[Path]":
    return sorted(p for p in KERNEL_DIR.iterdir() if p.is_file() and p.suffix in (".cu", ".cuh"))


def _source_packages() -> "set[str]":
    """Dotted names of every directory of ``gpusparse/`` that holds Python files."""
    found = set()
    for path in (ROOT / "gpusparse").rglob("*.py"):
        if "__pycache__" not in path.parts:
            found.add(".".join(path.parent.relative_to(ROOT).parts))
    return found


# ---------------------------------------------------------------------------
# declarations
# ---------------------------------------------------------------------------

def test_kernel_sources_exist():
    assert _kernel_files(), f"no .cu/.cuh files in {KERNEL_DIR}"


def test_every_kernel_source_is_package_data(setuptools_config):
    assert setuptools_config["package-dir"][KERNEL_PACKAGE] == "cuda_kernels"
    assert KERNEL_PACKAGE in setuptools_config["packages"]
    patterns = setuptools_config["package-data"][KERNEL_PACKAGE]
    for path in _kernel_files():
        assert any(fnmatch.fnmatch(path.name, p) for p in patterns), (
            f"cuda_kernels/{path.name} matches none of the package-data patterns {patterns}"
        )


def test_no_kernel_directory_file_is_left_out(setuptools_config):
    # A header with a new suffix (say .h) would silently be missing from the wheel.
    patterns = setuptools_config["package-data"][KERNEL_PACKAGE] + ["*.py"]
    for path in KERNEL_DIR.iterdir():
        if path.is_file() and not path.name.startswith("."):
            assert any(fnmatch.fnmatch(path.name, p) for p in patterns), (
                f"cuda_kernels/{path.name} would not be installed; add its pattern to "
                f"[tool.setuptools.package-data] in pyproject.toml"
            )


def test_kernel_directory_is_a_package():
    # Editable installs only map the directory when it is a regular package.
    assert (KERNEL_DIR / "__init__.py").is_file()


def test_every_source_package_is_listed(setuptools_config):
    listed = set(setuptools_config["packages"])
    missing = sorted(_source_packages() - listed)
    assert not missing, f"add {missing} to [tool.setuptools] packages in pyproject.toml"
    for name in _source_packages():
        init = ROOT.joinpath(*name.split("."), "__init__.py")
        assert init.is_file(), f"{name} has Python files but no __init__.py"


def test_listed_packages_exist(setuptools_config):
    mapped = setuptools_config.get("package-dir", {})
    for name in setuptools_config["packages"]:
        directory = ROOT / mapped[name] if name in mapped else ROOT.joinpath(*name.split("."))
        assert (directory / "__init__.py").is_file(), f"{name}: no {directory}/__init__.py"


def test_cupy_is_not_a_core_dependency():
    project = _pyproject()["project"]
    assert not [d for d in project["dependencies"] if d.lower().startswith("cupy")]
    extras = project["optional-dependencies"]
    # The ctk extra brings NVRTC and cuSPARSE: with only a driver, every kernel compiles.
    assert any(d.startswith("cupy-cuda12x[ctk]") for d in extras["cuda12"])
    assert any(d.startswith("cupy-cuda13x[ctk]") for d in extras["cuda13"])


def test_tbb_is_a_core_dependency_where_its_wheels_exist():
    # TBB is the threading layer that is safe with threads and with fork();
    # its wheels exist for Linux x86_64 and Windows x86-64 only, and Numba
    # needs TBB 2021.6 or later.
    requirements = pytest.importorskip("packaging.requirements")
    (tbb,) = [requirements.Requirement(d) for d in _pyproject()["project"]["dependencies"]
              if requirements.Requirement(d).name == "tbb"]
    assert tbb.specifier.contains("2021.6") and not tbb.specifier.contains("2021.5")
    platforms = {
        ("Linux", "x86_64", "linux"): True,
        ("Windows", "AMD64", "win32"): True,
        ("Linux", "aarch64", "linux"): False,
        ("Darwin", "arm64", "darwin"): False,
        ("Darwin", "x86_64", "darwin"): False,  # Numba's macOS x86_64 wheels have no TBB layer
        ("Windows", "ARM64", "win32"): False,
    }
    for (system, machine, sys_platform), wanted in platforms.items():
        env = {"platform_system": system, "platform_machine": machine, "sys_platform": sys_platform}
        assert tbb.marker.evaluate(env) is wanted, (system, machine)


@pytest.mark.slow
def test_wheel_contains_every_kernel_source_and_module(tmp_path):
    pytest.importorskip("build", reason="building a wheel needs the 'build' package")
    # Build from a copy: setuptools writes build/ and *.egg-info next to the sources.
    source = tmp_path / "src"
    junk = shutil.ignore_patterns("__pycache__", "*.py[cod]", "*.nbi", "*.nbc")
    for name in ("gpusparse", "cuda_kernels"):
        shutil.copytree(ROOT / name, source / name, ignore=junk)
    for name in ("pyproject.toml", "README.md", "MANIFEST.in"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, source / name)
    result = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path), str(source)],
        capture_output=True, text=True, timeout=600,
    )
    if result.returncode != 0 and "Could not find a version" in result.stdout + result.stderr:
        pytest.skip("the build backend could not be installed (no package index)")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (wheel,) = tmp_path.glob("gpusparse-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for path in _kernel_files():
        assert f"gpusparse/_cuda_kernels/{path.name}" in names
    for path in (ROOT / "gpusparse").rglob("*.py"):
        if "__pycache__" not in path.parts:
            assert path.relative_to(ROOT).as_posix() in names
    assert not [n for n in names if n.startswith(("tests/", "cuda_kernels/", "benchmarks/"))]


# ---------------------------------------------------------------------------
# import gpusparse without a usable GPU
# ---------------------------------------------------------------------------

_PROBE = textwrap.dedent(
    """
    import io, sys
    {prelude}
    import gpusparse as gs

    buffer = io.StringIO()
    gs.show_config(file=buffer)
    print(buffer.getvalue())
    assert str(gs.default_device()) == "cpu", gs.default_device()
    x = gs.COO([[1, 0, 1]], [1.0, 2.0, 3.0], shape=(3,))
    assert x.coalesce().todense().tolist() == [2.0, 4.0, 0.0]
    try:
        with gs.device("cuda"):
            pass
    except RuntimeError as exc:
        print("DEVICE ERROR:", exc)
    else:
        print("DEVICE ERROR: none")
    """
)


def _probe(tmp_path, prelude="", fake_cupy=None) -> str:
    """Run the probe in a fresh interpreter; returns its output."""
    paths = [str(ROOT)]
    if fake_cupy is not None:
        package = tmp_path / "fake" / "cupy"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text(textwrap.dedent(fake_cupy))
        paths.insert(0, str(tmp_path / "fake"))
    env = {k: v for k, v in os.environ.items() if k not in ("GPUSPARSE_DEVICE", "PYTHONPATH")}
    env["PYTHONPATH"] = os.pathsep.join(paths)
    result = subprocess.run(
        [sys.executable, "-c", _PROBE.format(prelude=prelude)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _cuda_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip().startswith("cuda")]
    assert len(lines) == 1, output
    return lines[0]


def test_import_when_cupy_is_missing(tmp_path):
    out = _probe(tmp_path, prelude="sys.modules['cupy'] = None  # import cupy raises ImportError")
    assert "cuda     unavailable: CuPy is not importable (ModuleNotFoundError" in _cuda_line(out)
    assert "DEVICE ERROR: device cuda:0 is not available: CuPy is not importable" in out


def test_import_when_cupy_raises_oserror(tmp_path):
    broken = """
        raise OSError("libcudart.so.12: cannot open shared object file: No such file or directory")
    """
    out = _probe(tmp_path, fake_cupy=broken)
    line = _cuda_line(out)
    assert "CuPy is not importable (OSError: libcudart.so.12: cannot open shared object file" in line
    assert "DEVICE ERROR: device cuda:0 is not available" in out


def test_import_when_cupy_finds_no_device(tmp_path):
    no_device = """
        __version__ = "99.0.0"

        class ndarray:
            pass

        class CUDARuntimeError(RuntimeError):
            pass

        class runtime:
            @staticmethod
            def getDeviceCount():
                raise CUDARuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")

        class cuda:
            runtime = runtime
    """
    out = _probe(tmp_path, fake_cupy=no_device)
    line = _cuda_line(out)
    assert "CuPy found no usable CUDA device (CUDARuntimeError: cudaErrorNoDevice" in line
    assert "DEVICE ERROR: device cuda:0 is not available: CuPy found no usable CUDA device" in out


def test_import_with_the_installed_cupy(tmp_path):
    if importlib.util.find_spec("cupy") is None:
        pytest.skip("CuPy is not installed")
    from gpusparse._device import cuda_status
    if cuda_status().device_count:
        pytest.skip("a CUDA device is visible; this test is for CuPy without one")
    out = _probe(tmp_path)
    assert "cuda     unavailable: CuPy " in _cuda_line(out)
    assert "DEVICE ERROR: device cuda:0 is not available" in out


def test_show_config_lists_visible_devices(capsys):
    import gpusparse
    from gpusparse._device import cuda_status
    gpusparse.show_config()
    out = capsys.readouterr().out
    assert out.startswith(f"gpusparse {gpusparse.__version__} on Python ")
    count = cuda_status().device_count
    for index in range(count):
        assert f"  cuda:{index}   " in out
    assert ("cuda     unavailable: " in out) == (count == 0)


# ---------------------------------------------------------------------------
# the README's examples
# ---------------------------------------------------------------------------

def test_readme_examples_run():
    """Every ``>>>`` example of README.md, in order, in one namespace."""
    pytest.importorskip("torch", reason="the README's interop example uses torch")
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if ">>>" in b]
    assert len(blocks) >= 5, "README.md lost its examples"
    parser = doctest.DocTestParser()
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    runner = doctest.DocTestRunner(optionflags=flags)
    report = io.StringIO()
    namespace: dict = {}
    for i, block in enumerate(blocks):
        test = parser.get_doctest(block, namespace, f"README.md block {i + 1}", "README.md", 0)
        runner.run(test, out=report.write, clear_globs=False)
        namespace = test.globs  # DocTest copies its globals: carry them on
    assert runner.failures == 0, report.getvalue()
    assert runner.tries >= 20


# ---------------------------------------------------------------------------
# the shipped entry points
# ---------------------------------------------------------------------------

def _run_module(args, tmp_path, **env_overrides):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(ROOT), **env_overrides)
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=600,
    )


def test_python_m_gpusparse_prints_the_config(tmp_path):
    result = _run_module(["gpusparse"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("gpusparse ")
    assert "default device: " in result.stdout


@pytest.mark.slow
def test_demo_runs_and_agrees_with_scipy(tmp_path):
    result = _run_module(["gpusparse.demo", "--scale", "9", "--edge-factor", "8"], tmp_path,
                         GPUSPARSE_DEVICE="cpu")
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "demo on device cpu" in out
    assert "4,096 edges" in out
    for step in ("COO from edge list", "coalesce", "COO -> CSR", "total"):
        assert f"| {step}" in out
    assert "same matrix as SciPy: yes" in out


def test_demo_rejects_a_bad_scale(tmp_path):
    result = _run_module(["gpusparse.demo", "--scale", "0"], tmp_path)
    assert result.returncode == 2
    assert "--scale" in result.stderr


def test_rmat_edges_follow_the_quadrant_probabilities():
    import numpy as np

    from gpusparse.demo import RMAT_ABC, rmat_edges

    # Scale 1: two vertices, so each edge is one quadrant draw; the random
    # relabelling either keeps the vertices or swaps them (A <-> D, B <-> C).
    coords, weights = rmat_edges(1, 20000, np, seed=3)
    assert coords.shape == (2, 40000) and coords.dtype == np.int64
    assert weights.dtype == np.float32 and 0 <= weights.min() and weights.max() < 1
    counts = np.bincount(coords[0] * 2 + coords[1], minlength=4) / coords.shape[1]
    a, b, c = RMAT_ABC
    quadrants = np.array([a, b, c, 1 - a - b - c])
    assert np.allclose(counts, quadrants, atol=0.012) or np.allclose(counts, quadrants[::-1], atol=0.012)


def test_rmat_edges_cover_the_vertex_range():
    import numpy as np

    from gpusparse.demo import rmat_edges

    coords, _ = rmat_edges(8, 16, np, seed=0)
    assert coords.min() >= 0 and coords.max() < 256
    # R-MAT is skewed: the busiest vertex has far more edges than the average (16)
    assert np.bincount(coords[0], minlength=256).max() > 4 * 16
    with pytest.raises(ValueError, match="scale"):
        rmat_edges(0, 16, np)
