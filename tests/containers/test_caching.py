"""``enable_caching``: reshape, transpose and format conversions remembered per array value."""

import pickle
import threading

import numpy as np
import pytest

import gpusparse as gs
from gpusparse.containers._base import CACHE_SIZE


def _coo(device="cpu"):
    coords = np.array([[0, 0, 1, 2, 3], [1, 3, 0, 2, 3]])
    return gs.COO(coords, [1.0, 2.0, 3.0, 4.0, 5.0], shape=(4, 4), device=device)


def _same(a, b):
    assert type(a) is type(b) and a.shape == b.shape
    np.testing.assert_array_equal(a.todense(), b.todense())


CALLS = {
    "tocsr": lambda x: x.tocsr(),
    "tocsc": lambda x: x.tocsc(),
    "asformat": lambda x: x.asformat("CSC"),
    "reshape": lambda x: x.reshape(2, 8),
    "transpose": lambda x: x.transpose(1, 0),
    "T": lambda x: x.T,
}


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
def test_second_call_returns_the_cached_object_equal_to_the_uncached_result(name, fmt):
    call = CALLS[name]
    plain = _coo().asformat(fmt)
    x = _coo().asformat(fmt)
    x.enable_caching()
    first = call(x)
    assert call(x) is first
    _same(first, call(plain))
    if call(plain) is not plain:  # (a conversion to the array's own format returns it)
        assert call(plain) is not call(plain)  # no caching without enable_caching


def test_equivalent_arguments_share_an_entry_and_format_itself_is_not_cached():
    x = _coo()
    x.enable_caching()
    assert x.reshape(16) is x.reshape((16,)) is x.reshape([np.int64(16)])
    assert x.asformat("csr") is x.tocsr()
    assert x.T is x.transpose()
    assert x.asformat("coo") is x and x.tocoo() is x
    assert "coo" not in [key for key, _, _ in x.__dict__["_cache"].get("asformat", ())]


def test_at_most_cache_size_results_per_operation():
    x = gs.COO([[0, 5]], [1.0, 2.0], shape=(16,), device="cpu")
    x.enable_caching()
    shapes = [(2, 8), (8, 2), (4, 4), (1, 16)][:CACHE_SIZE + 1]
    first = [x.reshape(s) for s in shapes]
    assert len(x.__dict__["_cache"]["reshape"]) == CACHE_SIZE
    assert x.reshape(shapes[-1]) is first[-1]
    assert x.reshape(shapes[0]) is not first[0]  # the oldest went


@pytest.mark.parametrize("op", ["iadd", "imul", "copy_", "t_", "zero_"])
def test_an_in_place_operation_drops_the_cache(op):
    x = _coo()
    x.enable_caching()
    csr, t, r = x.tocsr(), x.T, x.reshape(16)
    if op == "iadd":
        x += _coo()
    elif op == "imul":
        x *= 3.0
    elif op == "copy_":
        x.copy_(_coo() * 7.0)
    elif op == "t_":
        x.t_()
    else:
        x.zero_()
    expected = x.todense()
    new = x.tocsr()
    assert new is not csr
    np.testing.assert_array_equal(new.todense(), expected)
    np.testing.assert_array_equal(x.T.todense(), expected.T)
    np.testing.assert_array_equal(x.reshape(16).todense(), expected.reshape(16))
    assert x.T is not t and x.reshape(16) is not r
    assert x.tocsr() is new  # caching stays on for the new value


def test_the_old_results_stay_valid_after_the_array_changed():
    x = _coo()
    x.enable_caching()
    before = x.todense()
    csr = x.tocsr()
    x *= 2.0
    np.testing.assert_array_equal(csr.todense(), before)


def test_a_cached_result_changed_in_place_is_not_handed_out_again():
    x = _coo()
    x.enable_caching()
    csr = x.tocsr()
    csr *= 10.0
    again = x.tocsr()
    assert again is not csr
    np.testing.assert_array_equal(again.todense(), x.todense())
    assert x.tocsr() is again


def test_assigning_a_cached_array_does_not_share_its_cache():
    y = _coo() * 2.0
    y.enable_caching()
    y_csr = y.tocsr()
    x = _coo()
    x.copy_(y)
    assert "_cache" not in vars(x)  # x did not cache; it does not take y's cache either
    assert x.tocsr() is not y_csr
    _same(x.tocsr(), y_csr)


def test_pickle_and_copy_leave_the_cache_out():
    import copy
    x = _coo()
    x.enable_caching()
    x.tocsr()
    for other in (pickle.loads(pickle.dumps(x)), copy.copy(x)):
        assert "_cache" not in vars(other)
        _same(other, x)


def test_enable_caching_twice_keeps_the_results():
    x = _coo()
    x.enable_caching()
    csr = x.tocsr()
    x.enable_caching()
    assert x.tocsr() is csr


def test_threads_filling_the_cache_see_only_right_results():
    # Two threads per round race to fill the cache of a fresh array while a
    # third keeps changing another array in place; every result must equal
    # the uncached one of the value it was computed on (they may compute
    # twice; afterwards one object is cached).
    rng = np.random.default_rng(3)
    dense = rng.standard_normal((40, 30)) * (rng.random((40, 30)) < 0.2)
    errors = []
    for _ in range(20):
        x = gs.fromdense(dense, format="csr", device="cpu")
        x.enable_caching()
        barrier = threading.Barrier(2)
        results = [None, None]

        def work(i):
            try:
                barrier.wait()
                results[i] = (x.tocsc(), x.T, x.reshape(30, 40))
            except Exception as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        for csc, t, r in results:
            np.testing.assert_array_equal(csc.todense(), dense)
            np.testing.assert_array_equal(t.todense(), dense.T)
            np.testing.assert_array_equal(r.todense(), dense.reshape(30, 40))
        assert x.tocsc() in (results[0][0], results[1][0])
        assert x.tocsc() is x.tocsc()


def test_threads_reading_while_a_writer_changes_the_value():
    # A reader's tocsr is either the old value's or the new one's, never a
    # mix, and never the old value's result after the write has finished.
    base = np.arange(1.0, 17.0).reshape(4, 4) * (np.eye(4)[::-1] + np.eye(4) > 0)
    x = gs.fromdense(base, format="coo", device="cpu")
    x.enable_caching()
    seen, stop = [], threading.Event()

    def read():
        while not stop.is_set():
            seen.append(x.tocsr().todense())

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for k in range(1, 30):
            x += gs.fromdense(base, format="coo", device="cpu")
            np.testing.assert_array_equal(x.tocsr().todense(), base * (k + 1))
    finally:
        stop.set()
        reader.join()
    for d in seen:
        k = d[0, 0] / base[0, 0]
        assert k == int(k) and 1 <= k <= 30
        np.testing.assert_array_equal(d, base * k)


def test_caching_on_every_device(device):
    from gpusparse._device import to_host
    x = _coo(device)
    x.enable_caching()
    csc = x.tocsc()
    assert x.tocsc() is csc and x.T is x.T
    x *= 2.0
    assert x.tocsc() is not csc
    np.testing.assert_array_equal(to_host(x.tocsc().todense()), _coo().todense() * 2.0)
