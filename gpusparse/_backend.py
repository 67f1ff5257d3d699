"""The backend of a device: its array module, its primitives and its scope, resolved once.

An operation finds the device its operands live on once, at its entry, and
turns it into a :class:`Backend` with :func:`backend` (or
:func:`backend_of`); its helpers then take that backend instead of asking
:mod:`gpusparse._device` again which array module and kernels they run on.

There is one :class:`Backend` per :class:`~gpusparse._device.Device`
(memoised), made on first use: the backend of a CUDA device imports CuPy
(or its emulated stand-in) then, exactly as
:func:`~gpusparse._device.xp_for` does, so ``import gpusparse`` imports
neither CuPy nor torch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import types

from gpusparse._device import Device, device_of, kernels_for, xp_for

__all__ = ["Backend", "backend", "backend_of"]


@dataclasses.dataclass(frozen=True)
class Backend:
    """Where an operation runs: a device, its array module and its primitives.

    Parameters
    ----------
    device : Device
        The device the operands live on.
    xp : module
        The array module of the device: ``numpy`` or ``cupy``.
    kernels : module
        The primitives of the device: ``gpusparse._kernels.cpu`` or
        ``gpusparse._kernels.cuda``.

    Examples
    --------
    >>> be = backend(Device("cpu"))
    >>> be.xp.__name__, be.kernels.__name__
    ('numpy', 'gpusparse._kernels.cpu')
    >>> with be.scope():
    ...     pass
    """

    device: Device
    xp: types.ModuleType
    kernels: types.ModuleType

    def scope(self):
        """A context that makes :attr:`device` current for allocations and launches.

        Returns
        -------
        context manager
            ``cupy.cuda.Device(index)`` on a CUDA device, a null context on
            the CPU.
        """
        if self.device.is_cuda:
            return self.xp.cuda.Device(self.device.index)
        return contextlib.nullcontext()


@functools.cache
def backend(dev: Device) -> Backend:
    """The one :class:`Backend` of ``dev``, made on first use.

    Parameters
    ----------
    dev : Device
        A device, as :func:`~gpusparse._device.device_of` returns it.

    Returns
    -------
    Backend
        The same object for every call with an equal device.

    Examples
    --------
    >>> backend(Device("cpu")) is backend(Device("cpu"))
    True
    """
    return Backend(dev, xp_for(dev), kernels_for(dev))


def backend_of(*operands, what: "tuple[str, ...] | None" = None) -> Backend:
    """The :class:`Backend` of the one device all ``operands`` live on.

    Parameters
    ----------
    *operands
        Sparse arrays, NumPy / CuPy arrays, ``None`` or scalars, as
        :func:`~gpusparse._device.device_of` takes them.
    what : tuple of str, optional
        The operands' names for the error when they live on different devices.

    Returns
    -------
    Backend

    Raises
    ------
    ValueError
        The operands live on different devices.

    Examples
    --------
    >>> import numpy as np
    >>> backend_of(np.zeros(3)).device
    Device('cpu')
    """
    return backend(device_of(*operands, what=what))
