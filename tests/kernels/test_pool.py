"""The host buffer pool behind the CPU kernels' large outputs."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from gpusparse._kernels.cpu import _common, _pool

MiB = 1 << 20


@pytest.fixture(autouse=True)
def empty_pool(monkeypatch):
    monkeypatch.delenv("GPUSPARSE_CPU_POOL_BYTES", raising=False)
    _pool.release_free()
    yield
    _pool.release_free()


def test_size_classes_hold_the_request_and_waste_at_most_a_third_of_themselves():
    for nbytes in [1, MiB - 1, MiB, MiB + 1, 3 * MiB, 5 * MiB + 7, 1 << 33]:
        cls = _pool.size_class(nbytes)
        assert cls >= max(nbytes, MiB)
        assert nbytes < MiB or cls <= nbytes * 3 // 2 + 1


def test_a_released_buffer_is_reused_and_a_live_one_is_not():
    a = _common.empty((MiB // 8,), np.float64)
    address = a.ctypes.data
    b = _common.empty((MiB // 8,), np.int64)
    assert not np.shares_memory(a, b)
    del a
    gc.collect()
    assert _pool.free_bytes() == MiB
    c = _common.empty((MiB // 8,), np.int64)
    assert c.ctypes.data == address and _pool.free_bytes() == 0


def test_views_and_foreign_holders_keep_the_buffer():
    a = _common.empty((2, MiB // 16), np.float64)
    row = a[1]
    capsule_holder = np.from_dlpack(a)
    del a
    gc.collect()
    assert _pool.free_bytes() == 0
    fresh = _common.empty((2, MiB // 16), np.float64)
    fresh[...] = 7.0
    row[...] = 1.0
    assert not np.shares_memory(fresh, row)
    assert (capsule_holder[1] == 1.0).all() and (fresh == 7.0).all()
    del row, capsule_holder
    gc.collect()
    assert _pool.free_bytes() == MiB


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.int32, np.float32, np.complex64, np.complex128])
def test_arrays_have_the_requested_layout(dtype):
    out = _common.empty((3, MiB), dtype)
    assert out.shape == (3, MiB) and out.dtype == dtype
    assert out.flags.c_contiguous and out.flags.writeable and out.flags.aligned


def test_small_outputs_and_a_zero_limit_bypass_the_pool(monkeypatch):
    small = _common.empty((10,), np.float64)
    assert small.base is None
    monkeypatch.setenv("GPUSPARSE_CPU_POOL_BYTES", "0")
    big = _common.empty((MiB,), np.float64)
    assert big.base is None


def test_the_limit_bounds_the_free_buffers(monkeypatch):
    monkeypatch.setenv("GPUSPARSE_CPU_POOL_BYTES", str(3 * MiB))
    arrays = [_common.empty((MiB,), np.uint8) for _ in range(5)]
    del arrays
    gc.collect()
    assert _pool.free_bytes() <= 3 * MiB


def test_a_bad_limit_is_named(monkeypatch):
    monkeypatch.setenv("GPUSPARSE_CPU_POOL_BYTES", "lots")
    with pytest.raises(ValueError, match="GPUSPARSE_CPU_POOL_BYTES"):
        _common.empty((MiB,), np.uint8)
