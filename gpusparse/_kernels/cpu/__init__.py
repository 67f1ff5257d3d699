"""CPU primitives: Numba kernels behind the interface of ``gpusparse._kernels``.

Every public name here has the signature and semantics of its twin in
``gpusparse._kernels.cuda``; the docstrings of
:class:`gpusparse._kernels.Primitives` are the specification. Kernels are
top-level functions, compiled lazily (first call per dtype) and cached on
disk through ``gpusparse._kernels._numba.jit``.
"""

from gpusparse._kernels.cpu._common import empty
from gpusparse._kernels.cpu._linalg import sddmm, spgemm, spmm, spmm_reduce, spmv
from gpusparse._kernels.cpu._merge import merge_rows, merge_rows_values, merge_sorted
from gpusparse._kernels.cpu._reduce import reduce_by_key
from gpusparse._kernels.cpu._layout import (
    compress, delinearize, expand, gather, linearize, offsets, scatter_dense, take_columns,
)
from gpusparse._kernels.cpu._semiring import spgemm_semiring, spmm_semiring
from gpusparse._kernels.cpu._select import bucket_order, copy_segments, segment_search
from gpusparse._kernels.cpu._segment import segment_reduce
from gpusparse._kernels.cpu._sort import run_starts, segment_ids, segment_starts, sort_pairs, sortedness
from gpusparse._kernels.cpu._transpose import transpose_compressed

__all__ = [
    "bucket_order",
    "compress",
    "copy_segments",
    "delinearize",
    "empty",
    "expand",
    "gather",
    "linearize",
    "merge_rows",
    "merge_rows_values",  # optional fused primitive (see gpusparse._kernels.OPTIONAL)
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
    "take_columns",
    "transpose_compressed",
    # products
    "sddmm",
    "spgemm",
    "spmm",
    "spmm_reduce",
    "spmv",
    # semiring products
    "spgemm_semiring",
    "spmm_semiring",
]
