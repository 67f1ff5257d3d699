"""The stateful fuzzer's rules for arithmetic: elementwise operations, reductions, products and softmax."""

from __future__ import annotations

import math
import operator
import warnings

import numpy as np
import pytest
from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.stateful import rule

import gpusparse as gs
from _helpers import RTOL, dense_oracle
from _machine import _broadcasts, call_library, _dense_of, expect_same_error, model, _NumpyRaised
from _model import (
    ALL_DTYPES,
    assert_close,
    broadcastable_shapes,
    component_scale,
    finite_abs,
    host_coo,
    is_inexact,
    masked_matmul,
    masked_softmax,
    product_exempt,
    quiet,
    same_scalar,
    stored_mask,
    values,
)
from gpusparse._device import array_device, to_host
from gpusparse.containers import SparseArray


class ArithmeticRules:
    """Rules of :class:`SparseMachine`: ufuncs with scalars, dense and sparse operands, reductions, products."""

        # ------------------------------------------------------------------
    # Elementwise
    # ------------------------------------------------------------------
    _UNARY = {
        "b": ["logical_not", "invert", "positive", "absolute", "sqrt", "isnan"],
        "iu": ["negative", "positive", "absolute", "square", "sign", "invert", "logical_not", "isfinite",
               "sqrt", "exp", "sin"],
        "f": ["negative", "absolute", "square", "sign", "isnan", "isinf", "isfinite", "sqrt", "exp", "log",
              "sin", "tanh", "floor", "ceil", "rint", "expm1", "log1p", "reciprocal", "logical_not"],
        "c": ["negative", "conjugate", "absolute", "square", "isnan", "isfinite", "sqrt", "exp", "sin",
              "reciprocal"],
    }
    _LINEAR = ("negative", "positive", "conjugate")

    @rule(data=st.data())
    def unary(self, data):
        x = self.x
        kind = next(k for k in self._UNARY if x.dtype.kind in k)
        name = data.draw(st.sampled_from(self._UNARY[kind] + ["gs.abs", "gs.round", "gs.clip", "gs.nan_to_num",
                                                             "gs.real", "gs.imag"]), label="unary")
        if name.startswith("gs."):
            return self._named_unary(data, name[3:])
        func = getattr(np, name)
        linear = name in self._LINEAR and x.dtype != np.bool_
        if not linear:
            self.settle()
            x = self.x
        try:
            expected = model(func, self.m)
        except _NumpyRaised as raised:
            return expect_same_error(raised, func, x)
        kwargs = {}
        if expected.dtype == np.float16:  # the library computes float16 results in float32
            kwargs = {"dtype": np.float32}
            expected = model(func, self.m, **kwargs)
        fill = model(func, np.asarray(self.fill), **kwargs)[()]
        how = data.draw(st.sampled_from(["ufunc", "elemwise", "operator"]), label="call")
        if how == "elemwise":
            y = call_library(gs.elemwise, func, x, **kwargs)
        elif how == "operator" and name in ("negative", "positive", "absolute", "invert") and not kwargs:
            y = {"negative": lambda: -x, "positive": lambda: +x, "absolute": lambda: abs(x),
                 "invert": lambda: ~x}[name]()
        else:
            y = call_library(func, x, **kwargs)
        if linear and x.format == "coo" and not x.unique:
            coords, vals = host_coo(x)
            expected = dense_oracle(coords, model(func, vals), x.shape, fill)
        self.become(y, expected, fill)

    def _named_unary(self, data, name):
        self.settle()
        x, m = self.x, self.m
        if name == "round":
            decimals = data.draw(st.integers(-1, 2), label="decimals")
            func, lib = (lambda a: np.round(a, decimals)), (lambda: gs.round(x, decimals))
        elif name == "clip":
            lo = data.draw(st.none() | values(x.dtype), label="a_min")
            hi = data.draw(st.none() | values(x.dtype), label="a_max")
            if lo is None and hi is None:
                # The array API's clip without bounds, which NumPy 2.1+ follows: a copy.
                func, lib = (lambda a: np.array(a, copy=True)), (lambda: gs.clip(x, None, None))
            else:
                func, lib = (lambda a: np.clip(a, lo, hi)), (lambda: gs.clip(x, lo, hi))
        elif name == "nan_to_num":
            func, lib = np.nan_to_num, (lambda: gs.nan_to_num(x))
        elif name == "real":
            func, lib = np.real, (lambda: gs.real(x))
        elif name == "imag":
            func, lib = np.imag, (lambda: gs.imag(x))
        else:
            func, lib = np.absolute, (lambda: gs.abs(x))
        try:
            expected = np.asarray(model(func, m))
        except _NumpyRaised as raised:
            return expect_same_error(raised, lib)
        fill = np.asarray(model(func, np.asarray(self.fill)))
        if expected.dtype == np.float16:
            return  # NumPy gives float16 (round of a float16); sparse arrays hold none
        y = call_library(lib)
        if name == "real" and x.dtype.kind != "c":
            assert y is x
        if name == "clip" and y is x:
            raise AssertionError("clip without bounds must return a copy, not its operand")
        self.become(y, expected.astype(expected.dtype), fill.astype(expected.dtype)[()])

    _BINARY = {
        "b": ["logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "equal",
              "not_equal", "less", "add", "multiply", "maximum", "minimum"],
        "iu": ["add", "subtract", "multiply", "maximum", "minimum", "floor_divide", "remainder", "bitwise_and",
               "bitwise_or", "bitwise_xor", "less", "greater_equal", "equal", "not_equal", "true_divide",
               "logical_and", "power"],
        "f": ["add", "subtract", "multiply", "true_divide", "maximum", "minimum", "fmax", "less", "equal",
              "greater_equal", "not_equal", "power", "copysign", "logical_or", "arctan2", "hypot"],
        "c": ["add", "subtract", "multiply", "true_divide", "equal", "not_equal", "power"],
    }
    _OPERATORS = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
                  "true_divide": operator.truediv, "floor_divide": operator.floordiv, "remainder": operator.mod,
                  "bitwise_and": operator.and_, "bitwise_or": operator.or_, "bitwise_xor": operator.xor,
                  "less": operator.lt, "greater_equal": operator.ge, "equal": operator.eq, "not_equal": operator.ne}

    def _binary_name(self, data, dtype):
        kind = next(k for k in self._BINARY if np.dtype(dtype).kind in k)
        return data.draw(st.sampled_from(self._BINARY[kind]), label="binary")

    @staticmethod
    def _apply(name, how, a, b):
        if how == "operator" and name in ArithmeticRules._OPERATORS:
            return call_library(ArithmeticRules._OPERATORS[name], a, b)
        if how == "elemwise":
            return call_library(gs.elemwise, getattr(np, name), a, b)
        return call_library(getattr(np, name), a, b)

    def _linear_in_x(self, name, swapped, other, scalar):
        """Whether the library maps each duplicate of ``x`` on its own (linear, same dtype, no overflow).

        Mirrors ``gpusparse.ops.elementwise.stored._is_linear``: the ufunc's
        result has ``x``'s dtype, and an inexact ``x`` is multiplied by a
        scalar of magnitude at most 1 or divided by one of at least 1 (or NaN).
        """
        x = self.x
        if x.format != "coo" or x.unique or x.dtype == np.bool_:
            return False
        if name not in ("multiply", "true_divide") or (name == "true_divide" and swapped):
            return False
        with np.errstate(all="ignore"):
            result = getattr(np, name)(np.ones(1, x.dtype), np.ones(1, other)).dtype
        if result != x.dtype:
            return False
        if x.dtype.kind not in "fc":
            return True
        magnitude = abs(complex(scalar))
        return magnitude != magnitude or (magnitude <= 1 if name == "multiply" else magnitude >= 1)

    @rule(data=st.data())
    def scalar_binary(self, data):
        x = self.x
        name = self._binary_name(data, x.dtype)
        sdtype = data.draw(st.sampled_from([x.dtype] * 3 + list(ALL_DTYPES)), label="scalar dtype")
        s = data.draw(values(sdtype), label="scalar")
        swapped = data.draw(st.booleans(), label="scalar first")
        how = data.draw(st.sampled_from(["operator", "ufunc", "elemwise"]), label="call")
        linear = self._linear_in_x(name, swapped, np.asarray(s).dtype, s)
        if not linear and name not in ("add", "subtract"):
            self.settle()
            x = self.x
        order = (lambda a: (s, a)) if swapped else (lambda a: (a, s))
        func = getattr(np, name)
        try:
            expected = model(func, *order(self.m))
        except _NumpyRaised as raised:
            return expect_same_error(raised, self._apply, name, how, *order(x))
        try:
            fill = model(func, *order(np.asarray(self.fill)))
        except _NumpyRaised as raised:
            if np.asarray(expected).size:  # a result with elements needs its fill value
                return expect_same_error(raised, self._apply, name, how, *order(x))
            # no elements (NumPy computes nothing, so raises nothing): any fill value will do
            out = self._apply(name, how, *order(x))
            return self.become(out, expected, np.asarray(out.fill_value)[()])
        if np.asarray(expected).dtype == np.float16:
            return  # float16 results are computed in float32: covered by the unary rule
        y = self._apply(name, how, *order(x))
        if linear:
            coords, vals = host_coo(x)
            expected = dense_oracle(coords, model(func, *order(vals)), x.shape, fill[()])
        self.become(y, expected, np.asarray(fill)[()])

    @rule(data=st.data())
    def dense_binary(self, data):
        self.settle()
        x = self.x
        name = self._binary_name(data, x.dtype)
        shape = data.draw(broadcastable_shapes(x.shape), label="dense shape")
        ddtype = data.draw(st.sampled_from([x.dtype] * 2 + list(ALL_DTYPES)), label="dense dtype")
        d = self.dense_operand(data, shape, ddtype)
        swapped = data.draw(st.booleans(), label="dense first")
        how = data.draw(st.sampled_from(["ufunc", "elemwise", "operator"]), label="call")
        order = (lambda a, b: (b, a)) if swapped else (lambda a, b: (a, b))
        func = getattr(np, name)
        try:
            expected = model(func, *order(self.m, d))
        except _NumpyRaised as raised:
            return expect_same_error(raised, self._apply, name, how, *order(x, self.put(d)))
        try:
            fills_ = model(func, *order(np.asarray(self.fill), d))
        except _NumpyRaised as raised:
            if expected.size:  # a result with elements needs its fill values
                return expect_same_error(raised, self._apply, name, how, *order(x, self.put(d)))
            out = self._apply(name, how, *order(x, self.put(d)))  # no elements: NumPy computes nothing
            if isinstance(out, SparseArray):
                return self.become(out, expected, np.asarray(out.fill_value)[()])
            return
        if expected.dtype == np.float16:
            return
        if not (expected.size <= self.max_size):
            return
        flat = np.asarray(fills_).reshape(-1)
        # One value, NaN matching NaN (for complex: any NaN matches any NaN, as the library decides).
        constant = expected.size == 0 or all(same_scalar(f, flat[0]) or (f != f and flat[0] != flat[0])
                                             for f in flat)
        if not constant:  # the result would be dense: refused (auto-densify is off)
            with pytest.raises(ValueError, match="dense"):
                self._apply(name, how, *order(x, self.put(d)))
            return
        # A 0-d device array is a dense operand (a 0-d NumPy array a scalar); for an empty result the
        # library then takes the fill from a zero of its dtype instead of its value, unlike on the CPU:
        # gs.elemwise(np.logical_and, cupy.asarray(77), gs.zeros((0,), np.uint8, fill_value=30,
        # device="cuda:0")).fill_value is False (True on the CPU). Skipped until that is fixed.
        assume(not (expected.size == 0 and d.ndim == 0 and self.device.is_cuda))
        y = self._apply(name, how, *order(x, self.put(d)))
        if expected.size == 0 and d.ndim:  # nothing to evaluate over: the fill comes from a zero of d's dtype
            flat = np.asarray(model(func, *order(np.asarray(self.fill), np.zeros((), d.dtype)))).reshape(-1)
        self.become(y, expected, np.asarray(flat[0]).astype(expected.dtype)[()])

    @rule(data=st.data())
    def sparse_binary(self, data):
        x = self.x
        name = self._binary_name(data, x.dtype)
        shape = data.draw(st.one_of(st.just(x.shape), broadcastable_shapes(x.shape)), label="operand shape")
        ydtype = data.draw(st.sampled_from([x.dtype] * 3 + list(ALL_DTYPES)), label="operand dtype")
        if name not in ("add", "subtract"):
            self.settle()
            x = self.x
        pick = [(k, s) for k, s in self.kept if _broadcasts(k.shape, x.shape, self.max_size)]
        if pick and data.draw(st.integers(0, 3), label="reuse a kept array") == 0:
            y, my = data.draw(st.sampled_from(pick), label="kept operand")
        else:
            y, my = self.draw_array(data, shape, ydtype)
        swapped = data.draw(st.booleans(), label="operand first")
        how = data.draw(st.sampled_from(["operator", "ufunc", "elemwise"]), label="call")
        order = (lambda a, b: (b, a)) if swapped else (lambda a, b: (a, b))
        func = getattr(np, name)
        try:
            expected = model(func, *order(self.m, my))
        except _NumpyRaised as raised:
            return expect_same_error(raised, self._apply, name, how, *order(x, y))
        try:
            fill = model(func, *order(np.asarray(self.fill), np.asarray(y.fill_value)))
        except _NumpyRaised as raised:
            if expected.size:  # a result with elements needs its fill value, as NumPy needs each element
                return expect_same_error(raised, self._apply, name, how, *order(x, y))
            # no elements (NumPy computes nothing, so raises nothing): any fill value will do
            out = self._apply(name, how, *order(x, y))
            return self.become(out, expected, np.asarray(out.fill_value)[()])
        if expected.dtype == np.float16:
            return
        if not (expected.size <= self.max_size):
            return
        scale = None
        if name in ("add", "subtract"):
            scale = np.broadcast_to(component_scale(x), expected.shape) + \
                np.broadcast_to(component_scale(y), expected.shape)
        self.keep(y)
        out = self._apply(name, how, *order(x, y))
        self.become(out, expected, np.asarray(fill)[()], scale=scale)

    @rule(data=st.data())
    def augmented(self, data):
        """``x *= s`` updates ``x`` itself (every holder sees it; a component taken before keeps the old
        values) and item assignment is refused."""
        x = self.x
        if x.dtype == np.bool_:
            with pytest.raises(TypeError):
                x[...] = True
            return
        s = data.draw(values(x.dtype), label="scalar")
        self.settle()
        x = self.x
        holders = [x]
        taken = x.data
        taken_before = to_host(taken).copy()
        expected, fill = self.m.copy(), np.array(self.fill)
        try:  # NumPy's in-place rules: the output keeps its dtype (same_kind casting)
            model(np.multiply, expected, s, out=expected)
            model(np.multiply, fill, s, out=fill)
        except _NumpyRaised as raised:
            return expect_same_error(raised, operator.imul, x, s)
        with warnings.catch_warnings():  # NumPy warns about inf * 0 as it does for dense arrays
            warnings.simplefilter("ignore", RuntimeWarning)
            x *= s
        assert x is holders[0]
        np.testing.assert_array_equal(to_host(taken), taken_before)
        # x changed on purpose: it is no longer an operand that must stay as it was.
        self.kept = [(k, snap) for k, snap in self.kept if k is not x]
        self.become(x, expected, fill[()], keep_old=False)
        with pytest.raises(TypeError):
            x[...] = s

    # ------------------------------------------------------------------
    # Reductions
    # ------------------------------------------------------------------
    def _draw_axis(self, data, ndim, *, tuples=True):
        choices = [st.none(), st.integers(-ndim, ndim - 1)] if ndim else [st.none()]
        if tuples and ndim:
            choices.append(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim).map(tuple))
        return data.draw(st.one_of(*choices), label="axis")

    @rule(data=st.data(), op=st.sampled_from(["sum", "prod", "max", "min", "any", "all", "mean", "nansum",
                                              "count_nonzero", "var", "std", "nanmax", "nanmin"]))
    def reduce(self, data, op):
        x = self.x
        if op not in ("sum", "mean", "nansum"):
            self.settle()
            x = self.x
        m = self.m
        axis = self._draw_axis(data, x.ndim)
        keepdims = data.draw(st.booleans(), label="keepdims")
        how = data.draw(st.sampled_from(["method", "function", "numpy"]), label="call")
        if op in ("nansum", "count_nonzero", "nanmax", "nanmin"):
            how = "function" if how == "method" else how
        kwargs = {"axis": axis, "keepdims": keepdims}
        npfunc = getattr(np, op)

        def lib():
            if how == "method":
                return call_library(getattr(x, op), **kwargs)
            if how == "function":
                return call_library(getattr(gs, op), x, **kwargs)
            return call_library(npfunc, x, **kwargs)

        try:
            expected = np.asarray(model(npfunc, m, **kwargs))
        except _NumpyRaised as raised:
            return expect_same_error(raised, lib)
        if op == "count_nonzero" and axis is None and not keepdims:
            expected = expected.astype(np.int64)
        axes = tuple(range(x.ndim)) if axis is None else (axis,) if isinstance(axis, int) else axis
        axes = tuple(a % x.ndim for a in axes) if x.ndim else ()
        n = math.prod(x.shape[a] for a in axes)
        scale = None
        if op in ("sum", "mean", "nansum") and is_inexact(expected.dtype):
            cs = component_scale(x)
            scale = np.sum(cs, axis=axes, keepdims=keepdims) / (n if op == "mean" and n else 1)
        elif op in ("var", "std") and is_inexact(expected.dtype):
            squares = np.mean(component_scale(x) ** 2, axis=axes, keepdims=keepdims) if n else 0.0
            scale = squares if op == "var" else np.sqrt(squares) + \
                4 * np.sqrt(squares * np.finfo(expected.dtype).eps) / RTOL[expected.dtype]
        elif op == "prod" and is_inexact(expected.dtype):
            scale = finite_abs(expected) * max(1.0, n / 8)
            scale = np.where(product_exempt(m, axes, keepdims), np.inf, scale)
        result = lib()
        if not isinstance(result, SparseArray):
            assert array_device(result) == self.device if not isinstance(result, np.generic) else \
                not self.device.is_cuda, f"{op}: dense result off the device"
            assert_close(_dense_of(result), expected, scale=scale, floor=self.floor, what=f"{op}(axis={axis})")
            return
        # A sparse result: its fill value is the reduction of the fill value over the reduced elements.
        with np.errstate(all="ignore"):
            fill_block = np.full((max(n, 0),), self.fill, dtype=x.dtype)
        try:
            fill = np.asarray(model(npfunc, fill_block) if n else result.fill_value)
        except _NumpyRaised:
            fill = np.asarray(result.fill_value)
        fill = quiet(fill.astype, expected.dtype)[()]
        fill_scale = float(finite_abs(self.fill)) * max(n, 1)
        if op in ("var", "std"):
            fill_scale = 4 * float(finite_abs(self.fill)) ** 2 + 1e-300
        if op == "prod" and is_inexact(x.dtype):
            fill_scale = math.inf if product_exempt(fill_block, (0,), False) else float(finite_abs(fill)) * n
        if op in ("count_nonzero",):
            fill_scale = 0.0
        self.become(result, expected, fill, scale=scale, fill_scale=fill_scale)

    @rule(data=st.data(), op=st.sampled_from(["argmax", "argmin"]))
    def arg_reduce(self, data, op):
        self.settle()
        x, m = self.x, self.m
        axis = self._draw_axis(data, x.ndim, tuples=False)
        try:
            expected = np.asarray(model(getattr(np, op), m, axis=axis))
        except _NumpyRaised as raised:
            return expect_same_error(raised, getattr(gs, op), x, axis=axis)
        result = call_library(getattr(gs, op), x, axis=axis)
        assert_close(_dense_of(result).astype(np.int64), expected.astype(np.int64), what=f"{op}(axis={axis})")

    # ------------------------------------------------------------------
    # Products
    # ------------------------------------------------------------------
    @rule(data=st.data())
    def matmul_dense(self, data):
        self.settle()
        x, m = self.x, self.m
        if not (1 <= x.ndim <= 3):
            return
        left = data.draw(st.booleans(), label="sparse on the left")
        inner = x.shape[-1] if left else x.shape[-2 if x.ndim > 1 else -1]
        if data.draw(st.integers(0, 9), label="wrong inner") == 0:
            inner += 1
        ndim = data.draw(st.integers(1, 2), label="dense ndim")
        if left:
            dshape = (inner,) if ndim == 1 else (inner, data.draw(st.integers(0, 3)))
        else:
            dshape = (inner,) if ndim == 1 else (data.draw(st.integers(0, 3)), inner)
        ddtype = data.draw(st.sampled_from([x.dtype] * 2 + list(ALL_DTYPES)), label="dense dtype")
        d = self.draw_values(data, dshape, ddtype, label="dense")
        how = data.draw(st.sampled_from(["operator", "matmul", "numpy", "dot"]), label="call")
        a, b = (x, self.put(d)) if left else (self.put(d), x)

        def lib():
            if how == "operator":
                return call_library(lambda: a @ b)
            if how == "numpy":
                return call_library(np.matmul, a, b)
            if how == "dot" and x.ndim <= 2 and d.ndim <= 2:
                return call_library(gs.dot, a, b)
            return call_library(gs.matmul, a, b)

        try:
            model(np.matmul, *((m, d) if left else (d, m)))
        except _NumpyRaised as raised:
            return expect_same_error(raised, lib)
        if not x.fill_value == 0:  # products need zero fill values
            with pytest.raises(ValueError, match="fill"):
                lib()
            return
        dtype = np.result_type(x.dtype, d.dtype)
        pattern, full = stored_mask(x), np.ones(d.shape, dtype=bool)
        expected, scale = (masked_matmul(m, pattern, d, full, dtype) if left else
                           masked_matmul(d, full, m, pattern, dtype))
        result = lib()
        assert not isinstance(result, SparseArray) and array_device(result) == self.device
        assert_close(result, expected, scale=scale, floor=self.floor, what="sparse @ dense")

    @rule(data=st.data())
    def matmul_sparse(self, data):
        self.settle()
        x, m = self.x, self.m
        if not (1 <= x.ndim <= 2):
            return
        inner = x.shape[-1]
        if data.draw(st.integers(0, 9), label="wrong inner") == 0:
            inner += 1
        shape = (inner,) if data.draw(st.booleans(), label="vector") else (inner, data.draw(st.integers(0, 3)))
        ydtype = data.draw(st.sampled_from([x.dtype] * 2 + list(ALL_DTYPES)), label="operand dtype")
        y, my = self.draw_array(data, shape, ydtype, ydtype.type(0))
        y = y.coalesce()
        self.keep(y)
        try:
            model(np.matmul, m, my)
        except _NumpyRaised as raised:
            return expect_same_error(raised, lambda: x @ y)
        if not x.fill_value == 0:
            with pytest.raises(ValueError, match="fill"):
                call_library(lambda: x @ y)
            return
        dtype = np.result_type(x.dtype, y.dtype)
        expected, scale = masked_matmul(m, stored_mask(x), my, stored_mask(y), dtype)
        result = call_library(lambda: x @ y)
        if not isinstance(result, SparseArray):
            assert expected.ndim == 0
            assert_close(result, expected, scale=scale, floor=self.floor, what="vector @ vector")
            return
        if x.ndim == 2 and y.ndim == 2:
            assert result.format == x.format
        self.become(result, expected, dtype.type(0), scale=scale)

    @rule(data=st.data(), log=st.booleans())
    def softmax(self, data, log):
        self.settle()
        x, m = self.x, self.m
        func = gs.log_softmax if log else gs.softmax
        if x.ndim == 0 or x.dtype.kind == "c":
            with pytest.raises((ValueError, TypeError)):
                func(x, 0)
            return
        axis = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
        y = call_library(func, x, axis)
        expected = masked_softmax(m, stored_mask(x), axis, log)
        fill = expected.dtype.type(-np.inf if log else 0)
        self.become(y, expected, fill, scale=np.abs(np.where(np.isfinite(expected), expected, 0)) + 1)
