"""Randomized low-rank SVD and PCA of a sparse operand, differentiable (torch's ``svd_lowrank`` / ``pca_lowrank``).

The algorithm is the one of :mod:`gpusparse.ops.linalg.lowrank` and torch
(Halko, Martinsson and Tropp 2009): a random range finder with ``niter``
power iterations, orthonormalised by QR, then the SVD of the small
projection. Written here with torch operations on the dense blocks and the
differentiable :func:`gpusparse.autograd.mm` products, so gradients flow to
the sparse values (on their pattern) as in torch. The random matrix is drawn
with ``torch.randn`` exactly as torch draws it, so for the same seed the
results equal torch's. ``pca_lowrank`` applies the column means as a rank-one
correction (torch materialises them as a dense matrix for sparse input).
"""

from __future__ import annotations

import torch

from gpusparse.autograd import _ops
from gpusparse.autograd._api import _matrix

__all__ = ["pca_lowrank", "svd_lowrank"]


class _Operator:
    """``A - 1 c`` (``c`` a row of column means, or none) and its transpose, applied to blocks."""

    def __init__(self, sp, c=None, transposed=False):
        self.sp, self.c, self.t = sp, c, transposed
        m, n = sp.shape
        self.shape = (n, m) if transposed else (m, n)

    def transpose(self):
        return _Operator(self.sp, self.c, not self.t)

    def matmat(self, X):
        Y = _ops.spmm(self.sp, X, transpose=self.t)
        if self.c is None:
            return Y
        if self.t:  # (A - 1 c)^T X = A^T X - c^T (1^T X)
            return Y - self.c[:, None] * X.sum(0, keepdim=True)
        return Y - (self.c @ X)[None, :]


def _basis(op, q, niter, dtype, device):
    R = torch.randn(op.shape[1], q, dtype=dtype, device=device)
    Q = torch.linalg.qr(op.matmat(R)).Q
    at = op.transpose()
    for _ in range(niter):
        Q = torch.linalg.qr(at.matmat(Q)).Q
        Q = torch.linalg.qr(op.matmat(Q)).Q
    return Q


def _svd(op, q, niter):
    m, n = op.shape
    values = op.sp.values
    if m < n:
        op = op.transpose()
    Q = _basis(op, q, niter, values.dtype, values.device)
    B = op.transpose().matmat(Q).mT  # Q^T A
    U, S, Vh = torch.linalg.svd(B, full_matrices=False)
    V = Vh.mT
    U = Q @ U
    if m < n:
        U, V = V, U
    return U, S, V


def svd_lowrank(A, q=6, niter=2):
    """Approximate ``U, S, V`` with ``A ~ U diag(S) V^T`` for a sparse 2-D ``A`` (torch's ``svd_lowrank``).

    Parameters
    ----------
    A : sparse matrix (torch sparse tensor or parts tuple), real floating values
    q : int
        Rank of the approximation (slightly above the wanted rank).
    niter : int
        Number of power iterations.

    Examples
    --------
    >>> import torch, gpusparse.autograd as ga
    >>> A = torch.diag(torch.tensor([3.0, 2.0, 1.0], dtype=torch.float64)).to_sparse()
    >>> U, S, V = ga.svd_lowrank(A, q=3)
    >>> S
    tensor([3., 2., 1.], dtype=torch.float64)
    """
    sp = _matrix(A, "A")
    q = 6 if q is None else int(q)
    if not 0 < q <= min(sp.shape):
        raise ValueError(f"q must be between 1 and min(A.shape) = {min(sp.shape)}, got {q}")
    return _svd(_Operator(sp), q, int(niter))


def pca_lowrank(A, q=None, center=True, niter=2):
    """Principal components of a sparse 2-D ``A`` (torch's ``pca_lowrank``): ``U, S, V`` of ``A - mean``.

    Examples
    --------
    >>> import torch, gpusparse.autograd as ga
    >>> A = torch.tensor([[1.0, 0.0], [0.0, 0.0], [2.0, 0.0]], dtype=torch.float64).to_sparse()
    >>> U, S, V = ga.pca_lowrank(A, q=1)
    >>> S
    tensor([1.], dtype=torch.float64)
    """
    sp = _matrix(A, "A")
    m, n = sp.shape
    q = min(6, m, n) if q is None else int(q)
    if not 0 < q <= min(m, n):
        raise ValueError(f"q must be between 1 and min(A.shape) = {min(m, n)}, got {q}")
    c = None
    if center:
        ones = torch.ones(1, m, dtype=sp.values.dtype, device=sp.values.device)
        c = _ops.spmm(sp, ones.mT, transpose=True)[:, 0] / m  # column means
    return _svd(_Operator(sp, c), q, int(niter))
