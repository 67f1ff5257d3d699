"""What every sparse container shares: metadata, conversions, protocols."""

from __future__ import annotations

import abc
import functools
import math
import operator

import numpy as np

from gpusparse._device import Device
from gpusparse.containers._bound import ops
from gpusparse.containers._inplace import InPlaceMixin, write_lock

__all__ = ["SparseArray", "read_only"]

#: Results kept per cached operation (reshape, transpose, asformat), most recent first (pydata's length).
CACHE_SIZE = 3


def read_only(component):
    """``component`` as the accessors hand it out: a read-only view of a NumPy array.

    Writing through a container's ``coords``, ``indptr``, ``indices`` or
    ``data`` would change an array behind its validation and its flags, so
    on the CPU the accessors return views that refuse writes. (CuPy has no
    read-only arrays; CUDA components are returned as they are.)
    """
    if isinstance(component, np.ndarray) and component.flags.writeable:
        component = component.view()
        component.flags.writeable = False
    return component


def _lookup(entries, key):
    """The result cached under ``key`` among ``entries`` ((key, result, state) tuples) if it still holds that state."""
    for cached_key, result, state in entries:
        if cached_key == key and result.__dict__ is state:
            return result
    return None


class _Uncacheable:
    """A key equal to nothing (not even itself): arguments that are no tuple of integers are never cached."""

    def __eq__(self, other):
        return False

    __hash__ = None


def _hashable(arguments):
    """``arguments`` (None, an integer or a sequence of integers) as a tuple of Python ints, or a key equal to nothing."""
    if arguments is None:
        return None
    try:
        if isinstance(arguments, (int, np.integer)):
            return (operator.index(arguments),)
        return tuple(operator.index(a) for a in arguments)
    except TypeError:
        return _Uncacheable()


class SparseArray(InPlaceMixin, abc.ABC):
    """Base class of :class:`~gpusparse.COO`, :class:`~gpusparse.CSR` and :class:`~gpusparse.CSC`.

    A sparse array has ``sparse_dim`` leading sparse dimensions and
    ``dense_dim`` trailing dense ones (torch's *hybrid* layout): each stored
    entry holds a dense block of shape ``shape[sparse_dim:]``. Elements that
    are not stored equal :attr:`fill_value`. Containers hold data; every
    operation lives in ``gpusparse.ops`` and the methods forward to it.
    """

    format: str = ""

    _shape: tuple
    _fill_value: np.generic
    _device: Device

    def __init_subclass__(cls, **kwargs):
        """Follow each format's ``_set`` -- where every array, new or a result, gets its state -- by :meth:`_built`."""
        super().__init_subclass__(**kwargs)
        set_state = cls.__dict__.get("_set")
        if set_state is not None:
            @functools.wraps(set_state)
            def _set(self, *args, **kw):
                set_state(self, *args, **kw)
                self._built()
            cls._set = _set

    def _built(self) -> None:
        """The checks run on every array built: the ``warn_on_too_dense`` option (see ``gpusparse.set_options``).

        Metadata only (nnz, dtype sizes, shape): no pass over the data and
        no synchronisation.
        """
        from gpusparse._options import get_option
        if not get_option("warn_on_too_dense"):
            return
        dense = math.prod(self._shape) * self._data.dtype.itemsize
        if dense and self.nbytes >= dense:
            from gpusparse._errors import warn_efficiency
            warn_efficiency(
                f"a {type(self).__name__} of shape {self._shape} with {self._data.shape[0]} stored entries "
                f"takes {self.nbytes} bytes, its dense form {dense}: a dense array would be smaller "
                "(warn_on_too_dense is on)"
            )

    # -- caching (pydata's enable_caching) -------------------------------
    def enable_caching(self) -> None:
        """Remember the results of :meth:`reshape`, :meth:`transpose` (and :attr:`T`) and :meth:`asformat`
        (:meth:`tocsr`, :meth:`tocsc`, :meth:`tocoo`), as pydata sparse's ``COO.enable_caching``.

        While caching is on, calling one of these again with the same
        arguments returns the *same object* as the first call, without
        computing it again: iterative code that converts one operand over
        and over (``x.tocsr()`` in a loop, a ``tensordot`` that reshapes and
        transposes) pays once. The last :data:`CACHE_SIZE` (3) results of
        each operation are kept, keyed by its arguments.

        Memory: each cached result -- its component arrays, often a full
        copy of this array's (a CSC of a CSR) -- stays alive as long as this
        array holds its value, even where the caller dropped it. Up to
        three reshapes, three transposes and two formats may be held.

        The cache belongs to the array's value: an in-place operation
        (``x += 1``, ``x.copy_(y)``, ``x.t_()``, ...) drops every cached
        result, and caching stays on for the new value. A cached result
        changed in place itself is not handed out again (it is computed
        anew). A pickled or copied array starts without a cache. Threads
        may fill the cache at the same time: two of them may compute one
        result twice, but each call returns a result of the value it
        started on. Calling ``enable_caching`` again keeps what is cached.

        Examples
        --------
        >>> import gpusparse as gs
        >>> x = gs.COO([[0, 1], [1, 0]], [1.0, 2.0], shape=(2, 2), device="cpu")
        >>> x.enable_caching()
        >>> x.tocsr() is x.tocsr(), x.reshape(4) is x.reshape((4,)), x.T is x.transpose()
        (True, True, True)
        >>> csr = x.tocsr()
        >>> x *= 3  # a new value: the cache is dropped
        >>> x.tocsr() is csr, x.tocsr().data
        (False, array([3., 6.]))
        """
        with write_lock(self):  # the state dictionary is replaced, never changed (see containers._inplace)
            if self.__dict__.get("_cache") is None:
                self.__dict__ = {**self.__dict__, "_cache": {}}

    enable_caching.__pinned__ = True  # runs on the array itself, not on a pinned alias

    def _cached(self, operation: str, key, compute):
        """``compute()``, or the result cached for ``(operation, key)`` while caching is on.

        ``self`` is the array or a pinned alias of it: both see the state
        dictionary, and the cache in it, of one moment. A cached result is
        handed out only while it still holds the state it was cached with.
        """
        cache = self.__dict__.get("_cache")
        if cache is None or isinstance(key, _Uncacheable):
            return compute()
        found = _lookup(cache.get(operation, ()), key)
        if found is not None:
            return found
        result = compute()
        if result is self or not isinstance(result, SparseArray):
            return result
        entries = cache.get(operation, ())
        found = _lookup(entries, key)  # another thread cached it meanwhile: hand out that one
        if found is not None:
            return found
        kept = tuple(e for e in entries if e[0] != key)[:CACHE_SIZE - 1]
        cache[operation] = ((key, result, result.__dict__),) + kept  # one assignment of a new tuple
        return result

    def __getstate__(self):
        """The state to pickle or copy: everything but the cache of :meth:`enable_caching`."""
        state = self.__dict__
        if "_cache" in state:
            state = {k: v for k, v in state.items() if k != "_cache"}
        return state

    # -- metadata --------------------------------------------------------
    @property
    def shape(self) -> tuple:
        """The array's shape, sparse dimensions first."""
        return self._shape

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        """Number of elements, stored or not (``prod(shape)``)."""
        return math.prod(self._shape)

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def device(self) -> Device:
        """Where the components live; operations run there."""
        return self._device

    @property
    def fill_value(self):
        """The value of every element that is not stored."""
        return self._fill_value

    @property
    def dense_dim(self) -> int:
        """Number of trailing dense dimensions (torch's ``dense_dim()``)."""
        return self.data.ndim - 1

    @property
    def sparse_dim(self) -> int:
        """Number of leading sparse dimensions (torch's ``sparse_dim()``)."""
        return self.ndim - self.dense_dim

    @property
    def nnz(self) -> int:
        """Number of stored entries (duplicates counted, as torch's ``_nnz()``)."""
        return int(self.data.shape[0])

    @property
    def density(self) -> float:
        """Stored elements over all elements (``nan`` for a 0-size array)."""
        stored = self.nnz * math.prod(self._shape[self.sparse_dim:])
        return stored / self.size if self.size else float("nan")

    @property
    @abc.abstractmethod
    def nbytes(self) -> int:
        """Bytes held by the component arrays."""

    # -- validation -----------------------------------------------------
    def check(self) -> None:
        """Validate the components again, as the constructors do with ``check=True``.

        Components are shared with the arrays they were built from, so a
        caller can change them after construction (``edge_index += offset``
        on a tensor the array was built from), and ``check=False`` skips the
        validation altogether. Operations on such an array never read or
        write outside its buffers, but their results are unspecified; call
        ``check()`` after changing shared buffers (SciPy's
        ``check_format``). It checks coordinates (COO) or ``indptr`` and
        ``indices`` (CSR/CSC) against the shape, and the order the array
        claims (a coalesced COO, canonical CSR/CSC). One or two passes over
        the components and one synchronisation on CUDA.

        Raises
        ------
        ValueError
            Naming the first problem found.

        Examples
        --------
        >>> import numpy as np, gpusparse as gs
        >>> coords = np.array([[0, 1], [1, 0]])
        >>> x = gs.COO(coords, [1.0, 2.0], shape=(2, 2), device="cpu")
        >>> x.check()
        >>> coords += 5  # the array shares this buffer
        >>> x.check()
        Traceback (most recent call last):
        ...
        ValueError: coords out of bounds for shape (2, 2): dimension 0 has coordinate 6 >= 2
        """
        ops._validate.check_array(self)

    # -- conversions shared by every format -----------------------------
    def values(self):
        """The stored values, shape ``(nnz, *dense_shape)`` (torch's ``values()``)."""
        return self.data

    def to_dense(self, default_value=None):
        """A dense array (NumPy or CuPy, on this device) with the unstored elements set.

        Parameters
        ----------
        default_value : scalar, optional
            Value of every element that is not stored; defaults to
            :attr:`fill_value` (TF's ``sparse_to_dense(default_value=...)``).

        Examples
        --------
        >>> import gpusparse as gs
        >>> x = gs.COO([[0, 2]], [1.0, 5.0], shape=(4,), device="cpu")
        >>> x.to_dense()
        array([1., 0., 5., 0.])
        >>> x.to_dense(default_value=-1)
        array([ 1., -1.,  5., -1.])
        """
        return ops.convert.to_dense(self, default_value)

    def todense(self):
        """A dense array with the unstored elements equal to the fill value (NumPy's name)."""
        return self.to_dense()

    def asformat(self, format: str):
        """This array in ``format`` (``"coo"``, ``"csr"`` or ``"csc"``)."""
        key = format.lower() if isinstance(format, str) else format
        return self._cached("asformat", key, lambda: self._asformat(format))

    def _asformat(self, format):
        out = ops.convert.asformat(self, format)
        if out is not self and getattr(self, "structure_trusted", False) and hasattr(out, "_trust"):
            out._trust()  # the library's kernels rearranged a trusted structure: valid, canonical, its own
        return out

    def tocoo(self):
        """This array as :class:`~gpusparse.COO`."""
        return self.asformat("coo")

    def tocsr(self):
        """This array as :class:`~gpusparse.CSR` (needs exactly two sparse dimensions)."""
        return self.asformat("csr")

    def tocsc(self):
        """This array as :class:`~gpusparse.CSC` (needs exactly two sparse dimensions)."""
        return self.asformat("csc")

    def astype(self, dtype, copy: bool = True, *, casting: str = "unsafe"):
        """This array with values (and fill value) cast to ``dtype`` under NumPy's ``casting`` rule."""
        return ops.elementwise.astype(self, dtype, casting=casting, copy=copy)

    def to(self, device):
        """This array on ``device`` (``"cpu"``, ``"cuda"``, ``"cuda:N"``); self if already there."""
        return ops.convert.to_device(self, device)

    def to_device(self, device, /, *, stream=None):
        """The array API's ``to_device``: :meth:`to`; ``stream`` must be None (the current stream is used)."""
        if stream is not None:
            raise ValueError("to_device: stream must be None; gpusparse copies on the current stream")
        return self.to(device)

    def copy(self):
        """A deep copy: new component arrays on the same device."""
        return ops.convert.copy(self)

    # -- protocols ------------------------------------------------------
    def __dlpack__(self, *args, **kwargs):
        raise BufferError(
            f"DLPack has no sparse layout, so a {type(self).__name__} cannot be exported "
            "as one tensor; export its component arrays instead (each is a NumPy or CuPy "
            "array with __dlpack__), or densify explicitly with .todense()"
        )

    def __array_namespace__(self, /, *, api_version=None):
        """The array API namespace of gpusparse arrays: the ``gpusparse`` module."""
        return ops.array_namespace(api_version)

    def _python_scalar(self, convert):
        return ops.inplace.python_scalar(self, convert)

    def __int__(self) -> int:
        return self._python_scalar(int)

    def __float__(self) -> float:
        return self._python_scalar(float)

    def __complex__(self) -> complex:
        return self._python_scalar(complex)

    def __index__(self) -> int:
        if self.dtype.kind not in "iu":
            raise TypeError(f"only integer arrays can be used as an index, not {self.dtype}")
        return self._python_scalar(int)

    def __dlpack_device__(self):
        return (2, self._device.index) if self._device.is_cuda else (1, 0)

    def __array__(self, dtype=None, copy=None):
        """``np.asarray(x)``: the dense array with the ``auto_densify`` option on, else ``RuntimeError``.

        On a CUDA device it raises even with the option on: a NumPy array
        would mean a copy to the host, which gpusparse never makes behind
        the caller's back (call ``x.todense()`` and CuPy's ``.get()``).
        """
        from gpusparse._options import get_option
        if not get_option("auto_densify"):
            raise RuntimeError(
                "gpusparse does not densify implicitly; call .todense() to get a dense array "
                "(or switch auto-densify on: gpusparse.set_options(auto_densify=True) or "
                "GPUSPARSE_AUTO_DENSIFY=1); for a product with a SciPy sparse matrix on the left, "
                "write gs.matmul(scipy_matrix, x)"
            )
        if self._device.is_cuda:
            raise RuntimeError(
                f"this array is on {self._device}: a NumPy array would copy it to the host; call "
                ".todense() for a dense array on the device, and its .get() for a NumPy one"
            )
        if copy is False:
            raise ValueError("densifying a sparse array makes a new array; copy=False cannot be honoured")
        dense = self.todense()
        return dense if dtype is None else dense.astype(dtype, copy=False)

    def __len__(self) -> int:
        """The length of the first axis; ``TypeError`` for a 0-d array (NumPy's rule)."""
        if not self._shape:
            raise TypeError("len() of a 0-d sparse array")
        return self._shape[0]

    def __bool__(self) -> bool:
        """The element's truth for a one-element array; ``ValueError`` otherwise, as NumPy.

        ``if a == b:`` therefore raises for arrays of several elements: use
        ``(a == b).all()`` (or ``.any()``). Reads one value from the device.
        """
        return ops.inplace.truth(self)

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__}: shape={self._shape}, dtype={self.dtype.name}, "
            f"nnz={self.nnz}, sparse_dim={self.sparse_dim}, fill_value={self._fill_value.item()!r}, "
            f"device='{self._device}'{self._repr_flags()}>"
        )

    def _repr_flags(self) -> str:
        return ""

    # -- indexing and shape manipulation (gpusparse.ops.indexing, .shape)
    def __getitem__(self, key):
        """``x[key]`` with NumPy's rules on every dimension (see ``gpusparse.ops.indexing``)."""
        return ops.indexing.getitem(self, key)

    def __setitem__(self, key, value):
        raise TypeError(f"{type(self).__name__} does not support item assignment (a write could change "
                        "which elements are stored); build a new array, e.g. gpusparse.where(mask, value, x)")

    @property
    def T(self):
        """All axes reversed (a 2-D CSR becomes a CSC over the same arrays)."""
        return self._cached("transpose", None, lambda: ops.shape.permute_dims(self))

    @property
    def mT(self):
        """The last two axes swapped (the array API's ``matrix_transpose``)."""
        return ops.shape.matrix_transpose(self)

    def transpose(self, *axes):
        """Permute the axes, NumPy-style: ``x.transpose(1, 0, 2)`` or ``x.transpose((1, 0, 2))``."""
        if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
            axes = axes[0]
        axes = axes or None
        return self._cached("transpose", _hashable(axes), lambda: ops.shape.permute_dims(self, axes))

    def swapaxes(self, axis1, axis2):
        """Interchange two axes (torch's ``transpose(dim0, dim1)``)."""
        return ops.shape.swapaxes(self, axis1, axis2)

    def reshape(self, *shape):
        """The same elements in a new shape: ``x.reshape(2, -1)`` or ``x.reshape((2, -1))``."""
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = shape[0]
        return self._cached("reshape", _hashable(shape), lambda: ops.shape.reshape(self, shape))

    def squeeze(self, axis=None):
        """Remove axes of length one."""
        return ops.shape.squeeze(self, axis)

    def index_select(self, axis, index):
        """The slices ``index`` along ``axis`` (torch's ``index_select``)."""
        return ops.indexing.index_select(self, axis, index)

    def narrow(self, axis, start, length):
        """``length`` slices from ``start`` along ``axis`` (torch's ``narrow``)."""
        return ops.indexing.narrow(self, axis, start, length)

    # -- products (gpusparse.ops.linalg) ---------------------------------
    def __matmul__(self, other):
        """``self @ other`` (see ``gpusparse.ops.linalg.matmul``)."""
        return ops.linalg.matmul(self, other)

    def __rmatmul__(self, other):
        """``other @ self`` for a dense ``other``."""
        return ops.linalg.matmul(other, self)

    def dot(self, other):
        """NumPy's ``dot`` of this array with ``other`` (see ``gpusparse.ops.linalg.dot``)."""
        return ops.linalg.dot(self, other)

    # -- elementwise operations and reductions (gpusparse.ops.elementwise, .reductions)
    #: Makes CuPy's binary operators defer to the reflected ones of a sparse operand.
    __array_priority__ = 110

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """Every NumPy ufunc elementwise (``np.sin(x)``), its ``reduce``, and ``np.matmul``."""
        return ops.numpy_ufuncs.array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        """NumPy functions gpusparse implements (``np.sum``, ``np.where``, ``np.dot``, ...)."""
        return ops.numpy_functions.array_function(func, types, args, kwargs)

    def _op(self, name, *args):
        return ops.elementwise.operator(getattr(np, name), *args)

    def __add__(self, other):
        return self._op("add", self, other)

    def __radd__(self, other):
        return self._op("add", other, self)

    def __sub__(self, other):
        return self._op("subtract", self, other)

    def __rsub__(self, other):
        return self._op("subtract", other, self)

    def __mul__(self, other):
        return self._op("multiply", self, other)

    def __rmul__(self, other):
        return self._op("multiply", other, self)

    def __truediv__(self, other):
        return self._op("true_divide", self, other)

    def __rtruediv__(self, other):
        return self._op("true_divide", other, self)

    def __floordiv__(self, other):
        return self._op("floor_divide", self, other)

    def __rfloordiv__(self, other):
        return self._op("floor_divide", other, self)

    def __mod__(self, other):
        return self._op("remainder", self, other)

    def __rmod__(self, other):
        return self._op("remainder", other, self)

    def __divmod__(self, other):
        return self._op("divmod", self, other)

    def __rdivmod__(self, other):
        return self._op("divmod", other, self)

    def _power(self, other):
        """``(ufunc name, *other operands)`` of ``self ** other``."""
        if type(other) in (int, float) and other == 2:  # as ndarray's ** (np.square)
            return ("square",)
        return ("power", other)

    def __pow__(self, other):
        name, *rest = self._power(other)
        return self._op(name, self, *rest)

    def __rpow__(self, other):
        return self._op("power", other, self)

    def __and__(self, other):
        return self._op("bitwise_and", self, other)

    def __rand__(self, other):
        return self._op("bitwise_and", other, self)

    def __or__(self, other):
        return self._op("bitwise_or", self, other)

    def __ror__(self, other):
        return self._op("bitwise_or", other, self)

    def __xor__(self, other):
        return self._op("bitwise_xor", self, other)

    def __rxor__(self, other):
        return self._op("bitwise_xor", other, self)

    def __lshift__(self, other):
        return self._op("left_shift", self, other)

    def __rlshift__(self, other):
        return self._op("left_shift", other, self)

    def __rshift__(self, other):
        return self._op("right_shift", self, other)

    def __rrshift__(self, other):
        return self._op("right_shift", other, self)

    def __neg__(self):
        return self._op("negative", self)

    def __pos__(self):
        return self._op("positive", self)

    def __abs__(self):
        return self._op("absolute", self)

    def __invert__(self):
        return self._op("invert", self)

    def __eq__(self, other):
        return self._op("equal", self, other)

    def __ne__(self, other):
        return self._op("not_equal", self, other)

    def __lt__(self, other):
        return self._op("less", self, other)

    def __le__(self, other):
        return self._op("less_equal", self, other)

    def __gt__(self, other):
        return self._op("greater", self, other)

    def __ge__(self, other):
        return self._op("greater_equal", self, other)

    __hash__ = None  # elementwise == makes arrays unhashable, as NumPy's

    @property
    def real(self):
        """The real part (see ``gpusparse.ops.elementwise.real``)."""
        return ops.elementwise.real(self)

    @property
    def imag(self):
        """The imaginary part (see ``gpusparse.ops.elementwise.imag``)."""
        return ops.elementwise.imag(self)

    def conj(self):
        """The complex conjugate (see ``gpusparse.ops.elementwise.conj``)."""
        return ops.elementwise.conj(self)

    conjugate = conj

    def round(self, decimals=0):
        """Round to ``decimals`` decimals (see ``gpusparse.ops.elementwise.round``)."""
        return ops.elementwise.round(self, decimals)

    def clip(self, a_min=None, a_max=None):
        """Limit the values to ``[a_min, a_max]`` (see ``gpusparse.ops.elementwise.clip``)."""
        return ops.elementwise.clip(self, a_min, a_max)

    def prune(self):
        """This array without stored entries equal to the fill value (see ``elementwise.prune``)."""
        return ops.elementwise.prune(self)

    eliminate_zeros = prune

    def reduce(self, ufunc, axis=None, keepdims=False, **kwargs):
        """Reduce with any associative binary ufunc (see ``gpusparse.ops.reductions.reduce``)."""
        return ops.reductions.reduce(self, ufunc, axis=axis, keepdims=keepdims, **kwargs)

    def sum(self, axis=None, dtype=None, keepdims=False, **kwargs):
        """Sum over ``axis`` (see ``gpusparse.ops.reductions.sum``)."""
        return ops.reductions.sum(self, axis=axis, dtype=dtype, keepdims=keepdims, **kwargs)

    def prod(self, axis=None, dtype=None, keepdims=False, **kwargs):
        """Product over ``axis`` (see ``gpusparse.ops.reductions.prod``)."""
        return ops.reductions.prod(self, axis=axis, dtype=dtype, keepdims=keepdims, **kwargs)

    def max(self, axis=None, keepdims=False, **kwargs):
        """Maximum over ``axis`` (see ``gpusparse.ops.reductions.max``)."""
        return ops.reductions.max(self, axis=axis, keepdims=keepdims, **kwargs)

    def min(self, axis=None, keepdims=False, **kwargs):
        """Minimum over ``axis`` (see ``gpusparse.ops.reductions.min``)."""
        return ops.reductions.min(self, axis=axis, keepdims=keepdims, **kwargs)

    def mean(self, axis=None, dtype=None, keepdims=False):
        """Mean over ``axis`` (see ``gpusparse.ops.reductions.mean``)."""
        return ops.reductions.mean(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def var(self, axis=None, dtype=None, ddof=0, keepdims=False):
        """Variance over ``axis`` (see ``gpusparse.ops.reductions.var``)."""
        return ops.reductions.var(self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)

    def std(self, axis=None, dtype=None, ddof=0, keepdims=False):
        """Standard deviation over ``axis`` (see ``gpusparse.ops.reductions.std``)."""
        return ops.reductions.std(self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)

    def any(self, axis=None, keepdims=False):
        """Whether any element over ``axis`` is nonzero (see ``gpusparse.ops.reductions.any``)."""
        return ops.reductions.any(self, axis=axis, keepdims=keepdims)

    def all(self, axis=None, keepdims=False):
        """Whether every element over ``axis`` is nonzero (see ``gpusparse.ops.reductions.all``)."""
        return ops.reductions.all(self, axis=axis, keepdims=keepdims)

    def argmax(self, axis=None, keepdims=False):
        """Index of the first maximum (see ``gpusparse.ops.reductions.argmax``)."""
        return ops.reductions.argmax(self, axis=axis, keepdims=keepdims)

    def argmin(self, axis=None, keepdims=False):
        """Index of the first minimum (see ``gpusparse.ops.reductions.argmin``)."""
        return ops.reductions.argmin(self, axis=axis, keepdims=keepdims)
