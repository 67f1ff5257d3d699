"""Binds the operations that the containers' methods call (see :mod:`gpusparse.containers._bound`).

Imported by :mod:`gpusparse._array_api`, which the top-level package imports
first, so every container method has its operation before any array exists.
"""

from __future__ import annotations

from gpusparse.containers._bound import bind
from gpusparse.ops import (
    _numpy_functions,
    _numpy_ufuncs,
    _validate,
    canonical,
    convert,
    elementwise,
    indexing,
    inplace,
    linalg,
    reductions,
    shape,
)

__all__ = []

bind(
    _numpy_functions=_numpy_functions,
    _numpy_ufuncs=_numpy_ufuncs,
    _validate=_validate,
    canonical=canonical,
    convert=convert,
    elementwise=elementwise,
    indexing=indexing,
    inplace=inplace,
    linalg=linalg,
    reductions=reductions,
    shape=shape,
)
