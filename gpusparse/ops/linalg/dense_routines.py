"""The decompositions and solvers of the array API's ``linalg`` extension (dense in nature).

Each runs the device library's routine (``numpy.linalg`` or
``cupy.linalg``) on the densified operands and returns sparse arrays (fill
value 0): see :mod:`gpusparse.ops.linalg.dense_in_nature`. Named-tuple results carry
the standard's field names.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpusparse.ops.linalg.dense_in_nature import dense_call

__all__ = ["cholesky", "cross", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv", "matrix_power",
           "matrix_rank", "pinv", "qr", "slogdet", "solve", "svd", "svdvals"]


class EighResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class EigResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class QRResult(NamedTuple):
    Q: object
    R: object


class SlogdetResult(NamedTuple):
    sign: object
    logabsdet: object


class SVDResult(NamedTuple):
    U: object
    S: object
    Vh: object


def _mH(xp, a):
    return xp.conj(xp.swapaxes(a, -1, -2))


def cholesky(x, /, *, upper=False):
    """Cholesky factor of Hermitian positive-definite matrices (lower, or upper with ``upper=True``).

    >>> import numpy as np, gpusparse as gs
    >>> gs.linalg.cholesky(gs.asarray(np.array([[4.0, 0.0], [0.0, 9.0]]), device="cpu")).todense()
    array([[2., 0.],
           [0., 3.]])
    """
    def compute(xp, a):
        lower = xp.linalg.cholesky(a)
        return _mH(xp, lower) if upper else lower
    return dense_call("cholesky", (x,), compute)


def cross(x1, x2, /, *, axis=-1):
    """Cross products of 3-element vectors along ``axis``."""
    return dense_call("cross", (x1, x2), lambda xp, a, b: xp.cross(a, b, axis=axis))


def det(x, /):
    """Determinants of square matrices (a 0-d sparse array for one matrix)."""
    return dense_call("det", (x,), lambda xp, a: xp.linalg.det(a))


def eig(x, /):
    """Eigenvalues and right eigenvectors of square matrices (complex results)."""
    def compute(xp, a):
        w, v = xp.linalg.eig(a)
        complex_dtype = np.result_type(a.dtype, np.complex64)
        return w.astype(complex_dtype, copy=False), v.astype(complex_dtype, copy=False)
    return dense_call("eig", (x,), compute, EigResult)


def eigvals(x, /):
    """Eigenvalues of square matrices (complex)."""
    return dense_call("eigvals", (x,), lambda xp, a: xp.linalg.eigvals(a).astype(
        np.result_type(a.dtype, np.complex64), copy=False))


def eigh(x, /):
    """Eigenvalues (ascending) and eigenvectors of Hermitian matrices."""
    return dense_call("eigh", (x,), lambda xp, a: tuple(xp.linalg.eigh(a)), EighResult)


def eigvalsh(x, /):
    """Eigenvalues (ascending) of Hermitian matrices."""
    return dense_call("eigvalsh", (x,), lambda xp, a: xp.linalg.eigvalsh(a))


def inv(x, /):
    """Inverses of square matrices."""
    return dense_call("inv", (x,), lambda xp, a: xp.linalg.inv(a))


def matrix_power(x, n, /):
    """Square matrices raised to the integer power ``n``."""
    return dense_call("matrix_power", (x,), lambda xp, a: xp.linalg.matrix_power(a, n))


def _default_rtol(a):
    return max(a.shape[-2:], default=0) * np.finfo(np.result_type(a.dtype, np.float32)).eps


def _rtol_on_device(xp, rtol, a):
    """``rtol`` as a scalar or a dense array of the device (``None``: the standard's default)."""
    if rtol is None:
        return _default_rtol(a)
    if hasattr(rtol, "todense"):  # a gpusparse array of tolerances, one per matrix
        return rtol.todense()
    return xp.asarray(rtol) if getattr(rtol, "ndim", 0) else rtol


def matrix_rank(x, /, *, rtol=None):
    """Ranks of matrices: singular values above ``rtol`` times the largest count (int64)."""
    def compute(xp, a):
        s = xp.linalg.svd(a, compute_uv=False)
        if s.shape[-1] == 0:
            return xp.zeros(s.shape[:-1], dtype=np.int64)
        rtols = _rtol_on_device(xp, rtol, a)
        tol = s.max(axis=-1, keepdims=True) * (rtols[..., None] if getattr(rtols, "ndim", 0) else rtols)
        return xp.count_nonzero(s > tol, axis=-1).astype(np.int64)
    return dense_call("matrix_rank", (x,), compute)


def pinv(x, /, *, rtol=None):
    """Moore-Penrose pseudo-inverses (singular values at most ``rtol`` times the largest are cut)."""
    def compute(xp, a):
        return xp.linalg.pinv(a, rcond=_rtol_on_device(xp, rtol, a))
    return dense_call("pinv", (x,), compute)


def qr(x, /, *, mode="reduced"):
    """QR decompositions (``mode`` ``"reduced"`` or ``"complete"``)."""
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}")
    return dense_call("qr", (x,), lambda xp, a: tuple(xp.linalg.qr(a, mode=mode)), QRResult)


def slogdet(x, /):
    """Signs and natural logarithms of the absolute determinants."""
    return dense_call("slogdet", (x,), lambda xp, a: tuple(xp.linalg.slogdet(a)), SlogdetResult)


def solve(x1, x2, /):
    """Solutions of ``x1 @ result = x2`` (``x2`` a vector when 1-D)."""
    return dense_call("solve", (x1, x2), lambda xp, a, b: xp.linalg.solve(a, b))


def svd(x, /, *, full_matrices=True):
    """Singular value decompositions ``U @ diag(S) @ Vh``."""
    return dense_call("svd", (x,), lambda xp, a: tuple(xp.linalg.svd(a, full_matrices=full_matrices)),
                      SVDResult)


def svdvals(x, /):
    """Singular values (descending)."""
    return dense_call("svdvals", (x,), lambda xp, a: xp.linalg.svd(a, compute_uv=False))
