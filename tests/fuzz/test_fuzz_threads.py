"""Threads: in-place writers and concurrent readers of one shared array.

One thread applies a drawn sequence of in-place operations (``+=``, ``*=``,
``-=``, ``/=``, ``neg_``, ``t_``, ``copy_``, ``zero_``, ``add_``) to a shared
square array while two others read it over and over (``todense``, sums,
indexing, ``x @ v``, ``nnz``/``sparse_dim``). The same operations run
serially on a copy give the states ``s_0, ..., s_n`` (checked against the
dense oracle) and the outcome of every read on each: a value, or the error
a state gives (``x @ v`` refuses a nonzero fill value). Every concurrent read
must have the outcome of one of the serial states -- never another
exception, never a mix of two states -- and the final value must be ``s_n``. A switch interval of a microsecond makes the threads
interleave between bytecodes, not only where the GIL is released.
"""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gpusparse as gs
from gpusparse._device import to_host, xp_for

#: name -> (in-place operation on the sparse array, the same on the dense oracle); ``y`` is a second
#: array. Factors stay in {-1, 1, 2} so that every value stays an integer below 2**53 (exact sums).
OPERATIONS = {
    "iadd": (lambda x, y, c: x.__iadd__(c), lambda d, e, c: d + c),
    "imul": (lambda x, y, c: x.__imul__(2 if c > 0 else -1), lambda d, e, c: d * (2 if c > 0 else -1)),
    "isub_y": (lambda x, y, c: x.__isub__(y), lambda d, e, c: d - e),
    "itruediv": (lambda x, y, c: x.__itruediv__(2.0), lambda d, e, c: d / 2.0),
    "neg_": (lambda x, y, c: x.neg_(), lambda d, e, c: -d),
    "t_": (lambda x, y, c: x.t_(), lambda d, e, c: d.T),
    "copy_": (lambda x, y, c: x.copy_(y), lambda d, e, c: e.copy()),
    "zero_": (lambda x, y, c: x.zero_(), lambda d, e, c: np.zeros_like(d)),
    "add_": (lambda x, y, c: x.add_(y, alpha=np.sign(c)), lambda d, e, c: d + np.sign(c) * e),
}


def _dense(r):
    return to_host(r.todense() if isinstance(r, gs.SparseArray) else r)


#: name -> (read of the shared sparse array, the same read of a dense state)
READS = {
    "todense": (lambda x, v: _dense(x), lambda d, v: d),
    "sum": (lambda x, v: np.asarray(to_host(x.sum())), lambda d, v: np.asarray(d.sum())),
    "sum_axis0": (lambda x, v: _dense(x.sum(axis=0)), lambda d, v: d.sum(axis=0)),
    "row": (lambda x, v: _dense(x[1]), lambda d, v: d[1]),
    "matvec": (lambda x, v: _dense(x @ v), lambda d, v: d @ to_host(v)),
    "max": (lambda x, v: np.asarray(to_host(x.max())), lambda d, v: np.asarray(d.max())),
}


#: The writer runs the drawn operations this many times over, so that reads meet many replacements.
ROUNDS = 20


def _matrix(draw, n):
    """Nonzero values, never symmetric (entry (0, 1) stored, (1, 0) not): every operation shows."""
    values = draw(st.lists(st.integers(1, 4), min_size=n * n, max_size=n * n))
    mask = np.array(draw(st.lists(st.booleans(), min_size=n * n, max_size=n * n))).reshape(n, n)
    mask[0, 1], mask[1, 0] = True, False
    return np.array(values, dtype=np.float64).reshape(n, n) * mask


@st.composite
def cases(draw):
    n = draw(st.integers(2, 4))
    # t_ first: the simplest examples (Hypothesis starts there under derandomize) change the components.
    names = ["t_"] + sorted(set(OPERATIONS) - {"t_"})
    ops = draw(st.lists(st.tuples(st.sampled_from(names), st.integers(1, 3) | st.integers(-2, 0)),
                        min_size=1, max_size=6))
    return {
        "x": _matrix(draw, n),
        "y": _matrix(draw, n),
        "format": draw(st.sampled_from(["coo", "csr", "csc"])),
        "ops": ops * ROUNDS,
        "reads": draw(st.lists(st.sampled_from(sorted(READS)), min_size=4, max_size=4)),
    }


def _outcome(read, x, v):
    """``read(x, v)`` as ``("value", array)`` or ``("error", type, message)``."""
    try:
        return ("value", np.asarray(read(x, v)))
    except (ValueError, TypeError, IndexError) as exc:
        return ("error", type(exc), str(exc))


def _same(a, b) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == "error":
        return a[1:] == b[1:]
    # Within rounding: a device may sum in another order from run to run; a mix of states is far off.
    return a[1].shape == b[1].shape and np.allclose(a[1], b[1], rtol=1e-12, atol=1e-12, equal_nan=True)


@given(case=cases())
def test_readers_see_a_serial_state_while_a_writer_works(device, case):
    xp = xp_for(device)
    x = gs.fromdense(xp.asarray(case["x"]), format=case["format"])
    y = gs.fromdense(xp.asarray(case["y"]), format=case["format"])
    v = xp.asarray(np.arange(1.0, case["x"].shape[0] + 1.0))
    # The serial run: the states, checked against the dense oracle, and every read's outcome on each.
    serial = gs.fromdense(xp.asarray(case["x"]), format=case["format"])
    states = [case["x"]]
    expected = {name: [_outcome(READS[name][0], serial, v)] for name in case["reads"]}
    for name, c in case["ops"]:
        OPERATIONS[name][0](serial, y, c)
        states.append(OPERATIONS[name][1](states[-1], case["y"], c))
        np.testing.assert_array_equal(_dense(serial), states[-1], err_msg=name)
        for read in expected:
            expected[read].append(_outcome(READS[read][0], serial, v))
    for read in expected:  # where a state reads without error, the read agrees with the oracle's
        for state, outcome in zip(states, expected[read]):
            if outcome[0] == "value":
                np.testing.assert_allclose(outcome[1], READS[read][1](state, v), rtol=1e-12, atol=1e-12,
                                           err_msg=read)

    errors, bad, done = [], [], threading.Event()
    start = threading.Barrier(1 + len(case["reads"]))

    def write():
        try:
            start.wait()
            for name, c in case["ops"]:
                assert OPERATIONS[name][0](x, y, c) is x
        except BaseException as exc:  # noqa: BLE001 -- reported below
            errors.append(("write", exc))
        finally:
            done.set()

    def read(name):
        try:
            start.wait()
            while True:
                finished = done.is_set()
                got = _outcome(READS[name][0], x, v)
                if not any(_same(got, e) for e in expected[name]):
                    bad.append((name, got))
                    return
                if finished:
                    return
        except BaseException as exc:  # noqa: BLE001
            errors.append((name, exc))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=read, args=(name,)) for name in case["reads"]]
        threads.append(threading.Thread(target=write))
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        sys.setswitchinterval(interval)
    assert not any(t.is_alive() for t in threads), "a thread did not finish"
    assert not errors, errors[:3]
    assert not bad, f"a read matches no serial state: {bad[:2]}"
    np.testing.assert_array_equal(_dense(x), states[-1])
    assert x.format == case["format"]
