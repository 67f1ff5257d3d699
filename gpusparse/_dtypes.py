"""Value and index dtypes gpusparse supports, and the checks for them."""

from __future__ import annotations

import warnings

import numpy as np

__all__ = [
    "VALUE_DTYPES",
    "check_value_dtype",
    "dtype_text",
    "index_dtype_for",
    "native_dtype",
    "normalize_fill_value",
]

#: Value dtypes every primitive supports on every device.
VALUE_DTYPES = tuple(
    np.dtype(t)
    for t in (
        np.bool_,
        np.int8, np.int16, np.int32, np.int64,
        np.uint8, np.uint16, np.uint32, np.uint64,
        np.float32, np.float64,
        np.complex64, np.complex128,
    )
)

_INT32_MAX = np.iinfo(np.int32).max


def native_dtype(dtype) -> np.dtype:
    """``dtype`` in the machine's byte order (``>f8`` becomes ``float64`` on a little-endian host).

    >>> native_dtype(np.dtype(">i8")) == np.int64
    True
    """
    dt = np.dtype(dtype)
    return dt if dt.isnative else dt.newbyteorder("=")


def dtype_text(dtype) -> str:
    """How messages show ``dtype``: its name, or ``dtype.str`` (``'>f8'``) where the byte order is not native."""
    dt = np.dtype(dtype)
    return dt.name if dt.isnative else dt.str


def check_value_dtype(dtype, argument: str = "data") -> np.dtype:
    """Return ``dtype`` as a native-byte-order NumPy dtype or raise ``TypeError`` naming ``argument``.

    A supported dtype in the other byte order (``'>f8'`` on a little-endian
    host) is accepted and returned in native order: gpusparse's arrays
    always hold native values.

    >>> check_value_dtype(">f8")
    dtype('float64')
    """
    given = np.dtype(dtype)
    dt = native_dtype(given)
    if dt not in VALUE_DTYPES:
        names = ", ".join(d.name for d in VALUE_DTYPES)
        raise TypeError(f"{argument} has unsupported dtype {dtype_text(given)}; supported: {names}")
    return dt


def index_dtype_for(*sizes: int) -> np.dtype:
    """int32 when every size (dimensions, nnz) fits in it, else int64."""
    return np.dtype(np.int32) if max(sizes, default=0) <= _INT32_MAX else np.dtype(np.int64)


def normalize_fill_value(fill_value, dtype: np.dtype, argument: str = "fill_value"):
    """``fill_value`` as a NumPy scalar of ``dtype``; ``TypeError`` naming ``argument`` if it does not fit."""
    if fill_value is None:
        return dtype.type(0)
    value = np.asarray(fill_value)
    if value.ndim != 0:
        raise ValueError(f"{argument} must be a scalar, got an array of shape {value.shape}")
    scalar = value.item()
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            cast = dtype.type(scalar)
        except (ValueError, OverflowError, TypeError):
            cast = None
        same = cast is not None and (cast == scalar or (cast != cast and scalar != scalar))
        # NumPy compares a Python float with a float32 in float32, where 1e300 == inf.
        overflow = same and dtype.kind in "fc" and bool(np.isinf(cast)) and not bool(np.isinf(scalar))
    if not same or overflow:
        raise TypeError(f"{argument} {fill_value!r} cannot be represented as {dtype.name}")
    return cast
