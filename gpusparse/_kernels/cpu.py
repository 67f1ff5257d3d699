"""CPU primitives: Numba kernels behind the interface of ``gpusparse._kernels``.

Every public function here has the name, signature and semantics of its twin
in ``gpusparse._kernels.cuda``; the docstrings of
:class:`gpusparse._kernels.Primitives` are the specification. The kernels are
top-level functions compiled lazily (first call per dtype) and cached on disk.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from gpusparse._kernels._numba import jit, n_threads

__all__ = [
    "compress",
    "delinearize",
    "expand",
    "gather",
    "linearize",
    "scatter_dense",
    "segment_ids",
    "segment_reduce",
    "segment_starts",
    "sort_pairs",
    "sortedness",
]

# Work below this many elements runs serially: thread start-up costs more.
_PARALLEL_MIN = 1 << 15


# --------------------------------------------------------------------------
# linearize / delinearize
# --------------------------------------------------------------------------

@jit(parallel=True)
def _linearize(coords, strides, out):
    d, n = coords.shape
    for i in prange(n):
        key = np.int64(0)
        for k in range(d):
            key += coords[k, i] * strides[k]
        out[i] = key


def linearize(coords, strides):
    """coords (d, n) int64 in bounds, sum(coords[k]*strides[k]) < 2**63; not validated."""
    out = np.empty(coords.shape[1], dtype=np.int64)
    _linearize(coords, np.asarray(strides, dtype=np.int64), out)
    return out


@jit(parallel=True)
def _delinearize(keys, shape, out):
    d = shape.size
    for i in prange(keys.size):
        key = keys[i]
        for k in range(d - 1, -1, -1):
            out[k, i] = key % shape[k]
            key //= shape[k]


def delinearize(keys, shape):
    """keys (n,) int64 in [0, prod(shape)); not validated."""
    out = np.empty((len(shape), keys.size), dtype=np.int64)
    _delinearize(keys, np.asarray(shape, dtype=np.int64), out)
    return out


# --------------------------------------------------------------------------
# sort_pairs: stable LSD radix sort, 11-bit digits, chunk-parallel
# --------------------------------------------------------------------------

_DIGIT_BITS = 11
_RADIX = 1 << _DIGIT_BITS


@jit(parallel=True)
def _radix_histograms(keys, n_passes, n_chunks):
    # hist[c, p, digit]: how many keys of chunk c have ``digit`` in pass p.
    n = keys.size
    chunk = (n + n_chunks - 1) // n_chunks
    hist = np.zeros((n_chunks, n_passes, _RADIX), dtype=np.int64)
    for c in prange(n_chunks):
        lo = c * chunk
        hi = min(n, lo + chunk)
        for i in range(lo, hi):
            key = keys[i]
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


def sort_pairs(keys, values, key_bits):
    """keys (n,) int64 in [0, 2**key_bits); values (n,) int64 or None; not validated."""
    n = keys.size
    if values is None:
        values = np.arange(n, dtype=np.int64)
    n_passes = max(1, -(-int(key_bits) // _DIGIT_BITS))
    n_chunks = n_threads() if n >= _PARALLEL_MIN else 1
    # Digit totals do not depend on the order, so one read finds the passes
    # that move nothing (every key has the same digit) and can be skipped.
    totals = _radix_histograms(keys, n_passes, 1)[0]
    src_k, src_v = keys, values
    spare = None
    for p in range(n_passes):
        if n == 0 or totals[p].max() == n:
            continue
        if spare is None:
            dst_k, dst_v = np.empty_like(keys), np.empty_like(values)
        else:
            dst_k, dst_v = spare
        if n_chunks == 1:
            hist_p = totals[p:p + 1]
        else:  # per-chunk counts change with the order, so count again
            hist_p = _radix_histograms(src_k >> (p * _DIGIT_BITS), 1, n_chunks)[:, 0, :]
        _radix_scatter(src_k, src_v, dst_k, dst_v, hist_p, p * _DIGIT_BITS)
        if src_k is not keys:
            spare = (src_k, src_v)
        src_k, src_v = dst_k, dst_v
    if src_k is keys:
        return keys.copy(), values.copy()
    return src_k, src_v


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


@jit()
def _segment_ids(keys, out):
    current = np.int64(-1)
    for i in range(keys.shape[1]):
        if i == 0 or _compare_lex(keys, i - 1, i) != 0:
            current += 1
        out[i] = current


def segment_ids(keys):
    """keys (n,) or (g, n) int64 sorted (lexicographically for 2-D); not validated."""
    rows = _as_rows(keys)
    out = np.empty(rows.shape[1], dtype=np.int64)
    _segment_ids(rows, out)
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


# --------------------------------------------------------------------------
# compress / expand
# --------------------------------------------------------------------------

@jit(parallel=True)
def _compress(rows, out):
    n = rows.size
    n_rows = out.size - 1
    for i in prange(n):
        previous = rows[i - 1] if i > 0 else -1
        for r in range(previous + 1, rows[i] + 1):
            out[r] = i
    last = rows[n - 1] if n > 0 else -1
    for r in range(last + 1, n_rows + 1):
        out[r] = n


def compress(rows, n_rows, index_dtype):
    """rows (n,) int64 sorted, in [0, n_rows); not validated."""
    out = np.empty(int(n_rows) + 1, dtype=index_dtype)
    _compress(rows, out)
    return out


@jit(parallel=True)
def _expand(indptr, out):
    for r in prange(indptr.size - 1):
        for p in range(indptr[r], indptr[r + 1]):
            out[p] = r


def expand(indptr, nnz):
    """indptr (n_rows + 1,) non-decreasing from 0 to nnz; not validated."""
    out = np.empty(int(nnz), dtype=np.int64)
    _expand(indptr, out)
    return out


# --------------------------------------------------------------------------
# scatter / gather
# --------------------------------------------------------------------------

@jit(parallel=True)
def _scatter_rows(keys, values, out):
    for i in prange(keys.size):
        out[keys[i], :] = values[i, :]


def _move_kind(arr):
    # Numba has no arithmetic on bool/complex rows that we need here, but a
    # byte-identical view keeps one compiled kernel per item size.
    if arr.dtype == np.bool_:
        return arr.view(np.uint8)
    if arr.dtype.kind == "c":
        return arr.view(np.float32 if arr.dtype == np.complex64 else np.float64)
    return arr


def scatter_dense(keys, values, out):
    """keys (n,) int64 unique, in [0, len(out)); values (n, w); out (size, w) C-contiguous."""
    _scatter_rows(keys, _move_kind(values), _move_kind(out))


@jit(parallel=True)
def _gather_rows(values, index, out):
    for i in prange(index.size):
        out[i, :] = values[index[i], :]


def gather(values, index):
    """values (m, w); index (n,) int64 in [0, m); not validated."""
    out = np.empty((index.size, values.shape[1]), dtype=values.dtype)
    _gather_rows(_move_kind(values), index, _move_kind(out))
    return out
