"""Elementwise operations: any ufunc or N-ary function, broadcasting, fill values.

:func:`elemwise` applies a function to sparse arrays, dense arrays and
scalars with NumPy broadcasting. The result's fill value is the function of
the operands' fill values (pydata sparse's rule): ``x + 1`` has fill value
``x.fill_value + 1``, ``~x`` of a bool array with fill False has fill True.

How the stored entries are found
--------------------------------
* One sparse operand: its own entries (coalesced first, unless the function
  is linear in it -- ``-x``, ``2 * x``, ``x / 4``, ``x.conj()`` -- when
  duplicates may stay: each one is mapped on its own; for inexact arrays
  only scalars that cannot overflow or make a NaN the sum would not give,
  ``|s| <= 1`` in ``s * x`` and ``|s| >= 1`` in ``x / s``).
* Several sparse operands: their coordinates are linearised to int64 keys
  and merged on the device (primitive ``merge_sorted``). Positions stored
  in only one operand take the other operands' fill values there. When the
  function maps the entries of each operand to the result's fill value
  wherever the other operand is unstored -- multiplication with fill 0 and
  no infinities or NaN -- only the intersection is computed, otherwise the
  union. ``x + y`` of arrays with fill 0 where either is uncoalesced is the
  concatenation of their entries (addition is linear; nothing is sorted).
* Dense operands are read at the stored coordinates. They must map the
  fill value to a single value everywhere -- ``x * dense`` with fill 0 and a
  finite ``dense`` -- otherwise the result would be dense and
  ``ValueError`` is raised, unless auto-densify is on
  (``gpusparse.set_options(auto_densify=True)`` or
  ``GPUSPARSE_AUTO_DENSIFY=1``), which returns a dense array.

Entries of the result equal to its fill value are dropped (pydata does the
same), so ``x * 0`` stores nothing.

On a GPU every function runs on the device: a NumPy ufunc or function is
replaced by the function of the same name of the device's array module.

One module per job
------------------
* :mod:`~gpusparse.ops.elementwise.dispatch`: ``elemwise``, ``apply`` and
  the Python operators, on :mod:`~gpusparse.ops.elementwise.operands`
  (sparse, dense and scalar operands) and
  :mod:`~gpusparse.ops.elementwise.fills` (the result's fill value, the
  dense check, auto-densify).
* :mod:`~gpusparse.ops.elementwise.stored`: which path computes the stored
  entries; :mod:`~gpusparse.ops.elementwise.merging` (merge plans of
  several sparse operands), :mod:`~gpusparse.ops.elementwise.evaluation`
  (the function at stored positions) and
  :mod:`~gpusparse.ops.elementwise.assembly` (result arrays, ``prune``).
* Named operations: :mod:`~gpusparse.ops.elementwise.unary` (``abs``,
  ``isnan``, ``real``, ``round``, ...), :mod:`~gpusparse.ops.elementwise.choice`
  (``where``, ``clip``, ``maximum``, ``minimum``),
  :mod:`~gpusparse.ops.elementwise.casting` (``astype``) and
  :mod:`~gpusparse.ops.elementwise.tf_add` (TensorFlow's ``sparse.add``).
"""

from __future__ import annotations

from gpusparse.ops.elementwise.assembly import eliminate_zeros, prune
from gpusparse.ops.elementwise.casting import astype
from gpusparse.ops.elementwise.choice import clip, maximum, minimum, where
from gpusparse.ops.elementwise.dispatch import apply, elemwise, operator
from gpusparse.ops.elementwise.operands import classify, device_function
from gpusparse.ops.elementwise.tf_add import add
from gpusparse.ops.elementwise.unary import abs, conj, imag, isfinite, isnan, nan_to_num, real, round

__all__ = [
    "abs",
    "add",
    "astype",
    "clip",
    "conj",
    "elemwise",
    "imag",
    "isfinite",
    "isnan",
    "maximum",
    "minimum",
    "nan_to_num",
    "prune",
    "real",
    "round",
    "where",
]
