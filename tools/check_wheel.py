"""Check an installed gpusparse against its source tree.

Run it with the interpreter of a fresh environment that had the wheel (not
an editable install) installed, from outside the source tree, in isolated
mode so that the checkout cannot shadow the installed package::

    cd /tmp && /path/to/venv/bin/python -I tools/check_wheel.py --source /path/to/checkout

It fails (exit status 1, one line per problem) unless

* ``gpusparse`` is imported from the environment's site-packages;
* every ``gpusparse/**/*.py`` of the source tree is installed;
* every ``cuda_kernels/*.cu`` and ``*.cuh`` is installed, byte for byte, as
  a resource of ``gpusparse._cuda_kernels``, and the kernel loader's
  ``kernel_dir()`` / ``kernel_sources()`` find exactly those files (the
  loader is read from the installed package even where CuPy is absent);
* ``gpusparse.show_config()`` runs and a small array round-trips through
  coalesce and CSR on the CPU.
"""

from __future__ import annotations

import argparse
import importlib.resources
import importlib.util
import io
import sys
import sysconfig
from pathlib import Path

KERNEL_SUFFIXES = (".cu", ".cuh")


def _source_modules(source: Path) -> "set[str]":
    root = source / "gpusparse"
    return {
        p.relative_to(source).as_posix()
        for p in root.rglob("*.py")
        if "__pycache__" not in p.parts
    }


def _source_kernels(source: Path) -> "dict[str, bytes]":
    return {
        p.name: p.read_bytes()
        for p in sorted((source / "cuda_kernels").iterdir())
        if p.suffix in KERNEL_SUFFIXES and p.is_file()
    }


def _load_installed_loader(package_dir: Path):
    """``gpusparse._kernels.cuda._loader``, imported normally or, without CuPy, from its file."""
    try:
        from gpusparse._kernels.cuda import _loader
        return _loader, "imported"
    except ImportError as exc:  # the CUDA package imports CuPy
        path = package_dir / "_kernels" / "cuda" / "_loader.py"
        if not path.is_file():
            raise FileNotFoundError(f"{path} is not installed") from exc
        spec = importlib.util.spec_from_file_location("_gpusparse_installed_loader", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module, f"loaded from its file ({type(exc).__name__}: {exc})"


def check(source: Path) -> "list[str]":
    problems: "list[str]" = []
    import gpusparse

    package_dir = Path(gpusparse.__file__).resolve().parent
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    print(f"gpusparse {gpusparse.__version__} imported from {package_dir}")
    if site not in package_dir.parents:
        problems.append(f"gpusparse was imported from {package_dir}, not from {site}")
    if package_dir == (source / "gpusparse").resolve():
        problems.append("gpusparse was imported from the source tree, not from the installed wheel")

    installed = {
        p.relative_to(package_dir.parent).as_posix()
        for p in package_dir.rglob("*.py")
        if "__pycache__" not in p.parts
    }
    missing = sorted(_source_modules(source) - installed)
    problems += [f"module not installed: {name}" for name in missing]
    print(f"modules: {len(installed)} installed, {len(missing)} missing")

    expected = _source_kernels(source)
    if not expected:
        problems.append(f"no kernel sources found under {source / 'cuda_kernels'}")
    resources = importlib.resources.files("gpusparse._cuda_kernels")
    found = {
        entry.name: entry.read_bytes()
        for entry in resources.iterdir()
        if entry.name.endswith(KERNEL_SUFFIXES)
    }
    for name, content in expected.items():
        if name not in found:
            problems.append(f"kernel source not installed: gpusparse/_cuda_kernels/{name}")
        elif found[name] != content:
            problems.append(f"installed kernel source differs from the source tree: {name}")
    problems += [f"unexpected installed kernel source: {n}" for n in sorted(set(found) - set(expected))]
    print(f"kernel sources: {len(found)} installed of {len(expected)} in the source tree")

    try:
        loader, how = _load_installed_loader(package_dir)
    except Exception as exc:
        problems.append(f"the kernel loader cannot be loaded: {type(exc).__name__}: {exc}")
    else:
        print(f"kernel loader {how}")
        try:
            kdir = Path(loader.kernel_dir()).resolve()
            names = sorted(Path(p).name for p in loader.kernel_sources())
        except Exception as exc:
            problems.append(f"kernel_dir()/kernel_sources() failed: {type(exc).__name__}: {exc}")
        else:
            print(f"kernel_dir() = {kdir}; kernel_sources() lists {len(names)} files")
            if package_dir not in kdir.parents:
                problems.append(f"kernel_dir() {kdir} is outside the installed package {package_dir}")
            if names != sorted(expected):
                problems.append(f"kernel_sources() lists {names}, expected {sorted(expected)}")

    buffer = io.StringIO()
    gpusparse.show_config(file=buffer)
    print(buffer.getvalue().rstrip())
    x = gpusparse.COO([[1, 0, 1], [2, 0, 2]], [1.0, 2.0, 3.0], shape=(2, 3), device="cpu")
    dense = x.coalesce().tocsr().todense()
    if dense.tolist() != [[2.0, 0.0, 0.0], [0.0, 0.0, 4.0]]:
        problems.append(f"COO -> coalesce -> CSR -> dense gave {dense.tolist()}")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, type=Path,
                        help="the source checkout the wheel was built from")
    args = parser.parse_args(argv)
    problems = check(args.source.resolve())
    for problem in problems:
        print(f"FAIL: {problem}", file=sys.stderr)
    print("check_wheel: " + ("FAILED" if problems else "the installed wheel is complete"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
