"""Merging two sorted key sets on the CPU: union and intersection plans.

The plan of a binary elementwise operation on two coalesced sparse arrays
is the merge of their linear keys: for every output key, the position of
that key in ``a`` and in ``b`` (or -1 where the key is missing). The work
is cut by merge-path partitioning (Odeh, Green, Mwassi, Shmueli and
Birk, "Merge Path", 2012): chunk ``c`` of ``n_chunks`` owns the diagonals
``[c * per, (c + 1) * per)`` of the ``len(a) + len(b)`` grid, found by one
binary search each, so every thread merges the same number of keys however
the keys interleave. A chunk first counts its outputs, the counts are
scanned, then every chunk writes its outputs from its offset.

A walk is a chain: which key comes next depends on the comparison of the
keys just loaded, so one walk waits on its own loads at every step. Each
thread therefore walks ``LANES`` neighbouring chunks in lockstep, their
steps independent (4M + 4M keys, 2 threads: counting 14 -> 5 ms).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from gpusparse._kernels._numba import jit, n_threads
from gpusparse._kernels.cpu._common import (
    PARALLEL_MIN, SPARE_STRIDE, as_words, empty, read_only, row_range, run_chunks,
)
from gpusparse._kernels.cpu._layout import offsets

_HOW = {"union": 0, "intersection": 1}
#: Chunks one thread walks in lockstep (see the module notes).
LANES = 4


@jit()
def _split(a, b, diag):
    # (i, j): how many keys of a and of b come before merge diagonal ``diag``
    # (a first on ties), moved so that equal keys a[i-1] == b[j] never fall
    # on different sides of the split.
    na, nb = a.size, b.size
    lo = max(0, diag - nb)
    hi = min(diag, na)
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] <= b[diag - mid - 1]:
            lo = mid + 1
        else:
            hi = mid
    i = lo
    j = diag - lo
    if i > 0 and j < nb and a[i - 1] == b[j]:
        j += 1
    return i, j


@jit()
def _count_step(a, b, i, j, m):
    # One branch-free step of a walk (the comparisons of interleaved random
    # keys are unpredictable): advance past the smaller key, count a match.
    x = a[i]
    y = b[j]
    return i + (x <= y), j + (y <= x), m + (x == y)


@jit()
def _union_step(a, b, i, j, n, keys, ia, ib):
    x = a[i]
    y = b[j]
    take_a = x <= y
    take_b = y <= x
    keys[n] = x if take_a else y
    ia[n] = i if take_a else -1
    ib[n] = j if take_b else -1
    return i + take_a, j + take_b, n + 1


@jit()
def _count_matches(a, b, i, i_end, j, j_end):
    # Equal pairs in a[i:i_end], b[j:j_end].
    m = np.int64(0)  # not the literal 0: _count_lanes passes an int64 to _count_step
    while i < i_end and j < j_end:
        i, j, m = _count_step(a, b, i, j, m)
    return m


@jit()
def _write_union(a, b, i, i_end, j, j_end, out, keys, ia, ib):
    n = out
    while i < i_end and j < j_end:
        i, j, n = _union_step(a, b, i, j, n, keys, ia, ib)
    while i < i_end:
        keys[n] = a[i]
        ia[n] = i
        ib[n] = -1
        n += 1
        i += 1
    while j < j_end:
        keys[n] = b[j]
        ia[n] = -1
        ib[n] = j
        n += 1
        j += 1


@jit()
def _write_intersection(a, b, i, i_end, j, j_end, out, keys, ia, ib):
    # The walk of _count_matches, writing on a match (a branch taken once
    # per output, so it costs little whether matches are rare or common).
    n = out
    while i < i_end and j < j_end:
        x = a[i]
        y = b[j]
        if x == y:
            keys[n] = x
            ia[n] = i
            ib[n] = j
            n += 1
        i += x <= y
        j += y <= x


@jit()
def _intersection_step(a, b, i, j, n, keys, ia, ib, spare):
    # Branch-free: a step without a match writes to a spare slot past the
    # outputs (a neighbouring lane's first output sits right after ours).
    x = a[i]
    y = b[j]
    match = x == y
    t = n if match else spare
    keys[t] = x
    ia[t] = i
    ib[t] = j
    return i + (x <= y), j + (y <= x), n + match


@jit()
def _lane(bounds, c):
    return bounds[c, 0], bounds[c + 1, 0], bounds[c, 1], bounds[c + 1, 1]


@jit()
def _count_lanes(a, b, how, bounds, g, counts):
    # Outputs of chunks LANES*g .. LANES*g + 3 into counts, walked in lockstep.
    c = LANES * g
    i0, e0, j0, f0 = _lane(bounds, c)
    i1, e1, j1, f1 = _lane(bounds, c + 1)
    i2, e2, j2, f2 = _lane(bounds, c + 2)
    i3, e3, j3, f3 = _lane(bounds, c + 3)
    m0 = m1 = m2 = m3 = 0
    while i0 < e0 and j0 < f0 and i1 < e1 and j1 < f1 and i2 < e2 and j2 < f2 and i3 < e3 and j3 < f3:
        i0, j0, m0 = _count_step(a, b, i0, j0, m0)
        i1, j1, m1 = _count_step(a, b, i1, j1, m1)
        i2, j2, m2 = _count_step(a, b, i2, j2, m2)
        i3, j3, m3 = _count_step(a, b, i3, j3, m3)
    m = (m0 + _count_matches(a, b, i0, e0, j0, f0), m1 + _count_matches(a, b, i1, e1, j1, f1),
         m2 + _count_matches(a, b, i2, e2, j2, f2), m3 + _count_matches(a, b, i3, e3, j3, f3))
    for lane in range(LANES):
        i, i_end, j, j_end = _lane(bounds, c + lane)
        counts[c + lane] = m[lane] if how == 1 else (i_end - i) + (j_end - j) - m[lane]


@jit()
def _write_lanes(a, b, how, bounds, starts, keys, ia, ib, g):
    # The outputs of chunks LANES*g .. LANES*g + 3, walked in lockstep; each
    # lane finishes alone with the one-chunk writers.
    c = LANES * g
    i0, e0, j0, f0 = _lane(bounds, c)
    i1, e1, j1, f1 = _lane(bounds, c + 1)
    i2, e2, j2, f2 = _lane(bounds, c + 2)
    i3, e3, j3, f3 = _lane(bounds, c + 3)
    n0, n1, n2, n3 = starts[c], starts[c + 1], starts[c + 2], starts[c + 3]
    spare = starts[starts.size - 1] + SPARE_STRIDE * g  # a cache line of its own
    if how == 0:
        while i0 < e0 and j0 < f0 and i1 < e1 and j1 < f1 and i2 < e2 and j2 < f2 and i3 < e3 and j3 < f3:
            i0, j0, n0 = _union_step(a, b, i0, j0, n0, keys, ia, ib)
            i1, j1, n1 = _union_step(a, b, i1, j1, n1, keys, ia, ib)
            i2, j2, n2 = _union_step(a, b, i2, j2, n2, keys, ia, ib)
            i3, j3, n3 = _union_step(a, b, i3, j3, n3, keys, ia, ib)
        _write_union(a, b, i0, e0, j0, f0, n0, keys, ia, ib)
        _write_union(a, b, i1, e1, j1, f1, n1, keys, ia, ib)
        _write_union(a, b, i2, e2, j2, f2, n2, keys, ia, ib)
        _write_union(a, b, i3, e3, j3, f3, n3, keys, ia, ib)
    else:
        while i0 < e0 and j0 < f0 and i1 < e1 and j1 < f1 and i2 < e2 and j2 < f2 and i3 < e3 and j3 < f3:
            i0, j0, n0 = _intersection_step(a, b, i0, j0, n0, keys, ia, ib, spare)
            i1, j1, n1 = _intersection_step(a, b, i1, j1, n1, keys, ia, ib, spare)
            i2, j2, n2 = _intersection_step(a, b, i2, j2, n2, keys, ia, ib, spare)
            i3, j3, n3 = _intersection_step(a, b, i3, j3, n3, keys, ia, ib, spare)
        _write_intersection(a, b, i0, e0, j0, f0, n0, keys, ia, ib)
        _write_intersection(a, b, i1, e1, j1, f1, n1, keys, ia, ib)
        _write_intersection(a, b, i2, e2, j2, f2, n2, keys, ia, ib)
        _write_intersection(a, b, i3, e3, j3, f3, n3, keys, ia, ib)


@jit()
def _merge_counts(a, b, how, bounds, counts, g_lo, g_hi):
    for g in range(g_lo, g_hi):
        _count_lanes(a, b, how, bounds, g, counts)


@jit()
def _merge_write(a, b, how, bounds, starts, keys, ia, ib, g_lo, g_hi):
    for g in range(g_lo, g_hi):
        _write_lanes(a, b, how, bounds, starts, keys, ia, ib, g)


@jit()
def _merge_bounds(a, b, bounds):
    n_chunks = bounds.shape[0] - 1
    total = a.size + b.size
    per = (total + n_chunks - 1) // n_chunks
    for c in range(n_chunks + 1):
        i, j = _split(a, b, min(c * per, total))
        if c > 0:  # non-decreasing even for unsorted keys: counts match writes
            i, j = max(i, bounds[c - 1, 0]), max(j, bounds[c - 1, 1])
        bounds[c, 0] = i
        bounds[c, 1] = j


def merge_sorted(a_keys, b_keys, how):
    """a_keys (na,), b_keys (nb,) int64, each strictly increasing; not validated.

    ``how="union"``: every key of either input once, in increasing order;
    ``how="intersection"``: the keys in both. Returns ``(keys, a_index,
    b_index, count)``: ``keys[t]`` is the t-th output key, ``a_index[t]``
    its position in ``a_keys`` (-1 if absent), likewise ``b_index``;
    ``count`` is a 0-d int64 array holding the number of outputs. The three
    arrays have at least ``count`` entries (a few more here, spare slots of
    the intersection walks; the CUDA twin returns capacity-sized arrays);
    entries past ``count`` are undefined.
    """
    if how not in _HOW:
        raise ValueError(f"how must be 'union' or 'intersection', got {how!r}")
    code = _HOW[how]
    total = a_keys.size + b_keys.size
    # LANES chunks per group, two groups per thread (a thread slowed by
    # another process then holds up less); one group for small inputs.
    n_chunks = LANES * (2 * n_threads() if total >= PARALLEL_MIN else 1)
    bounds = empty((n_chunks + 1, 2), dtype=np.int64)
    _merge_bounds(a_keys, b_keys, bounds)
    counts = empty(n_chunks, dtype=np.int64)
    # Groups of LANES chunks run on the Python threads of run_chunks: a
    # prange around them took 2-3 s more to compile.
    a_keys, b_keys = read_only(a_keys), read_only(b_keys)
    run_chunks(_merge_counts, n_chunks // LANES, a_keys, b_keys, code, bounds, counts)
    starts = offsets(counts)  # each chunk's first output
    n_out = int(starts[-1])
    # Spare slots past the outputs for the branch-free intersection walks.
    capacity = n_out + SPARE_STRIDE * (n_chunks // LANES)
    keys = empty(capacity, dtype=np.int64)
    ia = empty(capacity, dtype=np.int64)
    ib = empty(capacity, dtype=np.int64)
    run_chunks(_merge_write, n_chunks // LANES, a_keys, b_keys, code, bounds, starts, keys, ia, ib)
    return keys, ia, ib, np.asarray(n_out, dtype=np.int64)


# --------------------------------------------------------------------------
# merge_rows: the same merges row by row (canonical CSR/CSC operands)
# --------------------------------------------------------------------------

@jit()
def _row_ranges(a_ptr, a_n, b_ptr, b_n, r):
    i, i_end = row_range(a_ptr, r, a_n)
    j, j_end = row_range(b_ptr, r, b_n)
    return i, i_end, j, j_end


@jit(parallel=True)
def _row_merge_counts(a_ptr, a_idx, b_ptr, b_idx, how, counts):
    for r in prange(counts.size):
        i, i_end, j, j_end = _row_ranges(a_ptr, a_idx.size, b_ptr, b_idx.size, r)
        m = _count_matches(a_idx, b_idx, i, i_end, j, j_end)
        counts[r] = m if how == 1 else (i_end - i) + (j_end - j) - m


@jit(parallel=True)
def _row_merge_write(a_ptr, a_idx, b_ptr, b_idx, how, indptr, indices, ia, ib):
    for r in prange(indptr.size - 1):
        i, i_end, j, j_end = _row_ranges(a_ptr, a_idx.size, b_ptr, b_idx.size, r)
        if how == 0:
            _write_union(a_idx, b_idx, i, i_end, j, j_end, indptr[r], indices, ia, ib)
        else:
            _write_intersection(a_idx, b_idx, i, i_end, j, j_end, indptr[r], indices, ia, ib)


def merge_rows(a_indptr, a_indices, b_indptr, b_indices, n_minor, how):
    """Two canonical compressed structures (indices sorted, unique per row) with the same rows; not validated."""
    if how not in _HOW:
        raise ValueError(f"how must be 'union' or 'intersection', got {how!r}")
    code = _HOW[how]
    counts = empty(a_indptr.size - 1, dtype=np.int64)
    _row_merge_counts(a_indptr, a_indices, b_indptr, b_indices, code, counts)
    indptr = offsets(counts)
    n_out = int(indptr[-1])
    bound = a_indices.size + b_indices.size if code == 0 else min(a_indices.size, b_indices.size)
    if n_out > bound:  # rows that overlap: only a malformed indptr gives that
        raise ValueError(
            "the operands' indptr are not non-decreasing from 0 to nnz (an array built with "
            "check=False, or whose buffers changed after construction; x.check() tells which)"
        )
    indices = empty(n_out, dtype=np.result_type(a_indices.dtype, b_indices.dtype))
    ia = empty(n_out, dtype=np.int64)
    ib = empty(n_out, dtype=np.int64)
    _row_merge_write(a_indptr, a_indices, b_indptr, b_indices, code, indptr, indices, ia, ib)
    return indptr, indices, ia, ib


# --------------------------------------------------------------------------
# merge_rows_values: merge and combine in one pass (sum or product)
# --------------------------------------------------------------------------
#
# ``merge_rows`` + gathering both operands' values + the ufunc move about
# 100 bytes per output entry; merging the values along with the indices
# moves the inputs once and the output twice (a chunk is written where its
# largest possible output fits, then moved to its place), and skips the
# counting walk. Rows are cut into chunks of equal ``rows + entries``.

_OPS = {"add": 0, "multiply": 1}


@jit()
def _row_capacity(a_ptr, a_n, b_ptr, b_n, how, r):
    i, i_end, j, j_end = _row_ranges(a_ptr, a_n, b_ptr, b_n, r)
    return (i_end - i) + (j_end - j) if how == 0 else min(i_end - i, j_end - j)


@jit(parallel=True)
def _chunk_capacities(a_ptr, a_n, b_ptr, b_n, how, bounds, cap):
    # cap[c + 1]: the most entries the rows of chunk c can produce.
    for c in prange(bounds.size - 1):
        t = 0
        for r in range(bounds[c], bounds[c + 1]):
            t += _row_capacity(a_ptr, a_n, b_ptr, b_n, how, r)
        cap[c + 1] = t


@jit()
def _combine(op, x, y):
    return x + y if op == 0 else x * y


@jit(parallel=True)
def _merge_values_chunks(a_ptr, a_idx, a_val, b_ptr, b_idx, b_val, how, op, bounds, cap_start,
                         tmp_idx, tmp_val, indptr, produced):
    # Chunk c merges its rows into tmp[cap_start[c]:], at most its capacity
    # (each row writes at most its own); indptr[r + 1] gets the row's end
    # relative to the chunk's first output.
    a_n, b_n = a_idx.size, b_idx.size
    for c in prange(bounds.size - 1):
        base = cap_start[c]
        o = base
        for r in range(bounds[c], bounds[c + 1]):
            i, i_end, j, j_end = _row_ranges(a_ptr, a_n, b_ptr, b_n, r)
            if how == 0:
                while i < i_end and j < j_end:
                    # branch-free (the comparisons of interleaved keys are unpredictable)
                    # (unsigned positions spare Numba's negative-index checks)
                    ui, uj, uo = np.uintp(i), np.uintp(j), np.uintp(o)
                    x = a_idx[ui]
                    y = b_idx[uj]
                    take_a = x <= y
                    take_b = y <= x
                    u = a_val[ui]
                    w = b_val[uj]
                    both = _combine(op, u, w)
                    tmp_idx[uo] = x if take_a else y
                    tmp_val[uo] = both if take_a and take_b else (u if take_a else w)
                    i += take_a
                    j += take_b
                    o += 1
                while i < i_end:
                    tmp_idx[np.uintp(o)] = a_idx[np.uintp(i)]
                    tmp_val[np.uintp(o)] = a_val[np.uintp(i)]
                    i += 1
                    o += 1
                while j < j_end:
                    tmp_idx[np.uintp(o)] = b_idx[np.uintp(j)]
                    tmp_val[np.uintp(o)] = b_val[np.uintp(j)]
                    j += 1
                    o += 1
            else:
                while i < i_end and j < j_end:
                    x = a_idx[i]
                    y = b_idx[j]
                    if x == y:
                        tmp_idx[o] = x
                        tmp_val[o] = _combine(op, a_val[i], b_val[j])
                        o += 1
                    i += x <= y
                    j += y <= x
            indptr[r + 1] = o - base
        produced[c + 1] = o - base


@jit(parallel=True)
def _place_chunks(bounds, cap_start, out_start, tmp_idx, tmp_val, k, indptr, indices, values, move):
    # Chunk c's outputs move from tmp[cap_start[c]:] to [out_start[c], out_start[c + 1])
    # (``move``), and its rows' ends become absolute. Indices and values
    # move as words (_common.as_words: one compilation per item size),
    # ``k`` words per value. Explicit loops: Numba's slice assignments
    # cost seconds of compilation.
    for c in prange(bounds.size - 1):
        shift = out_start[c]
        for r in range(bounds[c], bounds[c + 1]):
            indptr[r + 1] += shift
        if not move:
            continue
        # unsigned positions: no negative-index checks, so the copies vectorise
        src = np.uint64(cap_start[c])
        dst = np.uint64(shift)
        n = np.uint64(out_start[c + 1] - shift)
        for t in range(n):
            indices[dst + t] = tmp_idx[src + t]
        words = np.uint64(k)
        for t in range(n * words):
            values[dst * words + t] = tmp_val[src * words + t]


def merge_rows_values(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, op):
    """Two canonical CSR (CSC) structures with the same rows and 1-D values of one dtype; not validated.

    Returns ``(indptr, indices, values)`` of the union (``op="add"``:
    ``a + b`` where both hold an entry, the one value elsewhere) or of the
    intersection (``op="multiply"``: ``a * b``), row by row, canonical.
    Entries whose result is zero are kept.
    """
    if op not in _OPS:
        raise ValueError(f"op must be 'add' or 'multiply', got {op!r}")
    code = _OPS[op]
    how = 0 if code == 0 else 1
    m = a_indptr.size - 1
    work = a_indices.size + b_indices.size + m
    n_chunks = max(1, min(m, 4 * n_threads())) if work >= PARALLEL_MIN else 1
    summed = a_indptr.astype(np.int64) + b_indptr
    bounds = np.searchsorted(summed + np.arange(m + 1), np.linspace(0, int(summed[-1]) + m, n_chunks + 1))
    bounds = np.maximum.accumulate(np.clip(bounds, 0, m)).astype(np.int64)
    bounds[0], bounds[-1] = 0, m
    cap = np.zeros(n_chunks + 1, dtype=np.int64)
    _chunk_capacities(a_indptr, a_indices.size, b_indptr, b_indices.size, how, bounds, cap)
    cap_start = np.cumsum(cap)
    index_dtype = np.result_type(a_indices.dtype, b_indices.dtype)
    tmp_idx = empty(int(cap_start[-1]), dtype=index_dtype)
    tmp_val = empty(int(cap_start[-1]), dtype=a_data.dtype)
    indptr = empty(m + 1, dtype=np.int64)
    indptr[0] = 0
    produced = np.zeros(n_chunks + 1, dtype=np.int64)
    _merge_values_chunks(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, how, code, bounds,
                         cap_start, tmp_idx, tmp_val, indptr, produced)
    out_start = np.cumsum(produced)
    n_out = int(out_start[-1])
    if n_out == tmp_idx.size:  # nothing to close up: every chunk is where it belongs
        indices, values = tmp_idx, tmp_val
    else:
        indices = empty(n_out, dtype=index_dtype)
        values = empty(n_out, dtype=a_data.dtype)
    _place_chunks(bounds, cap_start, out_start, read_only(as_words(tmp_idx)), read_only(as_words(tmp_val)),
                  np.int64(max(1, tmp_val.dtype.itemsize // 8)), indptr, as_words(indices), as_words(values),
                  indices is not tmp_idx)
    return indptr, indices, values
