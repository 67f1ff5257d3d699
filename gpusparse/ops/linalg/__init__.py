"""Linear algebra on sparse arrays: every product, operand rule and solver, one module per job.

The public faces are :mod:`gpusparse.linalg` (the array API's ``linalg``
extension, the solvers and norms) and the products re-exported here and at
the top level (``gpusparse.matmul``, ``gpusparse.mm``, ...).

* :mod:`~gpusparse.ops.linalg.products`: NumPy's and TF's products
  (``matmul``, ``dot``, ``tensordot``, ``inner``, ``outer``, ``kron``,
  ``sparse_dense_matmul``) and the semantics every product shares.
* :mod:`~gpusparse.ops.linalg.torch_names`: torch's family (``mm`` with
  ``reduce``, ``mv``, ``bmm``, ``addmm``, ``sspaddmm``, ``hspmm``, ``smm``,
  ``sampled_addmm``).
* :mod:`~gpusparse.ops.linalg.operands`: validation, devices, dtypes and
  the :class:`~gpusparse.ops.linalg.operands.CsrView` of sparse operands.
* :mod:`~gpusparse.ops.linalg.core`: the engines (SpMV / SpMM / SpGEMM
  dispatch, N-d batching, expand-sort-compress).
* :mod:`~gpusparse.ops.linalg.numpy_names`: NumPy's ``__array_ufunc__`` /
  ``__array_function__`` entries for the products.
* :mod:`~gpusparse.ops.linalg.norms`: ``norm``.
* :mod:`~gpusparse.ops.linalg.linear_operator`: ``aslinearoperator``
  (SciPy / CuPy ``LinearOperator`` over SpMV / SpMM).
* :mod:`~gpusparse.ops.linalg.eigen`: ``lobpcg``.
* :mod:`~gpusparse.ops.linalg.lowrank`: ``svd_lowrank``, ``pca_lowrank``,
  ``get_approximate_basis``.
* :mod:`~gpusparse.ops.linalg.dense_in_nature`: ``dense_call``, running a
  dense routine of the device's library on sparse operands;
  :mod:`~gpusparse.ops.linalg.dense_routines`: the array API's
  decompositions and solvers built on it (``inv``, ``solve``, ``qr``, ...).
"""

from gpusparse.ops.linalg.products import (
    dot,
    inner,
    kron,
    matmul,
    outer,
    sparse_dense_matmul,
    tensordot,
)
from gpusparse.ops.linalg.torch_names import (
    MM_REDUCE_OPS,
    addmm,
    bmm,
    hspmm,
    mm,
    mv,
    sampled_addmm,
    smm,
    sspaddmm,
)

__all__ = [
    "MM_REDUCE_OPS",
    "addmm",
    "bmm",
    "dot",
    "hspmm",
    "inner",
    "kron",
    "matmul",
    "mm",
    "mv",
    "outer",
    "sampled_addmm",
    "smm",
    "sparse_dense_matmul",
    "sspaddmm",
    "tensordot",
]
