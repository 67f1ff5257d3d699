"""The transpose of a compressed matrix on CUDA: CSR <-> CSC by a stable radix sort of the minor indices.

The entries of a canonical CSR are in row order already, so a stable sort
keyed by the column alone (the LSD radix sort of ``sort.cu``, on only the
bits the column count needs) puts them in CSC order with the rows of each
column increasing: the order of SciPy's ``csr_tocsc`` counting sort, whose
scatter a GPU cannot run in parallel and stay stable without ranking the
entries of each column (which is what the radix passes do). No new kernel:
``sort_pairs``, ``compress``, ``expand`` and ``gather``, each bounds-safe
whatever the indices hold.
"""

from __future__ import annotations

import numpy as np

__all__ = ["transpose_compressed"]


def transpose_compressed(indptr, indices, values, n_minor, index_dtype):
    """indptr (n_major + 1,), indices (nnz,) int32/int64 of a canonical compressed matrix; values (nnz, w) C-contiguous; not validated.

    Minor indices outside ``[0, n_minor)`` are clipped into it (the sort
    clips its keys); other ``indptr`` give every entry some major index.
    """
    import gpusparse._kernels.cuda._primitives as k
    from gpusparse._kernels.cuda._backend import cupy

    index_dtype = np.dtype(index_dtype)
    nnz = int(indices.shape[0])
    n_minor = int(n_minor)
    keys = cupy.asarray(indices, dtype=np.int64)
    key_bits = max(1, (n_minor - 1).bit_length())
    columns, perm = k._sort_pairs(keys, None, key_bits, max(n_minor - 1, 0))
    t_indptr = k.compress(columns, n_minor, index_dtype)
    majors = k.expand(indptr, nnz).reshape(nnz, 1)
    t_indices = k.gather(majors, perm).reshape(nnz).astype(index_dtype, copy=False)
    return t_indptr, t_indices, k.gather(values, perm)
