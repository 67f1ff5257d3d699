"""Each primitive of ``gpusparse._kernels`` against a short NumPy reference, on every device.

The references are deliberately naive (loops, ``np.argsort(kind="stable")``,
``ufunc.reduce``); the primitives are called through ``kernels_for(device)``
with buffers of ``xp_for(device)``, exactly as the operations call them.

``merge_sorted`` has its own file (``test_merge.py``); the products
(``spmv``, ``spmm``, ``spmm_reduce``, ``spgemm``, ``sddmm``) are tested with
the operations that use them (``tests/ops/test_linalg*.py``).
"""

from __future__ import annotations

import numpy as np
import pytest

from _helpers import NUMBER_DTYPES, assert_dense_equal, dtype_id, put
from gpusparse._device import device_scope, kernels_for, to_host
from gpusparse._dtypes import VALUE_DTYPES
from gpusparse._kernels import SEGMENT_OPS


@pytest.fixture
def k(device):
    """The primitive implementation of ``device`` (CUDA calls run with it current)."""
    with device_scope(device):
        yield kernels_for(device)


def _random_values(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _c_strides(shape):
    return tuple(int(np.prod(shape[k + 1:], dtype=object)) for k in range(len(shape)))


# --------------------------------------------------------------------------
# linearize / delinearize
# --------------------------------------------------------------------------

def ref_linearize(coords, strides):
    keys = np.zeros(coords.shape[1], dtype=object)
    for row, stride in zip(coords, strides):
        keys += row.astype(object) * stride
    return keys.astype(np.int64)


LINEAR_SHAPES = [(), (1,), (7,), (3, 4), (1, 5, 1), (2, 3, 4, 5), (2**31, 2**31), (3, 2**61), (2**62, 1)]


@pytest.mark.parametrize("shape", LINEAR_SHAPES, ids=str)
@pytest.mark.parametrize("n", [0, 1, 100])
def test_linearize_delinearize(device, k, rng, shape, n):
    coords = np.stack([rng.integers(0, s, size=n, dtype=np.int64) for s in shape]) if shape else np.zeros((0, n), np.int64)
    coords = coords.reshape(len(shape), n)
    strides = _c_strides(shape)
    keys = k.linearize(put(coords, device), shape)
    expected = ref_linearize(coords, strides)
    assert keys.dtype == np.int64 and keys.shape == (n,)
    np.testing.assert_array_equal(to_host(keys), expected)
    back = k.delinearize(keys, shape)
    assert back.dtype == np.int64 and back.shape == (len(shape), n)
    np.testing.assert_array_equal(to_host(back), coords)


def test_linearize_clips_coordinates_into_the_shape(device, k, rng):
    # Out-of-range coordinates (check=False, or buffers changed after
    # construction) are clipped into the shape: every key addresses it.
    shape = (5, 7)
    coords = np.stack([rng.integers(-10**12, 10**12, 200), rng.integers(-9, 16, 200)]).astype(np.int64)
    coords[:, :3] = [[-2**63, 2**63 - 1, 4], [2**63 - 1, -2**63, 6]]
    got = to_host(k.linearize(put(coords, device), shape))
    clipped = np.clip(coords, 0, np.array(shape)[:, None] - 1)
    np.testing.assert_array_equal(got, ref_linearize(clipped, _c_strides(shape)))
    # The leading dims of a longer shape (sparse coords, dense trailing dims).
    got = to_host(k.linearize(put(coords[:1], device), shape))
    np.testing.assert_array_equal(got, clipped[0] * 7)


def test_delinearize_matches_unravel_index(device, k, rng):
    shape = (4, 1, 6, 3)
    keys = rng.permutation(np.prod(shape)).astype(np.int64)
    got = to_host(k.delinearize(put(keys, device), shape))
    np.testing.assert_array_equal(got, np.stack(np.unravel_index(keys, shape)))


# --------------------------------------------------------------------------
# sort_pairs
# --------------------------------------------------------------------------

def _keys(rng, n, key_bits, distinct):
    """``n`` keys below 2**key_bits drawn from ``distinct`` values spread over all the bits."""
    high = 2**key_bits
    pool = rng.integers(0, high, size=distinct, dtype=np.int64) if key_bits < 63 else \
        rng.integers(0, np.iinfo(np.int64).max, size=distinct, dtype=np.int64, endpoint=True)
    pool[0] = high - 1 if key_bits < 63 else np.iinfo(np.int64).max  # the top bit is used
    return rng.choice(pool, size=n)


@pytest.mark.parametrize("key_bits", [0, 1, 11, 12, 40, 63])
@pytest.mark.parametrize("n", [0, 1, 2, 1000, 2**16 + 3])
def test_sort_pairs_is_a_stable_sort(device, k, rng, key_bits, n):
    keys = _keys(rng, n, key_bits, distinct=max(1, n // 4))  # many repeats: stability shows
    original = keys.copy()
    d_keys = put(keys, device)
    sorted_keys, perm = k.sort_pairs(d_keys, None, key_bits)
    expected = np.argsort(keys, kind="stable")
    assert sorted_keys.dtype == np.int64 and perm.dtype == np.int64
    np.testing.assert_array_equal(to_host(perm), expected)
    np.testing.assert_array_equal(to_host(sorted_keys), keys[expected])
    np.testing.assert_array_equal(to_host(d_keys), original)  # input untouched


@pytest.mark.parametrize("n", [5, 2**16 + 1])
def test_sort_pairs_carries_values(device, k, rng, n):
    keys = _keys(rng, n, 20, distinct=50)
    values = rng.integers(-(2**62), 2**62, size=n, dtype=np.int64)
    d_values = put(values, device)
    sorted_keys, sorted_values = k.sort_pairs(put(keys, device), d_values, 20)
    order = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(to_host(sorted_keys), keys[order])
    np.testing.assert_array_equal(to_host(sorted_values), values[order])
    np.testing.assert_array_equal(to_host(d_values), values)


def test_sort_pairs_passes_where_only_low_digits_vary(device, k, rng):
    # Every key shares its high digits: passes that move nothing may be skipped,
    # the result must not change.
    keys = (np.int64(5) << 40) + rng.integers(0, 2**11, size=3000, dtype=np.int64)
    s, perm = k.sort_pairs(put(keys, device), None, 63)
    order = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(to_host(perm), order)
    np.testing.assert_array_equal(to_host(s), keys[order])


def test_sort_pairs_with_most_keys_in_one_top_digit(device, k, rng):
    # power-law keys: one most-significant bucket holds most of them
    n = 300_000
    keys = rng.integers(0, 2**40, size=n, dtype=np.int64)
    keys[: n * 9 // 10] = rng.integers(0, 2**12, size=n * 9 // 10, dtype=np.int64)
    rng.shuffle(keys)
    got_keys, perm = k.sort_pairs(put(keys, device), None, 40)
    expected = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(to_host(perm), expected)
    np.testing.assert_array_equal(to_host(got_keys), keys[expected])


def test_sort_pairs_of_sorted_and_reversed_input(device, k):
    n = 2**16 + 7
    ascending = np.arange(n, dtype=np.int64) // 3
    for keys in (ascending, ascending[::-1].copy()):
        s, perm = k.sort_pairs(put(keys, device), None, 16)
        order = np.argsort(keys, kind="stable")
        np.testing.assert_array_equal(to_host(perm), order)
        np.testing.assert_array_equal(to_host(s), keys[order])


# --------------------------------------------------------------------------
# sortedness, segment_ids, segment_starts
# --------------------------------------------------------------------------

def ref_sortedness(keys):
    cols = [tuple(c) for c in np.atleast_2d(keys).T.tolist()]
    pairs = list(zip(cols, cols[1:]))
    if any(a > b for a, b in pairs):
        return 0
    return 1 if any(a == b for a, b in pairs) else 2


def ref_segment_ids(keys):
    rows = np.atleast_2d(keys)
    new = np.ones(rows.shape[1], dtype=bool)
    new[1:] = (rows[:, 1:] != rows[:, :-1]).any(axis=0)
    return np.cumsum(new) - 1


def _sorted_rows(rng, g, n, high):
    keys = rng.integers(0, high, size=(g, n), dtype=np.int64)
    return keys[:, np.lexsort(keys[::-1])] if n else keys


@pytest.mark.parametrize("g", [1, 2, 3])
@pytest.mark.parametrize("n", [0, 1, 2, 50])
def test_sortedness(device, k, rng, g, n):
    cases = {
        "sorted with repeats": _sorted_rows(rng, g, n, 3),
        "strictly increasing": _sorted_rows(rng, g, n, 2**40),
        "random": rng.integers(0, 4, size=(g, n), dtype=np.int64),
    }
    if n >= 2:
        unsorted = _sorted_rows(rng, g, n, 2**40)
        unsorted[:, [n // 2, n - 1]] = unsorted[:, [n - 1, n // 2]]  # one swap
        cases["one swap"] = unsorted
        tie = _sorted_rows(rng, g, n, 2**40)
        tie[:, 1] = tie[:, 0]
        cases["one tie"] = tie
    for name, keys in cases.items():
        arg = keys[0] if g == 1 else keys
        got = k.sortedness(put(np.ascontiguousarray(arg), device))
        assert got.shape == () and got.dtype == np.int8, name
        assert int(to_host(got)) == ref_sortedness(keys), name


@pytest.mark.parametrize("at", [1, 4095, 4096, 4097, 8192, 8193, 2 * 4096 + 2])
def test_sortedness_finds_one_descent_or_tie_anywhere(device, k, at):
    """One key out of order (or one tie) at or around the block boundaries of the CPU's order test."""
    n = 2 * 4096 + 3
    keys = np.arange(n, dtype=np.int64) * 2
    descent = keys.copy()
    descent[at] = descent[at - 1] - 1
    tie = keys.copy()
    tie[at] = tie[at - 1]
    for arr, want in ((keys, 2), (descent, 0), (tie, 1)):
        assert int(to_host(k.sortedness(put(arr, device)))) == want


def test_sortedness_later_rows_break_ties_only(device, k):
    keys = np.array([[0, 1, 1, 2], [9, 0, 5, 0]], dtype=np.int64)
    assert int(to_host(k.sortedness(put(keys, device)))) == 2
    keys[1, 2] = 0
    assert int(to_host(k.sortedness(put(keys, device)))) == 1
    keys[1, 1] = 1
    assert int(to_host(k.sortedness(put(keys, device)))) == 0


@pytest.mark.parametrize("g", [1, 2])
@pytest.mark.parametrize("n", [0, 1, 60, 40000])
def test_segment_ids_and_starts(device, k, rng, g, n):
    keys = _sorted_rows(rng, g, n, 5 if g == 2 else max(n // 3, 1))
    arg = put(np.ascontiguousarray(keys[0] if g == 1 else keys), device)
    ids = k.segment_ids(arg)
    expected = ref_segment_ids(keys)
    assert ids.dtype == np.int64 and ids.shape == (n,)
    np.testing.assert_array_equal(to_host(ids), expected)
    n_segments = int(expected[-1]) + 1 if n else 0
    starts = k.segment_starts(ids, n_segments)
    assert starts.dtype == np.int64 and starts.shape == (n_segments + 1,)
    new = np.flatnonzero(np.diff(expected, prepend=-1))
    np.testing.assert_array_equal(to_host(starts), np.append(new, n))
    fused = k.run_starts(arg)
    assert fused.dtype == np.int64 and fused.shape == (n_segments + 1,)
    np.testing.assert_array_equal(to_host(fused), np.append(new, n))


# --------------------------------------------------------------------------
# segment_reduce
# --------------------------------------------------------------------------

_UFUNCS = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum}


def ref_identity(op, dtype):
    if op in ("sum", "prod"):
        return dtype.type(op == "prod")
    if op in ("any", "all"):
        return op == "all"
    if op in ("argmin", "argmax"):
        return -1
    if dtype.kind == "b":
        return op == "min"
    if dtype.kind in "fc":
        inf = np.inf if op == "min" else -np.inf
        return dtype.type(complex(inf, inf) if dtype.kind == "c" else inf)
    info = np.iinfo(dtype)
    return dtype.type(info.max if op == "min" else info.min)


def ref_segment_reduce(values, starts, op, perm=None):
    rows = np.arange(values.shape[0]) if perm is None else perm  # row of values at each position
    out_dtype = {"any": np.bool_, "all": np.bool_, "argmin": np.int64, "argmax": np.int64}.get(op, values.dtype)
    out = np.empty((starts.size - 1, values.shape[1]), dtype=out_dtype)
    for j in range(starts.size - 1):
        where = rows[starts[j]:starts[j + 1]]
        segment = values[where]
        if not len(segment):
            out[j] = ref_identity(op, values.dtype)
        elif op in ("any", "all"):
            out[j] = getattr(segment != 0, op)(axis=0)  # NaN counts as True
        elif op in ("argmin", "argmax"):
            out[j] = where[getattr(np, op)(segment, axis=0)]  # first extreme, first NaN
        else:
            with np.errstate(all="ignore"):
                out[j] = _UFUNCS[op].reduce(segment, axis=0, dtype=values.dtype)
    return out


def _segment_reduce_cases():
    for op in SEGMENT_OPS:
        for dtype in (NUMBER_DTYPES if op in ("sum", "prod") else VALUE_DTYPES):
            yield pytest.param(op, dtype, id=f"{op}-{dtype_id(dtype)}")


def _segment_values(rng, m, width, dtype, op):
    values = _random_values(rng, (m, width), dtype)
    if dtype.kind in "iu" and op not in ("sum", "prod"):
        values //= 2**(8 * dtype.itemsize - 3)  # few distinct values: ties show which one wins
    if op == "prod" and dtype.kind in "fc":  # keep products in range
        values = (values / (np.abs(values) + 1)).astype(dtype) + dtype.type(1)
    if dtype.kind in "fc" and m * width:
        nan = dtype.type(complex(np.nan, 1.0) if dtype.kind == "c" else np.nan)
        values.flat[rng.integers(0, m * width, size=3)] = nan  # NaN propagates
    if dtype.kind == "c" and op not in ("sum", "prod"):
        values.real = np.round(values.real)  # equal real parts: the imaginary part decides
    if op in ("any", "all") and m * width:
        values.flat[rng.random(m * width) < 0.5] = 0
    return values


@pytest.mark.parametrize("op, dtype", list(_segment_reduce_cases()))
def test_segment_reduce(device, k, rng, op, dtype):
    m = 40
    # Segments of lengths 0 (leading, inner, trailing), 1 and more; the last
    # set starts and ends inside the values.
    all_starts = [np.array([0, 0, 1, 1, 5, 17, 17, 30, 40, 40], dtype=np.int64),
                  np.array([3, 9, 9, 10, 31], dtype=np.int64)]
    for width in (0, 1, 3):
        values = _segment_values(rng, m, width, dtype, op)
        for starts in all_starts:
            for perm in (None, rng.permutation(m).astype(np.int64),
                         rng.integers(0, m, size=m, dtype=np.int64)):  # repeats allowed
                got = k.segment_reduce(put(values, device), put(starts, device), op,
                                       None if perm is None else put(perm, device))
                expected = ref_segment_reduce(values, starts, op, perm)
                assert got.shape == expected.shape
                assert_dense_equal(got, expected)


@pytest.mark.parametrize("op", SEGMENT_OPS)
def test_segment_reduce_no_segments_and_no_values(device, k, op):
    values = np.zeros((0, 2), dtype=np.float64)
    for starts in (np.zeros(1, np.int64), np.zeros(3, np.int64)):
        got = k.segment_reduce(put(values, device), put(starts, device), op)
        assert_dense_equal(got, ref_segment_reduce(values, starts, op))


@pytest.mark.parametrize("op", ["min", "max", "argmin", "argmax"])
def test_segment_reduce_nan_propagates_from_any_position(device, k, op):
    values = np.array([[np.nan], [1.0], [2.0], [np.nan], [3.0], [np.nan]])
    starts = np.array([0, 3, 6], dtype=np.int64)
    got = k.segment_reduce(put(values, device), put(starts, device), op)
    assert_dense_equal(got, ref_segment_reduce(values, starts, op))


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.float64])
@pytest.mark.parametrize("op", ["any", "all", "min", "max", "argmin", "argmax"])
def test_segment_reduce_keeps_subnormals(device, k, op, dtype):
    # NumPy does not flush subnormal numbers to zero, and neither may a
    # device (CuPy builds kernels with -ftz=true, under which float32
    # comparisons would see a subnormal as 0).
    tiny = float(np.finfo(np.dtype(dtype).char.lower() if np.dtype(dtype).kind == "c" else dtype).smallest_subnormal)
    column = [0.0, tiny, -tiny, 0.0, tiny, 3 * tiny, 0.0, 0.0, -tiny, 2 * tiny]
    values = np.array(column, dtype=dtype).reshape(-1, 1)
    if np.dtype(dtype).kind == "c":
        values = values + np.array([0, 0, 0, 0, 0, 0, 0, tiny, 0, 0], dtype=dtype).reshape(-1, 1) * 1j
    starts = np.array([0, 1, 3, 4, 6, 8, 10], dtype=np.int64)
    got = k.segment_reduce(put(values, device), put(starts, device), op)
    assert_dense_equal(got, ref_segment_reduce(values, starts, op))


@pytest.mark.parametrize("layout", ["many segments", "one huge segment", "mostly empty segments"])
def test_segment_reduce_large(device, k, rng, layout):
    # Enough work that a parallel implementation splits it, however it is spread.
    n = 2**17
    if layout == "many segments":
        starts = np.unique(np.concatenate([[0, n], rng.integers(0, n, size=5000)]))
    elif layout == "one huge segment":
        starts = np.array([0, 1, 2, n - 1, n])
    else:
        starts = np.sort(np.concatenate([np.zeros(40000, np.int64), np.full(40000, n), [n // 3, n // 2]]))
    starts = starts.astype(np.int64)
    values = rng.integers(-1000, 1000, size=(n, 2)).astype(np.int64)
    perm = rng.permutation(n).astype(np.int64)
    for op in SEGMENT_OPS:
        got = k.segment_reduce(put(values, device), put(starts, device), op, put(perm, device))
        np.testing.assert_array_equal(to_host(got), ref_segment_reduce(values, starts, op, perm), err_msg=op)


# --------------------------------------------------------------------------
# compress / expand
# --------------------------------------------------------------------------

def ref_compress(rows, n_rows):
    return np.searchsorted(rows, np.arange(n_rows + 1), side="left")


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("n_rows, n", [(0, 0), (1, 0), (5, 0), (1, 3), (7, 20), (1000, 300), (50, 2**16)])
def test_compress_expand_round_trip(device, k, rng, index_dtype, n_rows, n):
    rows = np.sort(rng.integers(0, n_rows, size=n, dtype=np.int64)) if n_rows else np.zeros(0, np.int64)
    indptr = k.compress(put(rows, device), n_rows, np.dtype(index_dtype))
    assert indptr.dtype == index_dtype and indptr.shape == (n_rows + 1,)
    np.testing.assert_array_equal(to_host(indptr), ref_compress(rows, n_rows))
    back = k.expand(indptr, n)
    assert back.dtype == np.int64 and back.shape == (n,)
    np.testing.assert_array_equal(to_host(back), rows)


def test_compress_empty_rows_everywhere(device, k):
    rows = np.array([2, 2, 5, 9, 9, 9], dtype=np.int64)  # rows 0, 1, 3, 4, 6-8, 10, 11 empty
    indptr = to_host(k.compress(put(rows, device), 12, np.dtype(np.int64)))
    np.testing.assert_array_equal(indptr, [0, 0, 0, 2, 2, 2, 3, 3, 3, 3, 6, 6, 6])
    np.testing.assert_array_equal(to_host(k.expand(put(indptr, device), 6)), rows)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_expand_reference(device, k, rng, index_dtype):
    counts = rng.integers(0, 4, size=30)
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(index_dtype)
    got = k.expand(put(indptr, device), int(indptr[-1]))
    np.testing.assert_array_equal(to_host(got), np.repeat(np.arange(30), counts))
    into = put(np.full((2, int(indptr[-1])), -1, dtype=np.int64), device)
    k.expand(put(indptr, device), int(indptr[-1]), out=into[1])
    np.testing.assert_array_equal(to_host(into), [np.full(int(indptr[-1]), -1), np.repeat(np.arange(30), counts)])


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int32, np.int64])
@pytest.mark.parametrize("n", [0, 1, 7, 100_000])
def test_offsets(device, k, rng, dtype, n):
    counts = (rng.random(n) < 0.5) if dtype == np.bool_ else rng.integers(0, 100, n).astype(dtype)
    got = k.offsets(put(counts, device))
    assert got.dtype == np.int64 and got.shape == (n + 1,)
    np.testing.assert_array_equal(to_host(got), np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]))


# --------------------------------------------------------------------------
# scatter_dense / gather
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", VALUE_DTYPES, ids=dtype_id)
def test_scatter_dense(device, k, rng, dtype):
    for width, size, n in [(1, 10, 4), (3, 50, 50), (0, 5, 3), (2, 6, 0), (1, 70000, 40000)]:
        keys = rng.permutation(size)[:n].astype(np.int64)
        values = _random_values(rng, (n, width), dtype)
        out = _random_values(rng, (size, width), dtype)
        expected = out.copy()
        expected[keys] = values
        d_out = put(out, device)
        assert k.scatter_dense(put(keys, device), put(values, device), d_out) is None
        got = to_host(d_out)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", VALUE_DTYPES, ids=dtype_id)
def test_gather(device, k, rng, dtype):
    for width, m, n in [(1, 10, 4), (3, 50, 80), (0, 5, 3), (2, 6, 0), (2, 0, 0), (1, 1000, 70000)]:
        values = _random_values(rng, (m, width), dtype)
        index = rng.integers(0, m, size=n, dtype=np.int64) if m else np.zeros(0, np.int64)
        got = k.gather(put(values, device), put(index, device))
        assert got.dtype == dtype and got.shape == (n, width)
        np.testing.assert_array_equal(to_host(got), values[index])


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float64, np.bool_], ids=dtype_id)
def test_take_columns(device, k, rng, dtype):
    for g, m, n in [(1, 10, 4), (3, 50, 80), (0, 5, 3), (2, 6, 0), (2, 0, 0), (4, 1000, 70000)]:
        values = _random_values(rng, (g, m), dtype)
        index = rng.integers(0, m, size=n, dtype=np.int64) if m else np.zeros(0, np.int64)
        got = k.take_columns(put(values, device), put(index, device))
        assert got.dtype == dtype and got.shape == (g, n) and got.flags.c_contiguous
        np.testing.assert_array_equal(to_host(got), values[:, index])


@pytest.mark.parametrize("dtype", VALUE_DTYPES, ids=dtype_id)
def test_gather_with_fill(device, k, rng, dtype):
    fill = _random_values(rng, (1,), dtype)[0]
    for width, m, n in [(1, 10, 4), (3, 50, 80), (0, 5, 3), (2, 0, 5), (1, 1000, 70000)]:
        values = _random_values(rng, (m, width), dtype)
        index = rng.integers(-1, m, size=n, dtype=np.int64) if m else np.full(n, -1, np.int64)
        got = k.gather(put(values, device), put(index, device), fill)
        expected = np.full((n, width), fill, dtype=dtype)
        expected[index >= 0] = values[index[index >= 0]]
        assert got.dtype == dtype and got.shape == (n, width)
        np.testing.assert_array_equal(to_host(got), expected)
