"""Run-time options: ``set_options``, ``get_options``.

``auto_densify`` (bool, default False; pydata's ``SPARSE_AUTO_DENSIFY``)
    An elementwise operation whose result would be dense -- for example
    ``x + y`` with a dense ``y`` whose elements differ, so that the elements
    of ``x`` that are not stored no longer share one value -- raises
    ``ValueError`` by default, since it may need far more memory than its
    operands. With ``auto_densify`` on it returns a dense NumPy or CuPy array
    instead, and ``np.array(x)`` / ``np.asarray(x)`` of a CPU array return
    its dense form (without the option they raise ``RuntimeError``; on a
    CUDA device they raise even with it, since a NumPy array would mean a
    copy to the host). An in-place operation (``x += dense``) still raises:
    a sparse array cannot hold a dense result.
``warn_on_too_dense`` (bool, default False; pydata's ``SPARSE_WARN_ON_TOO_DENSE``)
    Warn with :class:`~gpusparse.GpuSparseEfficiencyWarning` whenever an
    array is built -- by a constructor or as the result (or an intermediate)
    of an operation -- whose components take at least as many bytes as its
    dense form (``nbytes >= size * itemsize``; 0-size arrays excepted). The
    check reads metadata only: no pass over the data, no synchronisation.

Each option ``name`` is read from the environment variable
``GPUSPARSE_<NAME>`` (``1``/``true``/``yes``/``on`` or
``0``/``false``/``no``/``off``) for the whole process; :func:`set_options`
overrides the environment, for the rest of the program or inside a ``with``
block.

Reductions and conversions are not cached (pydata's ``enable_caching``):
a repeated ``x.sum(axis=0)`` or ``x.T`` costs what it cost the first time,
and components shared with other libraries may change behind a cache's
back (see ``SparseArray.check``). Keep a result you need again.

Options live in a :class:`contextvars.ContextVar`, so a ``with`` block
changes them only for the thread (or asyncio task) that runs it.
"""

from __future__ import annotations

import contextvars
import os

__all__ = ["get_options", "set_options"]

_DEFAULTS = {"auto_densify": False, "warn_on_too_dense": False}
_overrides: contextvars.ContextVar[dict] = contextvars.ContextVar("gpusparse_options", default={})

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


def _from_environment(name: str):
    variable = f"GPUSPARSE_{name.upper()}"
    raw = os.environ.get(variable, "").strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return _DEFAULTS[name]
    raise ValueError(f"{variable} must be one of 0/1/true/false/yes/no/on/off, got {raw!r}")


def get_options() -> dict:
    """The options in effect here: set by :func:`set_options`, else from the environment.

    Examples
    --------
    >>> import gpusparse as gs
    >>> with gs.set_options(auto_densify=True):
    ...     gs.get_options()["auto_densify"]
    True
    """
    current = _overrides.get()
    return {name: current[name] if name in current else _from_environment(name) for name in _DEFAULTS}


def get_option(name: str):
    """One option's value (see :func:`get_options`)."""
    if name not in _DEFAULTS:
        raise ValueError(f"unknown option {name!r}; options are {sorted(_DEFAULTS)}")
    current = _overrides.get()
    return current[name] if name in current else _from_environment(name)


class set_options:
    """Set options now; used as a context manager, restore them on exit.

    Parameters
    ----------
    auto_densify : bool, optional
        Let elementwise operations whose result would be dense return a dense
        array instead of raising ``ValueError``, and ``np.asarray(x)`` of a
        CPU array return its dense form.
    warn_on_too_dense : bool, optional
        Warn (``GpuSparseEfficiencyWarning``) when an array is built whose
        sparse form takes at least as much memory as its dense form.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.COO([[0, 2]], [1.0, 2.0], shape=(3,), device="cpu")
    >>> with gs.set_options(auto_densify=True):
    ...     x + np.arange(3.0)
    array([1., 1., 4.])
    >>> with gs.set_options(auto_densify=True):
    ...     np.asarray(x)
    array([1., 0., 2.])
    """

    def __init__(self, **options):
        for name, value in options.items():
            if name not in _DEFAULTS:
                raise ValueError(f"unknown option {name!r}; options are {sorted(_DEFAULTS)}")
            if not isinstance(value, (bool, int)) or isinstance(value, int) and value not in (0, 1):
                raise TypeError(f"{name} must be a bool, got {value!r}")
        self._token = _overrides.set({**_overrides.get(), **{k: bool(v) for k, v in options.items()}})

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _overrides.reset(self._token)
        return False
