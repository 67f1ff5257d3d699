"""Hypothesis strategies for sparse test inputs, as NumPy components.

:func:`coo_cases` draws COO inputs -- N-d and hybrid, 0-size and 1-size
dimensions, duplicate coordinates on purpose, sorted or shuffled order,
every value dtype, zero, nonzero and NaN fill values -- as a
:class:`CooCase` of NumPy arrays that tests put on a device and compare with
:func:`_helpers.dense_oracle`. :func:`dense_cases` draws dense arrays in
which many elements equal the fill value.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from _helpers import dense_oracle
from gpusparse._dtypes import VALUE_DTYPES
from gpusparse.containers import COO


@dataclasses.dataclass
class CooCase:
    """NumPy components of a COO array; ``dense()`` is what they stand for."""

    coords: np.ndarray  # (sparse_dim, nnz) int64
    data: np.ndarray  # (nnz, *dense_shape)
    shape: tuple
    fill_value: np.generic

    @property
    def sparse_dim(self) -> int:
        return self.coords.shape[0]

    @property
    def nnz(self) -> int:
        return self.coords.shape[1]

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    def dense(self, fill=None) -> np.ndarray:
        """The dense oracle, with ``fill`` (default: the case's fill value) where nothing is stored."""
        return dense_oracle(self.coords, self.data, self.shape, self.fill_value if fill is None else fill)

    def build(self, device, **kwargs) -> COO:
        """The COO container on ``device`` (the constructor moves the NumPy components there)."""
        return COO(self.coords, self.data, self.shape, fill_value=self.fill_value, device=device, **kwargs)


def value_dtypes(dtypes=VALUE_DTYPES):
    return st.sampled_from([np.dtype(d) for d in dtypes])


def elements(dtype, *, nan=True, infinity=False):
    """Scalars of ``dtype``: full range for integers, moderate floats, NaN sometimes."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return st.booleans()
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        small = st.integers(max(int(info.min), -100), min(int(info.max), 100))
        return st.one_of(small, st.integers(int(info.min), int(info.max)))
    width = dtype.itemsize * 8
    if dtype.kind == "f":
        finite = _finite(width)
        extras = ([st.just(float("nan"))] if nan else []) + ([st.sampled_from([np.inf, -np.inf])] if infinity else [])
        return st.one_of(finite, *extras) if extras else finite
    part = _finite(width // 2)
    if nan:
        part = st.one_of(part, part, part, st.just(float("nan")))
    return st.builds(complex, part, part)


#: Whether the test being run computes on a device that flushes float32
#: subnormal numbers to zero in arithmetic: a CUDA device, since CuPy compiles
#: every kernel with ``-ftz=true`` (float64 keeps them). Set per test by the
#: ``_float32_subnormals`` fixture of ``conftest.py``; read when a value is
#: drawn, so strategies built at import follow it too.
FLUSHES_FLOAT32_SUBNORMALS = False

#: The least magnitude of a nonzero float32 drawn where the device flushes
#: subnormals: the product of two such numbers, 2**-120, is still normal
#: (float32's least normal is 2**-126), so no product of two drawn values is
#: a subnormal that the GPU would flush.
FLUSH_SAFE_TINY = 2.0**-60


def _subnormals(dtype):
    """Subnormal numbers of a float dtype (kept by the CPU, as NumPy does), and the smallest normals."""
    info = np.finfo(dtype)
    tiny, least = float(info.smallest_normal), float(info.smallest_subnormal)
    return st.sampled_from([least, -least, tiny / 2, -tiny / 2, tiny - least])


def _flush_safe(x: float) -> float:
    """``x``, or 0 where its magnitude is under :data:`FLUSH_SAFE_TINY` (a product with it could be subnormal)."""
    return x if x == 0 or abs(x) >= FLUSH_SAFE_TINY or x != x else math.copysign(0.0, x)


@st.composite
def _by_device(draw, kept, flushed):
    return draw(flushed if FLUSHES_FLOAT32_SUBNORMALS else kept)


def _finite(width: int):
    """Finite floats of ``width`` bits: moderate values, plus subnormals where the device keeps them.

    Where the test's device flushes float32 subnormals (see
    :data:`FLUSHES_FLOAT32_SUBNORMALS`), float32 draws no subnormal, no
    value under :data:`FLUSH_SAFE_TINY` in magnitude, and that value itself
    in place of the subnormals: arithmetic on subnormals (and products that
    fall into them) differs from NumPy's there by design, and the operations
    that only move values (``fromdense``, ``topk``, indexing) have tests of
    their own that keep subnormals exact. float64 keeps its subnormals on
    every device.
    """
    dtype = np.dtype(f"f{width // 8}")
    kept = st.one_of(st.floats(-1e3, 1e3, width=width), _subnormals(dtype))
    if width > 32:
        return kept
    flushed = st.one_of(st.floats(-1e3, 1e3, width=width, allow_subnormal=False).map(_flush_safe),
                        st.sampled_from([FLUSH_SAFE_TINY, -FLUSH_SAFE_TINY, 2 * FLUSH_SAFE_TINY]))
    return _by_device(kept, flushed)


def fill_values(dtype, *, nan=True, nonzero=True):
    """Fill values of ``dtype``: mostly 0, sometimes any element, NaN for inexact dtypes."""
    dtype = np.dtype(dtype)
    choices = [st.just(dtype.type(0))] * 3
    if nonzero:
        choices.append(elements(dtype, nan=False).map(dtype.type))
    if nan and dtype.kind in "fc":
        choices.append(st.just(dtype.type(float("nan"))))
    return st.one_of(*choices)


@st.composite
def shapes(draw, *, min_ndim=0, max_ndim=4, max_side=4):
    """Shapes with sides of 1 often and 0 now and then (a quarter of the shapes may have one)."""
    ndim = draw(st.integers(min_ndim, max_ndim))
    smallest = draw(st.sampled_from([1, 1, 1, 0]))
    return tuple(draw(st.integers(smallest, max_side)) for _ in range(ndim))


@st.composite
def coo_cases(draw, *, dtypes=VALUE_DTYPES, min_ndim=0, max_ndim=4, max_side=4, max_nnz=16,
              sparse_dim=None, max_dense_dim=2, fill=True, nan=True, duplicates=True):
    """A :class:`CooCase`.

    Parameters
    ----------
    sparse_dim : int, optional
        Fix the number of sparse dimensions (``min_ndim`` is raised to it).
        By default any split with at most ``max_dense_dim`` dense dimensions.
    fill : bool
        Allow nonzero (and, with ``nan``, NaN) fill values.
    nan : bool
        Allow NaN among float values and fill values.
    duplicates : bool
        Allow repeated coordinates (added on purpose half the time).
    """
    dtype = draw(value_dtypes(dtypes))
    if sparse_dim is not None:
        min_ndim = max(min_ndim, sparse_dim)
        max_ndim = min(max_ndim, sparse_dim + max_dense_dim)
    shape = draw(shapes(min_ndim=min_ndim, max_ndim=max_ndim, max_side=max_side))
    ndim = len(shape)
    if sparse_dim is None:
        sd = draw(st.integers(max(0, ndim - max_dense_dim), ndim))
    else:
        sd = sparse_dim
    sparse_shape, dense_shape = shape[:sd], shape[sd:]
    size = math.prod(sparse_shape)
    if size == 0:
        keys = []
    elif sd == 0:
        keys = [0] * draw(st.integers(0, 1))
    else:
        unique = not duplicates or draw(st.booleans())
        at_least = draw(st.sampled_from([1, 1, 1, 0]))  # empty now and then
        keys = draw(st.lists(st.integers(0, size - 1), min_size=min(at_least, size), max_size=max_nnz,
                             unique=unique))
        if duplicates and keys and draw(st.booleans()):
            keys = keys + draw(st.lists(st.sampled_from(keys), min_size=1, max_size=4))
        order = draw(st.sampled_from(["shuffled", "sorted", "as drawn"]))
        if order == "shuffled":
            keys = draw(st.permutations(keys))
        elif order == "sorted":
            keys = sorted(keys)
    nnz = len(keys)
    if sd:
        coords = np.array(np.unravel_index(np.asarray(keys, dtype=np.intp), sparse_shape), dtype=np.int64)
        coords = coords.reshape(sd, nnz)
    else:
        coords = np.zeros((0, nnz), dtype=np.int64)
    data = draw(hnp.arrays(dtype, (nnz,) + dense_shape, elements=elements(dtype, nan=nan)))
    fill_value = draw(fill_values(dtype, nan=nan)) if fill else dtype.type(0)
    return CooCase(np.ascontiguousarray(coords), data, shape, fill_value)


@st.composite
def dense_cases(draw, *, dtypes=VALUE_DTYPES, min_ndim=0, max_ndim=4, max_side=4, fill=True, nan=True):
    """``(array, fill_value)``: a dense array in which many elements equal ``fill_value``."""
    dtype = draw(value_dtypes(dtypes))
    shape = draw(shapes(min_ndim=min_ndim, max_ndim=max_ndim, max_side=max_side))
    fill_value = draw(fill_values(dtype, nan=nan)) if fill else dtype.type(0)
    fill_scalar = fill_value.item()
    values = st.one_of(st.just(fill_scalar), st.just(fill_scalar), elements(dtype, nan=nan))
    arr = draw(hnp.arrays(dtype, shape, elements=values))
    return arr, fill_value
