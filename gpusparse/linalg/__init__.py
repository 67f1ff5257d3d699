"""Linear algebra on sparse arrays, on the arrays' own device.

The public face: re-exports only; the implementations are in
:mod:`gpusparse.ops.linalg`.

* :func:`aslinearoperator`: a SciPy (CPU) or CuPy (CUDA) ``LinearOperator``
  backed by gpusparse's SpMV / SpMM, so that the libraries' ``cg``,
  ``gmres``, ``minres``, ``eigsh``, ``svds`` and ``lobpcg`` run on gpusparse
  arrays.
* :func:`norm`: Frobenius, matrix 1 / inf and vector p-norms (NumPy's
  semantics).
* :func:`lobpcg`, :func:`svd_lowrank`, :func:`pca_lowrank`,
  :func:`get_approximate_basis`: torch's names and signatures.
* :func:`matmul`, :func:`tensordot`, :func:`outer`, :func:`vecdot`,
  :func:`matrix_norm`, :func:`vector_norm`, :func:`diagonal`, :func:`trace`,
  :func:`matrix_transpose`: the array API's ``linalg`` extension, over the
  products of :mod:`gpusparse.ops.linalg` and the reductions.
* :func:`cholesky`, :func:`cross`, :func:`det`, :func:`eig`, :func:`eigh`,
  :func:`eigvals`, :func:`eigvalsh`, :func:`inv`, :func:`matrix_power`,
  :func:`matrix_rank`, :func:`pinv`, :func:`qr`, :func:`slogdet`,
  :func:`solve`, :func:`svd`, :func:`svdvals`: the extension's
  decompositions and solvers, dense in nature: computed densely on the
  array's device, results sparse (:mod:`gpusparse.ops.linalg.dense_routines`).
"""

from gpusparse.ops.numpy.products import _linalg_outer as outer
from gpusparse.ops.numpy.products import _matrix_norm as matrix_norm
from gpusparse.ops.numpy.products import _vecdot as vecdot
from gpusparse.ops.numpy.products import _vector_norm as vector_norm
from gpusparse.ops.numpy.rearranging import _linalg_diagonal as diagonal
from gpusparse.ops.numpy.rearranging import _linalg_trace as trace
from gpusparse.ops.linalg import matmul, tensordot
from gpusparse.ops.linalg.dense_routines import (cholesky, cross, det, eig, eigh, eigvals, eigvalsh, inv,
                                                 matrix_power, matrix_rank, pinv, qr, slogdet, solve, svd,
                                                 svdvals)
from gpusparse.ops.linalg.eigen import lobpcg
from gpusparse.ops.linalg.linear_operator import aslinearoperator
from gpusparse.ops.linalg.lowrank import get_approximate_basis, pca_lowrank, svd_lowrank
from gpusparse.ops.linalg.norms import norm
from gpusparse.ops.shape import matrix_transpose

__all__ = [
    "aslinearoperator",
    "cholesky",
    "cross",
    "det",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "inv",
    "matrix_power",
    "matrix_rank",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "diagonal",
    "get_approximate_basis",
    "lobpcg",
    "matmul",
    "matrix_norm",
    "matrix_transpose",
    "norm",
    "outer",
    "pca_lowrank",
    "svd_lowrank",
    "tensordot",
    "trace",
    "vecdot",
    "vector_norm",
]
