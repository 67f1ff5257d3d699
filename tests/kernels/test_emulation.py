"""The CPU execution harness of the CUDA kernels catches what it should.

Each planted defect is a copy of ``cuda_kernels/`` with one change:

* a ``__syncthreads`` removed from the carry scan of ``gs_segment_reduce``:
  the result is right when the threads of a block run in index order (the
  writer of each shared slot runs before its reader) and wrong when the
  harness shuffles them, so the test shows that the shuffle is what finds it;
* an off-by-one bound in ``gs_compress``, which writes one entry past the
  end of ``indptr`` while every entry inside is right: only the guard bytes
  around the allocation (or AddressSanitizer) see it;
* a wrong source lane in the warp scan of ``common.cuh``.

Besides those, the harness's own rules: barriers that some threads never
reach, lanes that call a collective with a mask that leaves them out,
shuffles from lanes that do not take part, arguments of the wrong size or
kind, and host arrays where device arrays belong are errors, never hangs or
wrong results. Everything here runs without a GPU; without a host C++
compiler the file is skipped.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="the CUDA emulation needs g++")

ROOT = Path(__file__).resolve().parents[2]
# gpusparse._kernels.cuda needs CuPy or the emulation switched on, which this
# process need not have: the sources are found directly.
KERNELS = ROOT / "cuda_kernels"
FAMILIES = sorted(p.stem for p in KERNELS.glob("*.cu"))


def kernel_dir() -> Path:
    return KERNELS


def run_emulated(code: str, *, env_extra=None, timeout=600) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter with the emulated CUDA device."""
    import os
    env = dict(os.environ, GPUSPARSE_CUDA_EMULATION="1", PYTHONPATH=str(ROOT))
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, timeout=timeout, check=False)


def planted_copy(tmp_path: Path, file: str, old: str, new: str, occurrence: int = 1) -> Path:
    """A copy of the kernel sources with the ``occurrence``-th ``old`` of ``file`` replaced by ``new``."""
    target = tmp_path / "kernels"
    target.mkdir()
    for path in kernel_dir().iterdir():
        if path.suffix in (".cu", ".cuh"):
            shutil.copy(path, target / path.name)
    text = (target / file).read_text(encoding="utf-8")
    at = -1
    for _ in range(occurrence):
        at = text.index(old, at + 1)
    (target / file).write_text(text[:at] + new + text[at + len(old):], encoding="utf-8")
    return target


# --------------------------------------------------------------------------
# Planted defects (run in subprocesses: the parent may not have emulation on)
# --------------------------------------------------------------------------

_SEGMENT_SUM = """
    import numpy as np
    from gpusparse._device import Device, kernels_for, to_device_array, to_host
    from gpusparse._kernels.cuda_emulation._launch import kernel_sources
    dev = Device("cuda", 0)
    k = kernels_for(dev)
    values = np.arange(1, 3001, dtype=np.int64).reshape(-1, 1)  # one segment over ~375 workers
    starts = np.array([0, 3000], dtype=np.int64)
    with kernel_sources({src!r}, seed={seed}):
        got = to_host(k.segment_reduce(to_device_array(values, dev), to_device_array(starts, dev), "sum"))
    print(int(got[0, 0]) == int(values.sum()))
"""


@pytest.fixture(scope="module")
def missing_barrier(tmp_path_factory) -> Path:
    # The second __syncthreads of the Hillis-Steele loop in gs_segment_reduce.
    return planted_copy(tmp_path_factory.mktemp("barrier"), "segment.cu", "            __syncthreads();\n", "",
                        occurrence=2)


def test_missing_barrier_is_found_by_the_shuffled_thread_order(missing_barrier):
    for seed in (1, 2, 3):
        result = run_emulated(_SEGMENT_SUM.format(src=str(missing_barrier), seed=seed))
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "False", f"seed {seed}: the missing barrier went unnoticed"


def test_missing_barrier_goes_unnoticed_in_thread_index_order(missing_barrier):
    # Detection switched off (seed 0: no shuffle): the defect is invisible,
    # which is why the harness shuffles.
    result = run_emulated(_SEGMENT_SUM.format(src=str(missing_barrier), seed=0))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"


_COMPRESS = """
    import numpy as np
    from gpusparse._device import Device, kernels_for, to_device_array, to_host
    from gpusparse._kernels.cuda_emulation import _launch
    dev = Device("cuda", 0)
    k = kernels_for(dev)
    rows = np.sort(np.random.default_rng(0).integers(0, 50, 300)).astype(np.int64)
    _launch.settings.check_guards = {guards}
    with _launch.kernel_sources({src!r}):
        try:
            indptr = to_host(k.compress(to_device_array(rows, dev), 50, np.int64))
        except _launch.EmulationError as exc:
            print("caught:", exc)
        else:
            print("correct" if np.array_equal(indptr, np.searchsorted(rows, np.arange(51))) else "wrong")
"""


@pytest.fixture(scope="module")
def write_past_the_end(tmp_path_factory) -> Path:
    return planted_copy(tmp_path_factory.mktemp("oob"), "compress.cu", "if (r <= n_rows) {",
                        "if (r <= n_rows + 1) {")


def test_write_past_the_end_is_caught_by_the_guard_bytes(write_past_the_end):
    result = run_emulated(_COMPRESS.format(src=str(write_past_the_end), guards=True))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("caught:") and "8 byte(s) past its end" in result.stdout, result.stdout


def test_write_past_the_end_goes_unnoticed_without_the_guards(write_past_the_end):
    result = run_emulated(_COMPRESS.format(src=str(write_past_the_end), guards=False))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "correct"  # every entry in bounds is right


def _asan_runtime() -> "str | None":
    out = subprocess.run(["g++", "-print-file-name=libasan.so"], capture_output=True, text=True, check=False)
    path = out.stdout.strip()
    return path if path and Path(path).is_file() else None


@pytest.mark.slow
def test_write_past_the_end_is_caught_by_address_sanitizer(write_past_the_end):
    asan = _asan_runtime()
    if asan is None:
        pytest.skip("g++ has no AddressSanitizer runtime here")
    result = run_emulated(_COMPRESS.format(src=str(write_past_the_end), guards=False),
                          env_extra={"GPUSPARSE_CUDA_EMULATION": "asan", "LD_PRELOAD": asan,
                                     "ASAN_OPTIONS": "detect_leaks=0"})
    assert result.returncode != 0
    assert "AddressSanitizer" in result.stderr and "gs_compress" in result.stderr


def test_wrong_shuffle_lane_gives_wrong_ids(tmp_path):
    src = planted_copy(tmp_path, "common.cuh", "__shfl_up_sync(GS_FULL_MASK, v, delta)",
                       "__shfl_up_sync(GS_FULL_MASK, v, delta ^ 1u)")
    code = f"""
        import numpy as np
        from gpusparse._device import Device, kernels_for, to_device_array, to_host
        from gpusparse._kernels.cuda_emulation._launch import kernel_sources
        dev = Device("cuda", 0)
        k = kernels_for(dev)
        keys = np.sort(np.random.default_rng(0).integers(0, 100, 5000)).astype(np.int64)
        expected = np.concatenate([[0], np.cumsum(keys[1:] != keys[:-1])])
        for source in (None, {str(src)!r}):
            with kernel_sources(source):
                ids = to_host(k.segment_ids(to_device_array(keys, dev)))
            print(np.array_equal(ids, expected))
    """
    result = run_emulated(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "False"]  # the original is right, the defect is seen


# --------------------------------------------------------------------------
# The harness's rules, on small kernels of its own
# --------------------------------------------------------------------------

_RULES_SOURCE = r"""
#include "common.cuh"

__global__ void rule_divergent_barrier(int* out) {
    if (threadIdx.x == 5) return;
    __syncthreads();
    out[threadIdx.x] = 1;
}

__global__ void rule_mask_leaves_lane_out(int* out) {
    out[threadIdx.x] = __shfl_down_sync(0x0000ffffu, static_cast<int>(threadIdx.x), 1);
}

__global__ void rule_shuffle_from_absent_lane(int* out) {
    if (threadIdx.x < 16) out[threadIdx.x] = __shfl_sync(0x0000ffffu, static_cast<int>(threadIdx.x), 20);
}

__global__ void rule_good_collectives(int* out, long long* total) {
    __shared__ int s_warp[GS_WARP];
    const int v = static_cast<int>(threadIdx.x);
    const unsigned int odd = __ballot_sync(GS_FULL_MASK, v & 1);
    const int any_big = __syncthreads_or(v > 250);
    const int count = __syncthreads_count(v % 3 == 0);
    const int block = gs_block_sum<int>(v, s_warp);
    out[threadIdx.x] = __shfl_xor_sync(GS_FULL_MASK, v, 1) + __shfl_sync(GS_FULL_MASK, v, 0, 8);
    if (threadIdx.x == 0) {
        total[0] = odd;
        total[1] = any_big;
        total[2] = count;
        total[3] = block;
    }
}

__global__ void rule_value_args(double x, int n, long long* out) {
    if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = static_cast<long long>(x * n);
}
"""


@pytest.fixture(scope="module")
def rules(tmp_path_factory):
    """Launchers of the rule kernels (compiled in this process; no device arrays need emulation on)."""
    from gpusparse._kernels.cuda_emulation._launch import EmulatedKernel
    src = tmp_path_factory.mktemp("rules")
    for path in kernel_dir().iterdir():
        if path.suffix == ".cuh":
            shutil.copy(path, src / path.name)
    (src / "rules.cu").write_text(_RULES_SOURCE, encoding="utf-8")
    return lambda name: EmulatedKernel("rules", name, src, asan=False)


def _device_zeros(n, dtype):
    from gpusparse._kernels.cuda_emulation._array import cupy
    return cupy.zeros(n, dtype=dtype)


@pytest.mark.parametrize("name, message", [
    ("rule_divergent_barrier", r"deadlock: 255 thread\(s\) wait at __syncthreads, 0 at a warp collective, 1 of 256"),
    ("rule_mask_leaves_lane_out", "leaves it out"),
    ("rule_shuffle_from_absent_lane", "reads lane 20, which does not take part"),
])
def test_misuse_is_an_error_not_a_hang(rules, name, message):
    from gpusparse._kernels.cuda_emulation._launch import EmulationError
    out = _device_zeros(256, np.int32)
    with pytest.raises(EmulationError, match=message):
        rules(name)((1,), (256,), (out,))


@pytest.mark.parametrize("seed", [0, 7])
def test_collectives_exchange_the_right_values(rules, seed):
    from gpusparse._kernels.cuda_emulation._launch import kernel_sources
    out, total = _device_zeros(96, np.int32), _device_zeros(4, np.int64)
    with kernel_sources(seed=seed):
        rules("rule_good_collectives")((2,), (96,), (out, total))
    v = np.arange(96)
    np.testing.assert_array_equal(out.get(), (v ^ 1) + (v & ~7))
    assert total.get().tolist() == [0xAAAAAAAA, 0, 32, int(v.sum())]


def test_kernel_arguments_are_checked(rules):
    from gpusparse._kernels.cuda_emulation._launch import EmulationError
    kernel = rules("rule_value_args")
    out = _device_zeros(1, np.int64)
    kernel((1,), (32,), (np.float64(2.5), np.int32(4), out))
    assert int(out.get()[0]) == 10
    with pytest.raises(EmulationError, match="argument 1 is a int64 scalar .8 bytes., but the parameter takes 4"):
        kernel((1,), (32,), (np.float64(2.5), np.int64(4), out))
    with pytest.raises(EmulationError, match="argument 0 is a int64 scalar for a parameter of kind 'f'"):
        kernel((1,), (32,), (np.int64(2), np.int32(4), out))
    with pytest.raises(TypeError, match="float is not a kernel argument"):
        kernel((1,), (32,), (2.5, 4, out))
    with pytest.raises(TypeError, match="host NumPy array cannot be a kernel argument"):
        kernel((1,), (32,), (np.float64(2.5), np.int32(4), np.zeros(1, np.int64)))
    with pytest.raises(EmulationError, match="takes 3 arguments; 2 were given"):
        kernel((1,), (32,), (np.float64(2.5), out))
    with pytest.raises(EmulationError, match="invalid launch configuration"):
        kernel((1,), (2048,), (np.float64(2.5), np.int32(4), out))


# --------------------------------------------------------------------------
# Emulated device arrays behave like CuPy's where it matters
# --------------------------------------------------------------------------

def test_device_arrays_refuse_implicit_host_conversion():
    from gpusparse._kernels.cuda_emulation._array import cupy
    x = cupy.arange(4)
    with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
        np.asarray(x)
    with pytest.raises(TypeError, match="host .NumPy. array cannot be mixed"):
        x + np.arange(4)
    with pytest.raises(TypeError, match="host .NumPy. array cannot be mixed"):
        np.arange(4) + x
    assert isinstance(x + 1, cupy.ndarray) and isinstance(x.sum(), cupy.ndarray) and x.sum().ndim == 0
    np.testing.assert_array_equal((x * 2).get(), [0, 2, 4, 6])
    assert cupy.ascontiguousarray(x) is x


def test_empty_device_memory_is_not_zeroed():
    from gpusparse._kernels.cuda_emulation._array import GARBAGE_BYTE, cupy
    x = cupy.empty(16, dtype=np.uint8)
    assert (x.get() == GARBAGE_BYTE).all()
    assert x.data.ptr % 256 == 0  # aligned as cudaMalloc's


def test_every_instantiation_compiles_for_the_host(tmp_path):
    # The counterpart of the nvcc check: every template instantiation the
    # launchers use (GPUSPARSE_INSTANTIATE_ALL) compiles against the harness.
    from gpusparse._kernels.cuda_emulation._build import HEADER, compiler
    for family in FAMILIES:
        cmd = [compiler(), "-std=c++17", "-fsyntax-only", "-x", "c++", "-DGPUSPARSE_INSTANTIATE_ALL",
               "-include", str(HEADER), f"-I{kernel_dir()}", str(kernel_dir() / f"{family}.cu")]
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        assert result.returncode == 0, f"{family}.cu:\n{result.stderr}"


def test_products_fall_back_to_the_kernels_where_cusparse_does_not_load():
    # cuSPARSE is not emulated: it must read as unavailable (never an
    # ImportError from an except clause), and views off a 16-byte boundary
    # must be recognised before they reach it.
    code = """
        import numpy as np
        from gpusparse._kernels.cuda import _cusparse
        from gpusparse._kernels.cuda_emulation._array import cupy
        print(_cusparse.available(), _cusparse.supports("spmv", np.float64, np.int32, np.int32))
        try:
            raise ValueError("not a cuSPARSE error")
        except _cusparse.library_error():
            print("wrongly caught")
        except ValueError:
            print("passed through")
        x = cupy.zeros(8)
        print(_cusparse.aligned(x, x[2:]), _cusparse.aligned(x[1:]), _cusparse.aligned(x[8:]))
    """
    result = run_emulated(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False", "passed", "through", "True", "False", "True"]
