"""Run-time options: ``auto_densify`` for ``np.asarray(x)`` and ``warn_on_too_dense``.

(``auto_densify`` for elementwise results is tested with the elementwise
operations in ``tests/ops/test_elementwise.py``.)
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gpusparse as gs
from _helpers import assert_dense_equal


def _x(device):
    return gs.COO(np.array([[0, 2]]), np.array([1.0, 2.0]), shape=(3,), fill_value=0.5, device=device)


def test_asarray_raises_without_auto_densify(device):
    x = _x(device)
    with pytest.raises(RuntimeError, match="todense"):
        np.asarray(x)
    with pytest.raises(RuntimeError, match="todense"):
        np.array(x)


def test_asarray_densifies_with_auto_densify(device, monkeypatch):
    x = _x(device)
    with gs.set_options(auto_densify=True):
        if device.is_cuda:  # no implicit copy to the host, even with the option on
            with pytest.raises(RuntimeError, match="host"):
                np.asarray(x)
            return
        assert_dense_equal(np.asarray(x), np.array([1.0, 0.5, 2.0]))
        got = np.array(x, dtype=np.float32)
        assert got.dtype == np.float32
        assert_dense_equal(got, np.array([1.0, 0.5, 2.0], dtype=np.float32))
        with pytest.raises(ValueError, match="copy=False"):
            np.array(x, copy=False)
    monkeypatch.setenv("GPUSPARSE_AUTO_DENSIFY", "1")
    assert_dense_equal(np.asarray(x), np.array([1.0, 0.5, 2.0]))
    with gs.set_options(auto_densify=False), pytest.raises(RuntimeError):
        np.asarray(x)


def _too_dense_warnings(func):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = func()
    return result, [w for w in caught if issubclass(w.category, gs.GpuSparseEfficiencyWarning)]


@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
def test_warn_on_too_dense(device, fmt, monkeypatch):
    monkeypatch.delenv("GPUSPARSE_WARN_ON_TOO_DENSE", raising=False)
    dense = np.array([[1.0, 2.0], [3.0, 0.0]])  # 3 of 4 stored: components outweigh the dense form
    sparse = np.zeros((20, 20))
    sparse[3, 4] = 1.0
    _, caught = _too_dense_warnings(lambda: gs.fromdense(dense, format=fmt, device=device))
    assert not caught  # off by default
    with gs.set_options(warn_on_too_dense=True):
        x, caught = _too_dense_warnings(lambda: gs.fromdense(dense, format=fmt, device=device))
        assert caught and "dense form" in str(caught[0].message)
        assert caught[0].filename == __file__  # attributed to the caller's line
        assert x.nbytes >= x.size * x.dtype.itemsize
        y, caught = _too_dense_warnings(lambda: gs.fromdense(sparse, format=fmt, device=device))
        assert not caught and y.nbytes < y.size * y.dtype.itemsize
        _, caught = _too_dense_warnings(lambda: y + y)  # results are checked where they are built
        assert not caught
        _, caught = _too_dense_warnings(lambda: y + 1)  # fill 1, the same single entry: still sparse
        assert not caught
        _, caught = _too_dense_warnings(lambda: gs.zeros((0, 3), format=fmt, device=device))
        assert not caught  # a 0-size array has no dense bytes to compare with
    monkeypatch.setenv("GPUSPARSE_WARN_ON_TOO_DENSE", "yes")
    _, caught = _too_dense_warnings(lambda: gs.fromdense(dense, format=fmt, device=device))
    assert caught
    with gs.set_options(warn_on_too_dense=False):
        _, caught = _too_dense_warnings(lambda: gs.fromdense(dense, format=fmt, device=device))
        assert not caught


def test_warn_on_too_dense_for_results(device):
    x = gs.COO(np.array([[0, 1]]), np.array([1.0, 2.0]), shape=(8,), device=device)
    z = gs.COO(np.array([[0, 1, 2, 3, 4]]), np.arange(1.0, 6.0), shape=(8,), device=device)  # 80 of 64
    with gs.set_options(warn_on_too_dense=True):
        _, caught = _too_dense_warnings(lambda: x * 2)  # 2 entries: 32 bytes of 64
        assert not caught
        _, caught = _too_dense_warnings(lambda: x + z)
        assert caught


def test_options_listed_and_validated(monkeypatch):
    monkeypatch.delenv("GPUSPARSE_WARN_ON_TOO_DENSE", raising=False)
    assert gs.get_options()["warn_on_too_dense"] is False
    with gs.set_options(warn_on_too_dense=True):
        assert gs.get_options()["warn_on_too_dense"] is True
    with pytest.raises(TypeError, match="warn_on_too_dense"):
        gs.set_options(warn_on_too_dense="yes")
    monkeypatch.setenv("GPUSPARSE_WARN_ON_TOO_DENSE", "maybe")
    with pytest.raises(ValueError, match="GPUSPARSE_WARN_ON_TOO_DENSE"):
        gs.get_options()


# --------------------------------------------------------------------------
# Threads: a statement is process-wide, a with block local to its thread
# --------------------------------------------------------------------------

_THREADS_SCRIPT = r'''
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import gpusparse as gs

device = {device!r}
x = gs.COO(np.array([[0, 2]]), np.array([1.0, 2.0]), shape=(3,), device=device)
xp = gs._device.xp_for(gs.Device.parse(device))
dense = xp.asarray(np.arange(3.0))
expected = np.array([1.0, 1.0, 4.0])  # the dense oracle of x + arange(3)


def plus_dense():
    """x + dense: the dense sum with auto_densify on, ValueError without."""
    try:
        return np.asarray(gs._device.to_host(x + dense)).tolist()
    except ValueError as exc:
        assert "dense" in str(exc), exc
        return "refused"


pool = ThreadPoolExecutor(2)
assert pool.submit(plus_dense).result() == "refused"  # the workers run before the setting
asked, answer = threading.Event(), []
early = threading.Thread(target=lambda: (asked.wait(), answer.append(plus_dense())), daemon=True)
early.start()

gs.set_options(auto_densify=True)  # a statement: the whole process, from now on
assert plus_dense() == expected.tolist()
assert pool.submit(plus_dense).result() == expected.tolist(), "pool worker"
asked.set()
early.join()
assert answer == [expected.tolist()], ("thread started before", answer)
assert gs.get_options()["auto_densify"] is True

# A with block stays in its thread.
inside, leave = threading.Event(), threading.Event()
def local_block():
    with gs.set_options(auto_densify=False):
        assert plus_dense() == "refused"
        inside.set()
        leave.wait()
    return plus_dense()
future = pool.submit(local_block)
inside.wait()
assert plus_dense() == expected.tolist(), "a with block of another thread leaked"
leave.set()
assert future.result(60) == expected.tolist(), "the block did not restore the process-wide value"

# A statement inside a block holds at once and everywhere; the block restores only its own setting.
with gs.set_options(warn_on_too_dense=True, auto_densify=True):
    gs.set_options(auto_densify=False)
    assert plus_dense() == "refused"
    assert pool.submit(plus_dense).result() == "refused"
    assert gs.get_options()["warn_on_too_dense"] is True
    assert pool.submit(lambda: gs.get_options()["warn_on_too_dense"]).result() is False
assert plus_dense() == "refused" and gs.get_options()["warn_on_too_dense"] is False

# An object made outside the with statement moves its setting into the block on entry.
options = gs.set_options(auto_densify=True)
with options:
    assert plus_dense() == expected.tolist()
    assert pool.submit(plus_dense).result() == "refused"
assert plus_dense() == "refused"
pool.shutdown()
print("ok")
'''


def test_statement_is_process_wide_with_block_is_thread_local(device):
    """Run in a fresh interpreter: a process-wide setting must not leak into other tests."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUSPARSE_AUTO_DENSIFY")}
    env.pop("GPUSPARSE_WARN_ON_TOO_DENSE", None)
    result = subprocess.run([sys.executable, "-c", _THREADS_SCRIPT.format(device=str(device))],
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr[-3000:]
