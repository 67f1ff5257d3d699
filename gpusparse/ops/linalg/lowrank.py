"""Randomized low-rank SVD and PCA (torch's ``svd_lowrank`` / ``pca_lowrank``), on the array's device.

The algorithms are torch's (Halko, Martinsson and Tropp 2009, Algorithms 4.4
and 5.1): a random range finder with ``niter`` power iterations, each a
product with ``A`` and one with ``A^H``, orthonormalised by QR, then the SVD
of the small ``q x n`` projection. ``A`` is only touched through products,
so a sparse ``A`` stays sparse; a shift ``M`` (``pca_lowrank``'s column
means) is applied as a rank-one correction instead of densifying
``A - M`` (torch materialises ``M`` densely for sparse input).
"""

from __future__ import annotations

import numpy as np

from gpusparse._backend import backend_of

__all__ = ["get_approximate_basis", "pca_lowrank", "svd_lowrank"]


def _float_dtype(dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


class _Shifted:
    """``A - M`` applied to blocks, without forming it. ``M`` broadcasts to ``A``'s shape."""

    def __init__(self, A, M=None, be=None):
        from gpusparse.ops.linalg.linear_operator import SparseOperator, _is_sparse
        self.sparse = _is_sparse(A)
        if self.sparse:
            self.op = SparseOperator(A, be=be)
            self.shape, self.device = self.op.shape, self.op.device
            self.backend = self.op._backend
            self.dtype = _float_dtype(self.op.dtype)
        else:
            from gpusparse._components import to_array
            arr, _ = to_array(A, "A")
            if arr.ndim != 2:
                raise ValueError(f"A must be 2-D, got shape {arr.shape}")
            self.backend = backend_of(arr) if be is None else be
            self.device = self.backend.device
            self.dtype = _float_dtype(arr.dtype)
            self.dense = arr.astype(self.dtype, copy=False)
            self.shape = tuple(arr.shape)
        xp = self.backend.xp
        self.M = None
        if M is not None:
            with self.backend.scope():
                M = xp.asarray(M)
                if M.ndim != 2:
                    M = M.reshape((1,) * (2 - M.ndim) + M.shape)
                try:
                    np.broadcast_shapes(M.shape, self.shape)
                except ValueError:
                    raise ValueError(f"M of shape {M.shape} does not broadcast to A's shape {self.shape}") from None
                self.dtype = np.result_type(self.dtype, M.dtype)
                # A row vector stays a row vector (rank one); anything else is broadcast densely.
                self.M = M if M.shape[0] == 1 and self.shape[0] != 1 else xp.broadcast_to(M, self.shape)

    @property
    def xp(self):
        return self.backend.xp

    def matmat(self, X):
        """``(A - M) @ X``."""
        with self.backend.scope():
            Y = self.op.matmat(X) if self.sparse else self.dense @ X
            if self.M is not None:
                Y = Y - self.M @ X
            return Y

    def rmatmat(self, X):
        """``(A - M)^H @ X``."""
        xp = self.xp
        with self.backend.scope():
            Y = self.op.rmatmat(X) if self.sparse else xp.conj(self.dense).T @ X
            if self.M is not None:
                if self.M.shape[0] == 1 and self.shape[0] != 1:  # M = ones(m, 1) @ row
                    Y = Y - xp.conj(self.M).T @ X.sum(axis=0, keepdims=True)
                else:
                    Y = Y - xp.conj(self.M).T @ X
            return Y


class _Adjoint:
    """The conjugate transpose of an operator with matmat / rmatmat."""

    def __init__(self, op):
        self.op = op
        self.shape = op.shape[::-1]
        self.dtype, self.device, self.backend = op.dtype, op.device, op.backend

    def matmat(self, X):
        return self.op.rmatmat(X)

    def rmatmat(self, X):
        return self.op.matmat(X)


def _randn(rng, shape, dtype, xp):
    dtype = np.dtype(dtype)
    real = np.dtype(np.float32) if dtype in (np.float32, np.complex64) else np.dtype(np.float64)
    out = rng.standard_normal(shape, dtype=real)
    if dtype.kind == "c":
        out = (out + 1j * rng.standard_normal(shape, dtype=real)).astype(dtype) / np.sqrt(2).astype(real)
    return out


def _orthonormal(X, xp):
    return xp.linalg.qr(X)[0]


def _basis(op, q, niter, rng):
    xp = op.backend.xp
    R = _randn(rng, (op.shape[1], q), op.dtype, xp)
    Q = _orthonormal(op.matmat(R), xp)
    for _ in range(niter):
        Q = _orthonormal(op.rmatmat(Q), xp)
        Q = _orthonormal(op.matmat(Q), xp)
    return Q


def _check_q(q, m, n, name="q"):
    if not isinstance(q, (int, np.integer)) or isinstance(q, bool) or not 0 <= q <= min(m, n):
        raise ValueError(f"{name} must be an integer in [0, min(m, n)] = [0, {min(m, n)}], got {q!r}")
    return int(q)


def get_approximate_basis(A, q, niter=2, M=None, *, seed=None):
    """An ``(m, q)`` orthonormal basis whose span approximates the range of ``A - M`` (torch's name).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> from gpusparse.linalg import get_approximate_basis
    >>> Q = get_approximate_basis(gs.eye(5, device="cpu"), 2, seed=0)
    >>> Q.shape, bool(np.allclose(Q.T @ Q, np.eye(2)))
    ((5, 2), True)
    """
    op = _Shifted(A, M)
    xp = op.backend.xp
    with op.backend.scope():
        rng = xp.random.default_rng(seed)
        return _basis(op, q, int(niter), rng)


def svd_lowrank(A, q=6, niter=2, M=None, *, seed=None):
    """Approximate ``q`` largest singular triplets: ``A - M ~ U @ diag(S) @ V^H`` (torch's ``svd_lowrank``).

    Parameters
    ----------
    A : SparseArray or dense array
        A 2-D matrix; a sparse one is only multiplied, never densified.
    q : int
        The rank of the approximation (a slight overestimate of the rank
        wanted improves accuracy), at most ``min(m, n)``.
    niter : int
        Power iterations (each one product with ``A`` and one with ``A^H``).
    M : array_like, optional
        Dense matrix broadcastable to ``A``'s shape, subtracted from ``A``
        (a row vector is applied as a rank-one term).
    seed : int, optional
        Seed of the random starting block (torch uses its global generator).

    Returns
    -------
    U : (m, q), S : (q,), V : (n, q) dense arrays on ``A``'s device.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> from gpusparse.linalg import svd_lowrank
    >>> a = gs.fromdense(np.diag([5.0, 3.0, 1.0, 0.0]), device="cpu")
    >>> U, S, V = svd_lowrank(a, q=3, seed=0)
    >>> np.round(S, 10).tolist()
    [5.0, 3.0, 1.0]
    """
    return _svd_lowrank(A, q, niter, M, seed, None)


def _svd_lowrank(A, q, niter, M, seed, be):
    """:func:`svd_lowrank`; ``be`` is the backend of ``A``'s device when the caller has it (else None)."""
    op = _Shifted(A, M, be)
    m, n = op.shape
    q = _check_q(q, m, n)
    xp = op.backend.xp
    with op.backend.scope():
        rng = xp.random.default_rng(seed)
        work = _Adjoint(op) if m < n else op
        Q = _basis(work, q, int(niter), rng)
        B = xp.conj(work.rmatmat(Q)).T  # Q^H @ (A - M), (q, cols)
        U_small, S, Vh = xp.linalg.svd(B, full_matrices=False)
        V = xp.conj(Vh).T
        U = Q @ U_small
        if m < n:
            U, V = V, U
        return U, S, V


def pca_lowrank(A, q=None, center=True, niter=2, *, seed=None):
    """Principal components of the rows of ``A`` by randomized SVD (torch's ``pca_lowrank``).

    Returns ``(U, S, V)`` with ``A - mean ~ U @ diag(S) @ V^H`` where ``mean``
    is the column mean (``center=True``); ``V``'s columns are the principal
    directions and ``S**2 / (m - 1)`` the explained variances. ``q`` defaults
    to ``min(6, m, n)``. The mean of a sparse ``A`` is subtracted implicitly
    (a rank-one term), so ``A`` stays sparse.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> from gpusparse.linalg import pca_lowrank
    >>> rng = np.random.default_rng(0)
    >>> data = rng.standard_normal((50, 1)) @ np.array([[3.0, 0.0, 4.0]]) + 7.0
    >>> U, S, V = pca_lowrank(gs.fromdense(data, device="cpu"), q=1, seed=0)
    >>> np.round(np.abs(V[:, 0]), 6).tolist()
    [0.6, 0.0, 0.8]
    """
    from gpusparse.ops.linalg.linear_operator import _is_sparse
    shape = tuple(A.shape)
    if len(shape) != 2:
        raise ValueError(f"A must be 2-D, got shape {shape}")
    m, n = shape
    q = min(6, m, n) if q is None else _check_q(q, m, n)
    if not center:
        return svd_lowrank(A, q, niter, None, seed=seed)
    if _is_sparse(A):
        from gpusparse.ops.linalg.products import matmul_on
        be = backend_of(A)
        with be.scope():
            dtype = _float_dtype(A.dtype)
            mean = matmul_on(be.xp.ones((1, m), dtype=dtype), A, be) / dtype.type(max(m, 1))
    else:
        from gpusparse._components import to_array
        arr, _ = to_array(A, "A")
        be = backend_of(arr)
        with be.scope():
            mean = arr.astype(_float_dtype(arr.dtype), copy=False).mean(axis=0, keepdims=True)
        A = arr
    return _svd_lowrank(A, q, niter, mean, seed, be)
