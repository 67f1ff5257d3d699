"""Copies of runs of rows on the CPU (the gathers behind row selection and joins)."""

from __future__ import annotations

import numpy as np
from numba import prange, uint64

from gpusparse._kernels._numba import jit, n_threads
from gpusparse._kernels.cpu._common import PARALLEL_MIN, empty

# Indices are cast to uint64 inside the loops: Numba then skips the
# negative-index wraparound on every access, which lets the copies vectorise
# (2-3x faster than int64 indexing for the short runs of sparse rows). Runs
# are spread over the threads (prange). Each run is clipped to both buffers
# first (_clip_run), once per run, so no value of the starts and lengths
# reaches outside them.


@jit()
def _clip_run(src, dst, length, n_src, n_dst):
    """(src, dst, length) of a run of rows clipped to n_src source and n_dst destination rows."""
    src = min(max(src, 0), n_src)
    dst = min(max(dst, 0), n_dst)
    length = max(min(length, n_src - src, n_dst - dst), 0)
    return uint64(src), uint64(dst), uint64(length)

@jit(parallel=True)
def _copy_segments(values, src_starts, dst_starts, lengths, width, out):
    # values and out are flat: row r is [r * width, (r + 1) * width)
    w = uint64(width)
    n_src, n_dst = values.size // width, out.size // width
    for s in prange(lengths.size):
        src, dst, n = _clip_run(src_starts[s], dst_starts[s], lengths[s], n_src, n_dst)
        src *= w
        dst *= w
        for e in range(n * w):
            out[dst + e] = values[src + e]


@jit(parallel=True)
def _copy_segments_pair(values, values2, src_starts, dst_starts, lengths, width, width2, out, out2):
    # Two arrays moved by the same runs in one pass: the cache misses of a
    # run's first rows in both arrays overlap instead of adding up.
    w, w2 = uint64(width), uint64(width2)
    n_src = min(values.size // max(width, 1), values2.size // max(width2, 1))
    n_dst = min(out.size // max(width, 1), out2.size // max(width2, 1))
    for s in prange(lengths.size):
        src, dst, n = _clip_run(src_starts[s], dst_starts[s], lengths[s], n_src, n_dst)
        for e in range(n * w):
            out[dst * w + e] = values[src * w + e]
        for e in range(n * w2):
            out2[dst * w2 + e] = values2[src * w2 + e]


@jit(parallel=True)
def _copy_pair_unit(values, values2, src_starts, dst_starts, lengths, out, out2):
    # _copy_segments_pair for rows of one word each (indices and scalar values)
    n_src, n_dst = min(values.size, values2.size), min(out.size, out2.size)
    for s in prange(lengths.size):
        src, dst, n = _clip_run(src_starts[s], dst_starts[s], lengths[s], n_src, n_dst)
        for e in range(n):
            out[dst + e] = values[src + e]
        for e in range(n):
            out2[dst + e] = values2[src + e]


def _words(arr):
    # Only bytes move: one compiled kernel per item size (bool as uint8,
    # complex as twice as many real words).
    if arr.dtype == np.bool_:
        return arr.view(np.uint8)
    if arr.dtype.kind == "c":
        return arr.view(np.float32 if arr.dtype == np.complex64 else np.float64)
    return arr


def copy_segments(values, src_starts, dst_starts, lengths, out, values2=None, out2=None):
    """values (m, w), out (n, w) C-contiguous, one dtype; runs in bounds, destinations disjoint; not validated.

    Runs reaching outside ``values`` or ``out`` are clipped to them.

    Writes ``out[dst_starts[s] + j] = values[src_starts[s] + j]`` for every
    segment ``s`` and ``0 <= j < lengths[s]`` (and the same for ``values2``
    into ``out2`` when given, in the same pass); returns None.
    """
    if lengths.size == 0:
        return None
    flat_in, flat_out = _words(values), _words(out)
    width = flat_in.shape[1]
    if values2 is None:
        if width:
            _copy_segments(flat_in.reshape(-1), src_starts, dst_starts, lengths, np.int64(width),
                           flat_out.reshape(-1))
        return None
    flat_in2, flat_out2 = _words(values2), _words(out2)
    if width == 1 and flat_in2.shape[1] == 1:
        _copy_pair_unit(flat_in.reshape(-1), flat_in2.reshape(-1), src_starts, dst_starts, lengths,
                        flat_out.reshape(-1), flat_out2.reshape(-1))
    else:
        _copy_segments_pair(flat_in.reshape(-1), flat_in2.reshape(-1), src_starts, dst_starts, lengths,
                            np.int64(width), np.int64(flat_in2.shape[1]), flat_out.reshape(-1),
                            flat_out2.reshape(-1))
    return None


@jit(parallel=True)
def _segment_search(keys, starts, ends, values, right, out):
    n = keys.size
    for s in prange(starts.size):
        lo = min(max(starts[s], 0), n)
        hi = min(max(ends[s], lo), n)
        v = values[s]
        while lo < hi:
            mid = (lo + hi) >> 1
            k = keys[mid]
            if k < v or (right and k == v):
                lo = mid + 1
            else:
                hi = mid
        out[s] = lo


def segment_search(keys, starts, ends, values, side="left"):
    """keys (n,) int32/int64 sorted within each [starts[i], ends[i]); values (s,) int64; not validated.

    Returns out (s,) int64: the first position p in ``[starts[i], ends[i]]``
    with ``keys[p] >= values[i]`` (``side="left"``) or ``> values[i]``
    (``"right"``), as ``numpy.searchsorted`` on each segment, offset by its start.
    Segments are clipped to ``[0, n]`` (an end before its start: empty).
    """
    out = empty(starts.size, dtype=np.int64)
    _segment_search(keys, starts, ends, values, side == "right", out)
    return out


@jit(parallel=True)
def _chunk_histograms(keys, hist):
    # hist (n_chunks, n_buckets + 1): chunk c counts its keys in row c
    n_chunks, n = hist.shape[0], keys.size
    chunk = (n + n_chunks - 1) // n_chunks
    last = hist.shape[1] - 2
    for c in prange(n_chunks):
        for i in range(c * chunk, min(n, (c + 1) * chunk)):
            hist[c, min(max(keys[i], 0), last)] += 1


@jit()
def _bucket_scan(hist, indptr):
    # exclusive scan in (bucket, chunk) order: hist[c, b] becomes the first
    # position of chunk c's keys in bucket b, so placement stays stable
    n_chunks = hist.shape[0]
    running = 0
    for b in range(indptr.size - 1):
        indptr[b] = running
        for c in range(n_chunks):
            count = hist[c, b]
            hist[c, b] = running
            running += count
    indptr[indptr.size - 1] = running


@jit(parallel=True)
def _chunk_place(keys, hist, dest):
    n_chunks, n = hist.shape[0], keys.size
    chunk = (n + n_chunks - 1) // n_chunks
    last = hist.shape[1] - 2
    for c in prange(n_chunks):
        for i in range(c * chunk, min(n, (c + 1) * chunk)):
            b = min(max(keys[i], 0), last)
            dest[i] = hist[c, b]
            hist[c, b] += 1


def bucket_order(keys, n_buckets):
    """keys (n,) int64 in [0, n_buckets); not validated.

    Keys out of range are clipped.

    Returns ``(dest, indptr)``: ``dest[i]`` is the position of element ``i``
    in the stable sorted order of ``keys`` (equal keys keep their input
    order), and ``indptr`` (n_buckets + 1,) int64 the first position of each
    bucket. A counting sort (SciPy's ``tocsc`` ordering), for small ranges:
    each thread counts and places a chunk of the keys, with its own
    histogram as long as the histograms stay smaller than the keys.
    """
    n_buckets = int(n_buckets)
    n_chunks = max(1, min(n_threads(), 2 * keys.size // max(n_buckets, 1))) if keys.size >= PARALLEL_MIN else 1
    hist = np.zeros((n_chunks, n_buckets + 1), dtype=np.int64)
    indptr = np.empty(n_buckets + 1, dtype=np.int64)
    dest = empty(keys.size, dtype=np.int64)
    _chunk_histograms(keys, hist)
    _bucket_scan(hist, indptr)
    _chunk_place(keys, hist, dest)
    return dest, indptr
