"""Launches of ``cuda_kernels/select.cu``: copies of runs of rows."""

from __future__ import annotations

import numpy as np

import gpusparse._kernels.cuda._grid as _grid
from gpusparse._kernels.cuda._backend import cupy, get_function

_I64 = np.dtype(np.int64)
_THREADS = 256
_WARPS_PER_BLOCK = _THREADS // 32
#: Enough blocks to fill any current GPU; more segments loop (grid-stride).
_MAX_BLOCKS = 65536


def _as_words(arr):
    size = arr.dtype.itemsize // (2 if arr.dtype.kind == "c" else 1)
    return arr.view(np.dtype(f"u{size}"))


def copy_segments(values, src_starts, dst_starts, lengths, out, values2=None, out2=None):
    """values (m, w), out (n, w) C-contiguous, one dtype; runs in bounds, destinations disjoint; not validated.

    Items whose destination row lies outside ``out`` are dropped; a source
    row outside ``values`` reads the nearest one (clipped; 0 when ``m == 0``).
    """
    if values2 is not None:
        copy_segments(values2, src_starts, dst_starts, lengths, out2)
    if not out.flags.c_contiguous:
        raise ValueError("copy_segments: out must be C-contiguous (it is written in place)")
    n_segments = int(lengths.size)
    if n_segments == 0 or values.shape[1] == 0 or out.shape[0] == 0:
        return None
    values = cupy.ascontiguousarray(values)
    src_starts = cupy.ascontiguousarray(src_starts, dtype=_I64)
    dst_starts = cupy.ascontiguousarray(dst_starts, dtype=_I64)
    lengths = cupy.ascontiguousarray(lengths, dtype=_I64)
    src, dst = _as_words(values), _as_words(out)
    blocks = _grid.blocks(n_segments, _WARPS_PER_BLOCK, _MAX_BLOCKS)
    kernel = get_function("select", "gs_copy_segments", (src.dtype,))
    kernel((blocks,), (_THREADS,), (src, np.int64(values.shape[0]), src_starts, dst_starts, lengths,
                                    np.int64(n_segments), np.int64(src.shape[1]), np.int64(out.shape[0]), dst))
    return None


def segment_search(keys, starts, ends, values, side="left"):
    """keys (n,) int32/int64 sorted within each [starts[i], ends[i]); values (s,) int64; not validated.

    Segments are clipped to ``[0, n]`` (an end before its start: empty).
    """
    n_segments = int(starts.size)
    out = cupy.empty(n_segments, dtype=_I64)
    if n_segments == 0:
        return out
    keys = cupy.ascontiguousarray(keys)
    if keys.dtype not in (np.int32, np.int64):
        keys = keys.astype(np.int64)
    starts = cupy.ascontiguousarray(starts, dtype=_I64)
    ends = cupy.ascontiguousarray(ends, dtype=_I64)
    values = cupy.ascontiguousarray(values, dtype=_I64)
    kernel = get_function("select", "gs_segment_search", (keys.dtype,))
    kernel((_grid.blocks(n_segments, _THREADS),), (_THREADS,),
           (keys, np.int64(keys.size), starts, ends, values, np.int64(n_segments), np.int32(side == "right"),
            out))
    return out


def bucket_order(keys, n_buckets):
    """keys (n,) int64 in [0, n_buckets); not validated.

    The stable radix sort (``sort_pairs``) on the bucket bits and
    ``compress`` of the sorted keys: the GPU's sort is already one
    onesweep-style pass per digit, so no counting kernel of its own. Keys
    out of range are clipped (the sort clips them as it loads them), so
    ``perm`` is a permutation whatever they hold.
    """
    import gpusparse._kernels.cuda._primitives as cuda
    n_buckets = max(int(n_buckets), 0)
    bits = max(n_buckets - 1, 0).bit_length()
    sorted_keys, perm = cuda._sort_pairs(keys, None, bits, n_buckets - 1)
    dest = cupy.empty_like(perm)
    dest[perm] = cupy.arange(perm.size, dtype=_I64)
    return dest, cuda.compress(sorted_keys, n_buckets, _I64)
