"""LOBPCG eigenpairs with torch's signature, run by SciPy (CPU) or CuPy (CUDA) on gpusparse operators.

The iteration is the library one (``scipy.sparse.linalg.lobpcg`` /
``cupyx.scipy.sparse.linalg.lobpcg``, Knyazev's method); every product
with the sparse ``A`` (and ``B``) goes through
:class:`~gpusparse.ops.linalg.linear_operator.SparseOperator`, so it stays on the
array's device.
"""

from __future__ import annotations

import numpy as np

from gpusparse._backend import backend_of

__all__ = ["lobpcg"]


def _as_operator(x, name, be):
    """A library LinearOperator (sparse input) or the array itself (dense input), on ``be``."""
    if x is None:
        return None
    from gpusparse.ops.linalg.linear_operator import _is_sparse, aslinearoperator
    if _is_sparse(x):
        if x.device != be.device:
            raise ValueError(f"{name} is on {x.device} but A is on {be.device}; move one with .to(device)")
        return aslinearoperator(x, be=be)
    if callable(x) and not hasattr(x, "shape"):
        raise TypeError(f"{name} must be a sparse array, a dense array or a LinearOperator")
    if hasattr(x, "matvec"):
        return x
    from gpusparse._components import to_array
    arr, _ = to_array(x, name)
    return arr


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None, *, seed=None):
    """The ``k`` largest (or smallest) eigenpairs of symmetric ``A x = lambda B x`` (torch's ``lobpcg``).

    Parameters
    ----------
    A : SparseArray or dense array
        Square, symmetric (Hermitian) ``(m, m)``.
    k : int, optional
        Eigenpairs wanted; by default ``X``'s number of columns, or 1.
    B : SparseArray or dense array, optional
        Symmetric positive definite right-hand side of a generalized problem.
    X : dense array, optional
        ``(m, n)`` starting block; random (``seed``) when omitted.
    n : int, optional
        Columns of the random starting block (default ``k``); ``n >= k``.
    iK : SparseArray, dense array or LinearOperator, optional
        A preconditioner approximating ``A^-1``.
    niter : int, optional
        Maximum iterations (default 1000; ``-1``: until convergence).
    tol : float, optional
        Residual tolerance (the library's default when omitted).
    largest : bool, optional
        Largest eigenvalues (default) or smallest.

    Returns
    -------
    E : (k,) eigenvalues (descending for ``largest``, else ascending),
    X : (m, k) eigenvectors, dense arrays on ``A``'s device.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> from gpusparse.linalg import lobpcg
    >>> a = gs.fromdense(np.diag(np.arange(1.0, 21.0)), format="csr", device="cpu")
    >>> E, X = lobpcg(a, k=2, seed=0)
    >>> np.round(E, 6).tolist()
    [20.0, 19.0]
    """
    from gpusparse.ops.linalg.linear_operator import _is_sparse
    shape = tuple(A.shape)
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"lobpcg: A must be square, got shape {shape}")
    m = shape[0]
    if not _is_sparse(A):
        from gpusparse._components import to_array
        A, _ = to_array(A, "A")
    be = backend_of(A)
    device, xp = be.device, be.xp
    largest = True if largest is None else bool(largest)
    niter = 1000 if niter is None else (2**31 - 1 if int(niter) < 0 else int(niter))
    with be.scope():
        dtype = np.dtype(A.dtype)
        dtype = dtype if dtype.kind in "fc" else np.dtype(np.float64)
        if X is None:
            k = 1 if k is None else int(k)
            n = k if n is None else int(n)
            if n < k:
                raise ValueError(f"lobpcg: n ({n}) must be at least k ({k})")
            rng = xp.random.default_rng(seed)
            X = rng.standard_normal((m, n)).astype(dtype)
        else:
            X = xp.asarray(X).astype(dtype, copy=False)
            if X.ndim != 2 or X.shape[0] != m:
                raise ValueError(f"lobpcg: X must have shape (m, n) = ({m}, n), got {X.shape}")
            k = X.shape[1] if k is None else int(k)
            if k > X.shape[1]:
                raise ValueError(f"lobpcg: k ({k}) exceeds X's {X.shape[1]} columns")
        if not 1 <= k <= m:
            raise ValueError(f"lobpcg: k must be in [1, {m}], got {k}")
        op_A = _as_operator(A, "A", be)
        op_B = _as_operator(B, "B", be)
        op_M = _as_operator(iK, "iK", be)
        if device.is_cuda:
            from cupyx.scipy.sparse.linalg import lobpcg as library_lobpcg
        else:
            from scipy.sparse.linalg import lobpcg as library_lobpcg
        E, V = library_lobpcg(op_A, X, B=op_B, M=op_M, tol=tol, maxiter=niter, largest=largest)
        order = xp.argsort(-E if largest else E)[:k]
        return E[order], V[:, order]
