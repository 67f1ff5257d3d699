"""The primitive layer: one interface, two implementations.

``gpusparse._kernels.cpu`` (Numba) and ``gpusparse._kernels.cuda`` (CUDA
RawKernels and cuSPARSE) each define every function named in
:data:`PRIMITIVES` with the signature given in :class:`Primitives`. The
operations in ``gpusparse.ops`` are written once against this interface and
pick the implementation from the device their operands live on
(``gpusparse._device.kernels_for``).

Conventions shared by both implementations
------------------------------------------
* Primitives take buffers (NumPy arrays on the CPU, CuPy arrays on CUDA) and
  small static metadata, never containers.
* The first line of each docstring states the preconditions; they are not
  validated. Validation belongs to ``gpusparse.ops``.
* Memory safety does not depend on them. Whatever the *values* of their
  integer inputs (coordinates, keys, indices, ``indptr``, positions,
  segment starts, counts), primitives read and write only inside the
  buffers they are given, and loops bounded by data stay bounded: a read
  through an index outside ``[0, m)`` reads the nearest row (clipped), a
  write to a destination outside the output is dropped, an ``indptr``
  entry is clipped into ``[0, nnz]`` and a row whose end lies before its
  start is empty; input that is unsorted where sorted input is expected
  gives some result, never an access outside the buffers. The contents of
  such results are unspecified (they may depend on the thread schedule);
  the ops validate where the user asks them to (``check=True``,
  ``SparseArray.check``). Shapes, dtypes and contiguity of the buffers,
  and permutations the ops computed themselves (``perm``), stay the
  caller's responsibility. The checks cost a compare on a value already
  loaded, never a pass of their own.
* Primitives never synchronise with the host to size an output: where an
  output size depends on data, the op reads it (a ``# sync:`` line in ops)
  and passes it in.
* Values with dense trailing dimensions are passed as 2-D ``(n, width)``
  C-contiguous arrays; ``width`` may be 0.
* Value dtypes: bool, int8/16/32/64, uint8/16/32/64, float32, float64,
  complex64, complex128. Keys and positions are int64.
"""

from __future__ import annotations

from typing import Protocol

#: Every primitive both implementations provide (checked by a conformance test).
PRIMITIVES = (
    "empty",
    "linearize",
    "delinearize",
    "sort_pairs",
    "sortedness",
    "segment_ids",
    "segment_starts",
    "run_starts",
    "segment_reduce",
    "compress",
    "expand",
    "offsets",
    "scatter_dense",
    "gather",
    "take_columns",
    "transpose_compressed",
    # runs of rows (gpusparse.ops.indexing, .shape)
    "copy_segments",
    "segment_search",
    "bucket_order",
    # elementwise plans (gpusparse.ops.elementwise)
    "merge_sorted",
    "merge_rows",
    # reductions (gpusparse.ops.reductions)
    "reduce_by_key",
    # products (gpusparse.ops.linalg)
    "spmv",
    "spmm",
    "spmm_reduce",
    "spgemm",
    "sddmm",
)

#: The semiring products (gpusparse.ops.semiring); both implementations
#: provide them with the signatures of :class:`Primitives`, like every name
#: of :data:`PRIMITIVES` (tests/ops/test_semiring.py checks conformance and
#: hostile input for them).
SEMIRING_PRIMITIVES = ("spmm_semiring", "spgemm_semiring")

#: Fused primitives a backend may provide (callers look them up with ``getattr`` and fall back).
OPTIONAL = ("merge_rows_values",)

#: Reductions ``segment_reduce`` understands.
SEGMENT_OPS = ("sum", "prod", "min", "max", "any", "all", "argmin", "argmax")

#: Reductions ``spmm_reduce`` understands.
SPMM_REDUCE_OPS = ("sum", "mean", "max", "min")

#: Add monoids of the semiring products (their codes are the positions).
SEMIRING_ADD = ("plus", "min", "max", "lor", "any")

#: Multiply operators of the semiring products (their codes are the positions).
SEMIRING_MUL = ("times", "plus", "min", "max", "land", "pair", "first", "second")



def c_strides(shape) -> tuple:
    """C-order element strides of ``shape`` as Python ints, shared by both backends and the ops.

    >>> c_strides((2, 3, 4))
    (12, 4, 1)
    """
    strides, step = [], 1
    for dim in reversed(shape):
        strides.append(step)
        step *= dim
    return tuple(reversed(strides))


def semiring_identity(add, dtype):
    """The identity of the add monoid ``add`` in ``dtype`` (a NumPy scalar), shared by both backends and the ops.

    0 for ``plus``, ``lor`` and ``any``; for ``min`` / ``max`` the largest /
    smallest value (``inf`` / ``-inf`` for floats, the dtype's max / min for
    integers, True / False for bool).

    >>> import numpy as np
    >>> semiring_identity("min", np.int8), semiring_identity("max", np.float32)
    (np.int8(127), np.float32(-inf))
    """
    import numpy as np

    dtype = np.dtype(dtype)
    if add in ("min", "max"):
        if dtype.kind == "b":
            return np.bool_(add == "min")
        if dtype.kind == "f":
            return dtype.type(np.inf if add == "min" else -np.inf)
        info = np.iinfo(dtype)
        return dtype.type(info.max if add == "min" else info.min)
    return dtype.type(0)


#: ``trans`` values of ``spmv`` / ``spmm``: op(A) = A, A.T, A.conj().T.
TRANS_OPS = ("N", "T", "H")


class Primitives(Protocol):
    """The signatures; see each implementation for details."""

    def empty(self, shape, dtype):
        """An uninitialised C-contiguous array on the device, for a kernel's output.

        The CPU takes large ones from its host buffer pool (memory already
        mapped, so parallel writes do not fault); CUDA uses CuPy's pool.
        """

    def linearize(self, coords, shape):
        """coords (d, n) int64 in ``shape[:d]``, prod(shape) < 2**63; coordinates out of range are clipped.

        Returns keys (n,) int64 with ``keys[i] = sum_k coords[k, i] * strides[k]``
        for the C-order strides of ``shape`` (a tuple of Python ints, at
        least d long). Each coordinate is first clipped into
        ``[0, shape[k])``, so every key lies in ``[0, prod(shape))``.
        """

    def delinearize(self, keys, shape):
        """keys (n,) int64 in [0, prod(shape)); not validated.

        Returns coords (len(shape), n) int64, the inverse of ``linearize`` with
        C-order strides of ``shape``.
        """

    def sort_pairs(self, keys, values, key_bits):
        """keys (n,) int64 in [0, 2**key_bits); values (n,) int64 or None; not validated.

        Stable LSD radix sort on the low ``key_bits`` bits of ``keys``.
        Returns ``(sorted_keys, sorted_values)``; with ``values=None`` the
        values are ``arange(n)``, so the second output is the permutation.
        """

    def sortedness(self, keys):
        """keys (n,) or (g, n) int64, rows compared lexicographically (row 0 first).

        Returns a 0-d int8 array: 2 if strictly increasing, 1 if
        non-decreasing with repeats, 0 otherwise (2 for n <= 1).
        """

    def segment_ids(self, keys):
        """keys (n,) or (g, n) int64 sorted (lexicographically for 2-D); not validated.

        Returns ids (n,) int64: the index of the run of equal keys that
        element ``i`` belongs to, so ``ids[-1] + 1`` is the number of runs.
        """

    def segment_starts(self, ids, n_segments):
        """ids (n,) int64 non-decreasing from 0 with no gaps, as segment_ids returns.

        Returns starts (n_segments + 1,) int64: ``starts[s]`` is the first
        position of segment ``s`` and ``starts[n_segments] == n``.
        """

    def run_starts(self, keys):
        """keys (n,) or (g, n) int64 sorted (lexicographically for 2-D); not validated.

        Returns starts (r + 1,) int64 for the r runs of equal keys:
        ``segment_starts(segment_ids(keys), r)`` without the per-element ids,
        for callers that need only the boundaries. Synchronises to learn r.
        """

    def segment_reduce(self, values, starts, op, perm=None):
        """values (m, w); starts (s+1,) int64 non-decreasing; perm (n,) int64 in [0, m) or None.

        Returns out (s, w) with
        ``out[j] = op(values[perm[starts[j]:starts[j+1]]])`` (``values[...]``
        directly when ``perm`` is None). ``op`` is one of :data:`SEGMENT_OPS`:
        ``sum``, ``prod``, ``min``, ``max`` give values' dtype, an empty
        segment the identity (0, 1, the dtype's max, its min; +-inf for
        floats); min/max propagate NaN and order complex numbers
        lexicographically (NumPy). ``any``, ``all`` give bool (``v != 0``,
        NaN counts as True; empty: False, True). ``argmin``, ``argmax`` give
        int64: the row of ``values`` (``perm[p]``, or ``p``) of the first
        extreme element in segment order, the first NaN if any; -1 for an
        empty segment.
        """

    def reduce_by_key(self, keys, values, n_out, op, with_counts=True):
        """keys (n,) int32/int64 in [0, n_out); values (n, w); not validated.

        Returns ``(out, counts)``: ``out`` (n_out, w) with ``out[j] =
        op(values[i] for i with keys[i] == j)`` (bool for ``any``/``all``,
        values' dtype otherwise; the identity of :meth:`segment_reduce` where
        no key is ``j``) and ``counts`` (n_out,) int64, the number of keys
        equal to ``j`` (None with ``with_counts=False``, which saves a
        scattered write per key). ``op``: ``sum``, ``prod``, ``min``,
        ``max``, ``any``, ``all``. Keys need not be sorted; for a fixed
        device the result does not depend on timing (deterministic
        floating-point sums).
        """

    def merge_sorted(self, a_keys, b_keys, how):
        """a_keys (na,), b_keys (nb,) int64, each strictly increasing; not validated.

        ``how`` is ``"union"`` (every key of either input once) or
        ``"intersection"`` (keys in both). Returns ``(keys, a_index, b_index,
        count)``: the output keys in increasing order, each one's position in
        ``a_keys`` and in ``b_keys`` (-1 where absent; never for an
        intersection), and ``count``, a 0-d int64 device array with the
        number of outputs. The arrays hold at least ``count`` entries (the
        CUDA implementation returns capacity ``na + nb`` or ``min(na, nb)``
        without synchronising); entries past ``count`` are undefined.
        """

    def merge_rows(self, a_indptr, a_indices, b_indptr, b_indices, n_minor, how):
        """Two canonical compressed structures (indices sorted, unique per row) with the same rows; not validated.

        ``a_indptr``/``b_indptr`` (n_rows + 1,) int32/int64,
        ``a_indices``/``b_indices`` in ``[0, n_minor)``, and
        ``n_rows * n_minor < 2**63``. ``merge_sorted`` of the rows' linear
        keys, row by row: returns ``(indptr, indices, a_index, b_index)``,
        the merged structure (``indptr`` (n_rows + 1,) int64, ``indices``
        of the inputs' common index dtype) and each output's position in
        ``a_indices`` and ``b_indices`` (int64, -1 where absent), exactly
        sized. ``how`` is ``"union"`` or ``"intersection"``. Synchronises
        to size the output. (CSR + CSR without linear keys.)
        """

    def merge_rows_values(self, a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, op):
        """Two canonical CSR (CSC) structures with the same rows and 1-D values of one dtype; not validated.

        Optional (see :data:`OPTIONAL`): :meth:`merge_rows` fused with the
        values' sum or product. Same structures as :meth:`merge_rows`, plus 1-D values ``a_data`` and
        ``b_data`` of one dtype. Returns ``(indptr, indices, values)`` of
        the union with ``a + b`` (``op="add"``) or of the intersection with
        ``a * b`` (``op="multiply"``), canonical; zero results are kept. A
        backend without it leaves it out and callers take ``merge_rows``.
        """

    def compress(self, rows, n_rows, index_dtype):
        """rows (n,) int64 sorted, in [0, n_rows); not validated.

        Returns indptr (n_rows + 1,) of ``index_dtype``: ``indptr[r]`` is the
        first position with ``rows[pos] >= r``.
        """

    def expand(self, indptr, nnz, out=None):
        """indptr (n_rows + 1,) non-decreasing from 0 to nnz; not validated.

        Returns rows (nnz,) int64 with ``rows[p] = r`` for ``indptr[r] <= p < indptr[r+1]``,
        written into ``out`` (a C-contiguous (nnz,) int64 array, e.g. a row
        of a coordinate array) when given.
        """

    def offsets(self, counts):
        """counts (n,) bool or integer, non-negative; not validated.

        Returns out (n + 1,) int64, the running total before each element
        with the grand total last: ``out[0] == 0``,
        ``out[i + 1] == counts[:i + 1].sum()``. (Row pointers from row
        lengths, output positions from match counts.)
        """

    def scatter_dense(self, keys, values, out):
        """keys (n,) int64 unique, in [0, len(out)); values (n, w); out (size, w) C-contiguous.

        Writes ``out[keys[i]] = values[i]`` in place; returns None.
        """

    def gather(self, values, index, fill=None):
        """values (m, w); index (n,) int64 in [0, m), or -1 where ``fill`` is given; not validated.

        Returns ``values[index]``, shape (n, w); with a scalar ``fill``, rows
        whose index is negative hold ``fill`` instead.
        """

    def transpose_compressed(self, indptr, indices, values, n_minor, index_dtype):
        """indptr (n_major + 1,), indices (nnz,) int32/int64 of a canonical compressed matrix; values (nnz, w) C-contiguous; not validated.

        Returns ``(t_indptr, t_indices, t_values)``: the same matrix
        compressed along the other axis (CSR -> CSC, CSC -> CSR);
        ``t_indptr`` (n_minor + 1,) and ``t_indices`` (nnz,) of
        ``index_dtype``, ``t_values`` (nnz, w). Entries are ordered by minor
        index, stably (their old major order inside each new slice), so the
        result is canonical. No sort of (major, minor) keys, no duplicate
        detection: the CPU runs SciPy's counting sort (histogram, scan,
        scatter), CUDA a radix sort keyed by the minor index alone.
        """

    def take_columns(self, values, index):
        """values (g, m); index (n,) int64 in [0, m); not validated.

        Returns ``values[:, index]``, shape (g, n), C-contiguous: the
        coordinates of chosen entries, every coordinate row in one pass.
        """

    def copy_segments(self, values, src_starts, dst_starts, lengths, out, values2=None, out2=None):
        """values (m, w), out (n, w) C-contiguous, one dtype; runs in bounds, destinations disjoint; not validated.

        ``src_starts``, ``dst_starts``, ``lengths`` are (s,) int64. Writes
        ``out[dst_starts[i] + j] = values[src_starts[i] + j]`` for every
        segment ``i`` and ``0 <= j < lengths[i]`` in place; returns None.
        An optional second pair ``values2`` (m, w2) / ``out2`` (n, w2) moves
        by the same runs (the CPU does both in one pass).
        (The row gathers of CSR row selection: one pass, no position arrays.)
        """

    def segment_search(self, keys, starts, ends, values, side="left"):
        """keys (n,) int32/int64 sorted within each [starts[i], ends[i]); values (s,) int64; not validated.

        Returns out (s,) int64: the first position ``p`` in
        ``[starts[i], ends[i]]`` with ``keys[p] >= values[i]`` (``side="left"``)
        or ``keys[p] > values[i]`` (``"right"``): ``numpy.searchsorted`` on
        each segment, offset by its start. (Column ranges of CSR rows.)
        """

    def bucket_order(self, keys, n_buckets):
        """keys (n,) int64 in [0, n_buckets); not validated.

        Returns ``(dest, indptr)``: ``dest[i]`` (int64) is the position of
        element ``i`` in the stable sorted order of ``keys`` (equal keys keep
        their input order), ``indptr`` (n_buckets + 1,) int64 the first
        position of each bucket. For small key ranges (the new leading axis
        of a transposed sorted array); the CPU uses one counting pass.
        """

    # -- products (gpusparse.ops.linalg) ---------------------------------
    # Sparse operands are CSR arrays of an (m, k) matrix: indptr (m + 1,)
    # and indices (nnz,) int32 or int64, data (nnz,). Values are every
    # numeric dtype but bool (the ops compute bool products in int64);
    # integers wrap like NumPy's.

    def spmv(self, indptr, indices, data, shape, x, y, alpha=1, beta=0, trans="N"):
        """CSR (indptr, indices, data) of ``shape``; x, y 1-D contiguous of data's dtype; not validated.

        ``y = alpha * op(A) @ x + beta * y`` in place; ``y`` is not read when
        ``beta == 0`` (NaN there is ignored, as in BLAS). ``trans`` is one of
        :data:`TRANS_OPS`: ``"N"`` (A), ``"T"`` (A.T), ``"H"`` (A.conj().T).
        Duplicate or unsorted column indices within a row are allowed.
        """

    def spmm(self, indptr, indices, data, shape, b, out, alpha=1, beta=0, trans="N"):
        """CSR of ``shape``; b (k, n) and out (m, n) C- or F-contiguous, data's dtype; not validated.

        ``out = alpha * op(A) @ b + beta * out`` in place (``out`` not read
        when ``beta == 0``); ``trans`` as in ``spmv``. Row-major (C) and
        column-major (F) dense operands are both used without copies where
        the implementation can (cuSPARSE takes either order).
        """

    def spmm_reduce(self, indptr, indices, data, shape, b, op):
        """Canonical CSR of ``shape``; b (k, n) C-contiguous of data's dtype; op in sum/mean/max/min; not validated.

        Returns out (m, n) of data's dtype with
        ``out[i, :] = op over the stored (i, j) of data_ij * b[j, :]`` and 0 in
        rows without entries (torch's ``sparse.mm(a, b, reduce=)``). ``mean``
        needs an inexact dtype, ``max`` / ``min`` a real one; NaN propagates.
        """

    def spgemm(self, a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, shape):
        """Two CSR matrices, (m, k) and (k, n) for ``shape = (m, k, n)``, one value dtype; not validated.

        Returns the CSR ``(indptr, indices, data)`` of ``A @ B``, canonical
        (sorted unique column indices per row), keeping every position some
        product reaches (structural zeros). Index dtype int32 where the sizes
        allow, else int64. The one primitive that synchronises: it reads the
        output size on the host between its passes, as cuSPARSE's SpGEMM
        workflow does; the op calling it marks the call ``# sync:``.
        """

    def sddmm(self, indptr, indices, a, bt, alpha=1):
        """CSR pattern (indptr, indices) of an (m, n) matrix; a (m, k), bt (n, k) C-contiguous, one dtype; not validated.

        Returns values (nnz,) with ``values[p] = alpha * dot(a[row(p)], bt[indices[p]])``:
        the entries of ``alpha * a @ bt.T`` at the stored positions (SDDMM).
        """

    # -- semiring products (gpusparse.ops.semiring) -----------------------
    # ``add`` is one of SEMIRING_ADD, ``mul`` one of SEMIRING_MUL. Values
    # are integer, float or bool (bool only with lor/any and land/pair/
    # first/second: the ops map plus/min/max/times on bool onto those).
    # A term exists for every stored a_ij and stored b_jc (every element
    # of a dense b); each term is rounded to the value dtype (integers
    # wrap); a reduction starts from its first term, min/max combine as
    # C's fmin/fmax; any keeps some term.

    def spmm_semiring(self, indptr, indices, data, shape, b, add, mul, allowed=None):
        """Canonical CSR of ``shape`` (m, k); b (k, n) C-contiguous of data's dtype; allowed None or (m, n) bool C-contiguous; not validated.

        Returns out (m, n) of data's dtype: ``out[i, c]`` is the ``add``
        reduction over the stored ``(i, j)`` of ``mul(a_ij, b[j, c])``, and
        the identity of ``add`` (0, the dtype's max / min, False) where row
        ``i`` is empty or ``allowed[i, c]`` is False (never computed there).
        """

    def spgemm_semiring(self, a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, shape, add, mul,
                        mask_indptr=None, mask_indices=None, complement=False):
        """Two canonical CSR matrices, (m, k) and (k, n) for ``shape = (m, k, n)``, one value dtype; mask a canonical CSR structure of (m, n) or None; not validated.

        Returns the canonical CSR ``(indptr, indices, data)`` of the
        semiring product: an entry wherever at least one term exists (and
        the mask's structure selects it, or with ``complement`` does not),
        holding the ``add`` reduction of its terms. Index dtype int32 where
        the sizes allow, else int64. Synchronises to size its output, as
        ``spgemm`` does.
        """
