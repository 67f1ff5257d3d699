"""Sparse matrices as linear operators: the products the solvers call, on the array's own device.

:class:`SparseOperator` holds one kernel-ready view of a 2-D sparse array
(a COO is compressed once, CSR and CSC are used as they are) and applies it
and its adjoint to dense vectors and blocks through the ``spmv`` / ``spmm``
primitives. :func:`aslinearoperator` wraps it in SciPy's
``LinearOperator`` for CPU arrays and in ``cupyx.scipy.sparse.linalg``'s for
CUDA arrays, so that their iterative solvers (``cg``, ``gmres``,
``minres``, ``eigsh``, ``svds``, ``lobpcg``, ...) run on gpusparse arrays
without leaving the device.
"""

from __future__ import annotations

import numpy as np

from gpusparse._backend import backend

__all__ = ["SparseOperator", "aslinearoperator"]


def _is_sparse(x) -> bool:
    from gpusparse.containers import SparseArray
    return isinstance(x, SparseArray)


class SparseOperator:
    """``A`` (2-D sparse, zero fill) ready for repeated products with dense vectors and blocks.

    Parameters
    ----------
    x : SparseArray
        A 2-D sparse array in any format. Dense dimensions are made sparse,
        COO input is compressed (once); the fill value must be 0.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> from gpusparse.ops.linalg.linear_operator import SparseOperator
    >>> op = SparseOperator(gs.eye(3, k=1, device="cpu"))
    >>> op.matvec(np.array([1.0, 2.0, 3.0])), op.rmatvec(np.array([1.0, 2.0, 3.0]))
    (array([2., 3., 0.]), array([0., 1., 2.]))
    """

    def __init__(self, x, *, be=None):
        from gpusparse.ops.linalg.operands import all_sparse, csr_view, require_zero_fill
        if not _is_sparse(x):
            raise TypeError(f"x must be a gpusparse sparse array, got {type(x).__name__}")
        if x.ndim != 2:
            raise ValueError(f"x must be 2-D to act as a linear operator, got shape {x.shape}")
        require_zero_fill(x, "x", "aslinearoperator")
        self._backend = backend(x.device) if be is None else be  # be: the caller's backend of x's device
        x = all_sparse(x, be=self._backend)
        self.shape = tuple(x.shape)
        self.device = x.device
        self.dtype = np.dtype(np.int64) if x.dtype == np.bool_ else x.dtype
        with self._backend.scope():
            self._view = csr_view(x, warn=False, be=self._backend).astype(self.dtype)
        self._adjoint = None

    @property
    def xp(self):
        return self._backend.xp

    def _apply(self, view, v, n_out):
        from gpusparse.ops.linalg.core import spmm_into
        xp = self.xp
        with self._backend.scope():
            v = xp.asarray(v)
            dtype = np.result_type(self.dtype, v.dtype)
            vector = v.ndim == 1
            block = v.reshape(-1, 1) if vector else v
            if block.ndim != 2 or block.shape[0] != view.shape[1]:
                raise ValueError(f"operand of shape {v.shape} does not match an operator of shape {view.shape}")
            out = xp.empty((n_out, block.shape[1]), dtype=dtype)
            spmm_into(view.astype(dtype), block.astype(dtype, copy=False), out, self._backend)
            return out.reshape(-1) if vector else out

    def adjoint_view(self):
        if self._adjoint is None:
            self._adjoint = self._view.adjoint()
        return self._adjoint

    def matvec(self, v):
        """``A @ v`` for a vector ``(n,)`` or block ``(n, k)``."""
        return self._apply(self._view, v, self.shape[0])

    matmat = matvec

    def rmatvec(self, v):
        """``A.conj().T @ v`` (SciPy's ``rmatvec``: the adjoint)."""
        return self._apply(self.adjoint_view(), v, self.shape[1])

    rmatmat = rmatvec


def aslinearoperator(x, *, be=None):
    """A SciPy (CPU) or CuPy (CUDA) ``LinearOperator`` backed by gpusparse's SpMV / SpMM.

    The operator runs on ``x``'s device: SciPy's iterative solvers for CPU
    arrays, ``cupyx.scipy.sparse.linalg``'s for CUDA arrays. ``matvec`` /
    ``matmat`` apply ``x``, ``rmatvec`` / ``rmatmat`` its conjugate
    transpose (no transposed copy is made). A dense array is passed to the
    library's own ``aslinearoperator``.

    Parameters
    ----------
    x : SparseArray or dense array
        A 2-D array with a zero fill value.
    be : Backend, optional
        The backend of ``x``'s device, when the caller has it already.

    Examples
    --------
    >>> import numpy as np, scipy.sparse.linalg as spla, gpusparse as gs
    >>> from gpusparse.linalg import aslinearoperator
    >>> a = gs.fromdense(np.diag([1.0, 2.0, 4.0]), format="csr", device="cpu")
    >>> x, info = spla.cg(aslinearoperator(a), np.array([1.0, 1.0, 1.0]))
    >>> info, np.allclose(x, [1.0, 0.5, 0.25])
    (0, True)
    """
    if not _is_sparse(x):
        from gpusparse._device import array_device
        from gpusparse._components import to_array
        arr, _ = to_array(x, "x")
        if array_device(arr).is_cuda:
            from cupyx.scipy.sparse.linalg import aslinearoperator as cupy_aslinop
            return cupy_aslinop(arr)
        from scipy.sparse.linalg import aslinearoperator as scipy_aslinop
        return scipy_aslinop(arr)
    op = SparseOperator(x, be=be)
    if op.device.is_cuda:
        from cupyx.scipy.sparse.linalg import LinearOperator
    else:
        from scipy.sparse.linalg import LinearOperator
    return LinearOperator(op.shape, matvec=op.matvec, rmatvec=op.rmatvec, matmat=op.matmat,
                          rmatmat=op.rmatmat, dtype=op.dtype)
