"""Finding, compiling and caching the CUDA kernel sources.

The kernels are CUDA C++ templates in one ``.cu`` file per primitive family
(``cuda_kernels/<family>.cu``) plus shared headers (``common.cuh``). They are
looked for first inside the installed package (``gpusparse/_cuda_kernels/``,
where the build maps the top-level ``cuda_kernels/``), then next to the
``gpusparse`` package directory (a source checkout).

A family is compiled with NVRTC through :class:`cupy.RawModule`, one module
per (family, name expressions, options). The templates are instantiated by
CuPy's ``name_expressions`` (``gs_segment_reduce<double, 0>``), built from
NumPy dtypes through :data:`C_TYPES`, the one dtype -> C++ type table. CuPy
memoises the compiled module per device and caches the binary on disk; this
module adds a per-process cache of the :class:`cupy.RawModule` objects and
of the functions per device.

CuPy is only imported when a module is built, so everything else here (the
dtype table, name expressions, source discovery) works without CuPy.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import numpy as np

__all__ = [
    "COMPILE_OPTIONS",
    "C_TYPES",
    "KERNEL_FAMILIES",
    "all_kernels",
    "c_type",
    "get_function",
    "get_module",
    "kernel_dir",
    "kernel_sources",
    "module_source",
    "name_expression",
]

#: The kernel families, one ``cuda_kernels/<family>.cu`` each.
KERNEL_FAMILIES = ("linearize", "sort", "segment", "compress", "scatter", "merge", "spmm", "sddmm",
                   "select", "semiring")

#: NVRTC options every module is built with (``-I<kernel_dir()>`` is added).
COMPILE_OPTIONS = ("--std=c++17",)

#: The one table from NumPy dtypes to the C++ types the kernels are
#: instantiated with. ``gs_complex64`` / ``gs_complex128`` are the layout
#: compatible structs of ``common.cuh``.
C_TYPES = {
    np.dtype(np.bool_): "bool",
    np.dtype(np.int8): "signed char",
    np.dtype(np.uint8): "unsigned char",
    np.dtype(np.int16): "short",
    np.dtype(np.uint16): "unsigned short",
    np.dtype(np.int32): "int",
    np.dtype(np.uint32): "unsigned int",
    np.dtype(np.int64): "long long",
    np.dtype(np.uint64): "unsigned long long",
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
    np.dtype(np.complex64): "gs_complex64",
    np.dtype(np.complex128): "gs_complex128",
}

#: Value dtypes of segment_reduce, and the op codes (GS_OP_* in common.cuh).
VALUE_DTYPES = tuple(C_TYPES)
OP_CODES = {"sum": 0, "prod": 1, "min": 2, "max": 3, "any": 4, "all": 5, "argmin": 6, "argmax": 7}
#: Unsigned words that gather/scatter move values as (see scatter.cu).
WORD_DTYPES = tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
#: Index dtypes of compressed formats and coordinates.
INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))

_PACKAGE_DIR = Path(__file__).resolve().parent.parent.parent  # .../gpusparse


def _candidate_dirs() -> "tuple[Path, ...]":
    return (_PACKAGE_DIR / "_cuda_kernels", _PACKAGE_DIR.parent / "cuda_kernels")


@functools.cache
def kernel_dir() -> Path:
    """The directory holding the kernel sources (installed copy first)."""
    for candidate in _candidate_dirs():
        if (candidate / "common.cuh").is_file():
            return candidate
    looked = ", ".join(str(c) for c in _candidate_dirs())
    raise FileNotFoundError(
        f"gpusparse CUDA kernel sources not found (looked in {looked}); "
        "the installation is incomplete"
    )


def kernel_sources() -> "list[Path]":
    """Every ``.cu`` and ``.cuh`` file of the kernel directory, sorted."""
    root = kernel_dir()
    return sorted(p for p in root.iterdir() if p.suffix in (".cu", ".cuh") and p.is_file())


def c_type(dtype) -> str:
    """The C++ type a kernel template is instantiated with for ``dtype``."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"not a dtype: {dtype!r}") from None
    try:
        return C_TYPES[dt]
    except KeyError:
        supported = ", ".join(str(d) for d in C_TYPES)
        raise TypeError(f"dtype {dt} has no CUDA kernels; supported: {supported}") from None


def _template_arg(arg) -> str:
    # Python ints are non-type template arguments (op codes); everything else
    # must be a dtype. bool values are refused: np.dtype(bool) is the type.
    if isinstance(arg, (bool, np.bool_)):
        raise TypeError(f"template argument {arg!r}: pass the dtype np.bool_, not a bool value")
    if isinstance(arg, (int, np.integer)):
        return str(int(arg))
    return c_type(arg)


def name_expression(template_name: str, type_args=()) -> str:
    """``gs_x<float, long long>`` from a template name and dtypes / ints."""
    if not template_name.isidentifier():
        raise ValueError(f"not a kernel name: {template_name!r}")
    args = tuple(type_args)
    if not args:
        return template_name
    return f"{template_name}<{', '.join(_template_arg(a) for a in args)}>"


@functools.cache
def _headers_digest() -> str:
    digest = hashlib.sha256()
    for path in kernel_sources():
        if path.suffix == ".cuh":
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@functools.cache
def module_source(family: str) -> str:
    """The source handed to NVRTC for one family.

    A first comment line carries a digest of the headers: CuPy's on-disk
    cache keys on the source text and options only, so an edited header must
    change the text. ``#line`` makes compiler messages name the real file.
    """
    if family not in KERNEL_FAMILIES:
        raise ValueError(f"unknown kernel family {family!r}; known: {', '.join(KERNEL_FAMILIES)}")
    path = kernel_dir() / f"{family}.cu"
    text = path.read_text(encoding="utf-8")
    quoted = str(path).replace("\\", "\\\\").replace('"', '\\"')
    return f"// gpusparse {family}.cu, headers {_headers_digest()}\n#line 1 \"{quoted}\"\n{text}"


@functools.cache
def get_module(family: str, name_expressions: "tuple[str, ...]", options: "tuple[str, ...]" = COMPILE_OPTIONS):
    """The :class:`cupy.RawModule` of ``family`` instantiating ``name_expressions``."""
    import cupy

    return cupy.RawModule(
        code=module_source(family),
        options=tuple(options) + (f"-I{kernel_dir()}",),
        name_expressions=list(name_expressions),
    )


@functools.cache
def _function(device_id: int, family: str, expression: str):
    # A function handle belongs to the module loaded on one device.
    return get_module(family, (expression,)).get_function(expression)


def get_function(family: str, template_name: str, type_args=()):
    """The compiled kernel ``template_name<type_args...>`` of ``family``.

    ``type_args`` are NumPy dtypes (anything ``np.dtype`` accepts) or Python
    ints (non-type template arguments). Compiled on first use for the
    current device (NVRTC; CuPy caches the binary on disk).
    """
    import cupy

    expression = name_expression(template_name, type_args)
    return _function(cupy.cuda.runtime.getDevice(), family, expression)


def all_kernels() -> "tuple[tuple[str, str, tuple], ...]":
    """Every (family, template name, template arguments) the launchers use.

    Mirrors the ``GPUSPARSE_INSTANTIATE_ALL`` blocks of the ``.cu`` files;
    the tests compile each of them through NVRTC.
    """
    i64 = np.dtype(np.int64)
    specs = []
    for idx in INDEX_DTYPES:
        specs.append(("linearize", "gs_linearize", (idx,)))
        specs.append(("linearize", "gs_delinearize", (idx,)))
    specs += [
        ("sort", "gs_radix_upsweep", (i64,)),
        ("sort", "gs_radix_plan", ()),
        ("sort", "gs_radix_scatter", (i64, i64)),
        ("sort", "gs_radix_finalize", (i64, i64)),
    ]
    for idx in INDEX_DTYPES:
        specs.append(("segment", "gs_sortedness", (idx,)))
        specs.append(("segment", "gs_segment_head_counts", (idx,)))
        specs.append(("segment", "gs_segment_ids_scan", (idx,)))
    for dt in VALUE_DTYPES:
        for code in OP_CODES.values():
            specs.append(("segment", "gs_segment_reduce", (dt, code)))
            specs.append(("segment", "gs_segment_reduce_fixup", (dt, code)))
            specs.append(("segment", "gs_segment_reduce_fallback", (dt, code)))
    # gs_compress<rows, indptr>: compress (int64 rows) and segment_starts (int32/int64 ids)
    for idx in INDEX_DTYPES:
        specs.append(("compress", "gs_compress", (i64, idx)))
    specs.append(("compress", "gs_compress", (np.dtype(np.int32), i64)))
    for idx in INDEX_DTYPES:
        specs.append(("compress", "gs_expand", (idx,)))
        specs.append(("compress", "gs_csr_check", (idx,)))
        specs.append(("spmm", "gs_csr_chunk_counts", (idx,)))
    for word in WORD_DTYPES:
        specs.append(("scatter", "gs_scatter_rows", (word,)))
        specs.append(("scatter", "gs_gather_rows", (word,)))
        specs.append(("scatter", "gs_take_columns", (word,)))
    for word in WORD_DTYPES:
        specs.append(("select", "gs_copy_segments", (word,)))
    for idx in INDEX_DTYPES:
        specs.append(("select", "gs_segment_search", (idx,)))
    # merge.cu (elementwise plans): 0 = union, 1 = intersection
    specs.append(("merge", "gs_merge_partition", (i64,)))
    for how in (0, 1):
        specs.append(("merge", "gs_merge_count", (i64, how)))
        specs.append(("merge", "gs_merge_write", (i64, how)))
    # spmm.cu / sddmm.cu (products): every numeric value dtype, both index dtypes;
    # reduce codes 0 sum, 1 mean (inexact only), 2 max, 3 min (real only)
    for dt in VALUE_DTYPES:
        if dt.kind == "b":
            continue
        for idx in INDEX_DTYPES:
            specs.append(("spmm", "gs_csr_spmm", (dt, idx)))
            specs.append(("sddmm", "gs_sddmm", (dt, idx)))
            for code in (0, 1, 2, 3):
                if (code == 1 and dt.kind not in "fc") or (code in (2, 3) and dt.kind == "c"):
                    continue
                specs.append(("spmm", "gs_csr_spmm_reduce_chunks", (dt, idx, code)))
                specs.append(("spmm", "gs_csr_spmm_reduce_rows", (dt, idx, code)))
    specs += semiring_kernels()
    return tuple(specs)


def semiring_kernels() -> "list[tuple[str, str, tuple]]":
    """The instantiations of ``semiring.cu`` (its ``GPUSPARSE_INSTANTIATE_ALL`` block).

    Codes are positions in ``SEMIRING_ADD`` (plus, min, max, lor, any) and
    ``SEMIRING_MUL`` (times, plus, min, max, land, pair, first, second):
    numeric dtypes take plus/min/max with every operator but land, and
    any_pair; bool takes lor with land/pair/first/second, and any_pair.
    """
    i64 = np.dtype(np.int64)
    specs = [("semiring", "gs_semiring_count", (i64,))]
    numeric_muls = (0, 1, 2, 3, 5, 6, 7)
    for dt in VALUE_DTYPES:
        if dt.kind == "c":
            continue
        if dt.kind == "b":
            pairs = [(3, mul) for mul in (4, 5, 6, 7)] + [(4, 5)]
            expand_muls = (4, 5, 6, 7)
        else:
            pairs = [(add, mul) for add in (0, 1, 2) for mul in numeric_muls] + [(4, 5)]
            expand_muls = numeric_muls
        for add, mul in pairs:
            specs.append(("semiring", "gs_semiring_spmm", (dt, i64, add, mul)))
        for add in sorted({add for add, _ in pairs}):
            specs.append(("semiring", "gs_semiring_reduce", (dt, add)))
        for mul in expand_muls:
            specs.append(("semiring", "gs_semiring_expand", (dt, i64, mul)))
    return specs
