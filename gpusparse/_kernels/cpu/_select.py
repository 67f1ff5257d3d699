"""Copies of runs of rows on the CPU (the gathers behind row selection and joins)."""

from __future__ import annotations

import numpy as np
from numba import prange, uint64

from gpusparse._kernels._numba import jit, n_threads
from gpusparse._kernels.cpu._common import PARALLEL_MIN, as_words, empty, read_only

# Indices are cast to uint64 inside the loops: Numba then skips the
# negative-index wraparound on every access, which lets the copies vectorise
# (2-3x faster than int64 indexing for the short runs of sparse rows). Runs
# are spread over the threads (prange). Whatever the starts and lengths
# hold, a run writes only the items whose destination row lies in ``out``
# (the others are dropped) and reads each from its source row clipped into
# ``values`` (as the CUDA kernel does); _window finds those items once per
# run, and a run whose sources all lie in ``values`` (every valid one) is
# copied by the contiguous loops.


@jit()
def _window(src, dst, length, n_src, n_dst):
    """Items [j0, j1) of a run whose destination row lies in [0, n_dst), and whether their sources lie in [0, n_src).

    Every sum is formed only where it cannot overflow int64, so extreme
    starts and lengths give an empty or clipped window, never a wrapped one.
    """
    if length <= 0 or dst >= n_dst:
        return 0, 0, True
    end = dst + length if dst <= 0 or length <= n_dst - dst else n_dst  # dst + length, saturated
    if end <= 0:
        return 0, 0, True
    j0 = -dst if dst < 0 else 0
    j1 = min(end, n_dst) - dst
    inside = -2**62 <= src < n_src and j0 >= -src and j1 <= n_src - src
    return j0, j1, inside


@jit()
def _rows(size, width):
    # Rows of a flat array of ``size`` words in rows of ``width`` words; a
    # zero-width array (an entry without dense elements) limits nothing.
    # (Sizes, not arrays: one compilation whatever the arrays' types.)
    return size // width if width > 0 else 2**62


@jit()
def _copy_clipped(values, out, src, dst, j0, j1, width, n_src):
    # The slow path of a malformed run: one row at a time, source clipped.
    for j in range(j0, j1):
        if n_src <= 0:
            row = -1
        elif src >= n_src or (src > 0 and j > n_src - src):
            row = n_src - 1
        else:
            row = min(max(src + j, 0), n_src - 1)
        d = uint64(dst + j) * uint64(width)
        for e in range(uint64(width)):
            out[d + e] = values[uint64(row) * uint64(width) + e] if row >= 0 else 0


@jit(parallel=True)
def _copy_segments(values, src_starts, dst_starts, lengths, width, out):
    # values and out are flat: row r is [r * width, (r + 1) * width)
    w = uint64(width)
    n_src, n_dst = values.size // width, out.size // width
    for s in prange(lengths.size):
        j0, j1, inside = _window(src_starts[s], dst_starts[s], lengths[s], n_src, n_dst)
        if not inside:
            _copy_clipped(values, out, src_starts[s], dst_starts[s], j0, j1, width, n_src)
            continue
        src = uint64(src_starts[s] + j0) * w
        dst = uint64(dst_starts[s] + j0) * w
        for e in range(uint64(j1 - j0) * w):
            out[dst + e] = values[src + e]


@jit(parallel=True)
def _copy_segments_pair(values, values2, src_starts, dst_starts, lengths, width, width2, out, out2):
    # Two arrays moved by the same runs in one pass: the cache misses of a
    # run's first rows in both arrays overlap instead of adding up.
    w, w2 = uint64(width), uint64(width2)
    n_src = min(_rows(values.size, width), _rows(values2.size, width2))
    n_dst = min(_rows(out.size, width), _rows(out2.size, width2))
    for s in prange(lengths.size):
        j0, j1, inside = _window(src_starts[s], dst_starts[s], lengths[s], n_src, n_dst)
        if not inside:
            _copy_clipped(values, out, src_starts[s], dst_starts[s], j0, j1, width, n_src)
            _copy_clipped(values2, out2, src_starts[s], dst_starts[s], j0, j1, width2, n_src)
            continue
        src = uint64(src_starts[s] + j0)
        dst = uint64(dst_starts[s] + j0)
        n = uint64(j1 - j0)
        for e in range(n * w):
            out[dst * w + e] = values[src * w + e]
        for e in range(n * w2):
            out2[dst * w2 + e] = values2[src * w2 + e]


@jit(parallel=True)
def _copy_pair_unit(values, values2, src_starts, dst_starts, lengths, out, out2):
    # _copy_segments_pair for rows of one word each (indices and scalar values)
    n_src, n_dst = min(values.size, values2.size), min(out.size, out2.size)
    for s in prange(lengths.size):
        j0, j1, inside = _window(src_starts[s], dst_starts[s], lengths[s], n_src, n_dst)
        if not inside:
            _copy_clipped(values, out, src_starts[s], dst_starts[s], j0, j1, np.int64(1), n_src)
            _copy_clipped(values2, out2, src_starts[s], dst_starts[s], j0, j1, np.int64(1), n_src)
            continue
        src = uint64(src_starts[s] + j0)
        dst = uint64(dst_starts[s] + j0)
        n = uint64(j1 - j0)
        for e in range(n):
            out[dst + e] = values[src + e]
        for e in range(n):
            out2[dst + e] = values2[src + e]


def copy_segments(values, src_starts, dst_starts, lengths, out, values2=None, out2=None):
    """values (m, w), out (n, w) C-contiguous, one dtype; runs in bounds, destinations disjoint; not validated.

    Items whose destination lies outside ``out`` are dropped; a source
    row outside ``values`` reads the nearest one (0 without rows).

    Writes ``out[dst_starts[s] + j] = values[src_starts[s] + j]`` for every
    segment ``s`` and ``0 <= j < lengths[s]`` (and the same for ``values2``
    into ``out2`` when given, in the same pass); returns None.
    """
    if lengths.size == 0:
        return None
    src_starts, dst_starts, lengths = read_only(src_starts), read_only(dst_starts), read_only(lengths)
    flat_in, flat_out = read_only(as_words(values)), as_words(out)
    width = flat_in.shape[1]
    if values2 is None:
        if width:
            _copy_segments(flat_in.reshape(-1), src_starts, dst_starts, lengths, np.int64(width),
                           flat_out.reshape(-1))
        return None
    flat_in2, flat_out2 = read_only(as_words(values2)), as_words(out2)
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
