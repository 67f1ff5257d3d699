"""The stateful fuzzer's rules for the canonical form and conversions: formats, devices, casts, peers."""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import rule

import gpusparse as gs
from _machine import call_library, expect_same_error, model, _NumpyRaised
from _model import assert_close, component_scale, dtypes, quiet, stored_mask, values
from gpusparse._device import Device, array_device, to_host
from gpusparse._kernels import cuda_emulation


class ConversionRules:
    """Rules of :class:`SparseMachine`: coalesce and reorder, formats, devices, casts, densify, positions, peers."""

        # ------------------------------------------------------------------
    # Canonical form and conversions
    # ------------------------------------------------------------------
    @rule(how=st.sampled_from(["coalesce", "reorder", "prune", "copy"]))
    def canonical(self, how):
        x = self.x
        y = call_library(getattr(x, how))
        if how == "coalesce":
            assert y.is_coalesced()
        if how == "reorder" and y.format == "coo":
            assert y.sorted
        if how == "copy":
            assert y is not x
        self.become(y, self.m, self.fill, scale=component_scale(x))

    @rule(fmt=st.sampled_from(["coo", "csr", "csc"]), how=st.sampled_from(["method", "asformat", "asarray"]))
    def convert(self, fmt, how):
        x = self.x
        if fmt != "coo" and x.sparse_dim != 2:
            for call in (lambda: x.asformat(fmt), lambda: gs.asarray(x, format=fmt)):
                with pytest.raises(ValueError):
                    call()
            return
        if how == "method":
            y = getattr(x, f"to{fmt}")()
        elif how == "asformat":
            y = x.asformat(fmt)
        else:
            y = gs.asarray(x, format=fmt)
        assert y.format == fmt
        self.become(y, self.m, self.fill, scale=component_scale(x))

    @rule()
    def device_round_trip(self):
        x = self.x
        assert x.to(self.device) is x
        other = Device("cpu", 0) if self.device.is_cuda else None
        if other is not None:
            back = x.to(other)
            assert back.device == other
            assert_close(back.todense(), self.m, scale=component_scale(x), floor=self.floor, what="x.to('cpu')")
            x = back.to(self.device)
        self.become(x, self.m, self.fill, scale=component_scale(x))

    @rule(data=st.data())
    def astype(self, data):
        self.settle()
        x, m = self.x, self.m
        target = data.draw(dtypes(), label="astype dtype")
        casting = data.draw(st.sampled_from(["unsafe", "unsafe", "same_kind", "safe"]), label="casting")
        if x.dtype.kind in "fc" and target.kind in "iu":
            # Casting NaN, infinities or out-of-range floats to integers is undefined in C.
            info = np.iinfo(target)
            vals = np.append(m.reshape(-1), self.fill).real.astype(np.float64)
            if not (np.isfinite(vals).all() and (vals > info.min - 1).all() and (vals < info.max + 1).all()):
                return
            if not (np.all(np.abs(vals) < 2.0**62)):
                return
        if not np.can_cast(x.dtype, target, casting=casting):
            with pytest.raises(TypeError):
                x.astype(target, casting=casting)
            return
        y = call_library(x.astype, target, casting=casting)
        self.become(y, quiet(m.astype, target), quiet(np.asarray(self.fill).astype, target)[()])

    @rule(data=st.data())
    def densify(self, data):
        """``to_dense(default_value)`` fills only the unstored elements; no implicit densification."""
        x, m = self.x, self.m
        default = data.draw(st.none() | values(x.dtype), label="default_value")
        expected = m if default is None else np.where(stored_mask(x), m, np.asarray(default, dtype=x.dtype))
        dense = call_library(x.to_dense, default)
        assert array_device(dense) == self.device
        assert_close(dense, expected, scale=component_scale(x), floor=self.floor, what="x.to_dense(default)")
        with pytest.raises(RuntimeError):
            np.asarray(x)
        with pytest.raises(BufferError):
            x.__dlpack__()

    @rule(how=st.sampled_from(["nonzero", "argwhere", "take"]), data=st.data())
    def positions(self, how, data):
        """nonzero / argwhere (zero fill only) and NumPy's take of the flattened array."""
        self.settle()
        x, m = self.x, self.m
        if how == "take" and self.device.is_cuda and cuda_emulation.enabled():
            how = "argwhere"  # take moves its indices to the device: the emulation gap of put_index
        if how == "take":
            index = np.asarray(data.draw(st.lists(st.integers(-x.size, x.size - 1), max_size=4)) if x.size else [],
                               dtype=np.int64)
            result = gs.take(x, index.tolist())
            expected = np.take(m, index)
            self.become(result, expected, self.fill, scale=np.take(component_scale(x), index))
            return
        if not (x.fill_value == 0 and x.fill_value == x.fill_value) and (x.ndim or how == "nonzero"):
            with pytest.raises(ValueError):  # the positions of a non-zero fill would be dense
                getattr(gs, how)(x)
            return
        try:
            expected = model(np.nonzero if how == "nonzero" else np.argwhere, m)
        except _NumpyRaised as raised:
            return expect_same_error(raised, getattr(gs, how), x)
        result = getattr(gs, how)(x)
        if how == "nonzero":
            assert len(result) == len(expected)
            for r, e in zip(result, expected):
                assert_close(to_host(r).astype(np.int64), e.astype(np.int64), what="nonzero")
        else:
            assert_close(to_host(result).astype(np.int64), expected.astype(np.int64), what="argwhere")

    @rule(data=st.data())
    def where(self, data):
        """``gs.where(x > s, x, y)``: a sparse condition, sparse and scalar branches."""
        self.settle()
        x, m = self.x, self.m
        if x.dtype.kind == "c":
            return
        s = data.draw(values(x.dtype), label="threshold")
        cond = call_library(np.greater, x, s)
        mc = model(np.greater, m, s)
        other = data.draw(st.sampled_from(["scalar", "sparse"]), label="other branch")
        if other == "scalar":
            y = my = data.draw(values(x.dtype), label="other")
            fill_y = y
        else:
            y, my = self.draw_array(data, x.shape, x.dtype)
            fill_y = y.fill_value
            self.keep(y)
        expected = model(np.where, mc, m, my)
        fill = model(np.where, np.asarray(cond.fill_value), np.asarray(self.fill), np.asarray(fill_y))
        self.keep(cond)
        self.become(call_library(gs.where, cond, x, y), expected, np.asarray(fill)[()])

    @rule(peer=st.sampled_from(["scipy", "torch", "pydata"]))
    def interop_round_trip(self, peer):
        x = self.x.to("cpu")
        to, back = {"scipy": (gs.to_scipy, gs.from_scipy), "torch": (gs.to_torch, gs.from_torch),
                    "pydata": (gs.to_pydata, gs.from_pydata)}[peer]
        # Peers without fill values, dense dimensions or unsigned types refuse; a plain matrix never is.
        plain = x.fill_value == 0 and x.dense_dim == 0 and x.ndim == 2 and \
            not (peer == "torch" and x.dtype in (np.uint16, np.uint32, np.uint64))
        try:
            foreign = call_library(to, x)
        except (ValueError, TypeError):
            assert not plain, f"to_{peer} refused {x!r}"
            return
        y = call_library(back, foreign).to(self.device)
        self.become(y, self.m, self.fill, scale=component_scale(self.x))
