"""gpusparse arrays as Dask array chunks, and the distributed pieces Dask lacks.

Registration with Dask is automatic: ``import gpusparse`` registers
gpusparse's arrays with ``dask.array`` (dispatch tables, chunk type, sizeof)
and ``dask.distributed`` (serializers) as soon as those are imported, in
either order, and never imports Dask itself (see :mod:`gpusparse.dask._hook`).
Then ``dask.array`` runs gpusparse chunks: elementwise operations,
reductions, slicing, ``transpose``, ``reshape``, ``concatenate``/``stack``,
``rechunk``, ``tensordot``/``matmul``, ``persist``, ``compute``.

This package adds, importing Dask only when one of them is used:

* :func:`from_array` -- a Dask array over a gpusparse array's blocks, cut
  once (compressed row blocks share the parent's ``indices`` and ``data``);
* :class:`RowBlockMatrix` -- a row-partitioned CSR matrix whose products
  with a chunked vector fetch only the vector chunks each row block reads;
* :func:`cg` -- conjugate gradients over it, the vector staying chunked;
* :func:`register` -- register explicitly (idempotent).

See :func:`from_array` and :class:`RowBlockMatrix` for examples, and
``docs/dask.md`` for what Dask cannot do with sparse chunks.
"""

from __future__ import annotations

import importlib

__all__ = ["RowBlockMatrix", "cg", "from_array", "register"]

_LAZY = {
    "from_array": "gpusparse.dask._chunked",
    "RowBlockMatrix": "gpusparse.dask.linalg",
    "cg": "gpusparse.dask.linalg",
}


def register() -> None:
    """Register gpusparse with ``dask.array`` and, if installed, ``distributed`` (idempotent).

    Not needed after ``import gpusparse``, which registers by itself; this
    imports Dask if it is not yet imported.
    """
    from gpusparse.dask import _dispatch
    _dispatch.register()
    try:
        import distributed.protocol  # noqa: F401 -- registers through the hook
    except ImportError:
        return
    from gpusparse.dask import _serialize
    _serialize.register()


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'gpusparse.dask' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
