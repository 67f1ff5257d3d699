"""What the interop tests (``test_interop*.py``) share: the dtypes each peer holds, pointer checks, false flags."""

from __future__ import annotations

import warnings

import numpy as np
from _helpers import assert_dense_equal, check_invariants
from hypothesis import settings

import gpusparse
from gpusparse._dtypes import VALUE_DTYPES

#: The number of examples comes from the Hypothesis profile (tests/conftest.py).
SETTINGS = settings(deadline=None)

#: What JAX holds while jax_enable_x64 is off: no 64-bit integers or floats (complex64 is two 32-bit floats).
WIDE_DTYPES = tuple(np.dtype(t) for t in (np.int64, np.uint64, np.float64, np.complex128))
NARROW_DTYPES = tuple(d for d in VALUE_DTYPES if d not in WIDE_DTYPES)
#: JAX holds bool sparse arrays but cannot densify them (its scatter-add refuses bool).
JAX_DENSIFIES = tuple(d for d in NARROW_DTYPES if d != np.bool_)
#: Dtypes torch stores in sparse tensors but cannot densify or coalesce.
TORCH_LIMITED = tuple(np.dtype(t) for t in (np.uint16, np.uint32, np.uint64))


def ptr(arr) -> int:
    """Address of the first element of a NumPy array."""
    return arr.__array_interface__["data"][0]


def at(arr, address: int) -> bool:
    """``arr`` is empty or starts at ``address``: zero copy of its memory."""
    return arr.size == 0 or ptr(arr) == address


def components(x) -> tuple:
    return (x.coords, x.data) if x.format == "coo" else (x.indptr, x.indices, x.data)


def assert_shared(x, y) -> None:
    """Every non-empty component of ``x`` starts where the one of ``y`` does."""
    for a, b in zip(components(x), components(y)):
        if a.size:
            assert ptr(a) == ptr(b)


def assert_disjoint(x, peer_arrays) -> None:
    """No component of ``x`` overlaps any of ``peer_arrays``."""
    for a in components(x):
        for b in peer_arrays:
            assert not np.may_share_memory(a, np.asarray(b))


# Flags a peer claims falsely: duplicates flagged unique, unsorted coordinates
# flagged sorted. Each peer sums the duplicates in its own products and
# densification; a container that trusted the flags would skip the summation.
FALSE_CLAIMS = {
    "duplicates": (np.array([[0, 2, 0], [1, 0, 1]]), np.array([1.0, 5.0, 1.0]), (3, 2)),
    "unsorted": (np.array([[2, 0], [0, 1]]), np.array([5.0, 1.0]), (3, 2)),
    "unsorted duplicates": (np.array([[2, 0, 2, 1], [1, 1, 1, 0]]), np.array([3.0, 4.0, 4.0, 2.0]), (3, 2)),
}


def assert_like_peer(x, dense, product) -> None:
    """``x`` has honest flags, ``dense`` as its dense form and ``product`` as ``x @ ones``."""
    check_invariants(x)  # flags honest
    assert_dense_equal(x.todense(), dense)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gpusparse.GpuSparseEfficiencyWarning)  # an unsorted COO product
        assert_dense_equal(x @ np.ones(x.shape[1], dtype=x.dtype), product)
    assert_dense_equal(x.coalesce().todense(), dense)
