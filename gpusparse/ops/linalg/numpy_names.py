"""NumPy's protocols for sparse arrays: ``np.matmul``, ``np.dot``, ``np.tensordot``, ... on CPU arrays.

:func:`array_ufunc` and :func:`array_function` back
``SparseArray.__array_ufunc__`` / ``__array_function__``. They look the NumPy
callable up in :data:`UFUNCS` / :data:`FUNCTIONS`; other areas register their
operations by adding entries. A ufunc nobody registered returns
``NotImplemented`` (so ``ndarray @ sparse`` and ``ndarray + sparse`` fall back
to the sparse operand's reflected operator); a function nobody registered
runs NumPy's own implementation, which asks for ``__array__`` and so raises
gpusparse's "no implicit densification" error, as without the protocol.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FUNCTIONS", "UFUNCS", "array_function", "array_ufunc"]


def _linalg(name):
    def call(*args, **kwargs):
        from gpusparse.ops import linalg
        return getattr(linalg, name)(*args, **kwargs)
    call.__name__ = name
    return call


#: ``{numpy ufunc: implementation}`` for ``__array_ufunc__`` (method ``"__call__"``, no ``out=``).
UFUNCS = {
    np.matmul: _linalg("matmul"),
}

#: ``{numpy function: implementation}`` for ``__array_function__``.
FUNCTIONS = {
    np.matmul: _linalg("matmul"),
    np.dot: _linalg("dot"),
    np.tensordot: _linalg("tensordot"),
    np.inner: _linalg("inner"),
    np.outer: _linalg("outer"),
    np.kron: _linalg("kron"),
}


def array_ufunc(ufunc, method, inputs, kwargs):
    """``__array_ufunc__``: a registered ufunc called plainly, else ``NotImplemented``."""
    impl = UFUNCS.get(ufunc)
    if impl is None or method != "__call__" or kwargs:
        return NotImplemented
    return impl(*inputs)


def array_function(func, types, args, kwargs):
    """``__array_function__``: a registered function, else NumPy's own implementation."""
    impl = FUNCTIONS.get(func)
    if impl is not None:
        return impl(*args, **kwargs)
    fallback = getattr(func, "_implementation", None)
    if fallback is None:
        return NotImplemented
    return fallback(*args, **kwargs)
