"""NumPy's products beyond :mod:`gpusparse.ops.linalg.numpy_names`: ``einsum``, ``vdot``, the norms, ``np.linalg``'s array API functions."""

from __future__ import annotations

import numpy as np

from gpusparse._backend import backend
from gpusparse.ops import einsum, elementwise, reductions, shape as shape_ops
from gpusparse.ops.shape.permutation import permute_dims_on
from gpusparse.ops.shape.reshaping import reshape_on
from gpusparse.ops._validate import check_axis
from gpusparse.ops.numpy.arguments import _is_sparse

__all__ = []


def _einsum(*operands, out=None, optimize=False, **kwargs):
    return einsum.einsum(*operands, out=out, optimize=optimize, **kwargs)


def _norm(x, ord=None, axis=None, keepdims=False):
    from gpusparse.ops.linalg.norms import norm
    return norm(x, ord=ord, axis=axis, keepdims=keepdims)


def _vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    from gpusparse.ops.linalg.norms import norm
    from gpusparse.ops.reductions.arguments import normalize_axes
    axes = normalize_axes(axis, x.ndim)
    rest = tuple(d for d in range(x.ndim) if d not in axes)
    be = backend(x.device)
    flat = reshape_on(permute_dims_on(x, rest + axes, be),
                      tuple(x.shape[d] for d in rest) + (int(np.prod([x.shape[d] for d in axes])),), be)
    result = norm(flat, ord=ord, axis=-1)
    if keepdims:
        shape = tuple(1 if d in axes else x.shape[d] for d in range(x.ndim))
        result = reshape_on(result, shape, be) if _is_sparse(result) else result.reshape(shape)
    return result


def _matrix_norm(x, /, *, keepdims=False, ord="fro"):
    if np.ndim(x) <= 2 or ord not in ("fro", 1, -1, np.inf, -np.inf):
        return _norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)
    if ord == "fro":  # a stack of matrices: the reductions over the last two axes
        return _vector_norm(x, axis=(-2, -1), keepdims=keepdims)
    summed, over = (-2, -1) if ord in (1, -1) else (-1, -2)
    sums = reductions.sum(elementwise.abs(x), axis=summed, keepdims=True)
    best = (reductions.max if ord > 0 else reductions.min)(sums, axis=over, keepdims=True)
    return best if keepdims else shape_ops.squeeze(best, (-2, -1)) if _is_sparse(best) else best[..., 0, 0]


def _conj(x):
    if x.dtype.kind != "c":
        return x
    return elementwise.conj(x) if _is_sparse(x) else x.conj()


def _flat(x):
    return shape_ops.reshape(x, (-1,)) if _is_sparse(x) else x.reshape(-1)


def _vdot(a, b, /):
    from gpusparse.ops import linalg
    return linalg.inner(_flat(_conj(a)), _flat(b))


def _vecdot(x1, x2, /, *, axis=-1):
    # As NumPy's gufunc: the contracted axis does not broadcast, the dtype is the product's.
    s1, s2 = tuple(np.shape(x1)), tuple(np.shape(x2))
    ndim = max(len(s1), len(s2))
    s1, s2 = (1,) * (ndim - len(s1)) + s1, (1,) * (ndim - len(s2)) + s2
    at = check_axis(axis, ndim)
    if s1[at] != s2[at]:
        raise ValueError(f"vecdot: x1 and x2 must have the same length along axis {axis}, "
                         f"got {s1[at]} and {s2[at]}")
    product = elementwise.elemwise(np.multiply, _conj(x1), x2)
    return reductions.sum(product, axis=at, dtype=product.dtype)


def _linalg_outer(x1, x2, /):
    from gpusparse.ops import linalg
    if np.ndim(x1) != 1 or np.ndim(x2) != 1:
        raise ValueError("numpy.linalg.outer: input arrays must be one-dimensional")
    return linalg.outer(x1, x2)


def _linalg_tensordot(x1, x2, /, *, axes=2):
    from gpusparse.ops import linalg
    return linalg.tensordot(x1, x2, axes=axes)


def _linalg_matmul(x1, x2, /):
    from gpusparse.ops import linalg
    return linalg.matmul(x1, x2)
