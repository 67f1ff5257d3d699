"""Segmented reductions on the CPU: ``segment_reduce`` (sum, prod, min, max, any, all, argmin, argmax).

The sortedness tests and runs of equal keys that make the segments are in
:mod:`gpusparse._kernels.cpu._sort`.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload

from gpusparse._kernels._numba import jit, n_threads
from gpusparse._kernels.cpu._common import PARALLEL_MIN, empty, read_only, run_chunks

__all__ = ["segment_reduce"]


# --------------------------------------------------------------------------
# segment_reduce
# --------------------------------------------------------------------------
#
# Every op runs the same load-balanced schedule (merge-path, as the CUDA
# kernel): the work is the merge of the s segment ends with the n positions,
# s + n items cut into equal chunks, one per thread. A chunk walks its items
# -- a position folds its row into the running value, a segment end emits
# it -- so one huge segment, millions of empty ones and any mix cost the
# same per item. The first segment a chunk emits may have begun in earlier
# chunks and the last one may go on in later chunks; those partial values
# ("head" and "tail") are folded in chunk order by a short serial fix-up, so
# the association is fixed by the number of chunks and results do not
# depend on timing. The chunks are serial kernels handed to a few Python
# threads (run_chunks; the kernels release the GIL), not a prange: a
# parallel kernel around them took 5 s more to compile per dtype.

_OP_CODES = {"sum": 0, "prod": 1, "min": 2, "max": 3, "any": 4, "all": 5, "argmin": 6, "argmax": 7}


@jit()
def _better(op, v, acc):
    # Whether v replaces acc in min/max/argmin/argmax (op 2, 3, 6, 7). NaN
    # wins and then stays (np.minimum / np.argmin: the first NaN); ties keep
    # acc, the earlier element. Complex numbers compare lexicographically
    # (real part first) as NumPy orders them; for real types .imag is 0.
    if acc != acc:
        return False
    if v != v:
        return True
    if op == 2 or op == 6:
        return v.real < acc.real or (v.real == acc.real and v.imag < acc.imag)
    return v.real > acc.real or (v.real == acc.real and v.imag > acc.imag)


@jit()
def _four_way(values, lo, hi, a, smallest):
    # min (smallest) or max of values[lo:hi, 0] and a, in four independent
    # running extremes: one compare-and-select chain would wait on itself at
    # every element. Also returns whether any value is NaN.
    a1 = a2 = a3 = a
    nan = False
    k = lo
    while k + 4 <= hi:
        v0, v1, v2, v3 = values[k, 0], values[k + 1, 0], values[k + 2, 0], values[k + 3, 0]
        nan |= (v0 != v0) | (v1 != v1) | (v2 != v2) | (v3 != v3)
        if smallest:
            a, a1, a2, a3 = min(a, v0), min(a1, v1), min(a2, v2), min(a3, v3)
        else:
            a, a1, a2, a3 = max(a, v0), max(a1, v1), max(a2, v2), max(a3, v3)
        k += 4
    for k in range(k, hi):
        v = values[k, 0]
        nan |= v != v
        a = min(a, v) if smallest else max(a, v)
    a = min(min(a, a1), min(a2, a3)) if smallest else max(max(a, a1), max(a2, a3))
    return a, nan


def _extremes(op, values, perm, use_perm, starts, s_lo, s_hi, identity, out, k_lo, k_hi):
    """out[s, 0] = min (op 2) / max (op 3) over segment s, for s in [s_lo, s_hi) (positions clipped as in _span).

    A Numba overload: the loop is chosen by the value type when the kernel
    is compiled.
    """
    raise NotImplementedError("called from compiled kernels only")


@overload(_extremes)
def _extremes_typed(op, values, perm, use_perm, starts, s_lo, s_hi, identity, out, k_lo, k_hi):
    if isinstance(identity, types.Complex):  # lexicographic order: the general comparison
        def lexicographic(op, values, perm, use_perm, starts, s_lo, s_hi, identity, out, k_lo, k_hi):
            reached = k_lo
            for s in range(s_lo, s_hi):
                a = identity
                lo, reached = _span(starts, s, reached, k_hi)
                for k in range(lo, reached):
                    v = values[perm[k], 0] if use_perm else values[k, 0]
                    if _better(op, v, a):
                        a = v
                out[s, 0] = a
        return lexicographic

    # Real values: the builtin min/max, with "any NaN" tracked on the side
    # (the segment's first NaN is then the result, found by a second look):
    # no unpredictable branch per element, 1.45x faster than testing
    # _better; four running extremes per segment (_four_way) read 4M values
    # in 64-entry rows at the speed of a sum (2.1 -> 1.4 ms, 2 threads).
    # Ties keep the earlier element within each running extreme; among
    # equal values only the sign of a zero can tell which was kept, and
    # NumPy's own SIMD loops do not fix that either.
    def real(op, values, perm, use_perm, starts, s_lo, s_hi, identity, out, k_lo, k_hi):
        reached = k_lo
        for s in range(s_lo, s_hi):
            lo, hi = _span(starts, s, reached, k_hi)
            reached = hi
            a = identity
            nan = False
            if use_perm:
                for k in range(lo, hi):
                    v = values[perm[k], 0]
                    nan |= v != v
                    a = min(a, v) if op == 2 else max(a, v)
            else:
                a, nan = _four_way(values, lo, hi, a, op == 2)
            if nan:
                for k in range(lo, hi):
                    v = values[perm[k], 0] if use_perm else values[k, 0]
                    if v != v:
                        a = v
                        break
            out[s, 0] = a
    return real


@jit()
def _copy_row(dst, src):
    # dst[:] = src as a loop: Numba's array-to-array slice assignment
    # (broadcasting, and its error messages) costs seconds of compilation.
    for f in range(src.size):
        dst[f] = src[f]


@jit()
def _combine(op, acc, v):
    if op == 0:
        return acc + v
    if op == 1:
        return acc * v
    if _better(op, v, acc):
        return v
    return acc


@jit()
def _path_search(starts, n_segments, n_positions, diag):
    # (segment, position) where merge-path diagonal ``diag`` starts: the
    # number i of segment ends before it and the position k = p0 + diag - i.
    # End j (= starts[j + 1]) comes before position k when starts[j + 1] <= k.
    p0 = starts[0]
    lo = max(0, diag - n_positions)
    hi = min(diag, n_segments)
    while lo < hi:
        mid = (lo + hi) // 2
        if starts[mid + 1] <= p0 + diag - mid - 1:
            lo = mid + 1
        else:
            hi = mid
    return lo, p0 + diag - lo


@jit()
def _fold_one(op, values, perm, use_perm, lo, hi, a):
    # op over values[row, 0] for the rows of positions [lo, hi), starting
    # from a; the op and perm tests sit outside the loops.
    if op == 0:
        if use_perm:
            for k in range(lo, hi):
                a += values[perm[k], 0]
        else:
            for k in range(lo, hi):
                a += values[k, 0]
    elif op == 1:
        if use_perm:
            for k in range(lo, hi):
                a *= values[perm[k], 0]
        else:
            for k in range(lo, hi):
                a *= values[k, 0]
    else:
        for k in range(lo, hi):
            v = values[perm[k], 0] if use_perm else values[k, 0]
            if _better(op, v, a):
                a = v
    return a


@jit()
def _span(starts, s, reached, k_hi):
    # Positions [lo, hi) of segment s inside a chunk that owns positions up
    # to k_hi and has read up to ``reached``: for valid starts exactly
    # [starts[s], starts[s + 1]); for non-monotone ones a clipped range, so
    # the chunk reads inside its positions and each of them once at most.
    lo = max(starts[s], reached)
    return lo, max(lo, min(starts[s + 1], k_hi))


@jit()
def _fold_interior(op, values, perm, use_perm, starts, s_lo, s_hi, identity, out, k_lo, k_hi):
    # out[s, 0] = op over the rows of segment s, for s in [s_lo, s_hi): one
    # loop nest per (op, perm) so that the inner loop is branch-free.
    reached = k_lo
    if op == 0:
        if use_perm:
            for s in range(s_lo, s_hi):
                a = identity
                lo, reached = _span(starts, s, reached, k_hi)
                for k in range(lo, reached):
                    a += values[perm[k], 0]
                out[s, 0] = a
        else:
            for s in range(s_lo, s_hi):
                a = identity
                lo, reached = _span(starts, s, reached, k_hi)
                for k in range(lo, reached):
                    a += values[k, 0]
                out[s, 0] = a
    elif op == 1:
        for s in range(s_lo, s_hi):
            a = identity
            lo, reached = _span(starts, s, reached, k_hi)
            for k in range(lo, reached):
                a *= values[perm[k], 0] if use_perm else values[k, 0]
            out[s, 0] = a
    else:
        _extremes(op, values, perm, use_perm, starts, s_lo, s_hi, identity, out, k_lo, k_hi)


@jit()
def _fold_rows(op, values, perm, use_perm, lo, hi, acc):
    # acc[f] = op(acc[f], values[row, f]) for the rows of positions [lo, hi).
    width = acc.size
    for k in range(lo, hi):
        row = perm[k] if use_perm else k
        if op == 0:
            for f in range(width):
                acc[f] += values[row, f]
        elif op == 1:
            for f in range(width):
                acc[f] *= values[row, f]
        else:
            for f in range(width):
                v = values[row, f]
                if _better(op, v, acc[f]):
                    acc[f] = v


@jit()
def _reduce_range(values, starts, op, perm, use_perm, identity, out, n_chunks,
                  head_seg, head_val, tail_seg, tail_val, c_lo, c_hi):
    # sum / prod / min / max; out and the accumulators have values' dtype.
    # Chunk c owns merge-path diagonals [d0, d1): segments i0..i1, positions
    # [k0, k1); the segments whose end lies inside are emitted.
    n_segments = starts.size - 1
    n_positions = starts[n_segments] - starts[0]
    n_items = n_segments + n_positions
    per = (n_items + n_chunks - 1) // n_chunks
    width = values.shape[1]
    for c in range(c_lo, c_hi):
        d0 = min(c * per, n_items)
        d1 = min(d0 + per, n_items)
        i0, k0 = _path_search(starts, n_segments, n_positions, d0)
        i1, k1 = _path_search(starts, n_segments, n_positions, d1)
        first = -1
        tail_seg[c] = n_segments
        for f in range(width):  # loops, not slice assignments: faster to compile
            tail_val[c, f] = identity
        last = min(i1, n_segments - 1)
        if width == 1:
            if i0 <= last:  # the first segment may have begun in an earlier chunk
                a = _fold_one(op, values, perm, use_perm, max(starts[i0], k0), min(starts[i0 + 1], k1), identity)
                if i0 < i1:
                    first = i0
                    head_val[c, 0] = a
                else:
                    tail_seg[c] = i0
                    tail_val[c, 0] = a
            # Segments i0 < s < i1 lie inside the chunk: tight loops, no clamps.
            _fold_interior(op, values, perm, use_perm, starts, i0 + 1, i1, identity, out, k0, k1)
            if i0 < i1 <= last:  # the last one may go on in later chunks
                tail_seg[c] = i1
                tail_val[c, 0] = _fold_one(op, values, perm, use_perm, starts[i1], k1, identity)
        else:
            acc = np.empty(width, dtype=out.dtype)
            reached = k0
            for s in range(i0, last + 1):
                for f in range(width):
                    acc[f] = identity
                lo, reached = _span(starts, s, reached, k1)
                _fold_rows(op, values, perm, use_perm, lo, reached, acc)
                if s < i1:
                    if first < 0:
                        first = s
                        _copy_row(head_val[c], acc)
                    else:
                        _copy_row(out[s], acc)
                else:
                    tail_seg[c] = s
                    _copy_row(tail_val[c], acc)
        head_seg[c] = first


@jit()
def _fix_chunks(op, out, head_seg, head_val, tail_seg, tail_val):
    width = out.shape[1]
    run_seg = -1
    run_val = np.empty(width, dtype=out.dtype)
    for c in range(head_seg.size):
        if head_seg[c] >= 0:
            s = head_seg[c]
            for f in range(width):
                v = head_val[c, f]
                if run_seg == s:
                    v = _combine(op, run_val[f], v)
                out[s, f] = v
            run_seg = tail_seg[c]
            _copy_row(run_val, tail_val[c])
        elif run_seg == tail_seg[c]:
            for f in range(width):
                run_val[f] = _combine(op, run_val[f], tail_val[c, f])
        else:
            run_seg = tail_seg[c]
            _copy_row(run_val, tail_val[c])


@jit()
def _logic_range(values, starts, is_all, perm, use_perm, out, n_chunks,
                 head_seg, head_val, tail_seg, tail_val, c_lo, c_hi):
    # any / all: out and the accumulators are bool; v counts as True when v != 0
    # (NaN is True, as in NumPy).
    n_segments = starts.size - 1
    n_positions = starts[n_segments] - starts[0]
    n_items = n_segments + n_positions
    per = (n_items + n_chunks - 1) // n_chunks
    width = values.shape[1]
    k_last = starts[n_segments] - 1  # reads stay in the positions (non-monotone starts)
    for c in range(c_lo, c_hi):
        d0 = min(c * per, n_items)
        d1 = min(d0 + per, n_items)
        i, k = _path_search(starts, n_segments, n_positions, d0)
        acc = np.empty(width, dtype=np.bool_)
        for f in range(width):  # loops, not slice assignments: faster to compile
            acc[f] = is_all
        first = -1
        for _ in range(d0, d1):
            if i < n_segments and k >= starts[i + 1]:
                if first < 0:
                    first = i
                    _copy_row(head_val[c], acc)
                else:
                    _copy_row(out[i], acc)
                for f in range(width):
                    acc[f] = is_all
                i += 1
            else:
                row = perm[min(k, k_last)] if use_perm else min(k, k_last)
                for f in range(width):
                    if is_all:
                        acc[f] = acc[f] and values[row, f] != 0
                    else:
                        acc[f] = acc[f] or values[row, f] != 0
                k += 1
        head_seg[c] = first
        tail_seg[c] = i
        _copy_row(tail_val[c], acc)


@jit()
def _fix_logic(is_all, out, head_seg, head_val, tail_seg, tail_val):
    width = out.shape[1]
    run_seg = -1
    run_val = np.empty(width, dtype=np.bool_)
    for c in range(head_seg.size):
        if head_seg[c] >= 0:
            s = head_seg[c]
            for f in range(width):
                v = head_val[c, f]
                if run_seg == s:
                    v = (run_val[f] and v) if is_all else (run_val[f] or v)
                out[s, f] = v
            run_seg = tail_seg[c]
            _copy_row(run_val, tail_val[c])
        elif run_seg == tail_seg[c]:
            for f in range(width):
                v = tail_val[c, f]
                run_val[f] = (run_val[f] and v) if is_all else (run_val[f] or v)
        else:
            run_seg = tail_seg[c]
            _copy_row(run_val, tail_val[c])


@jit()
def _arg_range(values, starts, op, perm, use_perm, out, n_chunks,
               head_seg, head_val, head_idx, tail_seg, tail_val, tail_idx, c_lo, c_hi):
    # argmin / argmax: the state is (value, row), row -1 while nothing is seen;
    # out receives the row (perm[k], or k) of the first extreme element.
    n_segments = starts.size - 1
    n_positions = starts[n_segments] - starts[0]
    n_items = n_segments + n_positions
    per = (n_items + n_chunks - 1) // n_chunks
    width = values.shape[1]
    k_last = starts[n_segments] - 1  # reads stay in the positions (non-monotone starts)
    for c in range(c_lo, c_hi):
        d0 = min(c * per, n_items)
        d1 = min(d0 + per, n_items)
        i, k = _path_search(starts, n_segments, n_positions, d0)
        acc = np.empty(width, dtype=values.dtype)
        idx = np.full(width, -1, dtype=np.int64)
        first = -1
        for _ in range(d0, d1):
            if i < n_segments and k >= starts[i + 1]:
                if first < 0:
                    first = i
                    _copy_row(head_val[c], acc)
                    _copy_row(head_idx[c], idx)
                else:
                    _copy_row(out[i], idx)
                for f in range(width):  # loops, not slice assignments: faster to compile
                    idx[f] = -1
                i += 1
            else:
                row = perm[min(k, k_last)] if use_perm else min(k, k_last)
                for f in range(width):
                    v = values[row, f]
                    if idx[f] < 0 or _better(op, v, acc[f]):
                        acc[f] = v
                        idx[f] = row
                k += 1
        head_seg[c] = first
        tail_seg[c] = i
        _copy_row(tail_val[c], acc)
        _copy_row(tail_idx[c], idx)


@jit()
def _fix_arg(op, out, head_seg, head_val, head_idx, tail_seg, tail_val, tail_idx):
    width = out.shape[1]
    run_seg = -1
    run_val = np.empty(width, dtype=head_val.dtype)
    run_idx = np.full(width, -1, dtype=np.int64)
    for c in range(head_seg.size):
        if head_seg[c] >= 0:
            s = head_seg[c]
            for f in range(width):
                best = head_idx[c, f]
                if run_seg == s and run_idx[f] >= 0:
                    if best < 0 or not _better(op, head_val[c, f], run_val[f]):
                        best = run_idx[f]
                out[s, f] = best
            run_seg = tail_seg[c]
            _copy_row(run_val, tail_val[c])
            _copy_row(run_idx, tail_idx[c])
        elif run_seg == tail_seg[c]:
            for f in range(width):
                j = tail_idx[c, f]
                if j >= 0 and (run_idx[f] < 0 or _better(op, tail_val[c, f], run_val[f])):
                    run_val[f] = tail_val[c, f]
                    run_idx[f] = j
        else:
            run_seg = tail_seg[c]
            _copy_row(run_val, tail_val[c])
            _copy_row(run_idx, tail_idx[c])


def _identity(op, dtype):
    """The identity of ``op`` in ``dtype`` (what an empty segment gives)."""
    if op == "sum":
        return dtype.type(0)
    if op == "prod":
        return dtype.type(1)
    if dtype.kind == "c":
        inf = np.inf if op == "min" else -np.inf
        return dtype.type(complex(inf, inf))
    if dtype.kind == "f":
        return dtype.type(np.inf if op == "min" else -np.inf)
    if dtype.kind == "b":
        return np.bool_(op == "min")
    info = np.iinfo(dtype)
    return dtype.type(info.max if op == "min" else info.min)


def _bounded_starts(starts, n_rows):
    """``starts`` whose first and last entries delimit positions inside ``[0, n_rows]``.

    Valid starts are returned as they are (two reads); others are clipped
    into range and made non-decreasing, a copy (the interior of starts that
    are not monotone is handled inside the kernels, see ``_span``).
    """
    if starts.size == 0:
        return starts
    if 0 <= starts[0] < starts[-1] <= n_rows:
        return starts
    if 0 <= starts[0] == starts[-1] <= n_rows:  # no positions: every segment is empty
        return np.full_like(starts, starts[0])
    return np.maximum.accumulate(np.clip(starts, 0, n_rows))


def _kernel_view(values):
    # Numba has no ordering for bool; uint8 orders False < True the same way.
    return values.view(np.uint8) if values.dtype == np.bool_ else values


def segment_reduce(values, starts, op, perm=None):
    """values (m, w); starts (s+1,) int64 non-decreasing; perm (n,) int64 in [0, m) or None.

    ``op``: ``sum``, ``prod``, ``min``, ``max`` (out has values' dtype),
    ``any``, ``all`` (bool out), ``argmin``, ``argmax`` (int64 out: the row
    of values -- ``perm[p]``, or ``p`` -- holding the first extreme element
    of the segment, the first NaN if there is one; -1 for an empty segment).
    Empty segments give the identity otherwise. Complex values order
    lexicographically, as in NumPy.
    """
    if op not in _OP_CODES:
        raise ValueError(f"op must be one of {tuple(_OP_CODES)}, got {op!r}")
    code = _OP_CODES[op]
    n_segments = starts.size - 1
    width = values.shape[1]
    use_perm = perm is not None
    values = read_only(values)  # one specialisation for writable and read-only values
    perm_arg = read_only(perm if use_perm else empty(0, np.int64))
    starts = read_only(_bounded_starts(starts, perm.size if use_perm else values.shape[0]))
    n_items = n_segments + (int(starts[-1] - starts[0]) if n_segments > 0 else 0)
    n_chunks = max(1, min(n_threads(), n_items // (PARALLEL_MIN // 4))) if n_items >= PARALLEL_MIN else 1
    head_seg = empty(n_chunks, np.int64)
    tail_seg = empty(n_chunks, np.int64)
    if op in ("any", "all"):
        out = empty((n_segments, width), dtype=np.bool_)
        if n_segments <= 0:
            return out
        is_all = op == "all"
        head, tail = empty((n_chunks, width), np.bool_), empty((n_chunks, width), np.bool_)
        args = (values, starts, is_all, perm_arg, use_perm, out, n_chunks, head_seg, head, tail_seg, tail)
        run_chunks(_logic_range, n_chunks, *args)
        _fix_logic(is_all, out, head_seg, head, tail_seg, tail)
        return out
    if op in ("argmin", "argmax"):
        out = empty((n_segments, width), dtype=np.int64)
        if n_segments <= 0:
            return out
        vals = _kernel_view(values)
        head, tail = empty((n_chunks, width), vals.dtype), empty((n_chunks, width), vals.dtype)
        head_idx, tail_idx = empty((n_chunks, width), np.int64), empty((n_chunks, width), np.int64)
        args = (vals, starts, code, perm_arg, use_perm, out, n_chunks,
                head_seg, head, head_idx, tail_seg, tail, tail_idx)
        run_chunks(_arg_range, n_chunks, *args)
        _fix_arg(code, out, head_seg, head, head_idx, tail_seg, tail, tail_idx)
        return out
    out = empty((n_segments, width), dtype=values.dtype)
    if n_segments <= 0:
        return out
    if values.dtype == np.bool_:  # sum/max = or, prod/min = and
        kernel_op = "max" if op in ("sum", "max") else "min"
        return segment_reduce(values.view(np.uint8), starts, kernel_op, perm).view(np.bool_)
    identity = _identity(op, values.dtype)
    head, tail = empty((n_chunks, width), values.dtype), empty((n_chunks, width), values.dtype)
    args = (values, starts, code, perm_arg, use_perm, identity, out, n_chunks, head_seg, head, tail_seg, tail)
    run_chunks(_reduce_range, n_chunks, *args)
    _fix_chunks(code, out, head_seg, head, tail_seg, tail)
    return out
