"""gpusparse.ops.softmax.softmax_backward (the kernel-level backward the autograd softmax uses), on every device.

Needs no torch: the oracle is the dense softmax's Jacobian-vector product in
NumPy over the stored elements, so this also runs under the emulated CUDA path.
"""

from __future__ import annotations

import numpy as np
import pytest

import gpusparse as gs
from _helpers import put
from gpusparse._device import to_host
from gpusparse.ops.softmax import log_softmax, softmax, softmax_backward


def _oracle(dense, stored, grad_dense, axis, log):
    """The gradient for every element of the dense masked (log-)softmax, unstored elements -inf."""
    x = np.where(stored, dense, -np.inf)
    top = np.max(x, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.where(stored, np.exp(x - top), 0.0)
    total = e.sum(axis=axis, keepdims=True)
    p = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    g = np.where(stored, grad_dense, 0.0)
    if log:
        return np.where(stored, g - p * g.sum(axis=axis, keepdims=True), 0.0)
    return np.where(stored, p * (g - (g * p).sum(axis=axis, keepdims=True)), 0.0)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
@pytest.mark.parametrize("axis", [0, 1])
def test_softmax_backward(device, fmt, axis, log):
    rng = np.random.default_rng(0)
    shape = (6, 5)
    stored = rng.random(shape) < 0.4
    stored[2] = False  # an empty row
    dense = rng.standard_normal(shape)
    x = gs.fromdense(put(np.where(stored, dense, 0.0), device), device=device).asformat(fmt)
    y = (log_softmax if log else softmax)(x, axis)
    coords = to_host(y.asformat("coo").coords)
    grad_dense = rng.standard_normal(shape)
    y_coo = y.asformat("coo")
    grad_coo = put(grad_dense[tuple(to_host(y_coo.coords))], device)  # y's values' gradient, row-major
    if fmt == "coo":
        grad = grad_coo
    else:  # compressed entries come in their storage order
        positions = to_host(gs.COO(y_coo.coords, put(np.arange(y.nnz, dtype=np.float64), device), shape=shape,
                                   device=device).asformat(fmt).data).astype(np.int64)
        grad = put(to_host(grad_coo)[positions], device)
    got = to_host(softmax_backward(y, grad, axis, log))
    expected = _oracle(dense, stored, grad_dense, axis, log)
    back = np.zeros(shape)
    if fmt == "coo":
        back[tuple(to_host(y.coords))] = got
    else:
        back[tuple(coords[:, positions])] = got
    np.testing.assert_allclose(back, expected, atol=1e-12)
