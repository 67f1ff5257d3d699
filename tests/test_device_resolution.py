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
import types

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
    """Small operands on ``device``: COO ``x``, ``y``, ``z``, their CSR ``xc``, ``zc``, a vector ``v``,
    an uncoalesced COO ``u``, ``w``, ``x`` with a leading axis of length one, a dense ``d`` of ``x``'s
    shape, integer indices ``i`` along ``x``'s second axis, the softmax ``s`` of ``x`` and a
    gradient ``g`` for its values, ``h``, two rows of ``x`` stored as dense blocks, ``e``, a
    diagonal CSR matrix, a sparse mask ``k`` of ``x @ y``'s shape, and ``x``'s first row ``r`` and
    first column ``c`` as 1-D sparse arrays, ``x32``, ``x`` in float32,
    and ``b``, a (1, 5) array that broadcasts against ``x``."""
    x = gs.random((6, 5), density=0.5, seed=1, device=device, format="coo")
    y = gs.random((5, 4), density=0.5, seed=2, device=device, format="coo")
    z = gs.random((6, 5), density=0.5, seed=3, device=device, format="coo")
    xp = np if not device.is_cuda else cuda_module()
    v = xp.arange(5.0)
    u = gs.COO([[0, 1, 0], [2, 3, 2]], [1.0, 2.0, 3.0], shape=(6, 5), device=device)
    s = gs.softmax(x, 1)
    return types.SimpleNamespace(x=x, y=y, z=z, xc=x.tocsr(), zc=z.tocsr(), v=v, u=u, w=x[None],
                                 d=xp.arange(30.0).reshape(6, 5), i=xp.zeros((6, 2), dtype=np.int64),
                                 s=s, g=xp.ones(s.data.shape),
                                 h=gs.COO([[0, 2]], x.todense()[[0, 2]], shape=(6, 5), device=device),
                                 e=gs.eye(12, format="csr", device=device) * 2.0,
                                 k=gs.random((6, 4), density=0.5, seed=4, device=device, format="coo"),
                                 r=x[0], c=x[:, 0], x32=x.astype(np.float32),
                                 b=gs.random((1, 5), density=0.5, seed=5, device=device, format="coo"))


def _in_place(target, operation):
    """``operation(t)`` on a copy ``t`` of ``target`` (its components shared, so the copy costs
    nothing and resolves no device), leaving the shared operand unchanged."""
    t = target.__class__.__new__(target.__class__)
    t.__dict__ = {k: v for k, v in vars(target).items() if k != "_cache"}
    return operation(t)


def _with_library_solvers(o, operation):
    """``operation()``, skipped on a CUDA device without CuPy's sparse solvers (``cupyx``)."""
    if o.x.device.is_cuda:
        pytest.importorskip("cupyx.scipy.sparse.linalg")
    return operation()


#: Representative operations of every family that resolves its device once.
OPERATIONS = {
    "x @ v (SpMV)": lambda o: o.x @ o.v,
    "xc @ v (SpMV, CSR)": lambda o: o.xc @ o.v,
    "x @ y (SpGEMM)": lambda o: o.x @ o.y,
    "u.coalesce()": lambda o: o.u.coalesce(),
    "x.tocsr()": lambda o: o.x.tocsr(),
    "xc.tocsc()": lambda o: o.xc.tocsc(),
    "x + z": lambda o: o.x + o.z,
    "x * 2.0": lambda o: o.x * 2.0,
    "xc - zc": lambda o: o.xc - o.zc,
    "x.sum(axis=0)": lambda o: o.x.sum(axis=0),
    "xc.sum(axis=1)": lambda o: o.xc.sum(axis=1),
    "x.max()": lambda o: o.x.max(),
    "x.argmax(axis=0)": lambda o: o.x.argmax(axis=0),
    # indexing
    "x[1:3]": lambda o: o.x[1:3],
    "xc[1:3]": lambda o: o.xc[1:3],
    "xc[[0, 2]]": lambda o: o.xc[[0, 2]],
    "x[[0, 2]]": lambda o: o.x[[0, 2]],
    "x[2, 1]": lambda o: o.x[2, 1],
    "x[True]": lambda o: o.x[True],
    "gs.take(x, [0, 2])": lambda o: gs.take(o.x, [0, 2]),
    "gs.index_select(x, 1, [0, 2])": lambda o: gs.index_select(o.x, 1, [0, 2]),
    "gs.nonzero(x)": lambda o: gs.nonzero(o.x),
    "gs.argwhere(x)": lambda o: gs.argwhere(o.x),
    # shape
    "x.reshape((5, 6))": lambda o: o.x.reshape((5, 6)),
    "xc.reshape((5, 6))": lambda o: o.xc.reshape((5, 6)),
    "x.T": lambda o: o.x.T,
    "xc.T": lambda o: o.xc.T,
    "gs.squeeze(w)": lambda o: gs.squeeze(o.w),
    "gs.expand_dims(x, 0)": lambda o: gs.expand_dims(o.x, 0),
    "gs.broadcast_to(x, (2, 6, 5))": lambda o: gs.broadcast_to(o.x, (2, 6, 5)),
    "gs.resize(x, (4, 4))": lambda o: gs.resize(o.x, (4, 4)),
    "gs.concatenate([x, z], axis=1)": lambda o: gs.concatenate([o.x, o.z], axis=1),
    "gs.concatenate([xc, zc], axis=1)": lambda o: gs.concatenate([o.xc, o.zc], axis=1),
    "gs.stack([x, z])": lambda o: gs.stack([o.x, o.z]),
    "gs.hstack([x, z])": lambda o: gs.hstack([o.x, o.z]),
    "gs.split(x, 3)": lambda o: gs.split(o.x, 3),
    "gs.pad(x, 1)": lambda o: gs.pad(o.x, 1),
    "gs.roll(x, 2)": lambda o: gs.roll(o.x, 2),
    "gs.flip(x)": lambda o: gs.flip(o.x),
    "gs.triu(xc)": lambda o: gs.triu(o.xc),
    "gs.diagonal(x)": lambda o: gs.diagonal(o.x),
    "gs.diag(x)": lambda o: gs.diag(o.x),
    # selection, softmax, masks, along an axis
    "gs.topk(x, 2)": lambda o: gs.topk(o.x, 2),
    "gs.softmax(x, 1)": lambda o: gs.softmax(o.x, 1),
    "gs.log_softmax(xc, 0)": lambda o: gs.log_softmax(o.xc, 0),
    "softmax_backward(s, g, 1)": lambda o: gs.ops.softmax.softmax_backward(o.s, o.g, 1),
    "gs.sparse_mask(d, x)": lambda o: gs.sparse_mask(o.d, o.x),
    "gs.diff(x, axis=1)": lambda o: gs.diff(o.x, axis=1),
    "gs.take_along_axis(x, i, axis=1)": lambda o: gs.take_along_axis(o.x, o.i, axis=1),
    "gs.isin(x, z)": lambda o: gs.isin(o.x, o.z),
    # TF's operations
    "gs.reorder(u)": lambda o: gs.reorder(o.u),
    "gs.reset_shape(xc, (7, 6))": lambda o: gs.reset_shape(o.xc, (7, 6)),
    "gs.fill_empty_rows(u, 1.0)": lambda o: gs.fill_empty_rows(o.u, 1.0),
    "gs.retain(x, flags)": lambda o: gs.retain(o.x, o.x.data > 0.5),
    # mean (a sum and a division), and a product of a hybrid array (its dense dimension made sparse)
    "x.mean(axis=0)": lambda o: o.x.mean(axis=0),
    "xc.mean()": lambda o: o.xc.mean(),
    "h @ y (hybrid)": lambda o: o.h @ o.y,
    # NumPy's functions on sparse arrays
    "np.atleast_3d(x)": lambda o: np.atleast_3d(o.x),
    "np.reshape(x, (5, 6), order='F')": lambda o: np.reshape(o.x, (5, 6), order="F"),
    "np.shares_memory(x, x)": lambda o: np.shares_memory(o.x, o.x),
    "np.flatnonzero(x)": lambda o: np.flatnonzero(o.x),
    "np.take(x, [0, 7, 40], mode='clip')": lambda o: np.take(o.x, [0, 7, 40], mode="clip"),
    "np.take(xc, [-1, 6], axis=1, mode='wrap')": lambda o: np.take(o.xc, [-1, 6], axis=1, mode="wrap"),
    # einsum: its reshapes, permutations, sums and products on the backend of its entry
    "gs.einsum('ij,ij->i', x, z)": lambda o: gs.einsum("ij,ij->i", o.x, o.z),
    "gs.einsum('ij,ij->ij', x, z)": lambda o: gs.einsum("ij,ij->ij", o.x, o.z),
    "gs.einsum('ij,jk->', x, y)": lambda o: gs.einsum("ij,jk->", o.x, o.y),
    "gs.einsum('ij->j', x)": lambda o: gs.einsum("ij->j", o.x),
    "gs.einsum('ij,j->i', x, v)": lambda o: gs.einsum("ij,j->i", o.x, o.v),
    # NaN-ignoring reductions, and the size-1 axes of keepdims
    "gs.nanmax(x, axis=0)": lambda o: gs.nanmax(o.x, axis=0),
    "gs.nanmin(xc, axis=1, keepdims=True)": lambda o: gs.nanmin(o.xc, axis=1, keepdims=True),
    "gs.nansum(x, axis=0)": lambda o: gs.nansum(o.x, axis=0),
    "gs.nanprod(x)": lambda o: gs.nanprod(o.x),
    "gs.nanmean(x, axis=1)": lambda o: gs.nanmean(o.x, axis=1),
    "gs.nanvar(x)": lambda o: gs.nanvar(o.x),
    "x.sum(axis=0, keepdims=True)": lambda o: o.x.sum(axis=0, keepdims=True),
    "x.argmax(axis=0, keepdims=True)": lambda o: o.x.argmax(axis=0, keepdims=True),
    "x.var(axis=0, keepdims=True)": lambda o: o.x.var(axis=0, keepdims=True),
    # GraphBLAS-style elementwise operations
    "gs.ewise_add(xc, zc)": lambda o: gs.ewise_add(o.xc, o.zc),
    "gs.ewise_mult(x, z, 'min')": lambda o: gs.ewise_mult(o.x, o.z, "min"),
    "gs.select(x, 'tril')": lambda o: gs.select(o.x, "tril"),
    "gs.select(xc, ('valuegt', 0.5))": lambda o: gs.select(o.xc, ("valuegt", 0.5)),
    "gs.apply(x, 'abs')": lambda o: gs.apply(o.x, "abs"),
    # matrix products over a semiring, with and without a mask
    "gs.mxm(x, y)": lambda o: gs.mxm(o.x, o.y),
    "gs.mxm(xc, y, 'min_plus')": lambda o: gs.mxm(o.xc, o.y, "min_plus"),
    "gs.mxm(x, y, mask=k)": lambda o: gs.mxm(o.x, o.y, mask=o.k),
    "gs.mxm(xc, d[:5], 'max_plus', mask=d > 10, complement=True)":
        lambda o: gs.mxm(o.xc, o.d[:5], "max_plus", mask=o.d > 10, complement=True),
    "gs.mxv(xc, v, 'min_plus')": lambda o: gs.mxv(o.xc, o.v, "min_plus"),
    "gs.mxv(x, v, mask=d[:, 0] > 10)": lambda o: gs.mxv(o.x, o.v, mask=o.d[:, 0] > 10),
    "gs.mxv(x, r, 'max_times', mask=c)": lambda o: gs.mxv(o.x, o.r, "max_times", mask=o.c),
    # in place: x += y, ufuncs with out=, the conversions of the result for the output
    "x += z": lambda o: _in_place(o.x, lambda t: t.__iadd__(o.z)),
    "xc += zc": lambda o: _in_place(o.xc, lambda t: t.__iadd__(o.zc)),
    "xc *= x (COO result for a CSR output)": lambda o: _in_place(o.xc, lambda t: t.__imul__(o.x)),
    "x32 += z (a cast)": lambda o: _in_place(o.x32, lambda t: t.__iadd__(o.z)),
    "np.add(x, z, out=x)": lambda o: _in_place(o.x, lambda t: np.add(t, o.z, out=t)),
    "np.add(x, b, out=x) (b broadcast)": lambda o: _in_place(o.x, lambda t: np.add(t, o.b, out=t)),
    "w * x (a new sparse axis)": lambda o: o.w * o.x,
    "gs.argmax(h, axis=1) (dense dimensions made sparse)": lambda o: gs.argmax(o.h, axis=1),
    "np.negative(x, out=x)": lambda o: _in_place(o.x, lambda t: np.negative(t, out=t)),
    # TF's sum with a magnitude threshold
    "gs.add(x, z)": lambda o: gs.add(o.x, o.z),
    "gs.add(xc, zc, thresh=0.5)": lambda o: gs.add(o.xc, o.zc, thresh=0.5),
    "gs.add(u, d)": lambda o: gs.add(o.u, o.d),
    # linalg: norms, the randomized low-rank factorizations, an eigensolver, a dense routine
    "gs.linalg.norm(x, axis=1)": lambda o: gs.linalg.norm(o.x, axis=1),
    "gs.linalg.norm(x)": lambda o: gs.linalg.norm(o.x),
    "gs.linalg.norm(xc, 1)": lambda o: gs.linalg.norm(o.xc, 1),
    "gs.linalg.norm(x, -inf, axis=0)": lambda o: gs.linalg.norm(o.x, -np.inf, axis=0),
    "gs.linalg.norm(x, inf, axis=0, keepdims=True)": lambda o: gs.linalg.norm(o.x, np.inf, axis=0, keepdims=True),
    "gs.linalg.svd_lowrank(xc, 2)": lambda o: gs.linalg.svd_lowrank(o.xc, 2, seed=0),
    "gs.linalg.pca_lowrank(x, 2)": lambda o: gs.linalg.pca_lowrank(o.x, 2, seed=0),
    "gs.linalg.lobpcg(e, 1)": lambda o: _with_library_solvers(o, lambda: gs.linalg.lobpcg(o.e, 1, seed=0)),
    "gs.linalg.inv(e)": lambda o: gs.linalg.inv(o.e),
    # creation
    "gs.zeros_like(x)": lambda o: gs.zeros_like(o.x),
    "gs.full_like(xc, 1.0)": lambda o: gs.full_like(o.xc, 1.0),
    "gs.eye(4)": lambda o: gs.eye(4, device=o.x.device),
    "gs.random((4, 4))": lambda o: gs.random((4, 4), density=0.5, seed=1, device=o.x.device),
    "gs.fromdense(d)": lambda o: gs.fromdense(o.d),
}


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_an_operation_resolves_its_device_once(device, operation, monkeypatch):
    operands = _operands(device)
    counter = ResolutionCounter(monkeypatch)
    count, where = counter.count(lambda: OPERATIONS[operation](operands))
    assert count <= ALLOWED, f"{operation} resolved its device {count} times: {where}"


def _bcoo():
    """A small JAX BCOO (its arrays live on JAX's CPU device), flagged sorted and unique."""
    jsp = pytest.importorskip("jax.experimental.sparse")
    import jax.numpy as jnp
    data = jnp.asarray([1.0, 2.0, 3.0], dtype=jnp.float32)
    indices = jnp.asarray([[0, 1], [2, 3], [4, 0]], dtype=jnp.int32)
    return jsp.BCOO((data, indices), shape=(6, 5), indices_sorted=True, unique_indices=True)


@pytest.mark.parametrize("copy", [None, True])
def test_from_jax_resolves_its_device_once(copy, monkeypatch):
    b = _bcoo()
    counter = ResolutionCounter(monkeypatch)
    count, where = counter.count(lambda: gs.from_jax(b, copy=copy))
    assert count <= ALLOWED, f"from_jax(copy={copy}) resolved its device {count} times: {where}"
