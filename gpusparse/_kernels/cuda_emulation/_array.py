"""An emulated CUDA device for the CUDA launchers: arrays and a ``cupy`` namespace.

:class:`ndarray` holds a NumPy array that stands for device memory, and
behaves like ``cupy.ndarray`` where the difference matters for testing the
CUDA path:

* it is not a NumPy array: ``np.asarray(x)`` raises as CuPy does, mixing it
  with a host array in an operation raises ``TypeError``, and the way back
  to the host is ``x.get()`` (so a silent host round trip in the CUDA path
  fails under emulation as it would on a GPU);
* reductions and scalar indexing return 0-d arrays, as CuPy's do;
* ``empty`` returns memory filled with a garbage pattern, not zeros, and
  every buffer the namespace allocates is surrounded by guard bytes that
  :func:`check_guards` verifies after each kernel launch (an out-of-bounds
  write is reported even without AddressSanitizer);
* the launches, synchronisations and allocations a GPU would see are
  reported to :mod:`~gpusparse._kernels.cuda_emulation._counting` (no-ops
  outside its ``counting()`` blocks), each launch and allocation with the
  stream current when it was made (``cupy.cuda.Stream`` and
  ``ExternalStream`` are context managers here too, and
  ``cupy.cuda.get_current_stream()`` answers as CuPy's does).

:data:`cupy` is the namespace: NumPy's functions, each taking and returning
emulated arrays, plus the parts of ``cupy.cuda`` the library uses. The
guarded allocations are :mod:`~gpusparse._kernels.cuda_emulation._guards`'s,
the streams and events :mod:`~gpusparse._kernels.cuda_emulation._streams`'s.
"""

from __future__ import annotations

import functools
import types

import numpy as np

from gpusparse._kernels.cuda_emulation import _counting
from gpusparse._kernels.cuda_emulation._guards import (
    GARBAGE_BYTE, GuardError, _allocate, _allocation_size, _root, check_guards,
)
from gpusparse._kernels.cuda_emulation._streams import (
    _Event, _ExternalStream, _Stream, current_stream_ptr, get_current_stream,
)

__all__ = ["GARBAGE_BYTE", "GuardError", "check_guards", "cupy", "current_stream_ptr", "get_current_stream",
           "ndarray"]


# --------------------------------------------------------------------------
# Arrays
# --------------------------------------------------------------------------

class _EmulatedDevice:
    id = 0

    def __repr__(self) -> str:
        return "<CUDA Device 0 (emulated)>"

    def synchronize(self) -> None:
        _counting.sync("synchronize")


_DEVICE = _EmulatedDevice()


def _host_operand_error(arr) -> TypeError:
    return TypeError(
        f"Unsupported type {type(arr)}: a host (NumPy) array cannot be mixed with device arrays; "
        "move it with cupy.asarray first (emulated CUDA device)"
    )


def _unwrap(obj, allow_host: bool = False):
    """The NumPy array behind ``obj`` (recursively in lists, tuples and dicts)."""
    if isinstance(obj, ndarray):
        return obj._a
    if isinstance(obj, np.ndarray):
        if obj.ndim and not allow_host:
            raise _host_operand_error(obj)
        return obj
    if isinstance(obj, (list, tuple)):
        items = [_unwrap(o, allow_host) for o in obj]
        return type(obj)(items) if isinstance(obj, list) else tuple(items)
    if isinstance(obj, dict):
        return {k: _unwrap(v, allow_host) for k, v in obj.items()}
    return obj


def _wrap(obj, inputs=()):
    """Device arrays for the NumPy arrays and scalars in ``obj``.

    An array that is one of ``inputs``' own arrays (a function that made no
    copy) comes back as that same device array, as CuPy returns its input.
    """
    if isinstance(obj, np.ndarray):
        for given in inputs:
            if isinstance(given, ndarray) and given._a is obj:
                return given
        return ndarray(obj)
    if isinstance(obj, np.generic):
        return ndarray(np.asarray(obj))
    if isinstance(obj, tuple):
        return tuple(_wrap(o, inputs) for o in obj)
    if isinstance(obj, list):
        return [_wrap(o, inputs) for o in obj]
    return obj


# CuPy raises no floating-point warnings (a GPU has no such flags): neither
# does the emulation.
_quiet = functools.partial(np.errstate, all="ignore")


_OPERANDS = (np.ndarray, np.generic, int, float, complex, bool)

# What the counting hooks need to know about calls (see _counting).
#: Methods that read the array back to the host.
_HOST_READS = frozenset({"item", "tolist", "tobytes"})
#: Methods and functions that write into an existing array (a launch without a new allocation).
_INPLACE_METHODS = frozenset({"fill", "sort", "put", "partition", "itemset", "setfield"})
_INPLACE_FUNCTIONS = frozenset({"copyto", "put", "place", "putmask", "put_along_axis", "fill_diagonal", "at"})
#: Functions that allocate without launching a kernel.
_NO_KERNEL = frozenset({"empty", "empty_like"})
#: Functions whose output size CuPy reads back from the device (a blocking sync).
_SIZE_QUERIES = frozenset({
    "nonzero", "flatnonzero", "argwhere", "extract", "compress", "trim_zeros", "bincount", "histogram",
    "unique", "unique_values", "unique_counts", "unique_inverse", "unique_all",
    "intersect1d", "union1d", "setdiff1d", "setxor1d",
})


def _writes(name: str, kwargs) -> bool:
    return name in _INPLACE_FUNCTIONS or kwargs.get("out") is not None


def _blocking(name: str, args, kwargs) -> bool:
    """Whether CuPy needs a device-to-host read to size the output of ``name(*args, **kwargs)``."""
    if name in _SIZE_QUERIES:
        return True
    if name == "where":
        return len(args) == 1 and "x" not in kwargs
    if name == "repeat":
        repeats = args[1] if len(args) > 1 else kwargs.get("repeats")
        return isinstance(repeats, ndarray) and repeats.ndim > 0 and repeats.size > 1
    return False


def _key_parts(key):
    return key if isinstance(key, tuple) else (key,)


def _advanced(key) -> bool:
    """Whether an index is advanced (arrays or lists: a gather kernel) rather than basic (a view)."""
    return any(isinstance(k, (ndarray, np.ndarray, list)) for k in _key_parts(key))


def _has_mask(key) -> bool:
    """Whether an index holds a boolean mask (its number of True values sizes the result)."""
    for k in _key_parts(key):
        dtype = getattr(k, "dtype", None)
        if isinstance(k, (ndarray, np.ndarray)) and dtype == np.bool_:
            return True
        if isinstance(k, list) and k and all(isinstance(v, (bool, np.bool_)) for v in k):
            return True
    return False


def _wrapped_method(name):
    def method(self, *args, **kwargs):
        if args and not isinstance(args[0], _OPERANDS + (ndarray,)):
            return NotImplemented  # another array type (a sparse array, ...) answers
        with _counting.call(name, (self, args)), _quiet():
            return _wrap(getattr(self._a, name)(*_unwrap(args), **_unwrap(kwargs)), (self,))
    method.__name__ = name
    return method


def _inplace_method(name):
    def method(self, other):
        if not isinstance(other, _OPERANDS + (ndarray,)):
            return NotImplemented
        with _counting.call(name, (self, other), inplace=True), _quiet():
            getattr(self._a, name)(_unwrap(other))
        return self
    method.__name__ = name
    return method


class ndarray:
    """An array in (emulated) device memory: the counterpart of ``cupy.ndarray``."""

    __slots__ = ("_a", "__weakref__")
    __hash__ = None

    def __init__(self, array: np.ndarray):
        if not isinstance(array, np.ndarray):
            raise TypeError("emulated device arrays are made by the cupy namespace, e.g. cupy.asarray")
        object.__setattr__(self, "_a", array)
        root = _root(array)
        _counting.track_buffer(root, _allocation_size(root))

    # Host transfers ---------------------------------------------------------
    def get(self, stream=None, order="C", out=None, blocking=True):
        """A NumPy copy of the array (the device -> host transfer)."""
        _counting.sync("get", self._a.nbytes)
        if out is not None:
            out[...] = self._a
            return out
        return np.array(self._a, order=order, copy=True)

    def set(self, arr, stream=None):
        """Copy a host array into this one."""
        _counting.host_to_device(self._a.nbytes)
        self._a[...] = arr

    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            "Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a "
            "NumPy array explicitly (emulated CUDA device)."
        )

    # Attributes -------------------------------------------------------------
    @property
    def device(self):
        return _DEVICE

    @property
    def shape(self):
        return self._a.shape

    @shape.setter
    def shape(self, value):
        self._a.shape = value

    @property
    def dtype(self):
        return self._a.dtype

    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    nbytes = property(lambda self: self._a.nbytes)
    itemsize = property(lambda self: self._a.itemsize)
    strides = property(lambda self: self._a.strides)
    flags = property(lambda self: self._a.flags)
    T = property(lambda self: ndarray(self._a.T))
    mT = property(lambda self: ndarray(np.swapaxes(self._a, -1, -2)))
    base = property(lambda self: None if self._a.base is None else ndarray(self._a.base))

    @property
    def real(self):
        return ndarray(self._a.real)

    @real.setter
    def real(self, value):
        self._a.real = _unwrap(value)

    @property
    def imag(self):
        return ndarray(self._a.imag)

    @imag.setter
    def imag(self, value):
        self._a.imag = _unwrap(value)

    @property
    def data(self):
        return types.SimpleNamespace(ptr=self._a.ctypes.data, mem=_root(self._a))

    def __getattr__(self, name):
        if name.startswith("__"):  # no NumPy protocol (__array_interface__, ...) leaks through
            raise AttributeError(name)
        attr = getattr(self._a, name)
        if not callable(attr):
            return _wrap(attr)

        def method(*args, **kwargs):
            if name in _HOST_READS:
                _counting.sync(name, self._a.nbytes)
                with _quiet():
                    return attr(*_unwrap(args), **_unwrap(kwargs))
            with _counting.call(name, (self, args, kwargs), inplace=name in _INPLACE_METHODS,
                                blocking=_blocking(name, (self,) + args, kwargs)), _quiet():
                return _wrap(attr(*_unwrap(args), **_unwrap(kwargs)), (self,))
        return method

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # NumPy ufuncs over device arrays run "on the device" (CuPy does the
        # same); host arrays are refused; other array types get their turn.
        if not all(isinstance(x, _OPERANDS + (ndarray,)) for x in inputs + tuple(kwargs.get("out", ()) or ())):
            return NotImplemented
        name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
        with _counting.call(name, (inputs, kwargs), inplace=bool(kwargs.get("out")) or method == "at"), _quiet():
            result = getattr(ufunc, method)(*_unwrap(inputs), **_unwrap(kwargs))
            return _wrap(result, inputs + tuple(kwargs.get("out", ()) or ()))

    def __array_function__(self, func, types, args, kwargs):
        # NumPy functions over device arrays (np.where, np.concatenate, ...)
        # run "on the device", as CuPy's __array_function__ makes them.
        if not all(issubclass(t, (ndarray, np.ndarray)) for t in types):
            return NotImplemented
        name = func.__name__
        scope = (_counting.call(name, (args, kwargs), inplace=_writes(name, kwargs),
                                blocking=_blocking(name, args, kwargs))
                 if name not in _NO_KERNEL else _counting.call(name))
        with scope, _quiet():
            result = func(*_unwrap(args), **_unwrap(kwargs))
            return _wrap(result, tuple(args) + tuple(kwargs.values()))

    # Indexing ---------------------------------------------------------------
    def __getitem__(self, key):
        if not _advanced(key):
            # Basic indexing is a view on a GPU: no launch, no allocation.
            result = self._a[key]
            if isinstance(result, np.generic):
                result = np.asarray(result)
                _counting.track_buffer(result, count=False)
            return ndarray(result)
        with _counting.call("getitem", (self, key), blocking=_has_mask(key)):
            return _wrap(self._a[_unwrap(key, allow_host=True)])

    def __setitem__(self, key, value):
        with _counting.call("setitem", (self, key, value), inplace=True, blocking=_has_mask(key)):
            self._a[_unwrap(key, allow_host=True)] = _unwrap(value, allow_host=True)

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (_wrap(row) for row in self._a)

    # Conversions (each one a synchronising host read on a GPU) -------------
    def __bool__(self):
        _counting.sync("bool", self._a.nbytes)
        return bool(self._a)

    def __int__(self):
        _counting.sync("int", self._a.nbytes)
        return int(self._a)

    def __float__(self):
        _counting.sync("float", self._a.nbytes)
        return float(self._a)

    def __complex__(self):
        _counting.sync("complex", self._a.nbytes)
        return complex(self._a)

    def __index__(self):
        _counting.sync("index", self._a.nbytes)
        return self._a.__index__()

    def __repr__(self):
        _counting.sync("repr", self._a.nbytes)
        return repr(self._a) + "  # emulated device"

    def __str__(self):
        _counting.sync("str", self._a.nbytes)
        return str(self._a)

    def __dlpack_device__(self):
        return (2, 0)  # kDLCUDA, device 0


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
              "lshift", "rshift", "divmod"):
    setattr(ndarray, f"__{_name}__", _wrapped_method(f"__{_name}__"))
    setattr(ndarray, f"__r{_name}__", _wrapped_method(f"__r{_name}__"))
    if _name != "divmod":
        setattr(ndarray, f"__i{_name}__", _inplace_method(f"__i{_name}__"))
for _name in ("lt", "le", "eq", "ne", "gt", "ge", "neg", "pos", "abs", "invert"):
    setattr(ndarray, f"__{_name}__", _wrapped_method(f"__{_name}__"))


# --------------------------------------------------------------------------
# The cupy namespace
# --------------------------------------------------------------------------

def _device_dtype(dtype) -> np.dtype:
    """``dtype`` as CuPy takes it, or CuPy's ``ValueError``: no device array holds objects, text or dates."""
    dtype = np.dtype(dtype)
    if dtype.kind in "OSUVMm":
        raise ValueError(f"Unsupported dtype {dtype}")
    return dtype


def empty(shape, dtype=float, order="C"):
    dtype = _device_dtype(dtype)
    if order not in ("C", None):
        return ndarray(np.empty(shape, dtype=dtype, order=order))
    return ndarray(_allocate(shape, dtype))


def full(shape, fill_value, dtype=None, order="C"):
    fill = _unwrap(fill_value)
    dtype = np.asarray(fill).dtype if dtype is None else dtype
    with _counting.call("full", (fill_value,), inplace=True):
        out = empty(shape, dtype, order)
        out._a[...] = fill
    return out


def zeros(shape, dtype=float, order="C"):
    return full(shape, 0, np.dtype(dtype), order)  # np.dtype(None) is float64, as for NumPy


def ones(shape, dtype=float, order="C"):
    return full(shape, 1, np.dtype(dtype), order)


def _like(maker):
    def like(a, dtype=None, order="K", subok=None, shape=None, **kwargs):
        base = _unwrap(a, allow_host=True)
        base = np.asarray(base)
        dtype = base.dtype if dtype is None else dtype
        return maker(base.shape if shape is None else shape, dtype=dtype, **kwargs)
    return like


empty_like = _like(empty)
zeros_like = _like(zeros)
ones_like = _like(ones)


def full_like(a, fill_value, dtype=None, order="K", subok=None, shape=None):
    base = np.asarray(_unwrap(a, allow_host=True))
    return full(base.shape if shape is None else shape, fill_value, base.dtype if dtype is None else dtype)


def asarray(a, dtype=None, order=None, *, blocking=False):
    """Host -> device transfer (a copy) or a no-op for device arrays."""
    if isinstance(a, ndarray):
        if dtype is None or np.dtype(dtype) == a.dtype:
            return a
        with _counting.call("astype", (a,)):
            return ndarray(a._a.astype(dtype))
    host = np.asarray(_unwrap(a, allow_host=True), dtype=dtype, order=order)
    _device_dtype(host.dtype)
    _counting.host_to_device(host.nbytes)
    out = empty(host.shape, host.dtype)
    out._a[...] = host
    return out


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, *, blocking=False):
    host = np.array(_unwrap(obj, allow_host=True), dtype=dtype, copy=True, order=order, ndmin=ndmin)
    return asarray(host)


def asnumpy(a, stream=None, order="C", out=None, *, blocking=True):
    return a.get(order=order, out=out) if isinstance(a, ndarray) else np.asarray(a)


def get_array_module(*args):
    return cupy


def _numpy_function(name, func):
    if isinstance(func, np.ufunc):
        return _Ufunc(func)
    if name == "clip":
        func = _cupy_clip(func)
    return _device_call(name, func)


def _cupy_clip(func):
    """``clip`` as CuPy has it: a Python int bound outside an integer array's range is an ``OverflowError``.

    (NumPy moves such a bound to the end of the range instead.)
    """
    @functools.wraps(func)
    def clip(a, *args, **kwargs):
        dtype = np.dtype(getattr(a, "dtype", np.float64))
        bounds = list(args[:2]) + [kwargs.get(k) for k in ("a_min", "a_max", "min", "max")]
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            for bound in bounds:
                if type(bound) is int and not info.min <= bound <= info.max:
                    raise OverflowError(f"Python integer {bound} out of bounds for {dtype}")
        return func(a, *args, **kwargs)
    return clip


def _device_call(name, func):
    """``func`` (a NumPy function, ufunc or method) over device arrays."""
    scope_name = name.rsplit(".", 1)[-1]
    no_kernel = scope_name in _NO_KERNEL

    @functools.wraps(func)
    def call(*args, **kwargs):
        if no_kernel:
            scope = _counting.call(name)
        else:
            scope = _counting.call(name, (args, kwargs), inplace=_writes(scope_name, kwargs),
                                   blocking=_blocking(scope_name, args, kwargs))
        with scope, _quiet():
            result = func(*_unwrap(args), **_unwrap(kwargs))
            if isinstance(result, (np.random.Generator, np.random.RandomState)):
                return _Proxy(result)
            return _wrap(result, args + tuple(kwargs.values()))
    call.__name__ = name
    return call


#: The ufunc methods CuPy has, and for which ufuncs (CuPy refuses the others with NotImplementedError).
_UFUNC_METHODS = {"reduce": ("add", "multiply"), "accumulate": ("add", "multiply"), "reduceat": ("add",)}


def _unsupported_method(name, *args, **kwargs):
    raise NotImplementedError(f"`{name}` is not supported yet")


class _Ufunc:
    """A NumPy ufunc over device arrays, its methods (``reduce``, ``at``, ...) included."""

    def __init__(self, ufunc: np.ufunc):
        self._ufunc = ufunc
        self.__name__ = ufunc.__name__
        self._call = _device_call(ufunc.__name__, ufunc)

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def __getattr__(self, name):
        attr = getattr(self._ufunc, name)
        if name in _UFUNC_METHODS and self.__name__ not in _UFUNC_METHODS[name]:
            return functools.partial(_unsupported_method, f"cupy_{self.__name__}.{name}")
        return _numpy_function(f"{self.__name__}.{name}", attr) if callable(attr) else attr

    def __repr__(self) -> str:
        return f"<ufunc {self.__name__!r} (emulated device)>"


class _DeviceContext:
    """``cupy.cuda.Device``: the one emulated device, a no-op context."""

    def __init__(self, device=None):
        index = getattr(device, "id", device)
        if index not in (None, 0):
            raise ValueError(f"device {index} does not exist: the emulation has one CUDA device")
        self.id = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def use(self):
        return None

    def synchronize(self):
        _counting.sync("synchronize")


class _Runtime:
    CUDARuntimeError = RuntimeError

    @staticmethod
    def getDevice():
        return 0

    @staticmethod
    def getDeviceCount():
        return 1

    @staticmethod
    def runtimeGetVersion():
        return 0

    @staticmethod
    def getDeviceProperties(index):
        return {"name": b"emulated CUDA device (CPU)", "totalGlobalMem": 0, "multiProcessorCount": 1,
                "major": 0, "minor": 0}


class _Proxy:
    """A NumPy object (a random generator, ...) whose methods take and return device arrays."""

    def __init__(self, obj):
        object.__setattr__(self, "_obj", obj)

    def __getattr__(self, name):
        value = getattr(self._obj, name)
        return _numpy_function(name, value) if callable(value) else _wrap(value)


class _Namespace(types.ModuleType):
    """A NumPy module (``numpy``, ``numpy.random``, ``numpy.linalg``) over :class:`ndarray`."""

    def __init__(self, name, doc, module=np):
        super().__init__(name, doc)
        self._module = module

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(self._module, name)  # AttributeError for names NumPy lacks
        if isinstance(value, types.ModuleType):
            wrapped = _Namespace(f"{self.__name__}.{name}", value.__doc__, value)
        elif isinstance(value, type) or isinstance(value, np.dtype) or not callable(value):
            return value  # dtypes, scalar types, constants
        else:
            wrapped = _numpy_function(name, value)
        setattr(self, name, wrapped)
        return wrapped


cupy = _Namespace("cupy", "NumPy standing in for CuPy on the emulated CUDA device.")
cupy.__version__ = "emulated"
cupy.ndarray = ndarray
for _func in (empty, zeros, ones, full, empty_like, zeros_like, ones_like, full_like, asarray, array,
              asnumpy, get_array_module):
    setattr(cupy, _func.__name__, _func)


def ascontiguousarray(a, dtype=None):
    with _counting.call("ascontiguousarray", (a,)):
        return _wrap(np.ascontiguousarray(_unwrap(a), dtype=dtype), (a,))


cupy.ascontiguousarray = ascontiguousarray
cupy.cuda = types.SimpleNamespace(
    Device=_DeviceContext,
    runtime=_Runtime(),
    get_current_stream=get_current_stream,
    Stream=_Stream,
    ExternalStream=_ExternalStream,
    Event=_Event,
    is_available=lambda: True,
)
