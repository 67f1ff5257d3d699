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
overrides the environment, in two ways:

* ``gs.set_options(auto_densify=True)`` as a statement sets the option for
  the whole process, from then on: every thread sees it, threads started
  before it included (a ``ThreadPoolExecutor``'s workers, Dask's threaded
  scheduler, DataLoader threads). A later statement replaces it.
* ``with gs.set_options(auto_densify=True): ...`` sets it only for the code
  inside the block, in the thread (or asyncio task) that runs it -- it lives
  in a :class:`contextvars.ContextVar` -- and restores the previous value
  on exit. Other threads keep seeing the process-wide value meanwhile. Pass
  the call to ``with`` directly: an object made by ``set_options`` outside a
  ``with`` has set the process-wide value already, and entering it later
  moves the setting into the block (restoring the process-wide value).

Inside a ``with`` block, the block's values win over the process-wide
ones; a statement inside a block changes the process-wide value and lifts
the block's own setting of those options, so the statement holds at once.

Reductions and conversions are not cached (pydata's ``enable_caching``):
a repeated ``x.sum(axis=0)`` or ``x.T`` costs what it cost the first time,
and components shared with other libraries may change behind a cache's
back (see ``SparseArray.check``). Keep a result you need again.
"""

from __future__ import annotations

import contextvars
import dis
import functools
import os
import sys
import threading

__all__ = ["get_options", "set_options"]

_DEFAULTS = {"auto_densify": False, "warn_on_too_dense": False}
#: ``with set_options(...)`` blocks: local to a thread or asyncio task.
_overrides: contextvars.ContextVar[dict] = contextvars.ContextVar("gpusparse_options", default={})
#: ``set_options(...)`` statements: one process-wide dict, replaced whole (never changed in place).
_process: dict = {}
_process_lock = threading.Lock()

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
    return {name: get_option(name) for name in _DEFAULTS}


def get_option(name: str):
    """One option's value (see :func:`get_options`)."""
    if name not in _DEFAULTS:
        raise ValueError(f"unknown option {name!r}; options are {sorted(_DEFAULTS)}")
    current = _overrides.get()
    if name in current:
        return current[name]
    process = _process
    return process[name] if name in process else _from_environment(name)


_WITH_OPCODES = frozenset({"BEFORE_WITH", "SETUP_WITH", "BEFORE_ASYNC_WITH", "SETUP_ASYNC_WITH"})


@functools.lru_cache(maxsize=256)
def _enters_with(code, offset) -> "bool | None":
    """Whether the call at ``offset`` in ``code`` is the expression of a ``with`` statement.

    None where the bytecode does not tell (another interpreter).
    """
    following = [ins.opname for ins in dis.get_instructions(code) if ins.offset > offset][:3]
    if not following:
        return None
    if following[0] in _WITH_OPCODES:
        return True
    # Python 3.14: COPY 1; LOAD_SPECIAL __exit__ ...
    return following[0] == "COPY" and len(following) > 1 and following[1] == "LOAD_SPECIAL"


def _called_in_with(depth: int) -> "bool | None":
    try:
        frame = sys._getframe(depth + 1)
        return _enters_with(frame.f_code, frame.f_lasti)
    except Exception:  # noqa: BLE001 -- no frame introspection: treat as a statement
        return None


class set_options:
    """Set options for the whole process, or, as a ``with`` block, for the block only.

    ``gs.set_options(name=value)`` as a statement sets the options for
    every thread of the process from then on, threads already running
    included. ``with gs.set_options(name=value): ...`` sets them only
    inside the block and only for the thread (or asyncio task) running it
    (a :class:`contextvars.ContextVar`), restoring them on exit; other
    threads are not affected. See :mod:`gpusparse._options` for the
    environment variables and the precedence.

    Parameters
    ----------
    auto_densify : bool, optional
        Let elementwise operations whose result would be dense return a dense
        array instead of raising ``ValueError``, and ``np.asarray(x)`` of a
        CPU array return its dense form.
    warn_on_too_dense : bool, optional
        Warn (``GpuSparseEfficiencyWarning``) when an array is built whose
        sparse form takes at least as much memory as its dense form.

    Raises
    ------
    ValueError
        An unknown option name.
    TypeError
        A value that is not a bool.

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
        self._options = {k: bool(v) for k, v in options.items()}
        self._token = self._previous = None
        if _called_in_with(1):
            self._set_local()
        else:
            self._set_process_wide()

    def _set_local(self):
        self._token = _overrides.set({**_overrides.get(), **self._options})

    def _set_process_wide(self):
        global _process
        with _process_lock:
            self._previous = {name: _process.get(name, _UNSET) for name in self._options}
            _process = {**_process, **self._options}
        current = _overrides.get()
        if any(name in current for name in self._options):
            _overrides.set({k: v for k, v in current.items() if k not in self._options})

    def _undo_process_wide(self):
        global _process
        with _process_lock:
            process = dict(_process)
            for name, before in self._previous.items():
                if process.get(name, _UNSET) is self._options[name]:  # not replaced since
                    if before is _UNSET:
                        process.pop(name, None)
                    else:
                        process[name] = before
            _process = process
        self._previous = None

    def __enter__(self):
        if self._token is None:  # made outside the with statement: move the setting into the block
            self._undo_process_wide()
            self._set_local()
        return self

    def __exit__(self, *exc):
        _overrides.reset(self._token)
        self._token = None
        return False


_UNSET = object()
