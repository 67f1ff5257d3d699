"""Reductions by unsorted key into a small dense output, on the CPU.

``reduce_by_key`` is what a reduction along some axes needs when the kept
axes span few elements compared with the entries (a sum over the rows of a
matrix with many more entries than columns): no sort, one pass over the
entries. Each thread reduces its contiguous share of the entries into a
private dense output, in entry order; the private outputs are then folded
in thread order, so the association is fixed by the number of threads and
the result does not depend on timing. The chunks and the fold are serial
kernels run on a few Python threads (``_common._run``): a ``prange`` around
them compiled a parallel kernel per dtype, about 2.5 s each.
"""

from __future__ import annotations

import numpy as np

from gpusparse._kernels._numba import jit, n_threads

from gpusparse._kernels.cpu._common import PARALLEL_MIN, _run, empty, even_bounds, read_only, run_chunks
from gpusparse._kernels.cpu._segment import _OP_CODES, _better, _combine, _identity, _kernel_view

_REDUCE_BY_KEY_OPS = ("sum", "prod", "min", "max", "any", "all")


@jit()
def _key(keys, i, last):
    # keys[i] clipped into [0, last]: a key out of range (a malformed
    # input) lands in the nearest output row, never outside the output.
    return min(max(np.int64(keys[i]), 0), last)


@jit()
def _scatter_range(keys, values, op, lo, hi, out, counts, with_counts):
    # One loop per op (the op test stays outside the loop); width-1 values
    # are the common case and get their own loops.
    width = values.shape[1]
    last = out.shape[0] - 1
    if with_counts:
        for i in range(lo, hi):
            counts[_key(keys, i, last)] += 1
    if width == 1:
        if op == 0:
            for i in range(lo, hi):
                out[_key(keys, i, last), 0] += values[i, 0]
        elif op == 1:
            for i in range(lo, hi):
                out[_key(keys, i, last), 0] *= values[i, 0]
        elif op == 2:
            for i in range(lo, hi):
                j = _key(keys, i, last)
                if _better(np.int64(2), values[i, 0], out[j, 0]):  # not a literal: shares _better(int64, ...)
                    out[j, 0] = values[i, 0]
        else:
            for i in range(lo, hi):
                j = _key(keys, i, last)
                if _better(np.int64(3), values[i, 0], out[j, 0]):
                    out[j, 0] = values[i, 0]
        return
    for i in range(lo, hi):
        j = _key(keys, i, last)
        for f in range(width):
            if op == 0:
                out[j, f] += values[i, f]
            elif op == 1:
                out[j, f] *= values[i, f]
            elif _better(op, values[i, f], out[j, f]):
                out[j, f] = values[i, f]


def _scatter_chunk(keys, values, op, private, private_counts, with_counts, c_lo, c_hi):
    # Chunk c of the entries into private[c] (run_chunks hands out the chunks).
    n = keys.size
    per = (n + private.shape[0] - 1) // private.shape[0]
    for c in range(c_lo, c_hi):
        lo = min(c * per, n)
        _scatter_range(keys, values, op, lo, min(lo + per, n), private[c], private_counts[c], with_counts)


@jit()
def _combine_rows(op, private, private_counts, out, counts, with_counts, part, lo, hi):
    # out[j] = the private outputs of row j folded in chunk order, for j in [lo, hi).
    n_chunks, _, width = private.shape
    for j in range(lo, hi):
        total = 0
        for c in range(n_chunks):
            if with_counts:
                total += private_counts[c, j]
            for f in range(width):
                out[j, f] = private[c, j, f] if c == 0 else _combine(op, out[j, f], private[c, j, f])
        if with_counts:
            counts[j] = total


@jit()
def _logic_range(keys, values, is_all, lo, hi, out, counts, with_counts):
    width = values.shape[1]
    last = out.shape[0] - 1
    for i in range(lo, hi):
        j = _key(keys, i, last)
        if with_counts:
            counts[j] += 1
        for f in range(width):
            if is_all:
                out[j, f] = out[j, f] and values[i, f] != 0
            else:
                out[j, f] = out[j, f] or values[i, f] != 0


def _logic_chunk(keys, values, is_all, private, private_counts, with_counts, c_lo, c_hi):
    n = keys.size
    per = (n + private.shape[0] - 1) // private.shape[0]
    for c in range(c_lo, c_hi):
        lo = min(c * per, n)
        _logic_range(keys, values, is_all, lo, min(lo + per, n), private[c], private_counts[c], with_counts)


def reduce_by_key(keys, values, n_out, op, with_counts=True):
    """keys (n,) int32/int64 in [0, n_out); values (n, w); not validated.

    Keys out of range are clipped into it.
    """
    if op not in _REDUCE_BY_KEY_OPS:
        raise ValueError(f"op must be one of {_REDUCE_BY_KEY_OPS}, got {op!r}")
    n_out = int(n_out)
    n, width = values.shape
    if n_out == 0:  # nothing to reduce into (keys, if any, are out of range)
        keys, values = keys[:0], values[:0]
        n = 0
    logic = op in ("any", "all")
    keys, values = read_only(keys), read_only(values)  # one specialisation for writable and read-only operands
    if values.dtype == np.bool_ and not logic:  # sum/max = or, prod/min = and
        return reduce_by_key(keys, values, n_out, "any" if op in ("sum", "max") else "all", with_counts)
    out_dtype = np.dtype(np.bool_) if logic else values.dtype
    n_chunks = n_threads() if n >= PARALLEL_MIN and n_out <= n else 1
    if logic:
        start = np.bool_(op == "all")
        vals = values
    else:
        vals = _kernel_view(values)
        start = _identity(op, vals.dtype)
    private = np.full((n_chunks, n_out, width), start, dtype=out_dtype if logic else vals.dtype)
    private_counts = np.zeros((n_chunks, n_out) if with_counts else (n_chunks, 0), dtype=np.int64)
    if n_chunks == 1:  # no thread start-up for small inputs
        if logic:
            _logic_range(keys, vals, op == "all", 0, n, private[0], private_counts[0], with_counts)
        else:
            _scatter_range(keys, vals, _OP_CODES[op], 0, n, private[0], private_counts[0], with_counts)
        out, counts = private[0], private_counts[0]
    else:
        if logic:
            run_chunks(_logic_chunk, n_chunks, keys, vals, op == "all", private, private_counts, with_counts)
        else:
            run_chunks(_scatter_chunk, n_chunks, keys, vals, _OP_CODES[op], private, private_counts, with_counts)
        out = empty((n_out, width), dtype=private.dtype)
        counts = empty(n_out if with_counts else 0, dtype=np.int64)
        code = _OP_CODES["max" if op == "any" else "min"] if logic else _OP_CODES[op]
        bounds = even_bounds(n_out, private.size)
        if logic:  # fold bools as uint8 with max (or) / min (and)
            _run(_combine_rows, bounds, code, private.view(np.uint8), private_counts, out.view(np.uint8), counts,
                 with_counts)
        else:
            _run(_combine_rows, bounds, code, private, private_counts, out, counts, with_counts)
    return out.astype(out_dtype, copy=False), (counts if with_counts else None)
