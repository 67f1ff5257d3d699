"""Index arrays of every integer dtype, with values beyond the shape, int32 and int64, in every constructor.

Checked (``check=True``, the default): every outcome is either the array the
values describe (equal to a dense NumPy oracle built from the values as
Python integers) or a ``ValueError`` naming the argument at fault -- never
an array whose indices were wrapped by a cast (``2**64 - 1`` read as -1,
``2**32 + 1`` as 1). Unchecked (``check=False``): a stored index equals the
given one where that is in range, and stays out of range where it is not, so
``x.check()`` finds it and the bounds-safe kernels clip it.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import gpusparse as gs
from _helpers import put
from gpusparse._device import to_host

INDEX_DTYPES = [np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int16, np.int32, np.int64]
SETTINGS = settings(deadline=None)


@st.composite
def index_values(draw, dtype, n, bound):
    """``n`` Python ints representable in ``dtype``: mostly in ``[0, bound)``, some beyond it in every way."""
    info = np.iinfo(dtype)
    hostile = [v for v in (bound, bound + 1, 2**31 - 1, 2**31, 2**32 + 1, 2**63 - 1, 2**63 + 5, 2**64 - 1,
                           -1, -(2**31) - 1, -(2**63), int(info.max), int(info.min))
               if info.min <= v <= info.max]
    inside = st.integers(0, max(bound - 1, 0)) if bound else st.sampled_from(hostile)
    anything = st.one_of(inside, inside, inside, st.sampled_from(hostile),
                         st.integers(int(info.min), int(info.max)))
    return draw(st.lists(anything, min_size=n, max_size=n))


def _kept(value: int, kept: int, bound: int) -> bool:
    """An unchecked index as stored: equal where in ``[0, bound)``, beyond the same end where not (never wrapped)."""
    if 0 <= value < bound:
        return kept == value
    return kept >= bound if value >= bound else kept < 0


def _dense(rows, cols, values, shape):
    dense = np.zeros(shape)
    np.add.at(dense, (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)), values)
    return dense


@st.composite
def coo_cases(draw):
    """``(dtype, shape, rows, cols, check, give_shape)``."""
    dtype = draw(st.sampled_from(INDEX_DTYPES))
    shape = draw(st.tuples(st.integers(1, 5), st.integers(1, 5)))
    nnz = draw(st.integers(0, 6))
    rows, cols = draw(index_values(dtype, nnz, shape[0])), draw(index_values(dtype, nnz, shape[1]))
    return dtype, shape, rows, cols, draw(st.booleans()), draw(st.booleans())


@SETTINGS
@given(case=coo_cases())
@example(case=(np.uint64, (3, 4), [0, 1, 2], [0, 2**64 - 1, 1], False, True))  # wrapped to -1: column 0
@example(case=(np.uint64, (3, 4), [0, 1, 2], [0, 2**63 + 5, 1], True, True))
def test_coo_coordinates_of_every_dtype(device, case):
    dtype, shape, rows, cols, check, give_shape = case
    nnz = len(rows)
    values = np.arange(1.0, nnz + 1.0)
    coords = np.array([rows, cols], dtype=dtype).reshape(2, nnz)
    inside = all(0 <= r < shape[0] for r in rows) and all(0 <= c < shape[1] for c in cols)
    non_negative = all(v >= 0 for v in rows + cols)
    try:
        x = gs.COO(put(coords, device), put(values, device), shape=shape if give_shape else None,
                   device=device, check=check)
    except ValueError as exc:
        assert "coords" in str(exc), exc  # the argument at fault
        assert not (inside and (check or give_shape)) or not non_negative, f"valid input refused: {exc}"
        assert not give_shape or check, "check=False must not validate the bounds"
        return
    got = to_host(x.coords)
    if give_shape and not check:  # unchecked: in range kept, out of range kept out of range (never wrapped)
        for given_row, stored in zip((rows, cols), got):
            for value, kept in zip(given_row, stored.tolist()):
                bound = shape[0] if given_row is rows else shape[1]
                assert _kept(value, kept, bound), (value, kept)
        if not inside:
            with pytest.raises(ValueError, match="coords"):
                x.check()
        return
    assert non_negative and (inside or not give_shape), "invalid coordinates accepted"
    assert got.tolist() == [rows, cols]
    implied = (max(rows, default=-1) + 1, max(cols, default=-1) + 1)
    assert x.shape == (shape if give_shape else implied)
    if x.size <= 10**4:  # (an implied shape may be far too large to densify)
        np.testing.assert_array_equal(to_host(x.todense()), _dense(rows, cols, values, x.shape))


@st.composite
def compressed_cases(draw):
    """``(dtype, fmt, shape, counts, indptr, pointer_dtype, indices, check)``."""
    dtype = draw(st.sampled_from(INDEX_DTYPES))
    fmt = draw(st.sampled_from(["csr", "csc"]))
    shape = draw(st.tuples(st.integers(1, 5), st.integers(1, 5)))
    pointer_dtype = draw(st.sampled_from([None, np.int64, np.uint64, np.int32]))
    major = 0 if fmt == "csr" else 1
    n_major, n_minor = shape[major], shape[1 - major]
    counts = draw(st.lists(st.integers(0, 3), min_size=n_major, max_size=n_major))
    nnz = sum(counts)
    indptr = [0] + np.cumsum(counts).tolist()
    if draw(st.booleans()):  # a pointer beyond nnz, int32 or int64
        info = np.iinfo(pointer_dtype or dtype)
        hostile = [v for v in (nnz + 1, 2**32 + nnz, 2**64 - 1, -1) if info.min <= v <= info.max]
        indptr[draw(st.integers(0, n_major))] = draw(st.sampled_from(hostile or [nnz + 1]))
    indices = draw(index_values(dtype, nnz, n_minor))
    return dtype, fmt, shape, counts, indptr, pointer_dtype, indices, draw(st.booleans())


@SETTINGS
@given(case=compressed_cases())
@example(case=(np.uint64, "csr", (3, 4), [1, 1, 1], [0, 1, 2, 3], None, [0, 2**63 + 5, 1], True))
@example(case=(np.uint64, "csc", (4, 3), [1, 1, 1], [0, 1, 2, 3], None, [0, 2**32 + 1, 1], False))
@example(case=(np.int32, "csr", (3, 4), [1, 1, 1], [0, 1, 2, 2**32 + 3], np.int64, [0, 1, 2], False))
def test_compressed_indices_of_every_dtype(device, case):
    dtype, fmt, shape, counts, indptr, pointer_dtype, indices, check = case
    major = 0 if fmt == "csr" else 1
    n_major, n_minor = shape[major], shape[1 - major]
    nnz = sum(counts)
    if max(nnz, n_major) > np.iinfo(dtype).max:
        return
    values = np.arange(1.0, nnz + 1.0)
    cls = gs.CSR if fmt == "csr" else gs.CSC
    ptr = np.array(indptr, dtype=pointer_dtype or dtype)
    valid_pointers = indptr[0] == 0 and indptr[-1] == nnz and all(a <= b for a, b in zip(indptr, indptr[1:]))
    valid = valid_pointers and all(0 <= i < n_minor for i in indices)
    try:
        x = cls(put(ptr, device), put(np.array(indices, dtype=dtype), device), put(values, device),
                shape=shape, device=device, check=check)
    except ValueError as exc:
        assert check, f"check=False must not validate: {exc}"
        assert not valid, f"valid input refused: {exc}"
        assert ("indptr" in str(exc)) if not valid_pointers else ("indices" in str(exc)), exc
        return
    if check:
        assert valid, "invalid components accepted"
        rows = np.repeat(np.arange(n_major), counts)
        rc = (rows, indices) if fmt == "csr" else (indices, rows)
        np.testing.assert_array_equal(to_host(x.todense()), _dense(*rc, values, shape))
        return
    stored = to_host(x.indices).tolist()
    for value, kept in zip(indices, stored):
        assert _kept(value, kept, n_minor), (value, kept)
    for value, kept in zip(indptr, to_host(x.indptr).tolist()):  # a pointer past nnz stays past it
        assert _kept(value, kept, nnz + 1), (value, kept)
    if not valid:
        with pytest.raises(ValueError, match="indptr|indices"):
            x.check()
