"""The operations behind the containers' methods, bound from the layer above.

Containers never import :mod:`gpusparse.ops` (the operations import the
containers, not the reverse). The methods of :class:`SparseArray`,
:class:`COO`, :class:`CSR` and :class:`CSC` call the modules held in
:data:`ops`, which :mod:`gpusparse.ops._methods` binds with :func:`bind`
when ``gpusparse`` is imported, before any array can be built.
"""

from __future__ import annotations

import types

__all__ = ["bind", "ops"]

#: The operation modules by name (``ops.reductions``, ``ops.convert``, ...) and ``ops.array_namespace``.
ops = types.SimpleNamespace()


def bind(**operations) -> None:
    """Make ``operations`` (``name=module or function``) what the containers' methods call."""
    vars(ops).update(operations)
