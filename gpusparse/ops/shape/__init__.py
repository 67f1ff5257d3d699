"""Shape operations: transpose, reshape, squeeze, broadcast, concatenate, split, pad, ...

Every function follows NumPy's semantics (and error messages) on the dense
array a sparse array stands for, on any format, any rank and any split into
sparse and dense dimensions. They work on the COO view:

* axes permutations permute the coordinate rows (and transpose ``data`` for
  dense dimensions); the result is flagged unsorted unless the sparse
  dimensions keep their order. Transposing CSR gives CSC over the same
  arrays, and back.
* ``reshape`` splits the old and new shapes into blocks of equal size and
  re-linearises only the blocks that change; the order of the entries, and
  so the sorted flag, is kept. A block whose size does not fit in 63 bits
  takes a slow exact path through Python integers, never an overflow.
* Where a dense dimension has to move in front of a sparse one, it becomes
  sparse first (:func:`sparsify`): each stored block turns into one entry
  per element.

Results of compressed inputs keep the format where the result has the two
sparse dimensions in order (and swap CSR/CSC on transposition); otherwise
they are COO.

One module per job:

* :mod:`~gpusparse.ops.shape.permutation`: ``permute_dims`` (``transpose``),
  ``swapaxes``, ``moveaxis``, ``matrix_transpose``.
* :mod:`~gpusparse.ops.shape.reshaping`: ``reshape``, ``squeeze``,
  ``expand_dims``, ``broadcast_to``, ``resize``.
* :mod:`~gpusparse.ops.shape.joining`: ``concatenate``, ``stack``,
  ``vstack``, ``hstack``, ``dstack``.
* :mod:`~gpusparse.ops.shape.splitting`: ``split``, ``array_split``.
* :mod:`~gpusparse.ops.shape.pad_roll_flip`: ``pad``, ``roll``, ``flip``.
* :mod:`~gpusparse.ops.shape.diagonals`: ``tril``, ``triu``, ``diagonal``,
  ``diag``.
* :mod:`~gpusparse.ops.shape._common`: the helpers they share, and
  ``sparsify``.
"""

from gpusparse.ops.shape._common import sparsify
from gpusparse.ops.shape.diagonals import diag, diagonal, tril, triu
from gpusparse.ops.shape.joining import concatenate, dstack, hstack, stack, vstack
from gpusparse.ops.shape.pad_roll_flip import flip, pad, roll
from gpusparse.ops.shape.permutation import matrix_transpose, moveaxis, permute_dims, swapaxes, transpose
from gpusparse.ops.shape.reshaping import broadcast_to, expand_dims, reshape, resize, squeeze
from gpusparse.ops.shape.splitting import array_split, split

__all__ = [
    "array_split",
    "broadcast_to",
    "concatenate",
    "diag",
    "diagonal",
    "dstack",
    "expand_dims",
    "flip",
    "hstack",
    "matrix_transpose",
    "moveaxis",
    "pad",
    "permute_dims",
    "reshape",
    "resize",
    "roll",
    "sparsify",
    "split",
    "squeeze",
    "stack",
    "swapaxes",
    "transpose",
    "tril",
    "triu",
    "vstack",
]
