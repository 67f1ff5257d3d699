"""The differential check of NumPy's functions: ``np.f(sparse)`` against ``np.f(dense)``.

Shared by the NumPy-function tests (``tests/ops/test_numpy_functions.py``)
and the array API namespace tests (``tests/array_api/test_array_api.py``).
"""

from __future__ import annotations

import dataclasses
import os
import warnings

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st

from _helpers import assert_dense_equal, assert_sparse_equal
from gpusparse.containers import SparseArray
from strategies import coo_cases

EXAMPLES = settings(deadline=None) if os.environ.get("GPUSPARSE_HYPOTHESIS_PROFILE") else \
    settings(max_examples=20, deadline=None)


@st.composite
def inputs(draw, device, **kwargs):
    """``(x, dense)``: a COO array (maybe coalesced) or, for matrices, CSR/CSC, on ``device``."""
    case = draw(coo_cases(**kwargs))
    if case.data.dtype.kind in "fc":
        # The sign of a zero sum of duplicates is not specified (see the guarantees: coalescing
        # sums onto +0.0, like NumPy's and torch's dense results, while an entry without duplicates
        # keeps its -0.0, like torch's and SciPy's coalesce); the functions compared here would
        # show it (reciprocal gives -inf or inf), so the operands hold no -0.0.
        case = dataclasses.replace(case, data=case.data + case.data.dtype.type(0))
    x = case.build(device)
    if draw(st.booleans()):
        x = x.coalesce()
    if case.sparse_dim == 2 and len(case.shape) == 2:
        x = x.asformat(draw(st.sampled_from(["coo", "csr", "csc"])))
    return x, case.dense()


def quiet(func, *args, **kwargs):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(*args, **kwargs)


def compare(actual, expected, sparse, rtol=None):
    """``sparse``: True for a sparse result (dense where 0-d), False for a dense one, None for either
    (reductions and products give a dense array where no sparse dimension is left)."""
    if isinstance(expected, (list, tuple)):
        assert isinstance(actual, type(expected)), (type(actual), type(expected))
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            compare(a, e, sparse, rtol)
    elif isinstance(actual, SparseArray) or (sparse and np.ndim(expected)):  # sparse=None: either
        assert isinstance(actual, SparseArray), f"expected a sparse result, got {type(actual).__name__}"
        assert_sparse_equal(actual, expected, rtol=rtol)
    else:
        assert not isinstance(actual, SparseArray)
        assert_dense_equal(actual, np.asarray(expected), rtol=rtol)


def differential(func, x, dense, *, sparse=True, rtol=None):
    """``func(x)`` agrees with ``func(dense)``: both give equal results, or both raise."""
    try:
        expected = quiet(func, dense)
    except (ValueError, IndexError, TypeError, OverflowError) as exc:
        with pytest.raises((ValueError, IndexError, TypeError, OverflowError)):
            quiet(func, x)
        return type(exc)
    compare(quiet(func, x), expected, sparse, rtol)
    return None
