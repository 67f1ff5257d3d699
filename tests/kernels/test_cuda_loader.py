"""The CUDA kernel loader: source discovery, the dtype table, name expressions.

Most of these need no GPU and no CuPy. Two compile every kernel the
launchers use: through NVRTC directly when CuPy and an NVRTC library are
importable (no GPU needed), and through ``cupy.RawModule`` on a real device.
"""

from __future__ import annotations

import collections
import importlib
import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

import gpusparse

SUPPORTED_DTYPES = {
    np.bool_: "bool",
    np.int8: "signed char",
    np.uint8: "unsigned char",
    np.int16: "short",
    np.uint16: "unsigned short",
    np.int32: "int",
    np.uint32: "unsigned int",
    np.int64: "long long",
    np.uint64: "unsigned long long",
    np.float32: "float",
    np.float64: "double",
    np.complex64: "gs_complex64",
    np.complex128: "gs_complex128",
}

def _load_loader():
    """The loader module; loaded from its file when CuPy is not installed.

    ``gpusparse._kernels.cuda`` imports CuPy, but ``_loader`` itself only
    needs it to build modules, so the no-GPU tests run without CuPy too.
    """
    try:
        return importlib.import_module("gpusparse._kernels.cuda._loader")
    except ImportError:
        path = Path(gpusparse.__file__).resolve().parent / "_kernels" / "cuda" / "_loader.py"
        spec = importlib.util.spec_from_file_location("_gpusparse_cuda_loader_standalone", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module


loader = _load_loader()


def _expressions_by_family():
    by_family = collections.defaultdict(list)
    for family, name, args in loader.all_kernels():
        by_family[family].append(loader.name_expression(name, args))
    return dict(by_family)


# --------------------------------------------------------------------------
# Sources
# --------------------------------------------------------------------------

def test_kernel_dir_has_the_common_header():
    assert (loader.kernel_dir() / "common.cuh").is_file()


@pytest.mark.parametrize("family", loader.KERNEL_FAMILIES)
def test_every_family_has_its_source(family):
    path = loader.kernel_dir() / f"{family}.cu"
    assert path.is_file(), f"no source for kernel family {family!r} at {path}"
    source = loader.module_source(family)
    first, second = source.splitlines()[:2]
    assert first.startswith("//") and "headers" in first
    assert second == f'#line 1 "{path}"'
    assert '#include "common.cuh"' in source


def test_kernel_sources_lists_every_cu_and_cuh():
    names = {p.name for p in loader.kernel_sources()}
    assert "common.cuh" in names
    assert {f"{family}.cu" for family in loader.KERNEL_FAMILIES} <= names
    assert all(p.suffix in (".cu", ".cuh") and p.is_file() for p in loader.kernel_sources())
    # No stray family: every .cu on disk is a declared family.
    assert {n[:-3] for n in names if n.endswith(".cu")} == set(loader.KERNEL_FAMILIES)


def test_unknown_family_is_refused():
    with pytest.raises(ValueError, match="unknown kernel family"):
        loader.module_source("no_such_family")


def test_sources_include_no_external_header():
    # The kernels must compile standalone (plain nvcc, NVRTC without CuPy's
    # include path): only our own headers may be included.
    own = {p.name for p in loader.kernel_sources()}
    for path in loader.kernel_sources():
        for included in re.findall(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', path.read_text(), re.M):
            assert included in own, f"{path.name} includes {included}"


def test_every_kernel_a_launcher_calls_is_in_the_compiled_list():
    # all_kernels() is what the NVRTC compile test covers: a launcher's kernel
    # missing from it would first be compiled on a user's GPU.
    launchers = Path(loader.__file__).parent
    listed = {(family, name) for family, name, _ in loader.all_kernels()}
    called = set()
    for path in sorted(launchers.glob("*.py")):
        called |= set(re.findall(r'get_function\(\s*"(\w+)",\s*"(\w+)"', path.read_text()))
    assert called, "no launcher found"
    assert called <= listed, f"launched but never compiled by the tests: {sorted(called - listed)}"


@pytest.mark.parametrize("family,name", sorted({(f, n) for f, n, _ in loader.all_kernels()}))
def test_every_launched_template_is_defined_in_its_family(family, name):
    text = (loader.kernel_dir() / f"{family}.cu").read_text()
    assert re.search(rf"__global__\s+void\s+(__launch_bounds__\((?:[^()]|\([^()]*\))*\)\s+)?{name}\(", text), (
        f"{name} is not a __global__ kernel of {family}.cu"
    )
    assert "GPUSPARSE_INSTANTIATE_ALL" in text


# --------------------------------------------------------------------------
# The dtype table and name expressions
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,expected", list(SUPPORTED_DTYPES.items()))
def test_dtype_table_covers_every_supported_dtype(dtype, expected):
    assert loader.c_type(dtype) == expected
    assert loader.c_type(np.dtype(dtype)) == expected


def test_dtype_table_has_nothing_else():
    assert set(loader.C_TYPES) == {np.dtype(d) for d in SUPPORTED_DTYPES}


@pytest.mark.parametrize("dtype", [np.float16, np.object_, "U3", "datetime64[s]"])
def test_unsupported_dtypes_raise(dtype):
    with pytest.raises(TypeError, match="no CUDA kernels"):
        loader.c_type(dtype)


def test_complex_structs_are_defined_in_the_header():
    header = (loader.kernel_dir() / "common.cuh").read_text()
    assert "struct __align__(8) gs_complex64" in header
    assert "struct __align__(16) gs_complex128" in header


def test_op_codes_match_the_header():
    header = (loader.kernel_dir() / "common.cuh").read_text()
    for op, code in loader.OP_CODES.items():
        assert re.search(rf"#define GS_OP_{op.upper()} {code}\b", header), op


@pytest.mark.parametrize(
    "name,args,expected",
    [
        ("gs_x", (np.float32, np.int64), "gs_x<float, long long>"),
        ("gs_segment_reduce", (np.complex128, 0), "gs_segment_reduce<gs_complex128, 0>"),
        ("gs_compress", ("int32",), "gs_compress<int>"),
        ("gs_gather_rows", (np.dtype(np.uint8),), "gs_gather_rows<unsigned char>"),
        ("gs_radix_plan", (), "gs_radix_plan"),
        ("gs_y", (np.bool_, np.uint64), "gs_y<bool, unsigned long long>"),
    ],
)
def test_name_expressions(name, args, expected):
    assert loader.name_expression(name, args) == expected


def test_name_expression_refuses_bad_input():
    with pytest.raises(TypeError):
        loader.name_expression("gs_x", (True,))
    with pytest.raises(TypeError):
        loader.name_expression("gs_x", (np.float16,))
    with pytest.raises(ValueError):
        loader.name_expression("gs_x<int>", ())


_EXPRESSION = re.compile(r"^gs_[a-z0-9_]+(<(?:[a-z0-9_ ]+|\d+)(?:, (?:[a-z0-9_ ]+|\d+))*>)?$")


def test_every_launcher_name_expression_is_well_formed():
    specs = loader.all_kernels()
    assert specs
    for family, name, args in specs:
        assert family in loader.KERNEL_FAMILIES
        expression = loader.name_expression(name, args)
        assert _EXPRESSION.match(expression), expression
    expressions = [loader.name_expression(n, a) for _, n, a in specs]
    assert len(set(expressions)) == len(expressions)


def test_all_kernels_covers_every_value_dtype_and_op():
    reduce_args = {args for _, name, args in loader.all_kernels() if name == "gs_segment_reduce"}
    from gpusparse._kernels import SEGMENT_OPS

    assert set(loader.OP_CODES) == set(SEGMENT_OPS)
    for dtype in SUPPORTED_DTYPES:
        for op in SEGMENT_OPS:
            assert (np.dtype(dtype), loader.OP_CODES[op]) in reduce_args


# --------------------------------------------------------------------------
# Compiling
# --------------------------------------------------------------------------

def _nvrtc():
    try:
        from cupy_backends.cuda.libs import nvrtc

        nvrtc.getVersion()  # loads the library
    except Exception as exc:  # ImportError, OSError, NVRTCError, ...
        pytest.skip(f"NVRTC is not usable here ({type(exc).__name__}: {exc})")
    return nvrtc


@pytest.mark.parametrize("family", loader.KERNEL_FAMILIES)
def test_every_kernel_compiles_with_nvrtc(family):
    """NVRTC (the compiler cupy.RawModule uses) on every launched template; no GPU needed."""
    nvrtc = _nvrtc()
    expressions = _expressions_by_family()[family]
    options = [*loader.COMPILE_OPTIONS, f"-I{loader.kernel_dir()}", "-arch=compute_80"]
    program = nvrtc.createProgram(loader.module_source(family), f"{family}.cu", [], [])
    try:
        for expression in expressions:
            nvrtc.addNameExpression(program, expression)
        try:
            nvrtc.compileProgram(program, options)
        except nvrtc.NVRTCError:
            pytest.fail(f"NVRTC failed on {family}.cu:\n{nvrtc.getProgramLog(program)}")
        for expression in expressions:
            assert nvrtc.getLoweredName(program, expression).startswith("_Z")
    finally:
        nvrtc.destroyProgram(program)


def _cuda_device_or_skip():
    try:
        import cupy
    except Exception as exc:
        pytest.skip(f"CuPy is not importable ({type(exc).__name__}: {exc})")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        pytest.skip(f"CuPy sees no CUDA device ({type(exc).__name__}: {exc})")
    if count == 0:
        pytest.skip("CuPy sees no CUDA device")
    return cupy


@pytest.mark.parametrize("family", loader.KERNEL_FAMILIES)
def test_every_kernel_builds_through_rawmodule(family):
    """cupy.RawModule on the device: every template of the family, every dtype."""
    _cuda_device_or_skip()
    expressions = tuple(_expressions_by_family()[family])
    module = loader.get_module(family, expressions)
    for expression in expressions:
        assert module.get_function(expression) is not None


def test_get_function_returns_a_cached_kernel():
    cupy = _cuda_device_or_skip()
    first = loader.get_function("scatter", "gs_gather_rows", (np.uint32,))
    again = loader.get_function("scatter", "gs_gather_rows", (np.dtype("uint32"),))
    assert first is again
    assert isinstance(first, cupy.RawKernel) or hasattr(first, "__call__")
