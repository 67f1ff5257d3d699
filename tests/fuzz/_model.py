"""What the fuzzers share: value strategies, the dense NumPy model and its comparisons.

The stateful fuzzer keeps a gpusparse array and the dense NumPy array it
stands for side by side. This module holds

* strategies for values (NaN, +-inf and subnormals for inexact dtypes),
  fill values and shapes that broadcast against a given one;
* :func:`component_scale`, a per-element bound on the magnitude of the
  terms a float element is summed from (duplicates of an uncoalesced array
  are summed in an order the library chooses; the bound sets the tolerance);
* :func:`assert_close`, the comparison: exact for bool and integers, within
  ``rtol * scale`` for floats, NaN equal to NaN, infinities exact, and
  elements whose terms may overflow in some order (``scale`` at least a
  quarter of the dtype's largest value) exempt;
* oracles for the operations whose documented semantics depend on the
  stored pattern (products skip unstored elements, as SciPy does: no
  ``0 * inf``; softmax normalises the stored elements of a line).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from hypothesis import strategies as st

from _helpers import RTOL, dense_oracle
from gpusparse._device import to_host
from gpusparse._dtypes import VALUE_DTYPES
from strategies import elements

#: Every value dtype; bool, integers, floats and complex.
ALL_DTYPES = tuple(VALUE_DTYPES)
INEXACT = "fc"


def is_inexact(dtype) -> bool:
    return np.dtype(dtype).kind in INEXACT


# --------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------

def values(dtype):
    """Scalars of ``dtype``: full range for integers; NaN, +-inf and subnormals for inexact dtypes."""
    dtype = np.dtype(dtype)
    return elements(dtype, nan=True, infinity=dtype.kind == "f").map(dtype.type) if dtype.kind != "c" else \
        st.one_of(elements(dtype, nan=True), st.sampled_from([complex(np.inf, 0), complex(-np.inf, 1),
                                                              complex(1, np.inf)])).map(dtype.type)


def fills(dtype):
    """Fill values: 0 mostly, any value, NaN and +-inf for inexact dtypes."""
    dtype = np.dtype(dtype)
    choices = [st.just(dtype.type(0))] * 4 + [values(dtype)]
    if dtype.kind in INEXACT:
        choices.append(st.sampled_from([dtype.type(np.nan), dtype.type(np.inf), dtype.type(-np.inf)]))
    return st.one_of(*choices)


def dtypes(subset=ALL_DTYPES):
    return st.sampled_from([np.dtype(d) for d in subset])


@st.composite
def broadcastable_shapes(draw, shape, *, max_extra=1, max_side=3):
    """A shape that broadcasts with ``shape`` to at most one more leading dimension."""
    dims = [draw(st.sampled_from([d, d, 1])) for d in shape]
    cut = draw(st.integers(0, len(dims)))  # leading dimensions dropped
    dims = dims[cut:]
    if cut == 0 and draw(st.integers(0, 3)) == 0:
        dims = [draw(st.integers(1, max_side)) for _ in range(max_extra)] + dims
    return tuple(dims)


# --------------------------------------------------------------------------
# Quiet NumPy
# --------------------------------------------------------------------------

def quiet(func, *args, **kwargs):
    """``func(*args, **kwargs)`` without NumPy's floating-point and cast warnings."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(*args, **kwargs)


def same_scalar(a, b) -> bool:
    """Scalars equal, NaN equal to NaN (part by part for complex)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "c" or b.dtype.kind == "c":
        return same_scalar(a.real, b.real) and same_scalar(a.imag, b.imag)
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        return bool(a == b) or bool(np.isnan(a) and np.isnan(b))
    return bool(a == b)


def finite_abs(arr) -> np.ndarray:
    """``|arr|`` as float64 with non-finite elements taken as 0 (their handling is compared exactly)."""
    arr = np.asarray(arr)
    if arr.dtype.kind not in INEXACT:
        return np.abs(arr.astype(np.float64)) if arr.dtype.kind != "b" else arr.astype(np.float64)
    mag = quiet(np.abs, arr).astype(np.float64)
    return np.where(np.isfinite(mag), mag, 0.0)


# --------------------------------------------------------------------------
# Components on the host
# --------------------------------------------------------------------------

def host_coo(x):
    """``(coords, data)`` of any format, on the host (duplicates kept for COO)."""
    if x.format == "coo":
        return to_host(x.coords), to_host(x.data)
    indptr, indices = to_host(x.indptr).astype(np.int64), to_host(x.indices).astype(np.int64)
    major = np.repeat(np.arange(indptr.shape[0] - 1), np.diff(indptr))
    coords = np.stack([major, indices]) if x.format == "csr" else np.stack([indices, major])
    return coords, to_host(x.data)


def stored_mask(x) -> np.ndarray:
    """True at every element of a stored entry (whole blocks for hybrid arrays)."""
    coords, _ = host_coo(x)
    sparse_shape = x.shape[: x.sparse_dim]
    hit = np.zeros(sparse_shape, dtype=bool)
    if coords.shape[1]:
        hit[tuple(coords)] = True
    elif x.sparse_dim == 0 and x.nnz:
        hit[()] = True
    return np.broadcast_to(hit.reshape(sparse_shape + (1,) * x.dense_dim), x.shape).copy()


def component_scale(x) -> np.ndarray:
    """Per element, the sum of the magnitudes of the stored terms (``|fill|`` where nothing is stored)."""
    coords, data = host_coo(x)
    return dense_oracle(coords, finite_abs(data), x.shape, float(finite_abs(x.fill_value)))


# --------------------------------------------------------------------------
# The comparison
# --------------------------------------------------------------------------

def exempt_limit(dtype) -> float:
    """Elements whose terms add up to this much may overflow in one order and not another."""
    dtype = np.dtype(dtype)
    real = np.dtype(dtype.char.lower()) if dtype.kind == "c" else dtype
    return float(np.finfo(real).max) / 4


def _describe(actual, expected, bad, limit=5):
    idx = np.argwhere(bad)[:limit]
    return "; ".join(f"at {tuple(int(i) for i in ix)}: got {actual[tuple(ix)]!r}, expected {expected[tuple(ix)]!r}"
                     for ix in idx)


def assert_close(actual, expected, *, scale=None, rtol=None, floor=0.0, what="result"):
    """``actual`` equals ``expected`` within the tolerance of its dtype.

    Parameters
    ----------
    actual, expected : array_like
        Host arrays (``actual`` may be a device array); shape and dtype must match.
    scale : array_like, optional
        Per element, the magnitude of the terms it was computed from; the
        absolute tolerance is ``rtol * scale + floor``. Default ``|expected|``.
        Elements whose scale reaches a quarter of the dtype's largest value
        (or is infinite) may legitimately overflow in one summation order and
        not in another and are not compared.
    """
    actual, expected = to_host(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != expected {expected.shape}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != expected {expected.dtype}"
    if expected.dtype.kind not in INEXACT:
        bad = actual != expected
        assert not bad.any(), f"{what}: {int(bad.sum())} elements differ: {_describe(actual, expected, bad)}"
        return
    tol = RTOL[expected.dtype] if rtol is None else rtol
    scale = finite_abs(expected) if scale is None else np.broadcast_to(np.asarray(scale, np.float64),
                                                                       expected.shape)
    scale = np.maximum(scale, finite_abs(expected))
    exempt = ~(scale < exempt_limit(expected.dtype))
    if expected.dtype.kind == "c":
        e_bad = ~np.isfinite(expected)
        a_bad = ~np.isfinite(actual)
        bad = (e_bad != a_bad) & ~exempt
        both = ~e_bad & ~a_bad & ~exempt
        diff = np.zeros(expected.shape)
        diff[both] = np.abs(actual[both] - expected[both])
        bad |= both & ~(diff <= tol * scale + floor)
    else:
        e_nan, a_nan = np.isnan(expected), np.isnan(actual)
        e_inf = np.isinf(expected)
        bad = (e_nan != a_nan) & ~exempt
        bad |= e_inf & ~exempt & (actual != expected)
        finite = np.isfinite(expected) & ~exempt
        diff = np.full(expected.shape, np.inf)
        diff[finite] = quiet(np.abs, actual[finite].astype(np.float64) - expected[finite].astype(np.float64))
        bad |= finite & ~(diff <= tol * scale + floor)
    assert not bad.any(), (f"{what}: {int(bad.sum())} of {bad.size} elements differ "
                           f"(rtol {tol}): {_describe(actual, expected, bad)}")


def assert_fill(actual, expected, *, scale=0.0, what="fill_value"):
    """The fill value has ``expected``'s dtype and value (within the float tolerance)."""
    assert isinstance(actual, np.generic), f"{what} is a {type(actual).__name__}, not a NumPy scalar"
    expected = np.asarray(expected)
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != expected {expected.dtype}"
    assert_close(np.asarray(actual), expected, scale=scale, what=what)


# --------------------------------------------------------------------------
# Oracles that depend on the stored pattern
# --------------------------------------------------------------------------

def _as_matrices(a, b):
    """NumPy matmul's promotion of 1-D operands; returns the operands and the axes to drop."""
    drop = []
    if a.ndim == 1:
        a = a[None, :]
        drop.append(-2)
    if b.ndim == 1:
        b = b[:, None]
        drop.append(-1)
    return a, b, drop


def masked_matmul(a, pa, b, pb, dtype):
    """``a @ b`` over the stored elements only: ``sum_k a[i,k] * b[k,j]`` where both are stored.

    ``pa``/``pb`` are the stored masks (all True for a dense operand).
    Unstored elements contribute nothing, so ``0 * inf`` of an unstored zero
    never makes a NaN (SciPy's and the library's semantics; NumPy's dense
    matmul would give NaN). Bool products are OR-of-AND, integers wrap.

    Returns ``(result, scale)``, ``scale`` bounding the magnitude of the terms.
    """
    a = quiet(np.asarray(a).astype, dtype)
    b = quiet(np.asarray(b).astype, dtype)
    a, b, drop = _as_matrices(a, b)
    pa, pb, _ = _as_matrices(np.asarray(pa), np.asarray(pb))
    terms = quiet(np.multiply, a[..., :, :, None], b[..., None, :, :])
    keep = pa[..., :, :, None] & pb[..., None, :, :]
    zero = np.zeros((), dtype)
    terms = np.where(keep, terms, zero)
    if dtype == np.bool_:
        out = terms.any(axis=-2)
    else:
        out = quiet(np.sum, terms, axis=-2, dtype=dtype)
    scale = np.where(keep, quiet(np.multiply, finite_abs(a)[..., :, :, None], finite_abs(b)[..., None, :, :]),
                     0.0).sum(axis=-2)
    for axis in sorted(drop):
        out = out.squeeze(axis)
        scale = scale.squeeze(axis)
    return np.asarray(out, dtype=dtype), scale


def masked_softmax(m, pattern, axis, log):
    """Softmax of the stored elements along ``axis``: the library's documented algorithm, in NumPy.

    The maximum of a line's stored values (0 where it is not finite) is
    subtracted before ``exp``; unstored elements are 0 (``-inf`` for the log).
    """
    dtype = m.dtype if m.dtype.kind == "f" else np.dtype(np.float64)
    v = quiet(m.astype, dtype)
    with np.errstate(all="ignore"):
        masked = np.where(pattern, v, dtype.type(-np.inf))
        top = np.max(masked, axis=axis, keepdims=True, initial=-np.inf)
        top = np.where(np.isfinite(top), top, dtype.type(0))
        shifted = masked - top
        e = np.where(pattern, np.exp(shifted), dtype.type(0))
        total = e.sum(axis=axis, keepdims=True)
        if log:
            out = np.where(pattern, shifted - np.log(total), dtype.type(-np.inf))
        else:
            out = np.where(pattern, e / total, dtype.type(0))
    return out.astype(dtype)


def product_exempt(m, axes, keepdims):
    """Where a float product over ``axes`` may overflow or underflow in some order of its factors.

    A partial product can reach ``2**L`` (``L``: the sum of ``log2|v|`` over
    the factors above 1) and ``2**S`` (factors below 1): if either leaves the
    normal range the result depends on the order, and the element is exempt.
    Complex products with a non-finite factor are exempt too (their NaN
    pattern depends on the order).
    """
    mag = quiet(np.abs, m).astype(np.float64)
    real = np.dtype(m.dtype.char.lower()) if m.dtype.kind == "c" else m.dtype
    info = np.finfo(real)
    with np.errstate(all="ignore"):
        logs = np.log2(np.where((mag > 0) & np.isfinite(mag), mag, 1.0))
    high = np.sum(np.where(logs > 0, logs, 0.0), axis=axes, keepdims=keepdims)
    low = np.sum(np.where(logs < 0, logs, 0.0), axis=axes, keepdims=keepdims)
    exempt = (high > math.log2(float(info.max)) - 2) | (low < math.log2(float(info.smallest_normal)) + 2)
    if m.dtype.kind == "c":
        exempt |= np.any(~np.isfinite(m), axis=axes, keepdims=keepdims)
    return exempt


__all__ = [
    "ALL_DTYPES",
    "assert_close",
    "assert_fill",
    "broadcastable_shapes",
    "component_scale",
    "dtypes",
    "exempt_limit",
    "fills",
    "finite_abs",
    "host_coo",
    "is_inexact",
    "masked_matmul",
    "masked_softmax",
    "product_exempt",
    "quiet",
    "same_scalar",
    "stored_mask",
    "values",
]
