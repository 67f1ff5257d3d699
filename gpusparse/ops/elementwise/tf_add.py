"""TensorFlow's ``sparse.add``: the sum of two arrays, with a magnitude threshold."""

from __future__ import annotations

import numpy as np

from gpusparse._backend import backend_of
from gpusparse.ops import canonical, convert
from gpusparse.ops._broadcast import as_coo
from gpusparse.ops.elementwise.dispatch import apply
from gpusparse.ops.elementwise.operands import classify

__all__ = ["add"]


def add(a, b, thresh=0):
    """TensorFlow's ``sparse.add``: the sum of two arrays, at least one sparse.

    Sparse + sparse gives a sparse array holding every position stored in
    either operand, except those whose sum has magnitude strictly below
    ``thresh`` (``thresh=0`` keeps them all, zeros included). Sparse + dense
    gives a dense array of the operands' array module.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> a = gs.COO([[0, 1]], [1.0, 0.1], shape=(3,), device="cpu")
    >>> b = gs.COO([[0, 2]], [-1.0, 5.0], shape=(3,), device="cpu")
    >>> gs.add(a, b).nnz, gs.add(a, b, thresh=0.11).nnz
    (3, 1)
    >>> gs.add(a, np.ones(3))
    array([2. , 1.1, 1. ])
    """
    from gpusparse.containers import SparseArray
    operands = classify([a, b], ["a", "b"])
    if operands is None:
        raise TypeError("add: a and b must be sparse or dense arrays")
    kinds = [op.kind for op in operands]
    if "sparse" not in kinds:
        raise TypeError("add: at least one of a and b must be sparse; use np.add for dense arrays")
    be = backend_of(*(op.value for op in operands if op.kind != "scalar"))
    if "dense" in kinds or "scalar" in kinds:
        with be.scope():
            dense_args = [convert.to_dense(op.value, be=be) if op.kind == "sparse" else op.value
                          for op in operands]
            return be.xp.add(*dense_args)
    for op in operands:  # TF's result is canonical: merge coalesced operands
        if op.value.format == "coo" and not op.value.unique:
            op.value = canonical.coalesce(op.value, be=be)
    out = apply(np.add, operands, {}, keep_fill_entries=True, be=be)
    if thresh is None or np.all(np.asarray(thresh) == 0):
        return out
    if np.iscomplexobj(thresh):
        raise TypeError(f"thresh must be real, got {thresh!r}")
    assert isinstance(out, SparseArray)
    xp = be.xp
    with be.scope():
        coo = as_coo(out, be=be)
        magnitude = xp.abs(coo.data)
        if magnitude.ndim > 1:
            magnitude = magnitude.reshape(magnitude.shape[0], -1).max(axis=1)
        large = convert.keep_entries(coo, magnitude >= thresh, be=be)
    return large if out.format == "coo" else convert.asformat(large, out.format, be=be)
