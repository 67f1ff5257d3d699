"""Run-time options: ``set_options``, ``get_options``.

One option exists so far:

``auto_densify`` (bool, default False)
    An elementwise operation whose result would be dense -- for example
    ``x + y`` with a dense ``y`` whose elements differ, so that the elements
    of ``x`` that are not stored no longer share one value -- raises
    ``ValueError`` by default, since it may need far more memory than its
    operands. With ``auto_densify`` on it returns a dense NumPy or CuPy array
    instead. The environment variable ``GPUSPARSE_AUTO_DENSIFY=1`` switches
    it on for the whole process; :func:`set_options` overrides the
    environment, for the rest of the program or inside a ``with`` block.

Options live in a :class:`contextvars.ContextVar`, so a ``with`` block
changes them only for the thread (or asyncio task) that runs it.
"""

from __future__ import annotations

import contextvars
import os

__all__ = ["get_options", "set_options"]

_DEFAULTS = {"auto_densify": False}
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
        array instead of raising ``ValueError``.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.COO([[0, 2]], [1.0, 2.0], shape=(3,), device="cpu")
    >>> with gs.set_options(auto_densify=True):
    ...     x + np.arange(3.0)
    array([1., 1., 4.])
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
