"""Indexing: ``x[key]`` with NumPy's rules, and index_select, narrow, take, nonzero, argwhere.

``x[key]`` accepts every NumPy index on every format and every dimension,
sparse or dense: integers (negative too), slices with any step, ``...``,
``None``, boolean masks and integer arrays, several at once. Advanced indices
(arrays, and integers when an array is present) broadcast together; their
dimensions replace the first of them when they are adjacent in the key and go
first otherwise, exactly as in NumPy. A result with no dimension is a scalar
(a NumPy scalar on the CPU, a 0-d device array on a GPU, which avoids a
synchronisation); bad keys raise NumPy's ``IndexError``.

How it works, on the COO view of any format:

1. *Normalise* the key: expand ``...``, turn boolean masks into integer
   arrays (``nonzero``), broadcast the advanced indices, wrap negatives and
   check bounds (one synchronisation for all arrays).
2. *Filter* the entries by the integer and slice indices of sparse
   dimensions: a mask per dimension, one compaction, and the surviving
   coordinates remapped (``(c - start) // step``).
3. *Match* the entries with the advanced index tuples over sparse
   dimensions: linear keys of the index tuples are sorted, each entry finds
   its matches through a count table (small key ranges) or a binary search,
   and the matches are expanded with their multiplicities.
4. *Index the values* (``data``, shape ``(nnz, *dense_shape)``) with the
   dense part of the key, directly with the array module.

A dense dimension that must come before a sparse one in the result (an
advanced block moved in front) becomes sparse. Fast paths: row selection and
slicing of CSR (column selection of CSC) through ``indptr`` gathers, and
``index_select`` along the first axis of a sorted COO array.

One module per job:

* :mod:`~gpusparse.ops.indexing.keys`: key normalisation (step 1).
* :mod:`~gpusparse.ops.indexing.subscript`: ``getitem``, which picks a
  fast path or the general one.
* :mod:`~gpusparse.ops.indexing.general`: the general path (steps 2 and 4),
  with :mod:`~gpusparse.ops.indexing.matching` (step 3).
* :mod:`~gpusparse.ops.indexing.fast_paths`: the ``indptr`` gathers of whole
  rows.
* :mod:`~gpusparse.ops.indexing.named`: ``index_select``, ``narrow``,
  ``take``, ``nonzero``, ``argwhere``.
"""

from gpusparse.ops.indexing.named import argwhere, index_select, narrow, nonzero, take
from gpusparse.ops.indexing.subscript import getitem

__all__ = ["argwhere", "getitem", "index_select", "narrow", "nonzero", "take"]
