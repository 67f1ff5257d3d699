"""The state of the stateful fuzzer (``test_stateful.py``): the machine's base and the differential helpers.

:class:`SparseMachineBase` holds the sparse array ``x``, its dense model
``m`` and fill value, draws operands, constructs arrays in every way and
checks the invariant after every step; the rules live in mixins
(``_rules_conversions``, ``_rules_arithmetic``, ``_rules_shapes``).
:func:`model` and :func:`call_library` run one side each, and
:func:`expect_same_error` demands the library's error where NumPy raised.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from hypothesis import note
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import gpusparse as gs
from _helpers import check_invariants, coalesce_oracle, dense_oracle, put
from _model import (
    assert_close,
    assert_fill,
    component_scale,
    dtypes,
    fills,
    host_coo,
    is_inexact,
    quiet,
    values,
)
from gpusparse._device import Device, array_device, to_host
from gpusparse._kernels import cuda_emulation
from gpusparse.containers import SparseArray
from strategies import coo_cases, shapes

#: Largest array the machine lets an operation produce (elements), unless it started bigger.
MAX_SIZE = 384
#: Stored entries of the "big" constructions: past the size where the CPU kernels go parallel.
BIG_NNZ = (33_000, 45_000)
#: Errors that say "bad input"; NumPy's and the library's must be of the same kind.
_KINDS = (TypeError, ValueError, IndexError)


class _NumpyRaised(Exception):
    """The model raised: the library must raise an error of one of ``kinds``."""

    def __init__(self, error):
        super().__init__(repr(error))
        self.kinds = tuple(k for k in _KINDS if isinstance(error, k)) or (type(error),)


def model(func, *args, **kwargs):
    """``func(*args, **kwargs)`` in NumPy, quietly; a bad-input error becomes :class:`_NumpyRaised`."""
    try:
        return quiet(func, *args, **kwargs)
    except (*_KINDS, ZeroDivisionError, OverflowError) as error:
        raise _NumpyRaised(error) from None


def call_library(func, *args, **kwargs):
    """``func(*args, **kwargs)`` without the warnings NumPy gives on the same dense operation."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gs.GpuSparseEfficiencyWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        return func(*args, **kwargs)


def expect_same_error(raised: _NumpyRaised, func, *args, **kwargs):
    """NumPy raised: the library must raise an error of the same kind."""
    try:
        result = call_library(func, *args, **kwargs)
    except raised.kinds:
        return
    raise AssertionError(f"NumPy raises {raised} but gpusparse returned {result!r}")


def _dense_of(result):
    """A library result on the host: sparse arrays densified, scalars as 0-d arrays."""
    if isinstance(result, SparseArray):
        return to_host(result.todense())
    return np.asarray(to_host(result) if not isinstance(result, np.generic) else result)


def _size(shape) -> int:
    return math.prod(shape)


def _broadcasts(a, b, limit) -> bool:
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return _size(np.broadcast_shapes(a, b)) <= limit


def _prime_factors(n):
    out, p = [], 2
    while n > 1 and p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


class SparseMachineBase(RuleBasedStateMachine):
    """A sparse array and its dense model: the state, the drawing helpers, construction and the invariant.

    The rules that change or query both come from the mixins of the ``_rules_*`` modules.
    """

    device: Device = Device("cpu", 0)

    def __init__(self):
        super().__init__()
        self.x = None
        self.m = None  # dense NumPy model of x
        self.fill = None  # expected fill value (NumPy scalar)
        self.scale = None  # per-element magnitude of the terms behind m (rule-provided)
        self.fill_scale = 0.0
        self.kept = []  # (array, exact dense snapshot): operands that must never change
        self.max_size = MAX_SIZE

    # ------------------------------------------------------------------
    # Helpers
    # ------------------------------------------------------------------
    @property
    def floor(self) -> float:
        """Absolute tolerance: GPU sums and products of float32 may flush subnormals."""
        if self.device.is_cuda and self.m is not None and self.m.dtype in (np.float32, np.complex64):
            return 1e-36
        return 0.0

    def put(self, arr):
        return put(arr, self.device)

    def put_index(self, arr):
        """An index array on the device.

        The emulated CUDA device's arrays have no ``__dlpack__`` (CuPy's
        have), so ``x[i]`` takes them for integers and raises TypeError
        (``x = gs.fromdense(np.eye(2), device="cuda:0");
        x[cupy.asarray([1])]`` under ``GPUSPARSE_CUDA_EMULATION=1``); they
        go as host arrays there (which the library moves) until the
        emulation supports them.
        """
        if self.device.is_cuda and cuda_emulation.enabled():
            return np.asarray(arr)
        return self.put(arr)

    def become(self, x, m, fill, *, scale=None, fill_scale=0.0, keep_old=True):
        """Replace the state (the invariant then compares ``x`` with ``m``)."""
        if keep_old and self.x is not None and self.x is not x:
            self.keep(self.x)
        self.x, self.m, self.fill = x, np.asarray(m), fill
        self.scale, self.fill_scale = scale, fill_scale

    def keep(self, x):
        """Remember ``x`` and its current dense form: no later operation may change it."""
        snapshot = to_host(x.todense()).copy()
        self.kept.append((x, snapshot))
        if len(self.kept) > 4:
            self.kept.pop(0)

    def settle(self):
        """Coalesce an uncoalesced inexact array before a non-linear operation.

        Duplicates are summed in an order the library chooses and the model
        sums them in NumPy's: a non-linear map (comparison, ``sqrt``, a cast)
        can magnify that rounding difference without bound. Coalescing first
        and adopting the library's sums keeps the step differential.
        """
        x = self.x
        if x.format == "coo" and not x.is_coalesced() and is_inexact(x.dtype):
            self.become(call_library(x.coalesce), self.m, self.fill, scale=component_scale(x))
            self.matches_model()

    def draw_array(self, data, shape, dtype=None, fill=None, *, label="operand"):
        """A second sparse operand of ``shape`` (any format, duplicates) and its dense model."""
        dtype = data.draw(dtypes(), label=f"{label} dtype") if dtype is None else np.dtype(dtype)
        fill = data.draw(fills(dtype), label=f"{label} fill") if fill is None else fill
        ndim = len(shape)
        sd = data.draw(st.integers(max(0, ndim - 2), ndim), label=f"{label} sparse_dim")
        sparse_shape, dense_shape = shape[:sd], shape[sd:]
        size = _size(sparse_shape)
        if size == 0:
            keys = []
        elif sd == 0:
            keys = [0] * data.draw(st.integers(0, 1))
        else:
            keys = data.draw(st.lists(st.integers(0, size - 1), max_size=12), label=f"{label} keys")
        nnz = len(keys)
        coords = (np.array(np.unravel_index(np.asarray(keys, dtype=np.intp), sparse_shape), dtype=np.int64)
                  .reshape(sd, nnz) if sd else np.zeros((0, nnz), np.int64))
        vals = self.draw_values(data, (nnz,) + dense_shape, dtype, label=f"{label} data")
        y = gs.COO(self.put(coords), self.put(vals), shape, fill_value=fill)
        if sd == 2 and data.draw(st.booleans(), label=f"{label} compressed"):
            y = y.asformat(data.draw(st.sampled_from(["csr", "csc"])))
        elif is_inexact(dtype) or data.draw(st.booleans(), label=f"{label} coalesce"):
            y = y.coalesce()
        my = dense_oracle(coords, vals, shape, fill)
        assert_close(y.todense(), my, scale=component_scale(y), what=f"{label}.todense()")
        return y, to_host(y.todense())

    def draw_values(self, data, shape, dtype, *, label, elements=None):
        """An array of ``shape``: drawn element by element when small, from a drawn seed when large."""
        dtype = np.dtype(dtype)
        if _size(shape) <= 256:
            return data.draw(hnp.arrays(dtype, shape, elements=values(dtype) if elements is None else elements),
                             label=label)
        rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label=f"{label} seed"))
        if dtype == np.bool_:
            return rng.random(shape) < 0.5
        out = quiet((rng.standard_normal(shape) * 100).astype, dtype)
        if dtype.kind == "c":
            out = out + 1j * quiet((rng.standard_normal(shape) * 100).astype, dtype)
        if dtype.kind in "fc" and out.size:
            out.reshape(-1)[rng.integers(0, out.size, 3)] = [np.nan, np.inf, -np.inf]
        return out.astype(dtype)

    def dense_operand(self, data, shape, dtype, *, label="dense"):
        """A dense host array of ``shape``: constant (so that fills stay constant) or random."""
        dtype = np.dtype(dtype)
        if data.draw(st.booleans(), label=f"{label} constant"):
            return np.full(shape, data.draw(values(dtype), label=f"{label} value"), dtype=dtype)
        return self.draw_values(data, shape, dtype, label=label)

    # ------------------------------------------------------------------
    # Construction
    # ------------------------------------------------------------------
    @initialize(data=st.data())
    def construct(self, data):
        self._construct(data)

    @rule(data=st.data())
    def reconstruct(self, data):
        self._construct(data)

    def _construct(self, data):
        kinds = ["coo", "coo", "compressed", "fromdense", "asarray", "interop", "big"]
        if self.device.is_cuda and cuda_emulation.enabled():
            kinds.remove("big")  # the emulation runs every GPU thread as a fiber on the CPU: too slow
        kind = data.draw(st.sampled_from(kinds), label="construction")
        self.max_size = MAX_SIZE
        getattr(self, f"_construct_{kind}")(data)

    def _construct_big(self, data):
        """Tens of thousands of entries (duplicates, shuffled): the parallel paths of the CPU kernels."""
        dtype = data.draw(dtypes([np.float64, np.float32, np.int64, np.int32, np.bool_, np.complex128]),
                          label="dtype")
        shape = data.draw(st.sampled_from([(256, 320), (181, 181), (40, 40, 40), (64, 64, 8), (50000,)]),
                          label="shape")
        rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
        nnz = int(rng.integers(*BIG_NNZ))
        sparse_dim = len(shape) - (1 if len(shape) == 3 and rng.random() < 0.3 else 0)
        sparse_shape = shape[:sparse_dim]
        keys = rng.integers(0, _size(sparse_shape), nnz)
        coords = np.array(np.unravel_index(keys, sparse_shape), dtype=np.int64).reshape(sparse_dim, nnz)
        vals = (rng.standard_normal((nnz,) + shape[sparse_dim:]) * 100).astype(dtype) if dtype != np.bool_ else \
            rng.random((nnz,) + shape[sparse_dim:]) < 0.5
        if dtype.kind == "f":
            flat = vals.reshape(-1)
            flat[rng.integers(0, flat.size, 3)] = [np.nan, np.inf, -np.inf]
        fill = data.draw(st.sampled_from([dtype.type(0), dtype.type(0), dtype.type(1)]), label="fill_value")
        fmt = data.draw(st.sampled_from(["coo", "coo", "csr", "csc"] if sparse_dim == 2 else ["coo"]), label="format")
        x = gs.COO(self.put(coords), self.put(vals), shape, fill_value=fill)
        if fmt != "coo":
            x = x.asformat(fmt)
        self.become(x, dense_oracle(coords, vals, shape, fill), fill, keep_old=False)
        self.max_size = 2 * x.size

    def _construct_coo(self, data):
        dtype = data.draw(dtypes(), label="dtype")
        case = data.draw(coo_cases(dtypes=[dtype], max_ndim=4, max_side=4, max_nnz=12), label="coo case")
        vals = data.draw(hnp.arrays(dtype, case.data.shape, elements=values(dtype)), label="data")
        fill = data.draw(fills(dtype), label="fill_value")
        coords = case.coords
        index_dtype = data.draw(st.sampled_from([np.int64, np.int64, np.int32, np.uint16]), label="coords dtype")
        if coords.size and coords.max() > np.iinfo(index_dtype).max:
            index_dtype = np.int64
        infer = coords.shape[1] > 0 and case.sparse_dim > 0 and data.draw(st.booleans(), label="infer shape")
        shape = case.shape
        if infer:
            shape = tuple(int(h) + 1 for h in coords.max(axis=1)) + case.shape[case.sparse_dim:]
        check = data.draw(st.booleans(), label="check")
        fill_arg = fill if data.draw(st.booleans(), label="fill as NumPy scalar") else fill.item()
        x = gs.COO(self.put(coords.astype(index_dtype)), self.put(vals), None if infer else shape,
                   fill_value=fill_arg, check=check)
        self.become(x, dense_oracle(coords, vals, shape, fill), fill, keep_old=False)

    def _construct_compressed(self, data):
        dtype = data.draw(dtypes(), label="dtype")
        case = data.draw(coo_cases(dtypes=[dtype], sparse_dim=2, max_dense_dim=1, max_side=4, max_nnz=12),
                         label="coo case")
        vals = data.draw(hnp.arrays(dtype, case.data.shape, elements=values(dtype)), label="data")
        fill = data.draw(fills(dtype), label="fill_value")
        fmt = data.draw(st.sampled_from(["csr", "csc"]), label="format")
        major = 0 if fmt == "csr" else 1
        check = data.draw(st.booleans(), label="check")
        coords = case.coords
        if check:  # any order within a row, duplicates summed by the constructor
            order = np.argsort(coords[major], kind="stable")
            c, v = coords[:, order], vals[order]
        else:  # the caller promises canonical components
            c, v = coalesce_oracle(coords[::-1] if major else coords, vals)
            c = c[::-1] if major else c
        n_major = case.shape[major]
        indptr = np.concatenate([[0], np.cumsum(np.bincount(c[major], minlength=n_major))]).astype(np.int64)
        index_dtype = data.draw(st.sampled_from([np.int32, np.int64, np.int16, np.uint8]), label="index dtype")
        cls = gs.CSR if fmt == "csr" else gs.CSC
        x = cls(self.put(indptr.astype(index_dtype)), self.put(c[1 - major].astype(index_dtype)), self.put(v),
                shape=case.shape, fill_value=fill, check=check)
        self.become(x, dense_oracle(coords, vals, case.shape, fill), fill, keep_old=False)

    def _dense_case(self, data):
        dtype = data.draw(dtypes(), label="dtype")
        shape = data.draw(shapes(max_ndim=4, max_side=4), label="shape")
        fill = data.draw(fills(dtype), label="fill_value")
        arr = data.draw(hnp.arrays(dtype, shape, elements=st.one_of(st.just(fill), values(dtype))), label="dense")
        return arr, fill

    def _construct_fromdense(self, data):
        arr, fill = self._dense_case(data)
        sparse_dim = data.draw(st.integers(max(0, arr.ndim - 2), arr.ndim), label="sparse_dim")
        fmt = data.draw(st.sampled_from(["coo", "csr", "csc"]) if sparse_dim == 2 else st.just("coo"), label="format")
        x = gs.fromdense(self.put(arr), fill_value=fill, sparse_dim=sparse_dim, format=fmt)
        assert x.sparse_dim == sparse_dim and x.format == fmt
        self.become(x, arr, fill, keep_old=False)

    def _construct_asarray(self, data):
        arr, fill = self._dense_case(data)
        fmt = data.draw(st.sampled_from([None, "coo", "csr", "csc"] if arr.ndim == 2 else [None, "coo"]),
                        label="format")
        x = gs.asarray(arr, format=fmt, fill_value=fill, device=self.device)
        self.become(x, arr, fill, keep_old=False)

    def _construct_interop(self, data):
        import scipy.sparse as sp
        import sparse as pydata
        import torch
        peer = data.draw(st.sampled_from(["scipy", "torch", "pydata"]), label="peer")
        dtype = data.draw(dtypes(), label="dtype")
        if peer == "torch" and dtype in (np.uint16, np.uint32, np.uint64):
            dtype = np.dtype(np.int64)  # torch has no sparse unsigned types beyond uint8
        sparse_dim = 2 if peer == "scipy" else None
        case = data.draw(coo_cases(dtypes=[dtype], sparse_dim=sparse_dim, max_dense_dim=0 if peer != "torch" else 1,
                                   max_ndim=3, max_side=4, max_nnz=12), label="coo case")
        vals = data.draw(hnp.arrays(dtype, case.data.shape, elements=values(dtype)), label="data")
        fill = dtype.type(0)
        if peer == "scipy":
            fmt = data.draw(st.sampled_from(["coo", "csr", "csc"]), label="scipy format")
            m = sp.coo_array((vals, tuple(case.coords)), shape=case.shape).asformat(fmt)
            x = gs.from_scipy(m)
        elif peer == "torch":
            t = torch.sparse_coo_tensor(torch.from_numpy(case.coords), torch.from_numpy(vals), case.shape,
                                        check_invariants=True)
            x = gs.from_torch(t)
        else:
            fill = data.draw(fills(dtype), label="fill_value")
            s = pydata.COO(case.coords, vals, shape=case.shape, fill_value=fill)
            x = gs.from_pydata(s)
        self.become(x.to(self.device), dense_oracle(case.coords, vals, case.shape, fill), fill, keep_old=False)

    # ------------------------------------------------------------------
    # The invariant
    # ------------------------------------------------------------------
    @invariant()
    def matches_model(self):
        x = self.x
        if x is None:
            return
        note(f"x = {x!r}")
        check_invariants(x)
        assert x.device == self.device, f"array moved to {x.device}"
        assert x.shape == self.m.shape, f"shape {x.shape} != model {self.m.shape}"
        assert x.dtype == self.m.dtype, f"dtype {x.dtype} != model {self.m.dtype}"
        assert_fill(x.fill_value, self.fill, scale=self.fill_scale)
        scale = component_scale(x)
        if self.scale is not None:
            scale = np.maximum(scale, self.scale)
        dense = x.todense()
        assert not isinstance(dense, SparseArray) and array_device(dense) == self.device
        assert_close(dense, self.m, scale=scale, floor=self.floor, what="x.todense()")
        coords, data = host_coo(x)
        assert_close(dense_oracle(coords, data, x.shape, x.fill_value), self.m, scale=scale, floor=self.floor,
                     what="dense form of x's components")
        # The library's values become the model's: rounding never accumulates across steps.
        self.m, self.fill = to_host(dense).copy(), x.fill_value
        self.scale, self.fill_scale = None, 0.0

    def teardown(self):
        for y, snapshot in self.kept:
            check_invariants(y)
            np.testing.assert_array_equal(to_host(y.todense()), snapshot,
                                          err_msg="an operation changed one of its operands")
