"""Reductions over any axes: sum, prod, max, min, mean, var, std, any, all, argmin, nan*, ...

Semantics follow NumPy (``axis``, ``keepdims``, ``dtype``, ``initial``;
NaN propagates, ``nan*`` ignore it; a reduction without identity over an
empty selection raises ``ValueError``). Elements that are not stored take
part as the fill value: a row of ``n`` elements with ``c`` stored ones
reduces its stored values together with ``n - c`` copies of the fill value
(computed in closed form: ``fill * k`` for a sum, ``fill ** k`` for a
product, once for max/min/any/all).

Reducing every sparse dimension returns a dense array of the device (of the
kept dense dimensions; 0-d for a full reduction), as torch's
``sparse.sum`` and TF's ``sparse.reduce_sum`` do; otherwise the result is a
sparse COO array over the kept dimensions, whose fill value is the
reduction of the fill value over the reduced elements and which stores no
entry equal to it (pydata sparse).

One module per job:

* :mod:`~gpusparse.ops.reductions.folds`: ``reduce`` (any associative
  ufunc), ``sum``, ``prod``, ``max``, ``min``.
* :mod:`~gpusparse.ops.reductions.truth`: ``any``, ``all``,
  ``count_nonzero``.
* :mod:`~gpusparse.ops.reductions.moments`: ``mean``, ``var``, ``std``.
* :mod:`~gpusparse.ops.reductions.nan_aware`: ``nansum``, ``nanprod``,
  ``nanmax``, ``nanmin``, ``nanmean``, ``nanvar``, ``nanstd``.
* :mod:`~gpusparse.ops.reductions.arg_extremes`: ``argmax``, ``argmin``,
  ``nanargmax``, ``nanargmin``.
* :mod:`~gpusparse.ops.reductions.engine`: the engine every fold runs
  (segments of the kept coordinates, ``segment_reduce``, the CSR/CSC and
  reduce-by-key paths), on :mod:`~gpusparse.ops.reductions.monoid` (how a
  ufunc folds values and ``k`` copies of the fill value),
  :mod:`~gpusparse.ops.reductions.segments` (grouping entries by kept
  coordinates) and :mod:`~gpusparse.ops.reductions.results` (sparse or
  dense results, ``keepdims``).
* :mod:`~gpusparse.ops.reductions.arguments`: ``axis``, ``out``/``where``
  and dtype arguments.
"""

from __future__ import annotations

from gpusparse.ops.reductions.arg_extremes import argmax, argmin, nanargmax, nanargmin
from gpusparse.ops.reductions.arguments import normalize_axes
from gpusparse.ops.reductions.folds import max, min, prod, reduce, sum
from gpusparse.ops.reductions.moments import mean, std, var
from gpusparse.ops.reductions.nan_aware import nanmax, nanmean, nanmin, nanprod, nanstd, nansum, nanvar
from gpusparse.ops.reductions.truth import all, any, count_nonzero

__all__ = [
    "all",
    "any",
    "argmax",
    "argmin",
    "count_nonzero",
    "max",
    "mean",
    "min",
    "nanargmax",
    "nanargmin",
    "nanmax",
    "nanmean",
    "nanmin",
    "nanprod",
    "nanstd",
    "nansum",
    "nanvar",
    "prod",
    "reduce",
    "std",
    "sum",
    "var",
]
