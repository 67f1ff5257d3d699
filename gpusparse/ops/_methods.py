"""Binds the operations that the containers' methods call (see :mod:`gpusparse.containers._bound`).

Imported by :mod:`gpusparse._array_api`, which the top-level package imports
first, so every container method has its operation before any array exists.
"""

from __future__ import annotations

from gpusparse.containers._bound import bind
from gpusparse.ops import (
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
from gpusparse.ops.numpy import functions as numpy_functions
from gpusparse.ops.numpy import ufuncs as numpy_ufuncs

__all__ = []

bind(
    numpy_functions=numpy_functions,
    numpy_ufuncs=numpy_ufuncs,
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
