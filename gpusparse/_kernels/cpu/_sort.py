"""Sorting on the CPU, and what sorted keys give: ``sort_pairs``, ``sortedness`` and runs of equal keys.

``sort_pairs`` is a stable radix sort of int64 keys with an int64 payload.
``sortedness``, ``segment_ids``, ``segment_starts`` and ``run_starts`` take
``(n,)`` or ``(g, n)`` int64 keys, rows compared lexicographically (row 0
first); the run counts are two passes over chunks of the keys, one chunk per
thread: count the run heads of each chunk, then number or compact them from
the counts before the chunk.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from gpusparse._kernels._numba import jit, n_threads

from gpusparse._kernels.cpu._common import PARALLEL_MIN, SPARE_STRIDE, empty, empty_like, read_only


# --------------------------------------------------------------------------
# sort_pairs: stable LSD radix sort, 11-bit digits, chunk-parallel
# --------------------------------------------------------------------------

_DIGIT_BITS = 11
_RADIX = 1 << _DIGIT_BITS


@jit(parallel=True)
def _radix_histograms(keys, shift, n_passes, n_chunks):
    # hist[c, p, digit]: how many keys of chunk c have ``digit`` in pass p,
    # pass p reading the bits from shift + p * _DIGIT_BITS.
    n = keys.size
    chunk = (n + n_chunks - 1) // n_chunks
    hist = np.zeros((n_chunks, n_passes, _RADIX), dtype=np.int64)
    for c in prange(n_chunks):
        lo = c * chunk
        hi = min(n, lo + chunk)
        for i in range(lo, hi):
            key = keys[i] >> shift
            for p in range(n_passes):
                hist[c, p, (key >> (p * _DIGIT_BITS)) & (_RADIX - 1)] += 1
    return hist


@jit(parallel=True)
def _radix_scatter(src_k, src_v, dst_k, dst_v, hist_p, shift):
    # One stable pass: chunk c writes its keys, in order, after every key of
    # a smaller digit and after the same digit's keys of chunks before it.
    n_chunks = hist_p.shape[0]
    n = src_k.size
    chunk = (n + n_chunks - 1) // n_chunks
    offsets = np.empty_like(hist_p)
    running = np.int64(0)
    for digit in range(_RADIX):
        for c in range(n_chunks):
            offsets[c, digit] = running
            running += hist_p[c, digit]
    for c in prange(n_chunks):
        pos = offsets[c]
        lo = c * chunk
        hi = min(n, lo + chunk)
        for i in range(lo, hi):
            key = src_k[i]
            digit = (key >> shift) & (_RADIX - 1)
            j = pos[digit]
            dst_k[j] = key
            dst_v[j] = src_v[i]
            pos[digit] = j + 1


_LOCAL_MAX_BITS = 11


@jit()
def _local_lsd(keys, values, spare_k, spare_v, n_bits):
    # Stable LSD sort of keys/values (one bucket, in cache) on the low
    # n_bits, ping-ponging with the spare buffers (at least as long); digits
    # are sized so the passes are as few and as even as possible, and the
    # result is copied back when it ends in the spare buffers.
    n = keys.size
    if n < 2 or n_bits <= 0:
        return
    n_passes = (n_bits + _LOCAL_MAX_BITS - 1) // _LOCAL_MAX_BITS
    bits = (n_bits + n_passes - 1) // n_passes
    mask = (np.int64(1) << bits) - 1
    count = np.empty(np.int64(1) << bits, dtype=np.int64)
    src_k, src_v, dst_k, dst_v = keys, values, spare_k, spare_v
    for p in range(n_passes):
        shift = p * bits
        for d in range(count.size):  # loops, not slice assignments: faster to compile
            count[d] = 0
        for i in range(n):
            count[(src_k[i] >> shift) & mask] += 1
        total = 0
        for d in range(count.size):
            c = count[d]
            count[d] = total
            total += c
        for i in range(n):
            key = src_k[i]
            d = (key >> shift) & mask
            j = count[d]
            dst_k[j] = key
            dst_v[j] = src_v[i]
            count[d] = j + 1
        src_k, dst_k = dst_k, src_k
        src_v, dst_v = dst_v, src_v
    if n_passes % 2 == 1:
        for i in range(n):
            keys[i] = spare_k[i]
            values[i] = spare_v[i]


#: Buckets longer than this are sorted by parallel LSD passes of their own
#: instead of in cache by one worker (skewed keys, e.g. power-law graphs).
_BIG_BUCKET = 1 << 16


@jit(parallel=True)
def _sort_buckets(keys, values, bounds, n_bits, n_workers, max_len):
    # Worker w sorts buckets w, w + n_workers, ... of at most max_len keys
    # in place, with one spare buffer of the longest such bucket for all.
    n_buckets = bounds.size - 1
    longest = 0
    for b in range(n_buckets):
        size = bounds[b + 1] - bounds[b]
        if size <= max_len:
            longest = max(longest, size)
    for w in prange(n_workers):
        spare_k = np.empty(longest, dtype=keys.dtype)
        spare_v = np.empty(longest, dtype=values.dtype)
        for b in range(w, n_buckets, n_workers):
            lo = bounds[b]
            hi = bounds[b + 1]
            if hi - lo <= max_len:
                _local_lsd(keys[lo:hi], values[lo:hi], spare_k, spare_v, n_bits)


def _lsd_sort(keys, values, key_bits, n_chunks):
    # Global LSD passes; used for short inputs and few key bits.
    n = keys.size
    n_passes = max(1, -(-int(key_bits) // _DIGIT_BITS))
    # Digit totals do not depend on the order, so one read finds the passes
    # that move nothing (every key has the same digit) and can be skipped.
    totals = _radix_histograms(read_only(keys), 0, n_passes, 1)[0]
    src_k, src_v = keys, values
    spare = None
    for p in range(n_passes):
        if n == 0 or totals[p].max() == n:
            continue
        if spare is None:
            dst_k, dst_v = empty_like(keys), empty_like(values)
        else:
            dst_k, dst_v = spare
        if n_chunks == 1:
            hist_p = totals[p:p + 1]
        else:  # per-chunk counts change with the order, so count again
            hist_p = _radix_histograms(read_only(src_k), p * _DIGIT_BITS, 1, n_chunks)[:, 0, :]
        _radix_scatter(read_only(src_k), read_only(src_v), dst_k, dst_v, hist_p, p * _DIGIT_BITS)
        if src_k is not keys:
            spare = (src_k, src_v)
        src_k, src_v = dst_k, dst_v
    if src_k is keys:
        return keys.copy(), values.copy()
    return src_k, src_v


def sort_pairs(keys, values, key_bits):
    """keys (n,) int64 in [0, 2**key_bits); values (n,) int64 or None; not validated.

    Large inputs take one most-significant-digit pass that splits the keys
    into 2048 buckets by their top 11 bits, then sort every bucket on the
    remaining bits in cache, buckets in parallel; a bucket too large for
    that (skewed keys) gets parallel least-significant-digit passes of its
    own. Small inputs and short keys take plain least-significant-digit
    passes.
    """
    n = keys.size
    if values is None:
        values = np.arange(n, dtype=np.int64)
    key_bits = int(key_bits)
    n_chunks = n_threads() if n >= PARALLEL_MIN else 1
    if n < PARALLEL_MIN or key_bits <= 2 * _DIGIT_BITS:
        return _lsd_sort(keys, values, key_bits, n_chunks)
    shift = key_bits - _DIGIT_BITS
    hist = _radix_histograms(read_only(keys), shift, 1, n_chunks)[:, 0, :]
    a_k, a_v = empty_like(keys), empty_like(values)
    _radix_scatter(read_only(keys), read_only(values), a_k, a_v, hist, shift)
    bounds = np.zeros(_RADIX + 1, dtype=np.int64)
    np.cumsum(hist.sum(axis=0), out=bounds[1:])
    _sort_buckets(a_k, a_v, bounds, shift, n_chunks * 4 if n_chunks > 1 else 1, _BIG_BUCKET)
    sizes = np.diff(bounds)
    for b in np.flatnonzero(sizes > _BIG_BUCKET):
        lo, hi = int(bounds[b]), int(bounds[b + 1])
        sorted_k, sorted_v = _lsd_sort(a_k[lo:hi], a_v[lo:hi], shift, n_chunks)
        a_k[lo:hi] = sorted_k
        a_v[lo:hi] = sorted_v
    return a_k, a_v


# --------------------------------------------------------------------------
# sortedness and runs of equal keys
# --------------------------------------------------------------------------

@jit()
def _compare_lex(keys, i, j):
    # -1, 0, 1 comparing column i with column j of (g, n) keys.
    for r in range(keys.shape[0]):
        a = keys[r, i]
        b = keys[r, j]
        if a < b:
            return -1
        if a > b:
            return 1
    return 0


@jit()
def _sortedness(keys):
    result = np.int8(2)
    for i in range(1, keys.shape[1]):
        c = _compare_lex(keys, i - 1, i)
        if c > 0:
            return np.int8(0)
        if c == 0:
            result = np.int8(1)
    return result


def _as_rows(keys):
    return keys.reshape(1, -1) if keys.ndim == 1 else keys


#: Keys compared per block of the one-row order test: the block's loop has
#: no exit (so it vectorises); an unsorted input stops after its first block.
_ORDER_BLOCK = 4096


@jit()
def _sortedness_row(keys):
    # keys (n,): 0 if some key is smaller than the one before, else 2 if
    # strictly increasing, else 1; tested block by block.
    n = keys.shape[0]
    result = np.int8(2)
    for lo in range(1, n, _ORDER_BLOCK):
        hi = min(lo + _ORDER_BLOCK, n)
        down = False
        same = False
        for i in range(np.uintp(lo), np.uintp(hi)):
            a = keys[i - 1]
            b = keys[i]
            down |= a > b
            same |= a == b
        if down:
            return np.int8(0)
        if same:
            result = np.int8(1)
    return result


def sortedness(keys):
    """keys (n,) or (g, n) int64, rows compared lexicographically (row 0 first)."""
    rows = _as_rows(keys)
    if rows.shape[0] == 1:
        return np.asarray(_sortedness_row(rows[0]), dtype=np.int8)
    return np.asarray(_sortedness(rows), dtype=np.int8)


@jit()
def _is_head(keys, i):
    # Whether a run of equal keys starts at i (i > 0). One key row, the
    # common case, is a single comparison the loops below vectorise.
    if keys.shape[0] == 1:
        return keys[0, i] != keys[0, i - 1]
    return _compare_lex(keys, i - 1, i) != 0


@jit(parallel=True)
def _number_runs(keys, n_chunks, offsets, out):
    # Second pass of segment_ids: number the runs of each chunk from the
    # number of run heads before it (offsets, from _run_head_counts).
    n = keys.shape[1]
    chunk = (n + n_chunks - 1) // n_chunks
    for c in prange(n_chunks):
        lo = c * chunk
        hi = min(n, lo + chunk)
        current = offsets[c] - 1
        if lo == 0 and hi > 0:
            current += 1
            out[0] = current
            lo = 1
        for i in range(lo, hi):
            current += _is_head(keys, i)
            out[i] = current


def _head_offsets(rows):
    """``(n_chunks, offsets)``: run heads before each chunk (first pass of segment_ids / run_starts)."""
    n_chunks = n_threads() if rows.shape[1] >= PARALLEL_MIN else 1
    offsets = np.zeros(n_chunks + 1, dtype=np.int64)
    _run_head_counts(rows, n_chunks, offsets)
    np.cumsum(offsets, out=offsets)
    return n_chunks, offsets


def segment_ids(keys):
    """keys (n,) or (g, n) int64 sorted (lexicographically for 2-D); not validated."""
    rows = _as_rows(keys)
    out = empty(rows.shape[1], dtype=np.int64)
    n_chunks, offsets = _head_offsets(rows)
    _number_runs(rows, n_chunks, offsets, out)
    return out


@jit(parallel=True)
def _segment_starts(ids, out):
    n = ids.size
    n_segments = out.size - 1
    for i in prange(n):
        if i == 0 or ids[i] != ids[i - 1]:
            s = ids[i]
            if 0 <= s < n_segments:  # other ids are dropped
                out[s] = i
    out[n_segments] = n


def segment_starts(ids, n_segments):
    """ids (n,) int64 non-decreasing from 0 with no gaps, as segment_ids returns."""
    out = empty(int(n_segments) + 1, dtype=np.int64)
    _segment_starts(ids, out)
    return out


@jit(parallel=True)
def _run_head_counts(keys, n_chunks, counts):
    n = keys.shape[1]
    chunk = (n + n_chunks - 1) // n_chunks
    for c in prange(n_chunks):
        lo = c * chunk
        hi = min(n, lo + chunk)
        count = 0
        if lo == 0 and hi > 0:
            count = 1
            lo = 1
        if keys.shape[0] == 1:  # one key row: a branch-free loop that vectorises
            row = keys[0]
            for i in range(np.uintp(lo), np.uintp(hi)):
                count += row[i] != row[i - 1]
        else:
            for i in range(lo, hi):
                count += _is_head(keys, i)
        counts[c + 1] = count


@jit(parallel=True)
def _run_heads(keys, n_chunks, offsets, out):
    # Branch-free compaction (half the keys repeated makes "is this a head"
    # a coin toss): every position is written, to the next output slot when
    # it is a head and to the chunk's spare slot past the outputs if not.
    n = keys.shape[1]
    chunk = (n + n_chunks - 1) // n_chunks
    last = offsets[n_chunks]
    for c in prange(n_chunks):
        lo = c * chunk
        hi = min(n, lo + chunk)
        j = offsets[c]
        spare = last + 1 + SPARE_STRIDE * c
        if lo == 0 and hi > 0:
            out[0] = 0
            j += 1
            lo = 1
        if keys.shape[0] == 1:
            row = keys[0]
            for i in range(np.uintp(lo), np.uintp(hi)):
                head = row[i] != row[i - 1]
                out[j if head else spare] = i
                j += head
        else:
            for i in range(lo, hi):
                head = _is_head(keys, i)
                out[j if head else spare] = i
                j += head
    out[last] = n


def run_starts(keys):
    """keys (n,) or (g, n) int64 sorted (lexicographically for 2-D); not validated."""
    rows = _as_rows(keys)
    n_chunks, offsets = _head_offsets(rows)
    n_runs = int(offsets[-1])
    out = empty(n_runs + 1 + SPARE_STRIDE * n_chunks, dtype=np.int64)  # spare slots past the starts
    _run_heads(rows, n_chunks, offsets, out)
    return out[: n_runs + 1]
