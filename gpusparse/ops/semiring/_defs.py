"""Semirings and binary operators as python-graphblas / SuiteSparse:GraphBLAS name them.

A semiring ``<add>_<mul>`` pairs an add monoid (``plus``, ``min``, ``max``,
``lor``, ``any``) with a multiply operator (``times``, ``plus``, ``min``,
``max``, ``land``, ``pair``, ``first``, ``second``): ``first(x, y) = x``,
``second(x, y) = y``, ``pair(x, y) = 1``, ``any`` keeps any one term. The
monoid's identity is the fill value of a sparse result (and the value of a
dense result where no term exists): 0 for ``plus``, the largest value for
``min`` (``inf``; the dtype's max for integers; True for bool), the
smallest for ``max``, False for ``lor``, 0 for ``any``.

How a product is computed (:func:`plan`):

* integer and float values: in the operands' promoted dtype;
* ``lor_*`` semirings: on the operands cast to bool;
* bool values with a ``plus`` / ``min`` / ``max`` monoid: in int64 and
  compared with 0, which is GraphBLAS's bool algebra (plus and max are
  ``lor``, min and times are ``land``; no count of terms can wrap in int64).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from gpusparse._kernels import SEMIRING_ADD, SEMIRING_MUL, semiring_identity

__all__ = ["SEMIRINGS", "Plan", "Semiring", "identity", "parse", "plan"]

#: The named semirings (python-graphblas's names).
SEMIRINGS = (
    "plus_times", "min_plus", "max_plus", "max_times", "min_times", "min_max", "max_min", "lor_land",
    "plus_pair", "any_pair", "min_first", "min_second", "max_first", "max_second",
)

_NUMERIC_MULS = ("times", "plus", "min", "max", "pair", "first", "second")
_BOOL_MULS = ("land", "pair", "first", "second")


@dataclasses.dataclass(frozen=True)
class Semiring:
    """An add monoid and a multiply operator (codes of ``gpusparse._kernels``).

    >>> parse("min_plus")
    Semiring(add='min', mul='plus')
    """

    add: str
    mul: str

    @property
    def name(self) -> str:
        return f"{self.add}_{self.mul}"


def parse(semiring) -> Semiring:
    """The :class:`Semiring` a name (or a Semiring) stands for; ``ValueError`` for unknown ones.

    Every ``plus``/``min``/``max`` monoid pairs with every operator but
    ``land``; ``lor`` pairs with ``land``, ``pair``, ``first``, ``second``;
    ``any`` with ``pair``.

    >>> parse("max_second").mul
    'second'
    """
    if isinstance(semiring, Semiring):
        return semiring
    if not isinstance(semiring, str) or "_" not in semiring:
        raise ValueError(f"semiring must be a name such as 'min_plus'; got {semiring!r}")
    add, mul = semiring.lower().split("_", 1)
    ok = ((add in ("plus", "min", "max") and mul in _NUMERIC_MULS)
          or (add == "lor" and mul in _BOOL_MULS) or (add == "any" and mul == "pair"))
    if not ok or add not in SEMIRING_ADD or mul not in SEMIRING_MUL:
        raise ValueError(
            f"unknown semiring {semiring!r}; known: {', '.join(SEMIRINGS)} (and every "
            f"plus/min/max_<{'|'.join(_NUMERIC_MULS)}>, lor_<{'|'.join(_BOOL_MULS)}>)"
        )
    return Semiring(add, mul)


def identity(add: str, dtype) -> np.generic:
    """The identity of the monoid ``add`` in ``dtype``: the fill value of a result.

    >>> identity("min", np.float64), identity("max", np.int16), identity("lor", np.bool_)
    (np.float64(inf), np.int16(-32768), np.False_)
    """
    return semiring_identity(add, dtype)


@dataclasses.dataclass(frozen=True)
class Plan:
    """How to compute a product: the kernels' dtype and semiring, and the result's dtype.

    ``as_bool``: the kernels' int64 result is compared with 0 (bool values
    under a numeric monoid).
    """

    semiring: Semiring
    compute: np.dtype
    result: np.dtype
    as_bool: bool

    @property
    def fill(self):
        """The result's fill value: the monoid's identity in the result dtype."""
        value = identity(self.semiring.add, self.compute)
        return np.bool_(value != 0) if self.as_bool else value


def plan(semiring, *dtypes) -> Plan:
    """The :class:`Plan` of ``semiring`` for operands of ``dtypes``.

    >>> p = plan("plus_times", np.bool_, np.bool_)
    >>> p.compute, p.result, p.fill
    (dtype('int64'), dtype('bool'), np.False_)
    """
    sr = parse(semiring)
    dtype = np.result_type(*dtypes)
    if dtype.kind == "c":
        raise TypeError(f"semiring {sr.name}: complex values are not supported (min/max have no order there)")
    if dtype.kind not in "biuf":
        raise TypeError(f"semiring {sr.name}: unsupported dtype {dtype}")
    if sr.add == "lor":
        return Plan(sr, np.dtype(np.bool_), np.dtype(np.bool_), False)
    if dtype.kind == "b" and sr.add != "any":
        return Plan(sr, np.dtype(np.int64), np.dtype(np.bool_), True)
    return Plan(sr, dtype, dtype, False)
