"""The stateful fuzzer's rules for indexing and shapes: keys, takes, reshapes, transposes, joins."""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import rule

import gpusparse as gs
from _helpers import check_invariants
from _machine import call_library, _dense_of, expect_same_error, model, _NumpyRaised, _prime_factors
from _model import ALL_DTYPES, assert_close, component_scale, quiet
from gpusparse._kernels import cuda_emulation
from gpusparse.containers import SparseArray


class ShapeRules:
    """Rules of :class:`SparseMachine`: getitem, take, reshape, transpose, squeeze, broadcast, join, rearrange."""

        # ------------------------------------------------------------------
    # Indexing
    # ------------------------------------------------------------------
    def _draw_key(self, data):
        shape = self.x.shape
        if shape and data.draw(st.integers(0, 7), label="mask key") == 0:
            mask = self.draw_values(data, shape, np.bool_, label="mask", elements=st.booleans())
            return (mask,), (self.put_index(mask),)
        items, lib_items = [], []
        for d, n in enumerate(shape):
            kind = data.draw(st.sampled_from(["all", "int", "slice", "intarr", "boolarr", "none"]), label=f"dim {d}")
            if kind == "none":
                items.append(None)
                lib_items.append(None)
                kind = "all"
            if kind == "all":
                items.append(slice(None))
                lib_items.append(slice(None))
            elif kind == "int":
                i = data.draw(st.integers(-n - 1, n), label=f"index {d}")
                items.append(i)
                lib_items.append(data.draw(st.sampled_from([i, np.int64(i), np.int32(i)]), label="int type"))
            elif kind == "slice":
                bound = st.none() | st.integers(-n - 2, n + 2)
                step = st.none() | st.sampled_from([-3, -2, -1, 1, 2, 3])
                sl = slice(data.draw(bound), data.draw(bound), data.draw(step))
                items.append(sl)
                lib_items.append(sl)
            elif kind == "intarr":
                arr = np.asarray(data.draw(st.lists(st.integers(-n, n - 1), max_size=3) if n else st.just([])),
                                 dtype=np.int64)
                if data.draw(st.booleans(), label="2-d index") and arr.size == 2:
                    arr = arr.reshape(1, 2)
                items.append(arr)
                lib_items.append(arr.tolist() if data.draw(st.booleans(), label="as list") else self.put_index(arr))
            else:
                arr = self.draw_values(data, (n,), np.bool_, label=f"mask {d}", elements=st.booleans())
                items.append(arr)
                lib_items.append(self.put_index(arr))
        cut = data.draw(st.integers(0, len(items)), label="trailing dims implied")
        if cut < len(items) and all(isinstance(i, slice) and i == slice(None) for i in items[cut:]):
            items, lib_items = items[:cut], lib_items[:cut]
        if data.draw(st.integers(0, 3), label="ellipsis") == 0:
            at = data.draw(st.integers(0, len(items)), label="ellipsis at")
            run = [i for i in range(at, len(items)) if isinstance(items[i], slice) and items[i] == slice(None)]
            end = at
            while end in run:
                end += 1
            items = items[:at] + [Ellipsis] + items[end:]
            lib_items = lib_items[:at] + [Ellipsis] + lib_items[end:]
        return tuple(items), tuple(lib_items)

    @rule(data=st.data())
    def getitem(self, data):
        x, m = self.x, self.m
        key, lib_key = self._draw_key(data)
        note(f"key: {key!r}")
        try:
            expected = np.asarray(model(m.__getitem__, key))
        except _NumpyRaised as raised:
            return expect_same_error(raised, x.__getitem__, lib_key)
        if not (expected.size <= self.max_size):
            return
        result = call_library(x.__getitem__, lib_key)
        if not isinstance(result, SparseArray):
            assert expected.ndim == 0, f"x[{key!r}] gave a dense {type(result).__name__}"
            if not self.device.is_cuda:
                assert isinstance(result, np.generic), f"x[{key!r}] gave {type(result).__name__}, not a scalar"
            assert_close(_dense_of(result), expected, scale=component_scale(x)[key], floor=self.floor,
                         what=f"x[{key!r}]")
            return
        cs = component_scale(x)[key]
        self.become(result, expected, self.fill, scale=cs)

    @rule(data=st.data())
    def take_rows(self, data):
        """``index_select`` and ``narrow`` (torch) along a random axis."""
        x, m = self.x, self.m
        if not (x.ndim > 0):
            return
        axis = data.draw(st.integers(0, x.ndim - 1), label="axis")
        n = x.shape[axis]
        # index_select moves its index to the device and indexes with it, which the emulated CUDA device
        # cannot do yet (see put_index): gs.index_select(x, 0, [0]) raises TypeError there; narrow only.
        emulated = self.device.is_cuda and cuda_emulation.enabled()
        if emulated or data.draw(st.booleans(), label="narrow"):
            start = data.draw(st.integers(0, n), label="start")
            length = data.draw(st.integers(0, n - start), label="length")
            index = np.arange(start, start + length)
            result = x.narrow(axis, start, length)
        else:
            index = np.asarray(data.draw(st.lists(st.integers(0, n - 1), max_size=4) if n else st.just([])),
                               dtype=np.int64)
            result = gs.index_select(x, axis, self.put_index(index))
        expected = np.take(m, index, axis=axis)
        if not (expected.size <= self.max_size):
            return
        self.become(result, expected, self.fill, scale=np.take(component_scale(x), index, axis=axis))

    # ------------------------------------------------------------------
    # Shapes
    # ------------------------------------------------------------------
    @rule(data=st.data())
    def reshape(self, data):
        x, m = self.x, self.m
        size = x.size
        if size == 0:
            shape = list(data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=4), label="new shape"))
            if 0 not in shape and data.draw(st.booleans(), label="wrong size"):
                pass
            else:
                shape[data.draw(st.integers(0, len(shape) - 1))] = 0
        else:
            factors = _prime_factors(size)
            k = data.draw(st.integers(1, 4), label="new ndim")
            shape = [1] * k
            for f in factors:
                shape[data.draw(st.integers(0, k - 1))] *= f
            if data.draw(st.integers(0, 9), label="wrong size") == 0:
                shape[0] += 1
        if data.draw(st.booleans(), label="use -1") and shape:
            shape[data.draw(st.integers(0, len(shape) - 1))] = -1
        shape = tuple(shape)
        how = data.draw(st.sampled_from(["method", "function", "varargs"]), label="call")
        lib = {"method": lambda: x.reshape(shape), "function": lambda: gs.reshape(x, shape),
               "varargs": lambda: x.reshape(*shape)}[how]
        try:
            expected = model(m.reshape, shape)
        except _NumpyRaised as raised:
            return expect_same_error(raised, lib)
        self.become(call_library(lib), expected, self.fill, scale=component_scale(x).reshape(expected.shape))

    @rule(data=st.data())
    def transpose(self, data):
        x, m = self.x, self.m
        how = data.draw(st.sampled_from(["permute", "method", "T", "mT", "swapaxes", "moveaxis"]), label="how")
        cs = component_scale(x)
        if how in ("permute", "method"):
            perm = data.draw(st.permutations(range(x.ndim)), label="axes")
            y = gs.permute_dims(x, perm) if how == "permute" else x.transpose(perm)
            expected, scale = m.transpose(perm), cs.transpose(perm)
        elif how == "T":
            y, expected, scale = x.T, m.T, cs.T
        elif how == "mT":
            if x.ndim < 2:
                with pytest.raises(ValueError):
                    x.mT
                return
            y, expected, scale = x.mT, np.swapaxes(m, -1, -2), np.swapaxes(cs, -1, -2)
        else:
            if x.ndim == 0:
                return
            a, b = (data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis") for _ in range(2))
            if how == "swapaxes":
                y, expected, scale = gs.swapaxes(x, a, b), np.swapaxes(m, a, b), np.swapaxes(cs, a, b)
            else:
                y, expected, scale = gs.moveaxis(x, a, b), np.moveaxis(m, a, b), np.moveaxis(cs, a, b)
        self.become(y, expected, self.fill, scale=scale)

    @rule(data=st.data())
    def squeeze_expand(self, data):
        x, m = self.x, self.m
        if data.draw(st.booleans(), label="squeeze") and 1 in x.shape:
            axis = data.draw(st.none() | st.sampled_from([a for a, s in enumerate(x.shape) if s == 1]), label="axis")
            y, expected = gs.squeeze(x, axis), np.squeeze(m, axis)
        else:
            if not (x.ndim < 5):
                return
            axis = data.draw(st.integers(-x.ndim - 1, x.ndim), label="axis")
            y, expected = gs.expand_dims(x, axis), np.expand_dims(m, axis)
        self.become(y, expected, self.fill, scale=component_scale(x).reshape(expected.shape))

    @rule(data=st.data())
    def broadcast(self, data):
        x, m = self.x, self.m
        extra = tuple(data.draw(st.lists(st.integers(1, 3), max_size=1), label="leading dims"))
        shape = extra + tuple(data.draw(st.integers(1, 3)) if s == 1 else s for s in x.shape)
        if data.draw(st.integers(0, 7), label="bad shape") == 0 and x.ndim:
            shape = shape[:-1] + (shape[-1] + 1,)
        try:
            expected = model(np.broadcast_to, m, shape)
        except _NumpyRaised as raised:
            return expect_same_error(raised, gs.broadcast_to, x, shape)
        if not (expected.size <= self.max_size):
            return
        self.become(gs.broadcast_to(x, shape), expected, self.fill,
                    scale=np.broadcast_to(component_scale(x), shape))

    @rule(data=st.data())
    def join(self, data):
        x, m = self.x, self.m
        if not (x.ndim > 0 and 2 * x.size <= self.max_size):
            return
        stack = data.draw(st.booleans(), label="stack")
        axis = data.draw(st.integers(-x.ndim - stack, x.ndim - 1 + stack), label="axis")
        shape = list(x.shape)
        if not stack:
            shape[axis] = data.draw(st.integers(0, 3), label="other length")
        same_fill = data.draw(st.integers(0, 5), label="different fill") != 0
        ydtype = data.draw(st.sampled_from([x.dtype] * 3 + list(ALL_DTYPES)), label="operand dtype")
        fill = quiet(np.asarray(self.fill).astype, ydtype)[()] if same_fill else None
        y, my = self.draw_array(data, tuple(shape), ydtype, fill)
        self.keep(y)
        dtype = np.result_type(x.dtype, y.dtype)
        fx, fy = (quiet(np.asarray(f).astype, dtype)[()] for f in (x.fill_value, y.fill_value))
        lib = (lambda: gs.stack([x, y], axis=axis)) if stack else (lambda: gs.concatenate([x, y], axis=axis))
        if not (fx == fy or (fx != fx and fy != fy)):  # NaN fills (any NaN) count as the same
            with pytest.raises(ValueError, match="fill"):
                lib()
            return
        func = np.stack if stack else np.concatenate
        expected = model(func, [quiet(m.astype, dtype), quiet(my.astype, dtype)], axis=axis)
        scale = func([component_scale(x), component_scale(y)], axis=axis)
        self.become(call_library(lib), expected, fx, scale=scale)

    @rule(data=st.data(), how=st.sampled_from(["flip", "roll", "pad", "tril", "triu", "diagonal", "split"]))
    def rearrange(self, data, how):
        """flip, roll, pad, tril/triu, diagonal, split: NumPy's functions on the dense model."""
        x, m = self.x, self.m
        cs = component_scale(x)
        if how in ("flip", "roll"):
            axis = self._draw_axis(data, x.ndim)
            if how == "flip":
                lib, func = (lambda: gs.flip(x, axis)), (lambda a: np.flip(a, axis))
            else:
                n_shift = len(axis) if isinstance(axis, tuple) else 1
                shift = tuple(data.draw(st.lists(st.integers(-5, 5), min_size=n_shift, max_size=n_shift)))
                shift = shift[0] if n_shift == 1 and not isinstance(axis, tuple) else shift
                lib, func = (lambda: gs.roll(x, shift, axis)), (lambda a: np.roll(a, shift, axis))
        elif how == "pad":
            if not (x.ndim):  # NumPy refuses the empty pad width of a 0-d array
                return
            width = [tuple(data.draw(st.lists(st.integers(0, 2), min_size=2, max_size=2))) for _ in x.shape]
            lib = lambda: gs.pad(x, width)  # noqa: E731
            func = lambda a: np.pad(a, width, constant_values=self.fill if a is m else 0)  # noqa: E731
        elif how in ("tril", "triu"):
            k = data.draw(st.integers(-3, 3), label="k")
            if x.ndim < 2:  # NumPy makes a matrix of a vector; the library needs two dimensions
                with pytest.raises(ValueError, match="2 dimensions"):
                    getattr(gs, how)(x, k)
                return
            if not (x.fill_value == 0):
                with pytest.raises(ValueError, match="fill"):
                    getattr(gs, how)(x, k)
                return
            lib, func = (lambda: getattr(gs, how)(x, k)), (lambda a: getattr(np, how)(a, k))
        elif how == "diagonal":
            offset = data.draw(st.integers(-3, 3), label="offset")
            a1, a2 = (data.draw(st.integers(-max(x.ndim, 1), max(x.ndim, 1) - 1)) for _ in range(2))
            lib = lambda: gs.diagonal(x, offset, a1, a2)  # noqa: E731
            func = lambda a: np.diagonal(a, offset, a1, a2)  # noqa: E731
        else:
            axis = data.draw(st.integers(-max(x.ndim, 1), max(x.ndim, 1) - 1), label="axis")
            sections = data.draw(st.one_of(st.integers(1, 3), st.lists(st.integers(0, 5), max_size=3)
                                           .map(sorted)), label="indices_or_sections")
            try:
                parts = model(np.array_split, m, sections, axis)
            except _NumpyRaised as raised:
                return expect_same_error(raised, gs.array_split, x, sections, axis)
            got = gs.array_split(x, sections, axis)
            assert len(got) == len(parts)
            scales = np.array_split(cs, sections, axis)
            for g, e, sc in zip(got[:-1], parts[:-1], scales[:-1]):
                check_invariants(g)
                assert_close(g.todense(), e, scale=sc, floor=self.floor, what="array_split part")
            self.become(got[-1], parts[-1], self.fill, scale=scales[-1])
            return
        try:
            expected = model(func, m)
        except _NumpyRaised as raised:
            return expect_same_error(raised, lib)
        if not (expected.size <= self.max_size):
            return
        self.become(call_library(lib), expected, self.fill,
                    scale=quiet(func, cs) if how != "pad" else np.pad(cs, width))
