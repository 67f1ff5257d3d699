"""CUDA primitives: launches of the kernels in ``cuda_kernels/``.

Every public function here has the name, signature and semantics of its twin
in ``gpusparse._kernels.cpu``; the docstrings of
:class:`gpusparse._kernels.Primitives` are the specification. This module
only allocates outputs (CuPy, on the current device), computes launch shapes
and calls kernels on the current stream; the kernels, their thread mappings
and preconditions are documented in the ``.cu`` files.

Nothing here synchronises with the host: sizes that depend on data are
passed in by the caller, and data-dependent decisions (which radix passes to
skip) are taken on the device. Kernel arguments are always NumPy scalars of
the exact C type, never Python ints.
"""

from __future__ import annotations

import numpy as np

from gpusparse._kernels.cuda._backend import cupy, get_function  # noqa: F401  (patched by tests)
from gpusparse._kernels.cuda import _grid, _merge, _reduce
from gpusparse._kernels.cuda._primitives import (  # layout, sorting, segments, gathers
    empty, linearize, delinearize, sort_pairs, sortedness, segment_ids,
    segment_starts, run_starts, segment_reduce, compress, expand, offsets,
    scatter_dense, gather, take_columns,
)
from gpusparse._kernels.cuda._primitives import _I64, _blocks, _row_launch, _sort_pairs  # noqa: F401
from gpusparse._kernels.cuda._select import bucket_order, copy_segments, segment_search  # select.cu
from gpusparse._kernels.cuda._linalg import sddmm, spgemm, spmm, spmm_reduce, spmv  # products
from gpusparse._kernels.cuda._transpose import transpose_compressed  # sort_pairs, compress, gather
from gpusparse._kernels.cuda._semiring import spgemm_semiring, spmm_semiring  # semiring.cu

__all__ = [
    "bucket_order",
    "compress",
    "copy_segments",
    "delinearize",
    "empty",
    "expand",
    "gather",
    "take_columns",
    "transpose_compressed",
    "linearize",
    "merge_rows",
    "merge_sorted",
    "offsets",
    "reduce_by_key",
    "run_starts",
    "scatter_dense",
    "segment_ids",
    "segment_reduce",
    "segment_search",
    "segment_starts",
    "sort_pairs",
    "sortedness",
    # products (_linalg.py: cuSPARSE, spmm.cu, sddmm.cu)
    "sddmm",
    "spgemm",
    "spmm",
    "spmm_reduce",
    "spmv",
    # semiring products (_semiring.py, semiring.cu)
    "spgemm_semiring",
    "spmm_semiring",
]

# --------------------------------------------------------------------------
# merge_sorted (elementwise plans; launches in _merge.py, kernels in merge.cu)
# --------------------------------------------------------------------------

def merge_sorted(a_keys, b_keys, how):
    """a_keys (na,), b_keys (nb,) int64, each strictly increasing; not validated."""
    return _merge.merge_sorted(a_keys, b_keys, how)


def merge_rows(a_indptr, a_indices, b_indptr, b_indices, n_minor, how):
    """Two canonical compressed structures (indices sorted, unique per row) with the same rows; not validated.

    Composed: ``merge_sorted`` of the linear keys ``row * n_minor + index``
    (merge-path over all entries balances rows of any length), then the
    merged keys split back into rows and indices.
    """
    n_rows = int(a_indptr.size) - 1
    n_minor = int(n_minor)

    def keys(indptr, indices):
        out = expand(indptr, indices.size)
        out *= n_minor
        out += indices
        return out

    merged, a_index, b_index, count = merge_sorted(keys(a_indptr, a_indices), keys(b_indptr, b_indices), how)
    n = int(count)  # sync: the size of the merged structure
    rows = merged[:n] // n_minor
    index_dtype = np.result_type(a_indices.dtype, b_indices.dtype)
    indices = (merged[:n] - rows * n_minor).astype(index_dtype)
    return compress(rows, n_rows, _I64), indices, a_index[:n], b_index[:n]


# --------------------------------------------------------------------------
# reduce_by_key (reductions into few groups; composed in _reduce.py)
# --------------------------------------------------------------------------

def reduce_by_key(keys, values, n_out, op, with_counts=True):
    """keys (n,) int32/int64 in [0, n_out); values (n, w); not validated."""
    return _reduce.reduce_by_key(keys, values, n_out, op, with_counts)
