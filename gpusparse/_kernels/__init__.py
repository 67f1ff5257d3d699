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
    "linearize",
    "delinearize",
    "sort_pairs",
    "sortedness",
    "segment_ids",
    "segment_starts",
    "segment_reduce",
    "compress",
    "expand",
    "scatter_dense",
    "gather",
)

#: Reductions ``segment_reduce`` understands.
SEGMENT_OPS = ("sum", "prod", "min", "max")


class Primitives(Protocol):
    """The signatures; see each implementation for details."""

    def linearize(self, coords, strides):
        """coords (d, n) int64 in bounds, sum(coords[k]*strides[k]) < 2**63; not validated.

        Returns keys (n,) int64 with ``keys[i] = sum_k coords[k, i] * strides[k]``.
        ``strides`` is a tuple of Python ints.
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

    def segment_reduce(self, values, starts, op, perm=None):
        """values (m, w); starts (s+1,) int64 non-decreasing; perm (n,) int64 in [0, m) or None.

        Returns out (s, w) of values' dtype with
        ``out[j] = op(values[perm[starts[j]:starts[j+1]]])`` (``values[...]``
        directly when ``perm`` is None). ``op`` is one of :data:`SEGMENT_OPS`;
        an empty segment gives the identity (0, 1, the dtype's max, its min).
        """

    def compress(self, rows, n_rows, index_dtype):
        """rows (n,) int64 sorted, in [0, n_rows); not validated.

        Returns indptr (n_rows + 1,) of ``index_dtype``: ``indptr[r]`` is the
        first position with ``rows[pos] >= r``.
        """

    def expand(self, indptr, nnz):
        """indptr (n_rows + 1,) non-decreasing from 0 to nnz; not validated.

        Returns rows (nnz,) int64 with ``rows[p] = r`` for ``indptr[r] <= p < indptr[r+1]``.
        """

    def scatter_dense(self, keys, values, out):
        """keys (n,) int64 unique, in [0, len(out)); values (n, w); out (size, w) C-contiguous.

        Writes ``out[keys[i]] = values[i]`` in place; returns None.
        """

    def gather(self, values, index):
        """values (m, w); index (n,) int64 in [0, m); not validated.

        Returns ``values[index]``, shape (n, w).
        """
