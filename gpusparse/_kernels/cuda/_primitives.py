"""The CUDA primitives the launch modules compose: layout, sorting, segments, gathers.

Launches of ``cuda_kernels/`` kernels with the contracts of
:mod:`gpusparse._kernels.cuda` (whose module docstring says what a launch
may and may not do), which re-exports them by name. They live in a module of
their own so that the launch modules that build on them (``_linalg``,
``_reduce``, ``_select``, ``_semiring``, ``_transpose``) import them from
here, not from the registry package that imports those modules.
"""

from __future__ import annotations

import numpy as np

import gpusparse._kernels.cuda._grid as _grid
from gpusparse._kernels import SEGMENT_OPS, c_strides
from gpusparse._kernels.cuda._backend import cupy, get_function
from gpusparse._kernels.cuda._loader import OP_CODES

_I64 = np.dtype(np.int64)
_THREADS = 256
#: A null pointer kernel argument (an 8-byte zero).
_NULL = np.uint64(0)
#: The most dimensions one linearize/delinearize launch handles (GS_LIN_DIMS).
_LIN_DIMS = 8
# sort.cu / segment.cu tile sizes (GS_SORT_TILE, GS_SEG_TILE, GS_RED_MAX_TILE).
_SORT_TILE = 4096
_RADIX_BITS = 8
_SORT_MAX_PASSES = 8
_SEG_TILE = 2048
_RED_MAX_TILE = 2048
_MAX_GRID_Y = 65535
#: Blocks of gs_segment_reduce_fallback (grid-stride; every block exits at
#: once on valid input, so few of them keep that launch cheap).
_FALLBACK_BLOCKS = 1024


def _blocks(n: int, per_block: int = _THREADS) -> int:
    # The grid of a launch over n items: clamped to the device's gridDim.x
    # limit (every kernel loops over what the grid does not cover).
    return _grid.blocks(n, per_block)


def _i64(x) -> np.int64:
    return np.int64(x)


def _i32(x) -> np.int32:
    return np.int32(x)


def _wrap_i64(x: int) -> np.int64:
    # A Python int as the int64 with the same low 64 bits (the kernels do
    # their arithmetic modulo 2**64 anyway).
    return np.array(int(x) & 0xFFFFFFFFFFFFFFFF, dtype=np.uint64).view(np.int64)[()]


def _u64_saturated(x: int) -> np.uint64:
    return np.uint64(min(int(x), 0xFFFFFFFFFFFFFFFF))


def _ceil_log2(x: int) -> int:
    return max(0, (int(x) - 1).bit_length())


def _index_array(arr, allowed=(np.dtype(np.int32), _I64)):
    # C-contiguous, with a dtype the kernels are instantiated for.
    arr = cupy.asarray(arr)
    if arr.dtype not in allowed:
        arr = arr.astype(_I64)
    return cupy.ascontiguousarray(arr)


def _key_rows(keys):
    keys = _index_array(keys)
    return keys.reshape(1, -1) if keys.ndim == 1 else keys


# --------------------------------------------------------------------------
# linearize / delinearize
# --------------------------------------------------------------------------

def empty(shape, dtype):
    """An uninitialised C-contiguous array on the device, for a kernel's output.

    CuPy's memory pool serves it, on the current device.
    """
    return cupy.empty(shape, dtype=dtype)


def linearize(coords, shape):
    """coords (d, n) int64 in ``shape[:d]``, prod(shape) < 2**63; coordinates out of range are clipped.

    Keys with the C-order strides of ``shape`` (at least d long); each
    coordinate is clipped into ``[0, shape[k])`` inside the kernel, so every
    key lies in ``[0, prod(shape))``.
    """
    coords = _index_array(coords)
    d, n = coords.shape
    shape = [int(e) for e in shape]
    strides = list(c_strides(shape))
    last = [max(e - 1, 0) for e in shape]
    keys = cupy.empty(n, dtype=_I64)
    if n == 0:
        return keys
    if d == 0:
        keys.fill(0)
        return keys
    kernel = get_function("linearize", "gs_linearize", (coords.dtype,))
    for k0 in range(0, d, _LIN_DIMS):
        count = min(_LIN_DIMS, d - k0)
        pad = [0] * (_LIN_DIMS - count)
        kernel(
            (_blocks(n),), (_THREADS,),
            (coords[k0:], _i64(n), _i32(count),
             *[_wrap_i64(s) for s in strides[k0:k0 + count] + pad],
             *[_i64(e) for e in last[k0:k0 + count] + pad],
             _i32(1 if k0 > 0 else 0), keys),
        )
    return keys


def delinearize(keys, shape):
    """keys (n,) int64 in [0, prod(shape)); not validated.

    Keys out of range are clipped into ``[0, prod(shape))`` (so every
    coordinate lies in the shape); an empty shape gives zeros.
    """
    keys = cupy.ascontiguousarray(cupy.asarray(keys, dtype=_I64))
    shape = [int(e) for e in shape]
    d, n = len(shape), keys.size
    coords = cupy.empty((d, n), dtype=_I64)
    if n == 0 or d == 0:
        return coords
    size = 1
    for e in shape:
        size *= e
    if size <= 0:  # no element: nothing to point at (and no extent to divide by)
        coords.fill(0)
        return coords
    key_max = _i64(min(size, 2**63) - 1)
    kernel = get_function("linearize", "gs_delinearize", (_I64,))
    for k1 in range(d, 0, -_LIN_DIMS):
        k0 = max(0, k1 - _LIN_DIMS)
        extents = shape[k0:k1]
        inner = 1
        for e in shape[k1:]:
            inner *= e
        padded = extents + [1] * (_LIN_DIMS - len(extents))
        kernel(
            (_blocks(n),), (_THREADS,),
            (keys, _i64(n), key_max, _u64_saturated(inner), _i32(len(extents)),
             *[_u64_saturated(e) for e in padded], _i32(1 if k0 == 0 else 0), coords[k0]),
        )
    return coords


# --------------------------------------------------------------------------
# sort_pairs
# --------------------------------------------------------------------------

_KEY_MAX = 2**63 - 1


def sort_pairs(keys, values, key_bits):
    """keys (n,) int64 in [0, 2**key_bits); values (n,) int64 or None; not validated.

    Keys outside ``[0, 2**key_bits)`` are clipped into it: the output keys
    are the clipped keys, sorted, and the payloads a permutation of the
    input's (``arange(n)`` for ``values=None``) whatever the keys hold.
    """
    key_bits = max(0, int(key_bits))
    return _sort_pairs(keys, values, key_bits, min(2**key_bits - 1, _KEY_MAX))


def _sort_pairs(keys, values, key_bits, key_max):
    """``sort_pairs`` with keys clipped into ``[0, key_max]`` (``key_max < 2**key_bits``).

    The clip costs a compare on each key the kernels load anyway: callers
    whose keys are buckets of a smaller range (``reduce_by_key``,
    ``bucket_order``) get their histogram semantics from it for free.
    """
    keys = cupy.ascontiguousarray(cupy.asarray(keys, dtype=_I64))
    if values is not None:
        values = cupy.ascontiguousarray(cupy.asarray(values, dtype=_I64))
    n = keys.size
    key_max = max(0, int(key_max))
    n_passes = min(_SORT_MAX_PASSES, -(-max(0, int(key_bits)) // _RADIX_BITS))
    if n == 0:
        return cupy.empty(0, dtype=_I64), cupy.empty(0, dtype=_I64)
    if n_passes == 0 or key_max == 0:  # every key is (clipped to) 0: already sorted
        return cupy.zeros(n, dtype=_I64), (values.copy() if values is not None else cupy.arange(n, dtype=_I64))
    key_max = _i64(key_max)

    n_tiles = _grid.tiles(n, _SORT_TILE)
    grid = (_blocks(n, _SORT_TILE),)
    out_k = cupy.empty(n, dtype=_I64)
    out_v = cupy.empty(n, dtype=_I64)
    if n_passes >= 2:
        tmp_k = cupy.empty(n, dtype=_I64)
        tmp_v = cupy.empty(n, dtype=_I64)
    else:  # the plan never writes buffer B with a single pass
        tmp_k, tmp_v = out_k, out_v
    counts = cupy.empty(256 * n_tiles, dtype=_I64)
    totals = cupy.zeros(n_passes * 256, dtype=np.uint64)
    plan = cupy.empty(n_passes + 1, dtype=np.int32)
    vals_in = values if values is not None else _NULL

    upsweep = get_function("sort", "gs_radix_upsweep", (_I64,))
    plan_kernel = get_function("sort", "gs_radix_plan")
    scatter = get_function("sort", "gs_radix_scatter", (_I64, _I64))
    finalize = get_function("sort", "gs_radix_finalize", (_I64, _I64))
    for p in range(n_passes):
        upsweep(
            grid, (_THREADS,),
            (keys, out_k, tmp_k, _i64(n), key_max, _i32(p), _i32(n_passes), plan, counts,
             _i64(n_tiles), totals if p == 0 else _NULL),
        )
        if p == 0:
            plan_kernel((1,), (256,), (totals, _i64(n), _i32(n_passes), plan))
        scanned = cupy.cumsum(counts)
        scatter(
            grid, (_THREADS,),
            (keys, vals_in, out_k, out_v, tmp_k, tmp_v, _i64(n), key_max, _i32(p), plan, scanned,
             _i64(n_tiles)),
        )
    finalize(
        (_blocks(n),), (_THREADS,),
        (keys, vals_in, out_k, out_v, _i64(n), key_max, _i32(n_passes), plan),
    )
    return out_k, out_v


# --------------------------------------------------------------------------
# sortedness and segments
# --------------------------------------------------------------------------

def sortedness(keys):
    """keys (n,) or (g, n) int64, rows compared lexicographically (row 0 first)."""
    rows = _key_rows(keys)
    g, n = rows.shape
    if n <= 1:
        return cupy.full((), 2, dtype=np.int8)
    result = cupy.full((), 2, dtype=np.int32)
    kernel = get_function("segment", "gs_sortedness", (rows.dtype,))
    kernel((_blocks(n - 1),), (_THREADS,), (rows, _i64(n), _i32(g), result))
    return result.astype(np.int8)


def segment_ids(keys):
    """keys (n,) or (g, n) int64 sorted (lexicographically for 2-D); not validated."""
    rows = _key_rows(keys)
    g, n = rows.shape
    ids = cupy.empty(n, dtype=_I64)
    if n == 0:
        return ids
    n_tiles = _grid.tiles(n, _SEG_TILE)
    grid = (_blocks(n, _SEG_TILE),)
    if n_tiles > 1:
        counts = cupy.empty(n_tiles, dtype=_I64)
        head_counts = get_function("segment", "gs_segment_head_counts", (rows.dtype,))
        head_counts(grid, (_THREADS,), (rows, _i64(n), _i32(g), counts))
        scanned = cupy.cumsum(counts)
    else:  # one tile: the carry-in is never read
        scanned = ids
    scan = get_function("segment", "gs_segment_ids_scan", (rows.dtype,))
    scan(grid, (_THREADS,), (rows, _i64(n), _i32(g), scanned, ids))
    return ids


def segment_starts(ids, n_segments):
    """ids (n,) int64 non-decreasing from 0 with no gaps, as segment_ids returns.

    ``starts[s]`` is the first position whose id is at least ``s`` (a
    binary search per segment, ``compress`` of the ids), so every entry is
    written whatever the ids hold: a gap gives an empty segment, ids outside
    ``[0, n_segments)`` land in the first or last one.
    """
    ids = _index_array(ids)
    n, n_segments = ids.size, max(int(n_segments), 0)
    starts = cupy.empty(n_segments + 1, dtype=_I64)
    if n == 0:
        starts.fill(0)
        return starts
    kernel = get_function("compress", "gs_compress", (ids.dtype, _I64))
    kernel((_blocks(n_segments + 1),), (_THREADS,), (ids, _i64(n), _i64(n_segments), starts))
    return starts


def run_starts(keys):
    """keys (n,) or (g, n) int64 sorted (lexicographically for 2-D); not validated."""
    ids = segment_ids(keys)
    # sync: the number of runs (ids count run heads: at most n whatever the keys)
    n_runs = min(int(ids[-1]) + 1, ids.size) if ids.size else 0
    return segment_starts(ids, n_runs)


def segment_reduce(values, starts, op, perm=None):
    """values (m, w); starts (s+1,) int64 non-decreasing; perm (n,) int64 in [0, m) or None.

    Starts are clipped into ``[0, n]`` (n = len(perm), or m) and perm
    entries into ``[0, m)``; segment j then reduces the positions
    ``[lo, max(lo, hi))`` of its clipped starts (identity where empty, and
    everywhere when ``m == 0`` with a perm: nothing to read).
    """
    if op not in OP_CODES:
        raise ValueError(f"op must be one of {SEGMENT_OPS}; got {op!r}")
    values = cupy.ascontiguousarray(cupy.asarray(values))
    starts = cupy.ascontiguousarray(cupy.asarray(starts, dtype=_I64))
    dtype = values.dtype
    m, w = values.shape
    s = starts.size - 1
    if op in ("any", "all"):
        out_dtype = np.dtype(np.bool_)
    elif op in ("argmin", "argmax"):
        out_dtype = _I64
    else:
        out_dtype = dtype
    out = cupy.empty((max(s, 0), w), dtype=out_dtype)
    if s <= 0 or w == 0:
        return out
    if perm is not None:
        perm = cupy.ascontiguousarray(cupy.asarray(perm, dtype=_I64))
        n_pos = perm.size
    else:
        n_pos = m
    code = OP_CODES[op]
    # Set by gs_segment_reduce when the starts are not non-decreasing; then
    # gs_segment_reduce_fallback computes the result (it exits at once otherwise).
    flag = cupy.zeros(1, dtype=np.int32) if m else cupy.ones(1, dtype=np.int32)

    if m:  # else nothing can be read: the fallback writes the identities
        # cl lanes per worker span the columns; rl = 256 / cl workers per block,
        # each consuming ``items`` merge items (see gs_segment_reduce).
        cl_log2 = min(5, _ceil_log2(w))
        rl = _THREADS >> cl_log2
        items = min(64, _RED_MAX_TILE // rl)
        tile = rl * items
        n_tiles = _grid.tiles(s + n_pos, tile)
        grid_y = _grid.blocks(w, 1 << cl_log2, _MAX_GRID_Y)
        carry_seg = cupy.empty(n_tiles, dtype=_I64)
        if op in ("argmin", "argmax"):
            # gs_arg_state<T>: (value, row), 16 bytes, or 32 for complex128.
            state_bytes = 16 if dtype.itemsize <= 8 else 32
            carry_val = cupy.empty(n_tiles * w * state_bytes, dtype=np.uint8)
        else:
            carry_val = cupy.empty((n_tiles, w), dtype=out_dtype)
        kernel = get_function("segment", "gs_segment_reduce", (dtype, code))
        # One block per tile, no loop (a tile loop costs this kernel registers it spills): past
        # 2**31 - 1 tiles (over 2**40 values, more than any device holds) it cannot launch.
        if n_tiles > _grid.DEVICE_MAX_GRID_X:
            raise ValueError(f"segment_reduce: {n_tiles} tiles exceed the grid limit of one launch")
        kernel(
            (n_tiles, grid_y), (_THREADS,),
            (values, _i64(m), _i64(w), starts, _i64(s), perm if perm is not None else _NULL, _i64(n_pos),
             _i32(cl_log2), _i32(items), out, carry_seg, carry_val, flag),
        )
        if n_tiles > 1:
            fixup = get_function("segment", "gs_segment_reduce_fixup", (dtype, code))
            warps_per_block = _THREADS // 32
            fixup(
                (_blocks(n_tiles, warps_per_block), _grid.blocks(w, 1, _MAX_GRID_Y)), (_THREADS,),
                (carry_seg, carry_val, _i64(n_tiles), _i64(w), _i64(s), values, out, flag),
            )
    fallback = get_function("segment", "gs_segment_reduce_fallback", (dtype, code))
    fallback(
        (min(_blocks(s * w), _FALLBACK_BLOCKS),), (_THREADS,),
        (values, _i64(m), _i64(w), starts, _i64(s), perm if perm is not None else _NULL, _i64(n_pos),
         flag, out),
    )
    return out


# --------------------------------------------------------------------------
# compress / expand
# --------------------------------------------------------------------------

def compress(rows, n_rows, index_dtype):
    """rows (n,) int64 sorted, in [0, n_rows); not validated.

    Rows out of range count in the nearest row (``indptr[0] == 0`` and
    ``indptr[n_rows] == n`` always); unsorted rows give some pointers in
    ``[0, n]``.
    """
    rows = cupy.ascontiguousarray(cupy.asarray(rows, dtype=_I64))
    n_rows = int(n_rows)
    index_dtype = np.dtype(index_dtype)
    kernel_dtype = index_dtype if index_dtype in (np.dtype(np.int32), _I64) else _I64
    indptr = cupy.empty(n_rows + 1, dtype=kernel_dtype)
    kernel = get_function("compress", "gs_compress", (_I64, kernel_dtype))
    kernel((_blocks(n_rows + 1),), (_THREADS,), (rows, _i64(rows.size), _i64(n_rows), indptr))
    return indptr if kernel_dtype == index_dtype else indptr.astype(index_dtype)


def expand(indptr, nnz, out=None):
    """indptr (n_rows + 1,) non-decreasing from 0 to nnz; not validated.

    Any other pointers give every position some row in ``[0, n_rows)``
    (0 without rows): the first row starts at 0, the last ends at nnz.
    """
    nnz = int(nnz)
    rows = cupy.empty(nnz, dtype=_I64) if out is None else out
    if nnz == 0:
        return rows
    if indptr.size < 2:  # no row to point at
        rows.fill(0)
        return rows
    indptr = _index_array(indptr)
    kernel = get_function("compress", "gs_expand", (indptr.dtype,))
    kernel((_blocks(nnz),), (_THREADS,), (indptr, _i64(indptr.size - 1), _i64(nnz), rows))
    return rows


def offsets(counts):
    """counts (n,) bool or integer, non-negative; not validated."""
    counts = cupy.asarray(counts)
    out = cupy.empty(counts.size + 1, dtype=_I64)
    out[:1] = 0
    if counts.size:
        cupy.cumsum(counts, dtype=_I64, out=out[1:])
    return out


# --------------------------------------------------------------------------
# scatter / gather
# --------------------------------------------------------------------------

def _as_words(arr):
    """A (r, w) C-contiguous array viewed as (r, w * k) unsigned words.

    Complex values become two words of their component's size, so no
    alignment beyond the component's is assumed.
    """
    size = arr.dtype.itemsize // (2 if arr.dtype.kind == "c" else 1)
    return arr.view(np.dtype(f"u{size}"))


def _row_launch(n: int, width: int):
    # 2**lpr_log2 lanes per row: the kernels loop over n << lpr_log2 threads.
    lpr_log2 = min(5, _ceil_log2(width))
    return (_blocks(n << lpr_log2),), lpr_log2


def scatter_dense(keys, values, out):
    """keys (n,) int64 unique, in [0, len(out)); values (n, w); out (size, w) C-contiguous.

    Keys outside ``[0, len(out))`` are dropped.
    """
    if not out.flags.c_contiguous:
        raise ValueError("scatter_dense: out must be C-contiguous (it is written in place)")
    keys = cupy.ascontiguousarray(cupy.asarray(keys, dtype=_I64))
    values = cupy.ascontiguousarray(cupy.asarray(values, dtype=out.dtype))
    n = keys.size
    if n == 0 or out.size == 0 or values.size == 0:
        return None
    src, dst = _as_words(values), _as_words(out.reshape(out.shape[0], -1))
    width = src.shape[1]
    grid, lpr_log2 = _row_launch(n, width)
    kernel = get_function("scatter", "gs_scatter_rows", (src.dtype,))
    kernel(grid, (_THREADS,), (keys, src, _i64(n), _i64(width), _i32(lpr_log2), _i64(out.shape[0]), dst))
    return None


def gather(values, index, fill=None):
    """values (m, w); index (n,) int64 in [0, m), or -1 where ``fill`` is given; not validated.

    Indices past the end read the last row, negative ones the first (or
    ``fill`` when given); with ``m == 0`` every row is ``fill`` (or 0).
    """
    values = cupy.ascontiguousarray(cupy.asarray(values))
    index = cupy.ascontiguousarray(cupy.asarray(index, dtype=_I64))
    if fill is not None:  # rows of a negative index take the fill: the kernel reads row 0 there, then overwrite
        if values.shape[0] == 0:  # nothing to read: every row is absent
            return cupy.full((index.size, values.shape[1]), fill, dtype=values.dtype)
        out = gather(values, index)
        # A masked copy, not a masked assignment: ``out[mask] = fill`` reads the mask's count back.
        cupy.copyto(out, fill, casting="unsafe", where=(index < 0)[:, None])
        return out
    m = values.shape[0]
    n = index.size
    if m == 0:  # nothing to read
        return cupy.zeros((n, values.shape[1]), dtype=values.dtype)
    out = cupy.empty((n, values.shape[1]), dtype=values.dtype)
    if n == 0 or out.size == 0:
        return out
    src, dst = _as_words(values), _as_words(out)
    width = src.shape[1]
    grid, lpr_log2 = _row_launch(n, width)
    kernel = get_function("scatter", "gs_gather_rows", (src.dtype,))
    kernel(grid, (_THREADS,), (src, _i64(m), index, _i64(n), _i64(width), _i32(lpr_log2), dst))
    return out


def take_columns(values, index):
    """values (g, m); index (n,) int64 in [0, m); not validated.

    Indices out of range read the nearest column (clipped); with ``m == 0``
    the result is zeros. One pass, every row at once.
    """
    values = cupy.ascontiguousarray(cupy.asarray(values))
    index = cupy.ascontiguousarray(cupy.asarray(index, dtype=_I64))
    g, m = values.shape
    n = index.size
    if m == 0:  # nothing to read
        return cupy.zeros((g, n), dtype=values.dtype)
    out = cupy.empty((g, n), dtype=values.dtype)
    if n == 0 or g == 0:
        return out
    words_per_item = 2 if values.dtype.kind == "c" else 1
    src, dst = _as_words(values), _as_words(out)
    kernel = get_function("scatter", "gs_take_columns", (src.dtype,))
    kernel((_blocks(n),), (_THREADS,),
           (src, _i64(g), _i64(m), index, _i64(n), _i64(words_per_item), dst))
    return out
