"""The memory-safety contract of the primitives: hostile integer values never leave the buffers.

Whatever the *values* of their integer inputs (coordinates, keys, indices,
``indptr``, positions, segment starts, counts), the primitives of
``gpusparse._kernels`` read and write only inside the buffers they are
given (see the conventions in :mod:`gpusparse._kernels`): a read through an
index outside ``[0, m)`` reads the nearest row, a write to a destination
outside the output is dropped, histogram buckets are clipped, an ``indptr``
entry is clipped into ``[0, nnz]`` and a row whose end lies before its
start is empty; unsorted or repeated input where sorted or unique input is
expected gives some result inside the buffers.

Each test feeds one primitive such values (negative, ``2**40``, ``2**62``,
the int64 extremes, pointers that decrease, run past ``nnz`` or start
below 0, unsorted and repeated keys) and checks that the call returns with
the documented shape and dtype, and, where the contract defines the result,
compares it with a NumPy model of it. On the emulated CUDA device a write
outside a buffer fails the launch (guard bytes) and a far read faults;
:func:`test_every_hostile_case_in_a_child_process` runs one hostile call of
every primitive in a child interpreter, so that a crash is a failed test
rather than a dead test run.

The products, and the structure check in front of cuSPARSE, are tested in
``test_bounds_safety_products.py``; the hostile inputs both use are in
``_hostile.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

from _helpers import put
from _hostile import (
    BIG,
    I64,
    INDPTR_CASES,
    MONOTONE_CASES,
    NEGATIVE,
    clipped_ranges,
    hostile_index,
    hostile_indptrs,
    ref_expand,
)
from gpusparse._device import device_scope, kernels_for, to_host


@pytest.fixture
def k(device):
    """The primitive implementation of ``device`` (CUDA calls run with it current)."""
    with device_scope(device):
        yield kernels_for(device)


# --------------------------------------------------------------------------
# gather, take_columns, scatter_dense: clipped reads, dropped writes
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int64, np.complex128, np.bool_, np.float32])
@pytest.mark.parametrize("width", [1, 3])
def test_gather_clips_indices(device, k, rng, dtype, width):
    m = 9
    values = rng.integers(0, 100, size=(m, width)).astype(dtype)
    index = hostile_index(rng, 40, m)
    got = k.gather(put(values, device), put(index, device))
    assert got.shape == (40, width) and got.dtype == values.dtype
    np.testing.assert_array_equal(to_host(got), values[np.clip(index, 0, m - 1)])


def test_gather_with_fill_clips_indices_past_the_end(device, k, rng):
    m = 9
    values = rng.standard_normal((m, 2))
    index = hostile_index(rng, 40, m)
    got = to_host(k.gather(put(values, device), put(index, device), fill=-5.0))
    expected = np.where((index < 0)[:, None], -5.0, values[np.clip(index, 0, m - 1)])
    np.testing.assert_array_equal(got, expected)


def test_gather_from_no_rows_reads_nothing(device, k, rng):
    values = np.empty((0, 2), dtype=np.float64)
    index = hostile_index(rng, 12, 0)
    got = k.gather(put(values, device), put(index, device))
    assert got.shape == (12, 2)
    np.testing.assert_array_equal(to_host(got), np.zeros((12, 2)))
    got = k.gather(put(values, device), put(index, device), fill=7.0)
    np.testing.assert_array_equal(to_host(got), np.full((12, 2), 7.0))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.complex64])
def test_take_columns_clips_indices(device, k, rng, dtype):
    g, m = 3, 11
    values = rng.integers(-50, 50, size=(g, m)).astype(dtype)
    index = hostile_index(rng, 30, m)
    got = k.take_columns(put(values, device), put(index, device))
    assert got.shape == (g, 30) and got.dtype == values.dtype
    np.testing.assert_array_equal(to_host(got), values[:, np.clip(index, 0, m - 1)])
    empty = k.take_columns(put(np.empty((g, 0), dtype=dtype), device), put(index, device))
    np.testing.assert_array_equal(to_host(empty), np.zeros((g, 30), dtype=dtype))


@pytest.mark.parametrize("dtype", [np.int64, np.complex128, np.uint8])
def test_scatter_dense_drops_keys_outside_the_output(device, k, rng, dtype):
    size, width = 20, 2
    valid = rng.permutation(size)[:12].astype(I64)
    keys = rng.permutation(np.concatenate([valid, np.array(NEGATIVE + BIG + [size, size + 1], I64)]))
    values = rng.integers(0, 100, size=(keys.size, width)).astype(dtype)
    before = rng.integers(100, 200, size=(size, width)).astype(dtype)
    out = put(before, device)
    assert k.scatter_dense(put(keys, device), put(values, device), out) is None
    expected = before.copy()
    inside = (keys >= 0) & (keys < size)
    expected[keys[inside]] = values[inside]
    np.testing.assert_array_equal(to_host(out), expected)


def test_scatter_dense_with_repeated_keys_writes_only_their_rows(device, k, rng):
    size = 16
    keys = np.array([3, 3, 3, 5, -1, 2**62, 7, 7], dtype=I64)
    values = np.arange(keys.size * 4, dtype=np.float64).reshape(-1, 4)
    before = np.full((size, 4), -1.0)
    out = put(before, device)
    k.scatter_dense(put(keys, device), put(values, device), out)
    got = to_host(out)
    untouched = np.setdiff1d(np.arange(size), [3, 5, 7])
    np.testing.assert_array_equal(got[untouched], before[untouched])
    np.testing.assert_array_equal(got[5], values[3])  # its key is unique
    for row, sources in ((3, values[:3]), (7, values[6:])):  # some word of some writer, per word
        assert all(got[row, c] in sources[:, c] for c in range(4))


# --------------------------------------------------------------------------
# copy_segments, segment_search
# --------------------------------------------------------------------------

def _copy(k, device, values, out, src, dst, lengths):
    d_out = put(out, device)
    k.copy_segments(put(values, device), put(np.asarray(src, I64), device), put(np.asarray(dst, I64), device),
                    put(np.asarray(lengths, I64), device), d_out)
    return to_host(d_out)


def ref_copy_segments(values, out, src, dst, lengths):
    """The contract, item by item: a destination outside ``out`` is dropped, a source row is clipped."""
    out = out.copy()
    m, n = values.shape[0], out.shape[0]
    for s, d, length in zip(src, dst, lengths):
        for j in range(max(0, -d), min(length, n - d)):  # the items whose destination is in out
            out[d + j] = values[min(max(s + j, 0), m - 1)] if m else 0
    return out


def test_copy_segments_drops_runs_outside_the_output(device, k, rng):
    values = rng.integers(0, 1000, size=(30, 3)).astype(I64)
    out = np.full((25, 3), -1, dtype=I64)
    # in bounds; destination at or past the end; negative and huge lengths;
    # a run whose tail passes the end of out (the tail is dropped)
    src = [2, 0, 5, 7, 9, 20]
    dst = [0, 25, 2**62, 10, 12, 21]
    lengths = [4, 3, 5, -3, -(2**63), 2**62]
    got = _copy(k, device, values, out, src, dst, lengths)
    np.testing.assert_array_equal(got, ref_copy_segments(values, out, src, dst, lengths))


@pytest.mark.parametrize("dtype", [np.int64, np.complex64, np.int8])
def test_copy_segments_clips_sources_and_drops_destinations_item_by_item(device, k, rng, dtype):
    values = rng.integers(0, 100, size=(30, 3)).astype(dtype)
    out = np.full((25, 3), -1, dtype=dtype)
    # runs that start before out, sources before or past values, extremes
    src = [-3, 27, -(2**63), 2**63 - 1, 10, 4]
    dst = [-2, 3, 8, 12, 2**62, -(2**63)]
    lengths = [4, 5, 3, 2, 2, 2**63 - 1]
    got = _copy(k, device, values, out, src, dst, lengths)
    np.testing.assert_array_equal(got, ref_copy_segments(values, out, src, dst, lengths))


def test_copy_segments_pair_with_a_zero_width_second_array(device, k, rng):
    # Entries without dense elements: the second array has rows of width 0,
    # which must not limit the runs of the first.
    values = rng.integers(0, 100, size=(6, 1)).astype(I64)
    out = np.full((4, 1), -1, dtype=I64)
    d_out, d_out2 = put(out, device), put(np.empty((4, 0)), device)
    k.copy_segments(put(values, device), put(np.array([4, 0], I64), device), put(np.array([0, 2], I64), device),
                    put(np.array([2, 2], I64), device), d_out, put(np.empty((6, 0)), device), d_out2)
    np.testing.assert_array_equal(to_host(d_out)[:, 0], values[[4, 5, 0, 1], 0])


def test_copy_segments_from_no_rows(device, k):
    values = np.empty((0, 2), dtype=I64)
    out = np.full((6, 2), -1, dtype=I64)
    got = _copy(k, device, values, out, [3, -1], [1, 4], [2, 9])
    np.testing.assert_array_equal(got, ref_copy_segments(values, out, [3, -1], [1, 4], [2, 9]))


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("key_dtype", [np.int32, np.int64])
def test_segment_search_clips_segments(device, k, rng, side, key_dtype):
    n = 50
    keys = np.sort(rng.integers(0, 40, size=n)).astype(key_dtype)
    bounds = np.array(NEGATIVE + BIG + [0, 5, n, n + 1, 17], dtype=I64)
    starts = rng.choice(bounds, size=60)
    ends = rng.choice(bounds, size=60)
    targets = rng.integers(-5, 45, size=60).astype(I64)
    got = k.segment_search(put(keys, device), put(starts, device), put(ends, device), put(targets, device),
                           side=side)
    assert got.shape == (60,) and got.dtype == I64
    lo = np.clip(starts, 0, n)
    hi = np.maximum(lo, np.clip(ends, 0, n))
    expected = [a + np.searchsorted(keys[a:b], v, side=side) for a, b, v in zip(lo, hi, targets)]
    np.testing.assert_array_equal(to_host(got), expected)


# --------------------------------------------------------------------------
# compress, expand, offsets, segment_starts
# --------------------------------------------------------------------------

@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_compress_counts_rows_out_of_range_in_the_nearest_row(device, k, rng, index_dtype):
    n_rows = 8
    rows = np.sort(np.concatenate([rng.integers(0, n_rows, 30), NEGATIVE, BIG, [n_rows, n_rows + 5]])).astype(I64)
    got = k.compress(put(rows, device), n_rows, index_dtype)
    assert got.shape == (n_rows + 1,) and got.dtype == index_dtype
    clipped = np.clip(rows, 0, n_rows - 1)
    np.testing.assert_array_equal(to_host(got), np.searchsorted(clipped, np.arange(n_rows + 1)))


def test_compress_of_unsorted_rows_points_inside(device, k, rng):
    rows = rng.permutation(np.concatenate([rng.integers(0, 6, 40), NEGATIVE, BIG])).astype(I64)
    got = to_host(k.compress(put(rows, device), 6, np.int64))
    assert got.shape == (7,) and ((got >= 0) & (got <= rows.size)).all()


@pytest.mark.parametrize("case", INDPTR_CASES)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_expand_clips_pointers(device, k, rng, case, index_dtype):
    n_rows, nnz = 9, 40
    indptr = hostile_indptrs(rng, n_rows, nnz)[case]
    if index_dtype == np.int32:
        indptr = np.clip(indptr, -(2**31), 2**31 - 1)
    indptr = indptr.astype(index_dtype)
    got = k.expand(put(indptr, device), nnz)
    assert got.shape == (nnz,) and got.dtype == I64
    got = to_host(got)
    if case in MONOTONE_CASES:
        np.testing.assert_array_equal(got, ref_expand(indptr, nnz))
    else:  # decreasing pointers: some row for each position
        assert ((got >= 0) & (got < n_rows)).all()


def test_expand_without_rows(device, k):
    got = k.expand(put(np.array([5], dtype=I64), device), 4)
    np.testing.assert_array_equal(to_host(got), np.zeros(4, dtype=I64))


def test_offsets_of_negative_counts_is_the_running_total(device, k):
    counts = np.array([3, -5, 2**40, -(2**40), 0, 7], dtype=I64)
    got = to_host(k.offsets(put(counts, device)))
    np.testing.assert_array_equal(got, np.concatenate([[0], np.cumsum(counts)]))


def test_segment_starts_drops_ids_past_the_count(device, k):
    ids = np.array([0, 0, 1, 2, 2, 3, 4, 4], dtype=I64)
    got = to_host(k.segment_starts(put(ids, device), 3))
    np.testing.assert_array_equal(got, [0, 2, 3, ids.size])


@pytest.mark.parametrize("ids", [[5, 3, 1, 0, 0], [-1, -(2**63), 0, 2**62, 2], [0, 0, 4, 4, 9]], ids=str)
def test_segment_starts_of_any_ids(device, k, ids):
    got = k.segment_starts(put(np.asarray(ids, I64), device), 4)
    assert got.shape == (5,) and got.dtype == I64


def test_run_starts_of_unsorted_keys_are_the_runs_of_equal_neighbours(device, k):
    keys = np.array([5, 5, -(2**63), 2**63 - 1, 2**63 - 1, 3, 5, 5, -1], dtype=I64)
    heads = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
    got = to_host(k.run_starts(put(keys, device)))
    np.testing.assert_array_equal(got, np.concatenate([heads, [keys.size]]))
    ids = to_host(k.segment_ids(put(keys, device)))
    np.testing.assert_array_equal(ids, np.cumsum(np.isin(np.arange(keys.size), heads)) - 1)


# --------------------------------------------------------------------------
# sort_pairs, bucket_order, reduce_by_key, linearize / delinearize
# --------------------------------------------------------------------------

@pytest.mark.parametrize("key_bits", [0, 4, 20, 63])
def test_sort_pairs_of_keys_out_of_range_permutes(device, k, rng, key_bits):
    keys = rng.permutation(np.concatenate([rng.integers(0, 2**min(key_bits, 62) + 1, 5000), NEGATIVE, BIG]))
    keys = keys.astype(I64)
    sorted_keys, perm = k.sort_pairs(put(keys, device), None, key_bits)
    assert sorted_keys.shape == perm.shape == keys.shape
    assert sorted_keys.dtype == perm.dtype == I64
    np.testing.assert_array_equal(np.sort(to_host(perm)), np.arange(keys.size))
    payload = rng.integers(-(2**62), 2**62, size=keys.size, dtype=I64)
    _, carried = k.sort_pairs(put(keys, device), put(payload, device), key_bits)
    np.testing.assert_array_equal(np.sort(to_host(carried)), np.sort(payload))


def test_bucket_order_clips_keys(device, k, rng):
    n_buckets = 6
    keys = rng.permutation(np.concatenate([rng.integers(0, n_buckets, 50), NEGATIVE, BIG, [6, 7]])).astype(I64)
    dest, indptr = k.bucket_order(put(keys, device), n_buckets)
    clipped = np.clip(keys, 0, n_buckets - 1)
    order = np.argsort(clipped, kind="stable")
    expected_dest = np.empty_like(order)
    expected_dest[order] = np.arange(keys.size)
    np.testing.assert_array_equal(to_host(dest), expected_dest)
    np.testing.assert_array_equal(to_host(indptr), np.searchsorted(clipped[order], np.arange(n_buckets + 1)))


@pytest.mark.parametrize("op", ["sum", "max"])
def test_reduce_by_key_counts_keys_out_of_range_in_the_nearest_group(device, k, rng, op):
    n_out = 5
    keys = rng.permutation(np.concatenate([rng.integers(0, n_out, 60), NEGATIVE, BIG, [5, 6]])).astype(I64)
    values = rng.integers(-100, 100, size=(keys.size, 2)).astype(I64)
    out, counts = k.reduce_by_key(put(keys, device), put(values, device), n_out, op)
    clipped = np.clip(keys, 0, n_out - 1)
    ufunc = np.add if op == "sum" else np.maximum
    expected = np.stack([ufunc.reduce(values[clipped == j], axis=0) for j in range(n_out)])
    np.testing.assert_array_equal(to_host(out), expected)
    np.testing.assert_array_equal(to_host(counts), np.bincount(clipped, minlength=n_out))


def test_delinearize_of_keys_out_of_range(device, k):
    keys = np.array(NEGATIVE + BIG + [0, 59, 60], dtype=I64)
    got = k.delinearize(put(keys, device), (3, 4, 5))
    assert got.shape == (3, keys.size) and got.dtype == I64
    got = k.delinearize(put(keys, device), (3, 0, 5))  # no element to point at
    assert got.shape == (3, keys.size) and got.dtype == I64


# --------------------------------------------------------------------------
# segment_reduce: clipped starts and positions
# --------------------------------------------------------------------------

def ref_segment_reduce(values, starts, op, perm=None):
    """The contract: clipped ranges of the clipped starts, rows of perm clipped into [0, m)."""
    m = values.shape[0]
    n_pos = m if perm is None else len(perm)
    lo, hi = clipped_ranges(starts, n_pos)
    out = []
    for a, b in zip(lo, hi):
        rows = np.arange(a, b) if perm is None else np.clip(np.asarray(perm)[a:b], 0, m - 1)
        if op == "sum":
            out.append(values[rows].sum(axis=0))
        elif op == "max":
            out.append(values[rows].max(axis=0) if rows.size else np.full(values.shape[1], values.dtype.type(-np.inf)))
        else:  # argmax: the row of the first maximum, -1 when empty
            out.append(rows[values[rows].argmax(axis=0)] if rows.size else np.full(values.shape[1], -1))
    return np.array(out).reshape(len(lo), values.shape[1])


@pytest.mark.parametrize("case", INDPTR_CASES)
@pytest.mark.parametrize("op, dtype", [("sum", np.int64), ("argmax", np.float64), ("max", np.float32)])
@pytest.mark.parametrize("n_pos", [60, 5000])
def test_segment_reduce_clips_starts(device, k, rng, case, op, dtype, n_pos):
    n_segments, width = 7, 2
    values = rng.integers(-1000, 1000, size=(n_pos, width)).astype(dtype)
    starts = hostile_indptrs(rng, n_segments, n_pos)[case]
    got = k.segment_reduce(put(values, device), put(starts, device), op)
    assert got.shape == (n_segments, width)
    assert got.dtype == (I64 if op == "argmax" else values.dtype)
    # Starts that decrease somewhere: the CUDA kernels recompute the clipped
    # ranges exactly; other implementations may give any result.
    if case in MONOTONE_CASES or device.is_cuda:
        np.testing.assert_array_equal(to_host(got), ref_segment_reduce(values, starts, op))


@pytest.mark.parametrize("op, dtype", [("sum", np.int64), ("argmax", np.float64)])
def test_segment_reduce_clips_the_rows_of_perm(device, k, rng, op, dtype):
    if not device.is_cuda:
        pytest.skip("perm is the caller's responsibility on the CPU (gpusparse._kernels); the CUDA kernels clip it")
    m = 20
    values = rng.integers(-1000, 1000, size=(m, 3)).astype(dtype)
    perm = hostile_index(rng, 40, m)
    starts = np.array([0, 5, 5, 17, 40], dtype=I64)
    got = k.segment_reduce(put(values, device), put(starts, device), op, put(perm, device))
    np.testing.assert_array_equal(to_host(got), ref_segment_reduce(values, starts, op, perm))
    # No row to read: every segment is empty.
    none = k.segment_reduce(put(values[:0], device), put(starts, device), op, put(perm, device))
    np.testing.assert_array_equal(to_host(none), ref_segment_reduce(values[:0], np.zeros(5, I64), op))


# --------------------------------------------------------------------------
# merge_sorted, merge_rows: unsorted and repeated keys
# --------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["union", "intersection"])
@pytest.mark.parametrize("n", [7, 3000])
def test_merge_sorted_of_unsorted_repeated_keys_stays_inside(device, k, rng, how, n):
    a = rng.integers(-3, 3, size=n).astype(I64)
    a[:4] = NEGATIVE
    b = np.concatenate([np.sort(rng.integers(-3, 3, size=n // 2 + 1)), BIG]).astype(I64)[::-1].copy()
    keys, a_index, b_index, count = k.merge_sorted(put(a, device), put(b, device), how)
    count = int(to_host(count))
    capacity = a.size + b.size if how == "union" else min(a.size, b.size)
    assert 0 <= count <= capacity
    assert min(keys.shape[0], a_index.shape[0], b_index.shape[0]) >= count
    a_index, b_index = to_host(a_index)[:count], to_host(b_index)[:count]
    assert ((a_index >= -1) & (a_index < a.size)).all() and ((b_index >= -1) & (b_index < b.size)).all()


@pytest.mark.parametrize("case", ["decreasing", "wild", "monotone past nnz"])
def test_merge_rows_of_hostile_structures(device, k, rng, case):
    n_rows, n_minor, nnz = 6, 10, 25
    a_indptr = hostile_indptrs(rng, n_rows, nnz)[case]
    b_indptr = np.linspace(0, nnz, n_rows + 1).astype(I64)
    a_indices = hostile_index(rng, nnz, n_minor)
    b_indices = rng.integers(0, n_minor, size=nnz).astype(I64)
    indptr, indices, a_index, b_index = k.merge_rows(put(a_indptr, device), put(a_indices, device),
                                                     put(b_indptr, device), put(b_indices, device), n_minor, "union")
    assert indptr.shape == (n_rows + 1,)
    assert indices.shape == a_index.shape == b_index.shape


# --------------------------------------------------------------------------
# Every primitive at once, in a child process: a crash is a failure
# --------------------------------------------------------------------------

def smoke(device_name: str) -> None:
    """One hostile call of every primitive on ``device_name``; prints ``ok`` when all return."""
    from gpusparse._device import Device

    device = Device.parse(device_name)
    rng = np.random.default_rng(7)
    huge = np.array(NEGATIVE + BIG, dtype=I64)
    n = 64
    idx = np.resize(huge, n)
    ptr = np.resize(np.array([2**62, -(2**63), 5, 2**63 - 1, -1, 3], I64), 9)
    vals = rng.standard_normal((n, 2))
    ints = rng.integers(-5, 5, size=n).astype(I64)
    with device_scope(device):
        k = kernels_for(device)

        def p(x):
            return put(np.asarray(x), device)

        calls = {
            "linearize": lambda: k.linearize(p(np.stack([idx, idx[::-1]])), (3, 4)),
            "delinearize": lambda: k.delinearize(p(idx), (3, 4)),
            "sort_pairs": lambda: k.sort_pairs(p(idx), None, 12),
            "sortedness": lambda: k.sortedness(p(idx)),
            "segment_ids": lambda: k.segment_ids(p(idx)),
            "segment_starts": lambda: k.segment_starts(p(idx), 5),
            "run_starts": lambda: k.run_starts(p(idx)),
            # (perm stays the caller's on the CPU: see test_segment_reduce_clips_the_rows_of_perm)
            "segment_reduce": lambda: k.segment_reduce(p(vals), p(ptr), "argmin",
                                                       p(idx) if device.is_cuda else None),
            "compress": lambda: k.compress(p(idx), 4, np.int32),
            "expand": lambda: k.expand(p(ptr), n),
            "offsets": lambda: k.offsets(p(idx)),
            "scatter_dense": lambda: k.scatter_dense(p(idx), p(vals), p(np.zeros((4, 2)))),
            "gather": lambda: k.gather(p(vals), p(idx)),
            "take_columns": lambda: k.take_columns(p(vals.T.copy()), p(idx)),
            "transpose_compressed": lambda: k.transpose_compressed(p(ptr), p(idx), p(vals), 5, np.int32),
            "copy_segments": lambda: k.copy_segments(p(vals), p(idx[:8]), p(idx[8:16]), p(idx[16:24]),
                                                     p(np.zeros((5, 2)))),
            "segment_search": lambda: k.segment_search(p(ints), p(idx), p(idx[::-1]), p(idx)),
            "bucket_order": lambda: k.bucket_order(p(idx), 3),
            "merge_sorted": lambda: k.merge_sorted(p(idx), p(ints), "union"),
            "merge_rows": lambda: k.merge_rows(p(ptr), p(idx), p(ptr), p(idx), 4, "intersection"),
            "reduce_by_key": lambda: k.reduce_by_key(p(idx), p(vals), 3, "sum"),
            "spmv": lambda: k.spmv(p(ptr), p(idx), p(ints), (8, 4), p(ints[:4]), p(np.zeros(8, I64))),
            "spmm": lambda: k.spmm(p(ptr), p(idx), p(ints), (8, 4), p(np.ones((4, 3), I64)),
                                   p(np.zeros((8, 3), I64))),
            "spmm_reduce": lambda: k.spmm_reduce(p(ptr), p(idx), p(vals[:, 0].copy()), (8, 4),
                                                 p(np.ones((4, 3))), "max"),
            "spgemm": lambda: k.spgemm(p(ptr), p(idx), p(ints), p(ptr[:5]), p(idx), p(ints), (8, 4, 3)),
            "sddmm": lambda: k.sddmm(p(ptr), p(idx), p(np.ones((8, 3))), p(np.ones((4, 3)))),
            "spmm_semiring": lambda: k.spmm_semiring(p(ptr), p(idx), p(vals[:, 0].copy()), (8, 4),
                                                     p(np.ones((4, 3))), "min", "plus",
                                                     p(np.ones((8, 3), dtype=bool))),
            "spgemm_semiring": lambda: k.spgemm_semiring(p(ptr), p(idx), p(ints), p(ptr[:5]), p(idx), p(ints),
                                                         (8, 4, 3), "max", "times", p(ptr), p(idx), True),
        }
        raised = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for name, call in calls.items():
                print(name, flush=True)  # the last name printed is the one a crash hit
                try:
                    result = call()
                    for part in result if isinstance(result, tuple) else (result,):
                        if part is not None:
                            to_host(part)  # waits for the kernels
                except ValueError as exc:  # the contract allows a clear error naming the problem
                    if "indptr" not in str(exc):
                        raised.append(f"{name}: ValueError: {exc}")
                except Exception as exc:  # not a crash: reported, and the next call runs
                    raised.append(f"{name}: {type(exc).__name__}: {exc}")
    print("\n".join(raised) if raised else "ok")


def test_smoke_covers_every_primitive():
    from gpusparse._kernels import PRIMITIVES, SEMIRING_PRIMITIVES

    source = Path(__file__).read_text(encoding="utf-8")
    body = source[source.index("def smoke("):source.index("def test_smoke_covers_every_primitive")]
    missing = [name for name in PRIMITIVES + SEMIRING_PRIMITIVES if name != "empty" and f'"{name}":' not in body]
    assert not missing


def test_every_hostile_case_in_a_child_process(device):
    here = Path(__file__).resolve().parent
    code = textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(here)!r}, {str(here.parent)!r}]
        import test_bounds_safety
        test_bounds_safety.smoke({str(device)!r})
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(here.parent.parent), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=900,
                            check=False)
    lines = result.stdout.splitlines() or ["(nothing)"]
    assert result.returncode == 0, (f"the child died with status {result.returncode} in {lines[-1]!r}\n"
                                    f"{result.stderr[-3000:]}")
    assert lines[-1] == "ok", "\n".join(line for line in lines if ": " in line)
