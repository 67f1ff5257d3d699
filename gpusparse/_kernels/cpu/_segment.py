"""Sortedness tests, runs of equal keys and segmented reductions on the CPU."""

from __future__ import annotations

import numpy as np
from numba import prange

from gpusparse._kernels._numba import jit, n_threads

from gpusparse._kernels.cpu._common import PARALLEL_MIN


# --------------------------------------------------------------------------
# sortedness and segments
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


def sortedness(keys):
    """keys (n,) or (g, n) int64, rows compared lexicographically (row 0 first)."""
    return np.asarray(_sortedness(_as_rows(keys)), dtype=np.int8)


@jit(parallel=True)
def _segment_ids(keys, n_chunks, out):
    # Two passes over chunks: count the run heads of each chunk, then number
    # the runs from the chunk's offset.
    n = keys.shape[1]
    chunk = (n + n_chunks - 1) // n_chunks
    heads = np.zeros(n_chunks + 1, dtype=np.int64)
    for c in prange(n_chunks):
        lo = c * chunk
        hi = min(n, lo + chunk)
        count = 0
        for i in range(lo, hi):
            if i == 0 or _compare_lex(keys, i - 1, i) != 0:
                count += 1
        heads[c + 1] = count
    for c in range(n_chunks):
        heads[c + 1] += heads[c]
    for c in prange(n_chunks):
        lo = c * chunk
        hi = min(n, lo + chunk)
        current = heads[c] - 1
        for i in range(lo, hi):
            if i == 0 or _compare_lex(keys, i - 1, i) != 0:
                current += 1
            out[i] = current


def segment_ids(keys):
    """keys (n,) or (g, n) int64 sorted (lexicographically for 2-D); not validated."""
    rows = _as_rows(keys)
    out = np.empty(rows.shape[1], dtype=np.int64)
    _segment_ids(rows, n_threads() if rows.shape[1] >= PARALLEL_MIN else 1, out)
    return out


@jit(parallel=True)
def _segment_starts(ids, out):
    n = ids.size
    for i in prange(n):
        if i == 0 or ids[i] != ids[i - 1]:
            out[ids[i]] = i
    out[out.size - 1] = n


def segment_starts(ids, n_segments):
    """ids (n,) int64 non-decreasing from 0 with no gaps, as segment_ids returns."""
    out = np.empty(int(n_segments) + 1, dtype=np.int64)
    _segment_starts(ids, out)
    return out


_OP_CODES = {"sum": 0, "prod": 1, "min": 2, "max": 3}


@jit()
def _combine(op, acc, v):
    if op == 0:
        return acc + v
    if op == 1:
        return acc * v
    if op == 2:
        # NaN propagates as in np.minimum: once acc is NaN it stays NaN.
        if v < acc or v != v:
            return v
        return acc
    if v > acc or v != v:
        return v
    return acc


@jit(parallel=True)
def _segment_reduce(values, starts, op, perm, use_perm, identity, out):
    n_seg = out.shape[0]
    width = out.shape[1]
    for s in prange(n_seg):
        for f in range(width):
            acc = identity
            for j in range(starts[s], starts[s + 1]):
                row = perm[j] if use_perm else j
                acc = _combine(op, acc, values[row, f])
            out[s, f] = acc


def _identity(op, dtype):
    if op == "sum":
        return dtype.type(0)
    if op == "prod":
        return dtype.type(1)
    if dtype.kind == "f":
        return dtype.type(np.inf if op == "min" else -np.inf)
    info = np.iinfo(dtype)
    return dtype.type(info.max if op == "min" else info.min)


def segment_reduce(values, starts, op, perm=None):
    """values (m, w); starts (s+1,) int64 non-decreasing; perm (n,) int64 in [0, m) or None."""
    out = np.empty((starts.size - 1, values.shape[1]), dtype=values.dtype)
    use_perm = perm is not None
    _segment_reduce(values, starts, _OP_CODES[op],
                    perm if use_perm else np.empty(0, np.int64), use_perm,
                    _identity(op, values.dtype), out)
    return out


