"""Products on the CPU: SpMV, SpMM (with alpha/beta and transposes), SpGEMM, SDDMM, reduced SpMM.

How the work is split
---------------------
Every kernel is a serial, GIL-free Numba function over a range of rows
``[lo, hi)``. :func:`~gpusparse._kernels.cpu._common.row_bounds` cuts the
rows into four ranges per thread by *merge path*: each range holds the same
share of ``rows + nonzeros``, so a few long rows cannot leave one thread
with most of the work. :func:`~gpusparse._kernels.cpu._common._run` hands
the ranges out to the calling thread and a small pool of Python
threads as they become free (the kernels release the GIL), so a thread
slowed down by another process does not hold up the others; below
``PARALLEL_MIN`` work everything runs inline. On the 2-core development
VM a ``prange`` over the same ranges ran the same row loop about 20 %
slower, even with one thread, so the ranges are dispatched by hand. The
number of threads is Numba's (``numba.set_num_threads``).

The SpMV loop
-------------
* The gathered index is cast to ``uintp`` before ``x[...]``: Numba then
  skips the negative-index wrap-around test, which otherwise costs a compare
  and a select per gathered element (25 % on a 5-point stencil).
* One row at a time, compiled with ``fastmath={"reassoc", "contract"}``
  (no ``nnan``: NaN semantics are kept), so LLVM vectorises every row long
  enough for its vector loop (AVX gathers into several partial sums, as MKL
  does) and runs short rows and tails as a scalar loop; only the order of
  the additions changes. Against one plain loop with a single accumulator
  (2 threads, 2**21 rows): R-MAT 71 -> 64 ms, 8 per row plus 16 heavy rows
  42 -> 39 ms, 16 per row 76 -> 67 ms, the 5-point stencil unchanged.
  Working on four rows per step (more gathers in flight) helped only
  uniform rows and cost 25 % on R-MAT; a per-row choice of loop, a median
  row length switch and software prefetching of ``x`` were all slower.

The SpMM and SDDMM loops
------------------------
Each stored entry adds a whole dense row ``b[j, :]`` into the output row,
so a random matrix makes every entry a cache miss on a random row. These
loops prefetch the row 16 entries ahead (every 64-byte line of it), which
doubled SpMM with ``N = 8`` on the random matrix (to 0.85x of MKL); on a
stencil, whose consecutive rows read neighbouring rows that the hardware
prefetcher already follows, it cost 25 %, so it is switched off there for
narrow rows (:func:`_streaming` looks at 64 sampled row pairs).

With 8, 16 or 32 columns and random rows, :func:`_spmm_tiles` keeps 8
output columns at a time in registers over the whole row instead of
loading and storing the output row for every entry (2 threads, medians):
on 2**18 rows of 16 random entries N = 16 went from 58-62 to 26-35 ms and
N = 32 from 73-81 to 42-48 ms; at N = 8 on the 2**21-row matrices of the
benchmarks uniform 611 -> 457 ms, R-MAT 356 -> 305 ms, skew 347 -> 267 ms.
It was slower at N = 64 (123 against 86-118 ms) and on a stencil at every
width (32: 25-30 -> 33-34 ms), so only those widths of matrices with random
columns take it.

Transposed products scatter into one private output per range and add the
copies afterwards, so no two threads write one element. Values are every
numeric dtype Numba handles (integers wrap like NumPy's); ``bool`` is left
to the caller (``gpusparse.ops`` computes it in int64).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from gpusparse._kernels._numba import jit
from gpusparse._kernels.cpu._common import (
    _clip_pointer, _column, _run, _structure, empty, even_bounds, read_only, row_bounds, row_range,
)

__all__ = ["sddmm", "spgemm", "spmm", "spmm_reduce", "spmv"]

#: ``spmm_reduce`` op codes (the order of ``gpusparse._kernels.SPMM_REDUCE_OPS``).
_REDUCE_CODES = {"sum": 0, "mean": 1, "max": 2, "min": 3}
#: How many entries ahead SpMM / SDDMM prefetch the dense row they will gather.
_PREFETCH_AHEAD = 16
#: Widths of the dense operand (multiples of 8) that SpMM computes in 8-column
#: tiles when the matrix gathers random rows (see "The SpMM and SDDMM loops").
_TILED_N = (8, 16, 32)


#: SpMM's and SDDMM's loops: reassociation and FMA contraction (they vectorise), never ``nnan``.
_jit_reassoc = jit(fastmath={"reassoc", "contract"})


@intrinsic
def _prefetch_row(typingctx, arr, i, j):
    """``llvm.prefetch`` (read, all cache levels) of ``&arr[i, j]`` for a 2-D array."""
    sig = types.void(arr, i, j)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1], args[2]],
                                       wraparound=False, boundscheck=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                                            "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3),
                          ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


def _streaming(indptr, indices) -> bool:
    """Whether consecutive rows read neighbouring dense rows (a stencil, a band), from 64 samples.

    The hardware prefetcher follows such streams; software prefetching then
    only costs instructions. Random columns (a random or power-law matrix)
    leave every gathered row a cache miss, which prefetching hides.
    """
    m = indptr.size - 1
    if m < 2 or indices.shape[0] == 0:
        return True
    rows = np.linspace(0, m - 2, min(64, m - 1)).astype(np.int64)
    last = indices.shape[0] - 1
    first, second, end = (np.clip(indptr[rows + i], 0, last) for i in range(3))
    both = (second > first) & (end > second)
    if not both.any():
        return True
    step = indices[second[both]].astype(np.int64) - indices[first[both]]
    return bool(np.mean((step >= 0) & (step < 8)) >= 0.5)


def _prefetch_distance(n, streaming: bool) -> int:
    """``_PREFETCH_AHEAD`` where gathering dense rows of width ``n`` benefits, else 0 (measured).

    ``streaming``: what :func:`_streaming` says of the matrix.
    """
    return _PREFETCH_AHEAD if n >= 32 or not streaming else 0


def _scalar(value, dtype):
    return np.asarray(value).astype(dtype)[()]


def _conj_if(data, trans):
    return np.conj(data) if trans == "H" and data.dtype.kind == "c" else data


# --------------------------------------------------------------------------
# SpMV
# --------------------------------------------------------------------------

@_jit_reassoc
def _spmv(indptr, indices, data, x, y, alpha, beta, zero, part, lo, hi):
    # One row at a time, its sum reassociable: LLVM vectorises rows long
    # enough for its vector loop (AVX gathers, several partial sums) and
    # runs shorter ones, and the tail, as a scalar loop. Unsigned positions
    # spare the negative-index checks.
    nnz = data.shape[0]
    last = np.uintp(x.shape[0] - 1)
    for r in range(lo, hi):
        start, end = row_range(indptr, r, nnz)
        acc = zero
        for p in range(np.uintp(start), np.uintp(end)):
            acc += data[p] * x[_column(indices, p, last)]
        if beta == zero:
            y[r] = alpha * acc
        else:
            y[r] = alpha * acc + beta * y[r]


@jit()
def _spmv_t(indptr, indices, data, x, partial, part, lo, hi):
    # partial (parts, n_cols) zeroed; range ``part`` scatters into its own row.
    mine = partial[part]
    nnz = data.shape[0]
    last = np.uintp(mine.shape[0] - 1)
    for r in range(lo, hi):
        v = x[r]
        start, end = row_range(indptr, r, nnz)
        for p in range(start, end):
            mine[_column(indices, p, last)] += data[p] * v


@jit()
def _add_partials(partial, out, alpha, beta, zero, part, lo, hi):
    # out[j] = alpha * sum_t partial[t, j] + beta * out[j] for j in [lo, hi).
    n_parts = partial.shape[0]
    for j in range(lo, hi):
        acc = partial[0, j]
        for t in range(1, n_parts):
            acc += partial[t, j]
        if beta == zero:
            out[j] = alpha * acc
        else:
            out[j] = alpha * acc + beta * out[j]


def _scatter_transposed(kernel, indptr, indices, data, src, out_flat, alpha, beta, n_out, work):
    """``out = alpha * A.T-scatter(src) + beta * out`` through private per-range copies."""
    dtype = data.dtype
    bounds = row_bounds(indptr, work, per_thread=1)  # one private copy per range
    partial = np.zeros((bounds.size - 1, n_out), dtype=dtype)
    _run(kernel, bounds, indptr, indices, read_only(data), read_only(src), partial)
    _run(_add_partials, even_bounds(n_out, partial.size), partial, out_flat, alpha, beta, dtype.type(0))


def spmv(indptr, indices, data, shape, x, y, alpha=1, beta=0, trans="N"):
    """CSR (indptr, indices, data) of ``shape``; x, y 1-D contiguous of data's dtype; not validated.

    ``y = alpha * op(A) @ x + beta * y`` in place (``y`` is not read when
    ``beta == 0``), with ``op`` = identity, transpose or conjugate transpose
    for ``trans`` = ``"N"``, ``"T"``, ``"H"``.
    """
    dtype = data.dtype
    zero, alpha, beta = dtype.type(0), _scalar(alpha, dtype), _scalar(beta, dtype)
    indptr = _structure(indptr, indices, x.shape[0] if trans == "N" else y.shape[0])
    indptr, indices, data, x = read_only(indptr), read_only(indices), read_only(data), read_only(x)
    if trans == "N":
        _run(_spmv, row_bounds(indptr), indptr, indices, data, x, y, alpha, beta, zero)
        return
    _scatter_transposed(_spmv_t, indptr, indices, _conj_if(data, trans), x, y, alpha, beta,
                        y.shape[0], None)


# --------------------------------------------------------------------------
# SpMM (row-major dense operands)
# --------------------------------------------------------------------------

@jit()
def _spmm_n(indptr, indices, data, b, out, alpha, beta, zero, ahead, part, lo, hi):
    n = b.shape[1]
    nnz = data.shape[0]
    last_row = np.uintp(b.shape[0] - 1)
    last = _clip_pointer(indptr, hi, nnz)  # prefetches stay below the range's last entry
    for r in range(lo, hi):
        row = out[r]
        start, end = row_range(indptr, r, nnz)
        first = start
        if beta != zero:
            for j in range(n):
                row[j] *= beta
        elif start == end:
            for j in range(n):
                row[j] = zero
        else:  # the first entry writes the row: no zero-fill pass
            if ahead and start + ahead < last:
                k = _column(indices, start + ahead, last_row)
                for j0 in range(0, n, 8):
                    _prefetch_row(b, k, np.uintp(j0))
            v = alpha * data[start]
            src = b[_column(indices, start, last_row)]
            for j in range(n):
                row[j] = v * src[j]
            first = start + 1
        for p in range(first, end):
            if ahead and p + ahead < last:
                k = _column(indices, p + ahead, last_row)
                for j0 in range(0, n, 8):
                    _prefetch_row(b, k, np.uintp(j0))
            v = alpha * data[p]
            src = b[_column(indices, p, last_row)]
            for j in range(n):
                row[j] += v * src[j]


@jit()
def _spmm_tiles(indptr, indices, data, b, out, alpha, beta, zero, ahead, part, lo, hi):
    # n a multiple of 8: each row is computed 8 columns at a time in eight
    # scalar accumulators (registers, packed into vectors by LLVM), written
    # once at the end, where _spmm_n loads and stores the output row for
    # every entry. alpha multiplies the sums.
    n = b.shape[1]
    nnz = data.shape[0]
    last_row = np.uintp(b.shape[0] - 1)
    last = _clip_pointer(indptr, hi, nnz)
    for r in range(lo, hi):
        start, end = row_range(indptr, r, nnz)
        for j0 in range(0, n, 8):
            a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = zero
            for p in range(start, end):
                if ahead and j0 == 0 and p + ahead < last:
                    k = _column(indices, p + ahead, last_row)
                    for jp in range(0, n, 8):
                        _prefetch_row(b, k, np.uintp(jp))
                v = data[p]
                src = b[_column(indices, p, last_row)]
                a0 += v * src[j0]
                a1 += v * src[j0 + 1]
                a2 += v * src[j0 + 2]
                a3 += v * src[j0 + 3]
                a4 += v * src[j0 + 4]
                a5 += v * src[j0 + 5]
                a6 += v * src[j0 + 6]
                a7 += v * src[j0 + 7]
            row = out[r]
            if beta != zero:
                row[j0] = alpha * a0 + beta * row[j0]
                row[j0 + 1] = alpha * a1 + beta * row[j0 + 1]
                row[j0 + 2] = alpha * a2 + beta * row[j0 + 2]
                row[j0 + 3] = alpha * a3 + beta * row[j0 + 3]
                row[j0 + 4] = alpha * a4 + beta * row[j0 + 4]
                row[j0 + 5] = alpha * a5 + beta * row[j0 + 5]
                row[j0 + 6] = alpha * a6 + beta * row[j0 + 6]
                row[j0 + 7] = alpha * a7 + beta * row[j0 + 7]
            else:
                row[j0] = alpha * a0
                row[j0 + 1] = alpha * a1
                row[j0 + 2] = alpha * a2
                row[j0 + 3] = alpha * a3
                row[j0 + 4] = alpha * a4
                row[j0 + 5] = alpha * a5
                row[j0 + 6] = alpha * a6
                row[j0 + 7] = alpha * a7


@jit()
def _spmm_t(indptr, indices, data, b, partial, part, lo, hi):
    # partial (parts, n_cols * n) zeroed; range ``part`` scatters rows of b into its copy.
    mine = partial[part]
    n = b.shape[1]
    nnz = data.shape[0]
    last = np.uintp(mine.shape[0] // max(n, 1) - 1)
    for r in range(lo, hi):
        src = b[r]
        start, end = row_range(indptr, r, nnz)
        for p in range(start, end):
            v = data[p]
            base = _column(indices, p, last) * np.uintp(n)
            for j in range(n):
                mine[base + np.uintp(j)] += v * src[j]


def spmm(indptr, indices, data, shape, b, out, alpha=1, beta=0, trans="N"):
    """CSR of ``shape``; b (k, n) and out (m, n) C- or F-contiguous, data's dtype; not validated.

    ``out = alpha * op(A) @ b + beta * out`` in place (``out`` is not read
    when ``beta == 0``); ``trans`` as in :func:`spmv`. F-ordered operands
    are copied to C order here (the CUDA twin uses them as they are).
    """
    dtype = data.dtype
    zero, alpha_s, beta_s = dtype.type(0), _scalar(alpha, dtype), _scalar(beta, dtype)
    b = np.ascontiguousarray(b)
    target = out if out.flags.c_contiguous else np.ascontiguousarray(out)
    n = b.shape[1]
    indptr = _structure(indptr, indices, b.shape[0] if trans == "N" else target.shape[0])
    work = (int(indptr[-1]) + indptr.size) * max(n, 1)
    indptr, indices, data, b = read_only(indptr), read_only(indices), read_only(data), read_only(b)
    if n == 1 and target.shape[1] == 1:
        spmv(indptr, indices, data, shape, b.reshape(-1), target.reshape(-1), alpha, beta, trans)
    elif trans == "N":
        streaming = _streaming(indptr, indices)
        ahead = _prefetch_distance(n, streaming)
        kernel = _spmm_tiles if n in _TILED_N and not streaming else _spmm_n
        _run(kernel, row_bounds(indptr, work), indptr, indices, data, b, target, alpha_s, beta_s, zero, ahead)
    else:
        _scatter_transposed(_spmm_t, indptr, indices, _conj_if(data, trans), b, target.reshape(-1),
                            alpha_s, beta_s, target.size, work)
    if target is not out:
        out[...] = target


# --------------------------------------------------------------------------
# SpMM with a reduction
# --------------------------------------------------------------------------

@jit()
def _reduce_step(op, acc, v):
    if op <= 1:
        return acc + v
    if op == 2:
        if v > acc or v != v:
            return v
        return acc
    if v < acc or v != v:
        return v
    return acc


@jit()
def _spmm_reduce(indptr, indices, data, b, out, op, identity, zero, part, lo, hi):
    n = b.shape[1]
    nnz = data.shape[0]
    last = np.uintp(b.shape[0] - 1)
    term = np.empty(1, dtype=out.dtype)
    for r in range(lo, hi):
        row = out[r]
        start, end = row_range(indptr, r, nnz)
        if start == end:
            for j in range(n):
                row[j] = zero
            continue
        for j in range(n):
            row[j] = identity
        for p in range(start, end):
            v = data[p]
            src = b[_column(indices, p, last)]
            for j in range(n):
                # Round the product to the value dtype first (integers wrap)
                # so that max/min compare what NumPy would.
                term[0] = v * src[j]
                row[j] = _reduce_step(op, row[j], term[0])
        if op == 1:
            count = end - start
            for j in range(n):
                row[j] = row[j] / count


def _reduce_identity(op, dtype):
    if op in ("sum", "mean"):
        return dtype.type(0)
    if dtype.kind == "f":
        return dtype.type(-np.inf if op == "max" else np.inf)
    info = np.iinfo(dtype)
    return dtype.type(info.min if op == "max" else info.max)


def spmm_reduce(indptr, indices, data, shape, b, op):
    """Canonical CSR of ``shape``; b (k, n) C-contiguous of data's dtype; op in sum/mean/max/min; not validated.

    Returns out (m, n) with ``out[i, :] = op over stored (i, j) of data_ij * b[j, :]``;
    rows without entries give 0 (torch's ``sparse.mm(..., reduce=)``).
    ``mean`` needs an inexact dtype; ``max``/``min`` a real one (NaN propagates).
    """
    dtype = data.dtype
    out = empty((shape[0], b.shape[1]), dtype=dtype)
    indptr = read_only(_structure(indptr, indices, b.shape[0]))
    indices, data, b = read_only(indices), read_only(data), read_only(b)
    bounds = row_bounds(indptr, (int(indptr[-1]) + indptr.size) * max(b.shape[1], 1))
    _run(_spmm_reduce, bounds, indptr, indices, data, b, out, _REDUCE_CODES[op],
         _reduce_identity(op, dtype), dtype.type(0))
    return out


# --------------------------------------------------------------------------
# SpGEMM (Gustavson, two passes)
# --------------------------------------------------------------------------

@jit()
def _spgemm_count(a_indptr, a_indices, b_indptr, b_indices, n_cols, counts, part, lo, hi):
    seen = np.full(n_cols, -1, dtype=np.int64)
    a_nnz, b_nnz = a_indices.shape[0], b_indices.shape[0]
    k_last, j_last = np.uintp(b_indptr.shape[0] - 2), np.uintp(n_cols - 1)
    for r in range(lo, hi):
        c = 0
        a_start, a_end = row_range(a_indptr, r, a_nnz)
        for p in range(a_start, a_end):
            k = _column(a_indices, p, k_last)
            b_start, b_end = row_range(b_indptr, k, b_nnz)
            for q in range(b_start, b_end):
                j = _column(b_indices, q, j_last)
                if seen[j] != r:
                    seen[j] = r
                    c += 1
        counts[r + 1] = c


@jit()
def _sort_columns(idx, lo, hi, tmp, counts, key_bits):
    # Sort the non-negative keys idx[lo:hi] in place: insertion sort for
    # short rows, else an LSD radix sort on 8-bit digits over key_bits bits
    # (tmp has room for the row, counts for 256 digits).
    n = hi - lo
    if n <= 32:
        for i in range(lo + 1, hi):
            key = idx[i]
            j = i - 1
            while j >= lo and idx[j] > key:
                idx[j + 1] = idx[j]
                j -= 1
            idx[j + 1] = key
        return
    src = idx[lo:hi]
    dst = tmp[:n]
    swapped = False
    shift = 0
    while shift < key_bits:
        for d in range(256):  # loops, not slice assignments: faster to compile
            counts[d] = 0
        for i in range(n):
            counts[(src[i] >> shift) & 255] += 1
        total = 0
        for d in range(256):
            c = counts[d]
            counts[d] = total
            total += c
        for i in range(n):
            d = (src[i] >> shift) & 255
            dst[counts[d]] = src[i]
            counts[d] += 1
        src, dst = dst, src
        swapped = not swapped
        shift += 8
    if swapped:
        for i in range(n):
            idx[lo + i] = src[i]


@jit()
def _spgemm_fill(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data,
                 c_indptr, c_indices, c_data, n_cols, key_bits, part, lo, hi):
    # A dense accumulator per range (Gustavson's SPA): the columns a row
    # reaches are listed in c_indices, sorted in place, then their sums read.
    acc = np.empty(n_cols, dtype=c_data.dtype)
    mark = np.full(n_cols, -1, dtype=np.int64)
    longest = 0
    for r in range(lo, hi):
        longest = max(longest, c_indptr[r + 1] - c_indptr[r])
    tmp = np.empty(longest, dtype=c_indices.dtype)
    counts = np.empty(256, dtype=np.int64)
    a_nnz, b_nnz = a_indices.shape[0], b_indices.shape[0]
    k_last, j_last = np.uintp(b_indptr.shape[0] - 2), np.uintp(n_cols - 1)
    for r in range(lo, hi):
        start = c_indptr[r]
        stop = c_indptr[r + 1]
        used = start
        a_start, a_end = row_range(a_indptr, r, a_nnz)
        for p in range(a_start, a_end):
            k = _column(a_indices, p, k_last)
            v = a_data[p]
            b_start, b_end = row_range(b_indptr, k, b_nnz)
            for q in range(b_start, b_end):
                j = _column(b_indices, q, j_last)
                if mark[j] != r:
                    if used == stop:  # only if A or B changed since the counting pass
                        continue
                    mark[j] = r
                    c_indices[used] = j
                    acc[j] = v * b_data[q]
                    used += 1
                else:
                    acc[j] += v * b_data[q]
        _sort_columns(c_indices, start, used, tmp, counts, key_bits)
        for t in range(start, used):
            c_data[t] = acc[np.uintp(c_indices[t])]


def spgemm(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, shape):
    """Two CSR matrices, (m, k) and (k, n) for ``shape = (m, k, n)``, one value dtype; not validated.

    Returns the canonical CSR ``(indptr, indices, data)`` of ``A @ B``:
    sorted unique column indices per row, structural zeros kept (every
    position some product reaches is stored). Index dtype int32 when the
    sizes allow, else int64. Sizes its output from a counting pass.
    """
    m, _, n = (int(s) for s in shape)
    a_indptr = read_only(_structure(a_indptr, a_indices, min(b_indptr.shape[0] - 1, n)))
    a_indices, a_data = read_only(a_indices), read_only(a_data)
    b_indptr, b_indices, b_data = read_only(b_indptr), read_only(b_indices), read_only(b_data)
    counts = np.zeros(m + 1, dtype=np.int64)
    work = int(a_indptr[-1]) + int(b_indptr[-1]) + m
    bounds = row_bounds(a_indptr, work)
    _run(_spgemm_count, bounds, a_indptr, a_indices, b_indptr, b_indices, n, counts)
    indptr64 = np.cumsum(counts)
    nnz = int(indptr64[-1])
    index_dtype = np.int32 if max(m, n, nnz) <= np.iinfo(np.int32).max else np.int64
    indices = empty(nnz, dtype=index_dtype)
    data = empty(nnz, dtype=a_data.dtype)
    _run(_spgemm_fill, bounds, a_indptr, a_indices, a_data, b_indptr, b_indices, b_data,
         indptr64, indices, data, n, max(n - 1, 0).bit_length())
    return indptr64.astype(index_dtype), indices, data


# --------------------------------------------------------------------------
# SDDMM
# --------------------------------------------------------------------------

@_jit_reassoc  # the dot products vectorise (their summation order is free, as in BLAS)
def _sddmm(indptr, indices, a, bt, alpha, out, zero, ahead, part, lo, hi):
    k = a.shape[1]
    nnz = out.shape[0]
    last_row = np.uintp(bt.shape[0] - 1)
    last = _clip_pointer(indptr, hi, nnz)  # prefetches stay below the range's last entry
    for r in range(lo, hi):
        left = a[r]
        start, end = row_range(indptr, r, nnz)
        for p in range(start, end):
            if ahead and p + ahead < last:
                c = _column(indices, p + ahead, last_row)
                for j0 in range(0, k, 8):
                    _prefetch_row(bt, c, np.uintp(j0))
            right = bt[_column(indices, p, last_row)]
            acc = zero
            for j in range(k):
                acc += left[j] * right[j]
            out[p] = alpha * acc


def sddmm(indptr, indices, a, bt, alpha=1):
    """CSR pattern (indptr, indices) of an (m, n) matrix; a (m, k), bt (n, k) C-contiguous, one dtype; not validated.

    Returns values (nnz,) with ``values[p] = alpha * a[row(p)] . bt[indices[p]]``:
    the entries of ``alpha * a @ bt.T`` at the stored positions.
    """
    dtype = a.dtype
    nnz = indices.shape[0]
    indptr = read_only(_structure(indptr, indices, bt.shape[0]))
    indices, a, bt = read_only(indices), read_only(a), read_only(bt)
    # positions no row covers (a malformed indptr) read 0
    out = empty(nnz, dtype=dtype) if indptr[0] == 0 and indptr[-1] == nnz else np.zeros(nnz, dtype)
    bounds = row_bounds(indptr, (indices.shape[0] + indptr.size) * max(a.shape[1], 1))
    ahead = _prefetch_distance(a.shape[1], _streaming(indptr, indices))
    _run(_sddmm, bounds, indptr, indices, a, bt, _scalar(alpha, dtype), out, dtype.type(0), ahead)
    return out
