"""The array API's ``fft`` extension on sparse arrays (dense in nature).

A Fourier transform of a sparse array stores every element, so the
transforms run the device library's FFT (``numpy.fft`` or ``cupy.fft``) on
the densified array and return a sparse array with fill value 0 (see
:mod:`gpusparse.ops.linalg.dense_in_nature`). ``fftshift``/``ifftshift`` stay sparse:
they are rolls. ``fftfreq``/``rfftfreq`` build the frequencies on
``device``.

Examples
--------
>>> import numpy as np, gpusparse as gs
>>> x = gs.asarray(np.array([1.0, 0.0, 0.0, 0.0]), device="cpu")
>>> gs.fft.fft(x).todense()
array([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
"""

from __future__ import annotations

import numpy as np

from gpusparse._device import as_device, device_scope, xp_for
from gpusparse.ops.linalg.dense_in_nature import dense_call

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]


def _one_axis(name):
    def function(x, /, *, n=None, axis=-1, norm="backward"):
        return dense_call(name, (x,), lambda xp, a: getattr(xp.fft, name)(a, n=n, axis=axis, norm=norm))
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"The array API's ``fft.{name}`` (computed densely on ``x``'s device; sparse result)."
    return function


def _many_axes(name):
    def function(x, /, *, s=None, axes=None, norm="backward"):
        return dense_call(name, (x,), lambda xp, a: getattr(xp.fft, name)(a, s=s, axes=axes, norm=norm))
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"The array API's ``fft.{name}`` (computed densely on ``x``'s device; sparse result)."
    return function


fft, ifft, rfft, irfft, hfft, ihfft = (_one_axis(n) for n in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"))
fftn, ifftn, rfftn, irfftn = (_many_axes(n) for n in ("fftn", "ifftn", "rfftn", "irfftn"))


def _frequencies(name):
    def function(n, /, *, d=1.0, dtype=None, device=None):
        from gpusparse.ops.creation import fromdense
        dev = as_device(device)
        xp = xp_for(dev)
        with device_scope(dev):
            out = getattr(xp.fft, name)(n, d=d).astype(np.float64 if dtype is None else dtype)
        return fromdense(out, fill_value=0)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"The array API's ``fft.{name}``: sample frequencies, a sparse 1-D array on ``device``."
    return function


fftfreq, rfftfreq = _frequencies("fftfreq"), _frequencies("rfftfreq")


def _shift(x, axes, sign, name):
    from gpusparse.containers import SparseArray
    from gpusparse.ops._validate import check_axis
    from gpusparse.ops.shape import roll
    if not isinstance(x, SparseArray):
        raise TypeError(f"{name}: x must be a gpusparse array, got {type(x).__name__}")
    axes = tuple(range(x.ndim)) if axes is None else (axes,) if isinstance(axes, (int, np.integer)) else axes
    axes = tuple(check_axis(a, x.ndim, "axes") for a in axes)
    shifts = tuple(sign * (x.shape[a] // 2) for a in axes)
    return roll(x, shifts, axis=axes) if axes else x


def fftshift(x, /, *, axes=None):
    """Move the zero frequency to the centre (a roll along ``axes``: the result stays sparse).

    >>> import numpy as np, gpusparse as gs
    >>> gs.fft.fftshift(gs.asarray(np.arange(5.0), device="cpu")).todense()
    array([3., 4., 0., 1., 2.])
    """
    return _shift(x, axes, 1, "fftshift")


def ifftshift(x, /, *, axes=None):
    """The inverse of :func:`fftshift` (a roll along ``axes``: the result stays sparse)."""
    return _shift(x, axes, -1, "ifftshift")
