"""Registering gpusparse with Dask in either import order, without importing Dask.

Dask finds what to call on a chunk through its dispatch tables
(``dask.array.dispatch``) and, in dask.distributed, its serializer families.
Both live in Dask's modules, so gpusparse can only register once those are
imported, and ``import gpusparse`` must not import them itself. Dask's own
``Dispatch.register_lazy`` cannot help: a lazy registration is a key in
Dask's table, written by code that must run first. Nor can an entry point of
the ``dask.sizeof`` group, which Dask loads when ``dask`` is imported, before
``dask.array`` exists.

So :func:`install` (called by ``import gpusparse``) does one of two things
for each of ``dask.array`` and ``distributed.protocol``:

* already imported: register at once;
* not yet: put a finder on ``sys.meta_path`` that answers for that one
  module name only. It asks the other finders for the module's spec, wraps
  the ``exec_module`` of that spec's loader (the loader keeps its type), and
  registers right after the module has run. Once every watched module has
  been seen the finder removes itself. Every other import passes through it
  with one dictionary look-up.

A registration that fails does not break the user's import of Dask: it
warns, naming the exception. ``gpusparse.dask.register()`` registers
explicitly (idempotent).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import threading
import warnings

__all__ = ["install"]

#: A watched module name -> the gpusparse module whose ``register()`` runs after it.
_WATCHED = {
    "dask.array": "gpusparse.dask._dispatch",
    "distributed.protocol": "gpusparse.dask._serialize",
}

_local = threading.local()


def _register(module_name: str) -> None:
    try:
        importlib.import_module(_WATCHED[module_name]).register()
    except Exception as exc:  # never break the user's import of Dask
        warnings.warn(f"gpusparse could not register with {module_name}: {type(exc).__name__}: {exc}",
                      RuntimeWarning, stacklevel=2)


class _Watcher(importlib.abc.MetaPathFinder):
    """Registers gpusparse right after a watched module has been executed."""

    def __init__(self, names):
        self.pending = set(names)

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.pending:
            return None
        busy = getattr(_local, "busy", None)
        if busy is None:
            busy = _local.busy = set()
        if fullname in busy:  # the look-up below, asking the other finders
            return None
        busy.add(fullname)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            busy.discard(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        run = loader.exec_module

        def exec_module(module):
            run(module)  # an exception here leaves the name watched for a later import
            try:
                del loader.exec_module
            except AttributeError:
                pass
            self.pending.discard(fullname)
            if not self.pending:
                self.remove()
            _register(fullname)

        loader.exec_module = exec_module
        return spec

    def remove(self) -> None:
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass


def install() -> None:
    """Register with what is imported, and watch for what is not (see the module docstring)."""
    pending = []
    for name in _WATCHED:
        if name in sys.modules:
            _register(name)
        else:
            pending.append(name)
    if pending and not any(isinstance(f, _Watcher) for f in sys.meta_path):
        sys.meta_path.insert(0, _Watcher(pending))
