"""An operation resolves its device to a backend once, at its entry, and its helpers reuse it.

Every call of :func:`gpusparse._backend.backend` (also through
:func:`~gpusparse._backend.backend_of`) and of the older per-question functions
:func:`~gpusparse._device.xp_for`, :func:`~gpusparse._device.kernels_for` and
:func:`~gpusparse._device.device_scope` made by a module of the library (above
the primitive layer) counts as one resolution. The operations below, run on a small array of every device,
may resolve at most :data:`ALLOWED` times each.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import gpusparse as gs
from gpusparse._device import cuda_module

#: The functions that resolve a device; a module that bound one of them with
#: ``from ... import`` gets it wrapped by the counter.
RESOLVERS = ("backend", "xp_for", "kernels_for", "device_scope")

#: Modules that define the resolvers or sit below them (the primitive layer).
NOT_COUNTED = ("gpusparse._device", "gpusparse._backend", "gpusparse._kernels")

#: The most resolutions each operation may make: one, at its entry.
ALLOWED = 1


class ResolutionCounter:
    """Wraps every resolver bound in the library's modules and counts the calls."""

    def __init__(self, monkeypatch):
        self.calls: list[str] = []
        backend_module = sys.modules["gpusparse._backend"]  # backend_of resolves through it
        monkeypatch.setattr(backend_module, "backend", self._counting(backend_module.backend, "backend_of"))
        for name, module in list(sys.modules.items()):
            if not name.startswith("gpusparse") or name.startswith(NOT_COUNTED) or module is None:
                continue
            for resolver in RESOLVERS:
                original = getattr(module, resolver, None)
                if callable(original) and getattr(original, "__module__", "").startswith(NOT_COUNTED):
                    monkeypatch.setattr(module, resolver, self._counting(original, f"{name}.{resolver}"))

    def _counting(self, original, where):
        def counted(*args, **kwargs):
            self.calls.append(where)
            return original(*args, **kwargs)
        return counted

    def count(self, operation) -> tuple[int, list[str]]:
        """The resolutions ``operation()`` makes, and where they were made."""
        self.calls.clear()
        operation()
        return len(self.calls), list(self.calls)


def _operands(device):
    x = gs.random((6, 5), density=0.5, seed=1, device=device, format="coo")
    y = gs.random((5, 4), density=0.5, seed=2, device=device, format="coo")
    z = gs.random((6, 5), density=0.5, seed=3, device=device, format="coo")
    v = np.arange(5.0) if not device.is_cuda else cuda_module().arange(5.0)
    uncoalesced = gs.COO([[0, 1, 0], [2, 3, 2]], [1.0, 2.0, 3.0], shape=(6, 5), device=device)
    return x, y, z, v, uncoalesced


#: Representative operations of every family that resolves its device once.
OPERATIONS = {
    "x @ v (SpMV)": lambda x, y, z, v, u: x @ v,
    "x @ y (SpGEMM)": lambda x, y, z, v, u: x @ y,
    "u.coalesce()": lambda x, y, z, v, u: u.coalesce(),
    "x.tocsr()": lambda x, y, z, v, u: x.tocsr(),
}


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_an_operation_resolves_its_device_once(device, operation, monkeypatch):
    operands = _operands(device)
    counter = ResolutionCounter(monkeypatch)
    count, where = counter.count(lambda: OPERATIONS[operation](*operands))
    assert count <= ALLOWED, f"{operation} resolved its device {count} times: {where}"
