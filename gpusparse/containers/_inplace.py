"""In-place operations of sparse arrays: ``x += y``, ``out=``, and torch's ``add_``, ``zero_``, ...

:class:`InPlaceMixin` is a base of :class:`~gpusparse.containers.SparseArray`.
Every method computes its result out of place (``gpusparse.ops``) and hands
it to :meth:`InPlaceMixin._assign`, the one step that makes the array hold
it; the rules (shapes, casting, formats) live in :mod:`gpusparse.ops.inplace`.

Threads
-------
An array's whole state (components, shape, fill value, flags) lives in its
instance ``__dict__``, and that dictionary is never changed once the array
is visible to a caller: :meth:`InPlaceMixin._assign` replaces it by a new
one in a single assignment, so attribute access stays a plain dictionary
lookup and a single attribute read is always one whole state's.

An operation reads several attributes over time, with the GIL released in
between (NumPy, Numba and CuPy calls), so every public method, operator and
property of the containers that reads more than one attribute runs on
*pinned* operands: at the outermost call on a thread, each sparse array
among ``self`` and the arguments (also inside lists, tuples and dicts) is
replaced by an alias object that shares the state dictionary of that moment
(:func:`pinned`). An in-place writer that replaces the state meanwhile does
not touch that dictionary, so the operation computes on one state
throughout: the old value or the new one, never a mix. Nested calls on the
same thread run without pinning again (their operands are pinned already).
A result that is an operand itself (``x.coalesce()`` of a coalesced ``x``)
is handed back as the caller's object, unless that object took a new state
meanwhile, in which case the alias (holding the value computed on) is.

Every array gets its state dictionary when it is made (:meth:`InPlaceMixin.__new__`):
CPython 3.11 would otherwise build it lazily on the first ``__dict__`` read, and
two threads' reads racing in that build corrupt memory.

Writers take a lock of their target (a re-entrant lock per array, made on
first use) around the whole operation, computation included: two in-place
operations on one array from two threads run one after the other, so the
result equals one of their serial orders. Readers never take it.
"""

from __future__ import annotations

import functools
import threading
import weakref

import numpy as np

from gpusparse.containers._bound import ops

__all__ = ["InPlaceMixin", "pinned", "write_lock"]

# --------------------------------------------------------------------------
# Pinning operands, writer locks
# --------------------------------------------------------------------------

_local = threading.local()
_locks: dict = {}
#: Re-entrant: a garbage collection inside :func:`write_lock`'s critical section can collect
#: another array, whose ``forget`` callback then takes the guard again on the same thread.
_locks_guard = threading.RLock()

#: Properties that read one attribute of the state, or none: atomic without pinning (and hot).
_ATOMIC_PROPERTIES = frozenset({
    "shape", "ndim", "size", "dtype", "device", "fill_value", "dense_dim", "nnz",
    "coords", "data", "indptr", "indices", "index_dtype", "sorted", "unique", "format",
})
#: Methods that build or fill in a state, or that only the writers call.
_NOT_PINNED = frozenset({
    "__init__", "__new__", "__init_subclass__", "__getattribute__", "__getattr__", "__setattr__",
    "__delattr__", "__class_getitem__", "__subclasshook__", "__reduce__", "__reduce_ex__",
    "__getstate__", "__setstate__", "__sizeof__", "__dir__", "__format__",
})
_MAX_NESTING = 3


def write_lock(array):
    """The re-entrant lock that in-place operations on ``array`` hold (made on first use).

    Kept beside the array, not in its state, so that replacing the state
    keeps the lock; dropped when the array is collected.
    """
    key = id(array)
    entry = _locks.get(key)
    if entry is not None and entry[0]() is array:
        return entry[1]
    with _locks_guard:
        entry = _locks.get(key)
        if entry is not None and entry[0]() is array:
            return entry[1]
        lock = threading.RLock()

        def forget(ref, key=key):
            with _locks_guard:
                if _locks.get(key, (None,))[0] is ref:
                    del _locks[key]

        _locks[key] = (weakref.ref(array, forget), lock)
        return lock


def _alias(array, aliases):
    """An object of ``array``'s class sharing its state dictionary of this moment."""
    key = id(array)
    found = aliases.get(key)
    if found is None:
        alias = object.__new__(type(array))
        alias.__dict__ = array.__dict__  # one read: the state of this moment
        found = aliases[key] = (array, alias)
    return found[1]


def _pin(value, aliases, level=0):
    if isinstance(value, InPlaceMixin):  # a sparse array (a plain class: a fast isinstance)
        return _alias(value, aliases)
    if level >= _MAX_NESTING:
        return value
    kind = type(value)
    if kind is list or kind is tuple:
        items = [_pin(v, aliases, level + 1) for v in value]
        return value if all(a is b for a, b in zip(items, value)) else kind(items)
    if kind is dict:
        # An ``out`` (``np.sum(x, out=y)`` through ``__array_function__``) must stay the caller's object.
        items = {k: v if k == "out" else _pin(v, aliases, level + 1) for k, v in value.items()}
        return value if all(items[k] is v for k, v in value.items()) else items
    return value


def _unpin(result, aliases, level=0):
    """Hand back the caller's objects for aliases in ``result`` whose state is still theirs."""
    kind = type(result)
    if kind is list or kind is tuple:
        if level >= _MAX_NESTING:
            return result
        items = [_unpin(v, aliases, level + 1) for v in result]
        return result if all(a is b for a, b in zip(items, result)) else kind(items)
    if not isinstance(result, InPlaceMixin):
        return result
    for original, alias in aliases.values():
        if result is alias:
            return original if original.__dict__ is alias.__dict__ else alias
    return result


def _sparse_outs(out):
    outs = out if isinstance(out, tuple) else (out,)
    unique = {id(o): o for o in outs if isinstance(o, InPlaceMixin)}
    return [unique[k] for k in sorted(unique)]


def pinned(method):
    """``method`` run on pinned operands (see the module's notes on threads).

    At the outermost call on a thread, ``self`` and every sparse array among
    the arguments is replaced by an alias holding its state of that moment;
    sparse arrays given as ``out=`` are not pinned but locked as writers do.
    """
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        if getattr(_local, "depth", 0):
            return method(self, *args, **kwargs)
        aliases = {}
        self_pinned = _alias(self, aliases)
        if args:
            args = _pin(args, aliases)
        locks = ()
        if kwargs:
            out = kwargs.pop("out", None)
            kwargs = _pin(kwargs, aliases)
            if out is not None:
                kwargs["out"] = out
                locks = [write_lock(o) for o in _sparse_outs(out)]
        for lock in locks:
            lock.acquire()
        _local.depth = 1
        try:
            result = method(self_pinned, *args, **kwargs)
        finally:
            _local.depth = 0
            for lock in reversed(locks):
                lock.release()
        return _unpin(result, aliases)
    run.__pinned__ = True
    return run


def writing(method):
    """``method``, an in-place operation, run holding ``self``'s write lock, its other operands pinned."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        with write_lock(self):
            depth = getattr(_local, "depth", 0)
            if depth:
                return method(self, *args, **kwargs)
            aliases = {}
            if args:
                args = _pin(args, aliases)
            if kwargs:
                kwargs = _pin(kwargs, aliases)
            _local.depth = 1
            try:
                return method(self, *args, **kwargs)
            finally:
                _local.depth = 0
    run.__pinned__ = True
    return run


def pin_methods(cls, *, writers=frozenset()):
    """Wrap ``cls``'s own public methods and dunders by :func:`pinned` (``writers`` by :func:`writing`),
    and its properties that read more than one attribute."""
    for name, value in list(vars(cls).items()):
        if name in _NOT_PINNED or (name.startswith("_") and not name.startswith("__")):
            continue
        if getattr(value, "__pinned__", False):
            continue
        if isinstance(value, property):
            if name in _ATOMIC_PROPERTIES or value.fget is None or value.fset is not None:
                continue
            setattr(cls, name, property(pinned(value.fget), doc=value.__doc__))
        elif callable(value) and not isinstance(value, (type, staticmethod, classmethod)):
            setattr(cls, name, (writing if name in writers else pinned)(value))


class InPlaceMixin:
    """NumPy's in-place operators and torch's in-place methods (each returns ``self``).

    Every subclass's own public methods, operators and multi-attribute
    properties are wrapped by :func:`pinned` when the class is made, so that
    each runs on one state of its operands (see the module's notes).
    """

    def __new__(cls, *args, **kwargs):
        """A new array whose state dictionary exists from the start (see the module's notes).

        CPython 3.11 keeps a new object's attributes in an inline values
        array and builds its ``__dict__`` from it on the first read of
        ``__dict__``. Pinning reads ``__dict__`` from many threads; a garbage
        collection inside that first build can run another thread, which
        builds a second dictionary over the same values array, and freeing
        either dictionary frees the other's values (a use after free, a
        crash later). Giving every array a real dictionary here, before any
        other thread can see the array, leaves nothing to build.
        """
        self = super().__new__(cls)
        self.__dict__ = {}
        return self

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        pin_methods(cls, writers=_WRITERS)

    def _assign(self, result, *, name="", casting="same_kind", shape=None):
        """Make this array hold ``result``; the one step of every in-place operation.

        ``result`` is checked and converted to this array's shape (NumPy's
        broadcasting of outputs; ``shape`` to require another one exactly),
        dtype (``casting`` rule) and format by
        :func:`gpusparse.ops.inplace.prepare`; then this object's whole
        state -- components, shape, fill value, flags, and anything derived
        from them -- is replaced by the result's. Nothing is written into
        the old component arrays: views taken from them before keep the
        old values. Returns ``self``.

        Readers see the old state or the new one, never a mix: the new state
        is a new ``__dict__`` put in place by one assignment, under this
        array's write lock (see the module's notes on threads).
        """
        with write_lock(self):
            result = ops.inplace.prepare(self, result, name, casting, shape)
            if result is not self:
                state = {k: v for k, v in vars(result).items() if k != "_cache"}
                if "_cache" in self.__dict__:  # enable_caching stays on; the old value's results go
                    state["_cache"] = {}
                self.__dict__ = state  # one step: the old dict is never changed
        return self

    def _iop(self, name, *args):
        """``x op= y``: NumPy's ``ufunc(x, y, out=x)``."""
        return ops.numpy_ufuncs.array_ufunc(getattr(np, name), "__call__", (self,) + args, {"out": (self,)})

    def __iadd__(self, other):
        return self._iop("add", other)

    def __isub__(self, other):
        return self._iop("subtract", other)

    def __imul__(self, other):
        return self._iop("multiply", other)

    def __itruediv__(self, other):
        return self._iop("true_divide", other)

    def __ifloordiv__(self, other):
        return self._iop("floor_divide", other)

    def __imod__(self, other):
        return self._iop("remainder", other)

    def __ipow__(self, other):
        return self._iop(*self._power(other))

    def __iand__(self, other):
        return self._iop("bitwise_and", other)

    def __ior__(self, other):
        return self._iop("bitwise_or", other)

    def __ixor__(self, other):
        return self._iop("bitwise_xor", other)

    def __ilshift__(self, other):
        return self._iop("left_shift", other)

    def __irshift__(self, other):
        return self._iop("right_shift", other)

    def __imatmul__(self, other):
        """``x @= y``: the product must have ``x``'s shape exactly and be sparse (NumPy's rule)."""
        return self._assign(self @ other, name="matmul", shape=self._shape)

    # torch's in-place methods: each returns self (see gpusparse.ops.inplace).
    def add_(self, other, *, alpha=1):
        """``self += alpha * other`` (torch's ``add_``); returns ``self``.

        Examples
        --------
        >>> import gpusparse as gs
        >>> x = gs.COO([[0, 2]], [1.0, 2.0], shape=(3,), device="cpu")
        >>> x.add_(x, alpha=2) is x, x.todense()
        (True, array([3., 0., 6.]))
        """
        return self._assign(ops.inplace.scaled(np.add, self, other, alpha), name="add_")

    def sub_(self, other, *, alpha=1):
        """``self -= alpha * other`` (torch's ``sub_``); returns ``self``."""
        return self._assign(ops.inplace.scaled(np.subtract, self, other, alpha), name="sub_")

    def mul_(self, other):
        """``self *= other`` (torch's ``mul_``); returns ``self``."""
        return self._iop("multiply", other)

    def div_(self, other, *, rounding_mode=None):
        """``self /= other`` rounded by ``rounding_mode`` (None, ``"trunc"``, ``"floor"``; torch's ``div_``)."""
        return self._assign(ops.inplace.divided(self, other, rounding_mode), name="div_")

    def floor_divide_(self, other):
        """``self //= other`` (torch's ``floor_divide_``); returns ``self``."""
        return self._iop("floor_divide", other)

    def neg_(self):
        """``self = -self`` (torch's ``neg_``); returns ``self``."""
        return self._iop("negative")

    negative_ = neg_

    def asin_(self):
        """``self = arcsin(self)`` (torch's ``asin_``; uncoalesced input is coalesced, torch refuses it)."""
        return self._iop("arcsin")

    arcsin_ = asin_

    def log1p_(self):
        """``self = log1p(self)`` (torch's ``log1p_``); returns ``self``."""
        return self._iop("log1p")

    def deg2rad_(self):
        """Degrees to radians in place (torch's ``deg2rad_``); returns ``self``."""
        return self._iop("deg2rad")

    def rad2deg_(self):
        """Radians to degrees in place (torch's ``rad2deg_``); returns ``self``."""
        return self._iop("rad2deg")

    def zero_(self):
        """Every element zero: no stored entries, fill value 0 (torch's ``zero_``); returns ``self``.

        Examples
        --------
        >>> import gpusparse as gs
        >>> x = gs.COO([[0, 2]], [1.0, 2.0], shape=(3,), fill_value=5.0, device="cpu")
        >>> x.zero_().nnz, x.fill_value
        (0, np.float64(0.0))
        """
        return self._assign(ops.inplace.emptied(self, fill_value=0), name="zero_")

    def copy_(self, src):
        """The elements of ``src`` (any format and dtype, cast unsafely; any device) in this array's
        format and dtype (torch's ``copy_``); ``src`` broadcasts to this array's shape. Returns ``self``."""
        return self._assign(ops.inplace.copied(self, src), name="copy_", casting="unsafe")

    def t_(self):
        """Transpose a 0-, 1- or 2-D array in place (torch's ``t_``); returns ``self``."""
        result = ops.inplace.transposed(self)
        return self._assign(result, name="t_", shape=result.shape)

    def transpose_(self, dim0, dim1):
        """Swap axes ``dim0`` and ``dim1`` in place (torch's ``transpose_``); returns ``self``."""
        result = ops.inplace.transposed(self, dim0, dim1)
        return self._assign(result, name="transpose_", shape=result.shape)

    def sparse_resize_(self, size, sparse_dim, dense_dim):
        """Resize keeping the stored entries (torch's ``sparse_resize_``, with its rules).

        With stored entries, ``sparse_dim`` and ``dense_dim`` must stay and
        no dimension may shrink; an array without stored entries takes any
        ``size``. New elements of grown dense dimensions hold the fill value.
        ``len(size) == sparse_dim + dense_dim``. Returns ``self``.

        Examples
        --------
        >>> import gpusparse as gs
        >>> x = gs.COO([[0, 1]], [1.0, 2.0], shape=(2,), device="cpu")
        >>> x.sparse_resize_((4,), 1, 0).shape
        (4,)
        >>> x.sparse_resize_((1,), 1, 0)
        Traceback (most recent call last):
        ...
        ValueError: sparse_resize_: shrinking the size of sparse dimensions (from [4] to [1]) of an array with stored entries is not supported (torch's rule); use sparse_resize_and_clear_ for an empty array of that size, or build a new array
        """
        result = ops.inplace.resized(self, size, sparse_dim, dense_dim)
        return self._assign(result, name="sparse_resize_", shape=result.shape)

    def sparse_resize_and_clear_(self, size, sparse_dim, dense_dim):
        """Drop every stored entry and take ``size`` (torch's ``sparse_resize_and_clear_``); returns ``self``.

        The fill value stays, so every element equals it afterwards.
        """
        result = ops.inplace.resized(self, size, sparse_dim, dense_dim, clear=True)
        return self._assign(result, name="sparse_resize_and_clear_", shape=result.shape)

    def resize_as_(self, other):
        """``sparse_resize_(other.shape, other.sparse_dim, other.dense_dim)`` (torch's ``resize_as_``)."""
        return self.sparse_resize_(other.shape, other.sparse_dim, other.dense_dim)


#: The in-place operations: run under the target's write lock (:func:`writing`).
_WRITERS = frozenset(
    name for name, value in vars(InPlaceMixin).items()
    if callable(value) and name not in _NOT_PINNED and (name.startswith("__i") or not name.startswith("_"))
)
pin_methods(InPlaceMixin, writers=_WRITERS)
