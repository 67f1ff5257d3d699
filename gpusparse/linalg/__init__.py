"""Linear algebra on sparse arrays, on the arrays' own device.

* :func:`aslinearoperator`: a SciPy (CPU) or CuPy (CUDA) ``LinearOperator``
  backed by gpusparse's SpMV / SpMM, so that the libraries' ``cg``,
  ``gmres``, ``minres``, ``eigsh``, ``svds`` and ``lobpcg`` run on gpusparse
  arrays.
* :func:`norm`: Frobenius, matrix 1 / inf and vector p-norms (NumPy's
  semantics).
* :func:`lobpcg`, :func:`svd_lowrank`, :func:`pca_lowrank`,
  :func:`get_approximate_basis`: torch's names and signatures.
* :func:`matmul`, :func:`tensordot`, :func:`outer`: the products of
  :mod:`gpusparse.ops.linalg`, under the array API's ``linalg`` names.
"""

from gpusparse.linalg._lobpcg import lobpcg
from gpusparse.linalg._lowrank import get_approximate_basis, pca_lowrank, svd_lowrank
from gpusparse.linalg._norm import norm
from gpusparse.linalg._operator import aslinearoperator
from gpusparse.ops.linalg import matmul, outer, tensordot

__all__ = [
    "aslinearoperator",
    "get_approximate_basis",
    "lobpcg",
    "matmul",
    "norm",
    "outer",
    "pca_lowrank",
    "svd_lowrank",
    "tensordot",
]
