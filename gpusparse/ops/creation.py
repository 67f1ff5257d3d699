"""Creating sparse arrays: from dense or foreign arrays, zeros, full, ones, eye, random, copies."""

from __future__ import annotations

import math
import warnings

import numpy as np

from gpusparse._components import place_components
from gpusparse._backend import backend
from gpusparse._device import as_device, to_host
from gpusparse._dtypes import check_value_dtype, normalize_fill_value
from gpusparse.ops import _fill, canonical, convert
from gpusparse.ops._validate import check_shape

__all__ = ["asarray", "copy", "empty_like", "eye", "fromdense", "full", "full_like", "ones", "ones_like",
           "random", "zeros", "zeros_like"]


def _finish(coo, format, device, be=None):
    """Convert a freshly made COO to the requested format (and device); ``be`` is its backend, if known."""
    out = coo if format is None else convert.asformat(coo, format, be=be)
    return out if device is None else convert.to_device(out, device)


def fromdense(dense, *, fill_value=None, sparse_dim=None, format="coo", device=None):
    """A sparse array holding the elements of ``dense`` that differ from ``fill_value``.

    Parameters
    ----------
    dense : array_like
        NumPy or CuPy array, any DLPack producer (torch, JAX), or nested lists.
    fill_value : scalar, optional
        Elements equal to it are not stored (default 0; NaN matches NaN).
    sparse_dim : int, optional
        Number of leading sparse dimensions (torch's ``to_sparse(sparse_dim)``);
        the rest become dense dimensions, and a block is stored when any of
        its elements differs from the fill value. Default: all dimensions.
    format : {"coo", "csr", "csc"}
    device : optional
        Target device; by default where ``dense`` lives.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.fromdense(np.array([[0, 1], [2, 0]]), device="cpu")
    >>> x.coords, x.data
    (array([[0, 1],
           [1, 0]]), array([1, 2]))
    """
    arrays, dev = place_components({"dense": dense}, device)
    return _from_dense_array(arrays["dense"], fill_value, sparse_dim, format, backend(dev))


def fromdense_on(dense, be, *, fill_value=None, sparse_dim=None, format="coo"):
    """:func:`fromdense` of ``dense`` onto the device of the backend ``be``."""
    arrays, _ = place_components({"dense": dense}, be.device)
    return _from_dense_array(arrays["dense"], fill_value, sparse_dim, format, be)


def _from_dense_array(arr, fill_value, sparse_dim, format, be):
    """The body of :func:`fromdense`: ``arr`` lives on ``be``'s device."""
    from gpusparse.containers import COO
    dev = be.device
    check_value_dtype(arr.dtype, "dense")
    fill = normalize_fill_value(fill_value, arr.dtype)
    ndim = arr.ndim
    sparse_dim = ndim if sparse_dim is None else int(sparse_dim)
    if not 0 <= sparse_dim <= ndim:
        raise ValueError(f"sparse_dim must be in [0, {ndim}], got {sparse_dim}")
    xp = be.xp
    with be.scope():
        differs = _differs(arr, fill, xp)
        mask = differs.any(axis=tuple(range(sparse_dim, ndim))) if sparse_dim < ndim else differs
        if sparse_dim == 0:
            mask = xp.asarray(mask).reshape(())
            coords = xp.zeros((0, int(to_host(mask))), dtype=np.int64)  # sync: 0 or 1 entry
            data = arr.reshape((1,) + arr.shape)[: coords.shape[1]].copy()  # never a view of dense
        else:
            where = xp.nonzero(mask)  # sync: the number of stored entries
            coords = xp.stack(where).astype(np.int64) if where else xp.zeros((0, 0), np.int64)
            data = xp.ascontiguousarray(arr[where])
    coo = COO._from_parts(coords, data, arr.shape, fill, dev, sorted=True, unique=True)
    return _finish(coo, format, None, be)


def zero_d_as_sparse(value):
    """A NumPy scalar or a 0-d NumPy/CuPy array as a 0-d sparse array on its device, else None.

    Full reductions return dense 0-d arrays of the device's array module;
    this lets them (and NumPy scalars) come back as operands of the
    namespace's functions. Python scalars are left alone (they stay weakly
    typed operands).

    Examples
    --------
    >>> import numpy as np
    >>> zero_d_as_sparse(np.float32(2.5)).todense()
    array(2.5, dtype=float32)
    >>> zero_d_as_sparse(2.5) is None
    True
    """
    from gpusparse._device import array_device
    if isinstance(value, np.generic):
        value = np.asarray(value)
    elif isinstance(value, (bool, int, float, complex)) or getattr(value, "ndim", None) != 0:
        return None
    try:
        dev = array_device(value)
    except TypeError:
        return None
    return fromdense(value, device=dev)


def _is_nan(value) -> bool:
    return isinstance(value, (float, complex, np.inexact)) and value != value


def _differs(arr, fill, xp):
    """Where ``arr`` is not ``fill``, NaN matching NaN; complex values compare
    part by part, so that ``nan+2j`` is still stored under a ``nan+0j`` fill."""
    if arr.dtype.kind == "c":
        fill = complex(fill)
        return _differs(arr.real, fill.real, xp) | _differs(arr.imag, fill.imag, xp)
    if _is_nan(fill):
        return ~xp.isnan(arr)
    if arr.dtype.kind == "f":  # (by bit patterns: a GPU's float32 compare flushes subnormals)
        return ~_fill.equals_exactly(arr, fill, xp, signed_zeros=False)
    return arr != fill


def asarray(obj, *, format=None, device=None, copy=None, fill_value=None):
    """Convert ``obj`` to a gpusparse array.

    Parameters
    ----------
    obj
        A gpusparse array; a sparse array of SciPy, CuPy (cupyx), torch,
        pydata sparse or JAX (BCOO), recognised without importing those
        libraries; or anything dense :func:`fromdense` accepts.
    format : {"coo", "csr", "csc"}, optional
        Output format; by default the input's (COO for dense input).
    device : optional
        Output device; by default the input's.
    copy : bool, optional
        True always copies; False raises ``ValueError`` where a copy cannot
        be avoided (dense input, a format or device change, foreign arrays
        with incompatible index dtypes); None copies only when needed.
    fill_value : scalar, optional
        For dense input, the value not stored (default 0).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> gs.asarray(np.eye(3), format="csr", device="cpu").indptr
    array([0, 1, 2, 3], dtype=int32)
    """
    from gpusparse.containers import SparseArray
    from gpusparse.ops import interop
    if isinstance(obj, SparseArray):
        out = obj if format is None else convert.asformat(obj, format)
        out = out if device is None else convert.to_device(out, device)
        if copy is False and out is not obj:
            raise ValueError("copy=False but converting the format or device requires a copy")
        return convert.copy(out) if copy and out is obj else out
    foreign = interop.from_foreign(obj, copy=copy)
    if foreign is not None:
        return _finish(foreign, format, device)
    if copy is False:
        raise ValueError("copy=False but making a sparse array from dense input always copies")
    return fromdense(obj, fill_value=fill_value, format=format or "coo", device=device)


def _nothing_stored(shape, sparse_dim, dtype, fill, dev, format):
    """A COO array (then ``format``) of ``shape`` with no stored entries and fill ``fill``."""
    from gpusparse.containers import COO
    be = backend(dev)
    xp = be.xp
    with be.scope():
        coords = xp.zeros((sparse_dim, 0), dtype=np.int64)
        data = xp.zeros((0,) + tuple(shape[sparse_dim:]), dtype=dtype)
    coo = COO._from_parts(coords, data, tuple(shape), fill, dev, sorted=True, unique=True)
    return _finish(coo, format, None, be)


def _cast_fill(value, dtype, argument="fill_value"):
    """``value`` cast to ``dtype`` as NumPy's ``full`` does (unsafe casting), as a NumPy scalar."""
    value = np.asarray(value)
    if value.ndim != 0:
        raise ValueError(f"{argument} must be a scalar for a sparse array, got an array of shape "
                         f"{value.shape}")
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return value.astype(dtype)[()]
        except (TypeError, ValueError):
            raise TypeError(f"{argument} {value[()]!r} cannot be cast to {dtype.name}") from None


def _like_format(x, format, shape):
    """The format of a ``*_like`` result: ``format``, else ``x``'s where ``shape`` allows it."""
    if format is not None:
        return format
    return x.format if x.format == "coo" or shape == x.shape or len(shape) == 2 else "coo"


def zeros(shape, dtype=np.float64, format="coo", device=None, *, fill_value=None):
    """An array of ``shape`` with no stored entries (every element is the fill value).

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.zeros((2, 3), device="cpu")
    >>> x.nnz, float(x.todense().sum())
    (0, 0.0)
    """
    shape = check_shape(shape)
    dtype = check_value_dtype(dtype, "dtype")
    return _nothing_stored(shape, len(shape), dtype, normalize_fill_value(fill_value, dtype),
                           as_device(device), format)


def full(shape, fill_value, dtype=None, format="coo", device=None):
    """An array of ``shape`` whose every element is ``fill_value``, none of them stored.

    NumPy's ``full`` (``dtype`` defaults to ``fill_value``'s, which is cast
    as NumPy casts it); pydata sparse's ``full``.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.full((2, 2), 7, device="cpu")
    >>> x.nnz, x.fill_value, x.todense()
    (0, np.int64(7), array([[7, 7],
           [7, 7]]))
    """
    shape = check_shape(shape)
    dtype = check_value_dtype(np.asarray(fill_value).dtype if dtype is None else dtype, "dtype")
    return _nothing_stored(shape, len(shape), dtype, _cast_fill(fill_value, dtype), as_device(device),
                           format)


def ones(shape, dtype=np.float64, format="coo", device=None):
    """An array of ones with nothing stored (fill value 1): ``full(shape, 1, dtype)``.

    Examples
    --------
    >>> import gpusparse as gs
    >>> gs.ones(3, device="cpu").todense()
    array([1., 1., 1.])
    """
    return full(shape, 1, dtype=np.float64 if dtype is None else dtype, format=format, device=device)


def zeros_like(x, dtype=None, format=None, device=None, *, shape=None):
    """An array of zeros like ``x``, nothing stored: fill value 0 (NumPy's, torch's, pydata's ``zeros_like``).

    The dtype, device, format and sparse/dense split of ``x`` unless given;
    see :func:`full_like`.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 2]], [1.0, 2.0], shape=(3,), fill_value=5.0, device="cpu")
    >>> z = gs.zeros_like(x)
    >>> z.nnz, z.fill_value, z.todense()
    (0, np.float64(0.0), array([0., 0., 0.]))
    """
    return full_like(x, 0, dtype=dtype, format=format, device=device, shape=shape)


def empty_like(x, dtype=None, format=None, device=None, *, shape=None):
    """An array like ``x`` with nothing stored and ``x``'s fill value (the cheapest "any content").

    The dtype, device, format and sparse/dense split of ``x`` unless given;
    see :func:`full_like`.
    """
    fill = x.fill_value if dtype is None else np.asarray(x.fill_value).astype(dtype)[()]
    return full_like(x, fill, dtype=dtype, format=format, device=device, shape=shape)


def full_like(x, fill_value, dtype=None, format=None, device=None, *, shape=None):
    """An array like ``x`` whose every element is ``fill_value``, none of them stored.

    NumPy's ``full_like`` and pydata sparse's: the dtype, device, format and
    sparse/dense split of ``x`` unless given; ``fill_value`` is cast to the
    dtype as NumPy casts it. With ``shape``, every dimension is sparse and
    the format is ``x``'s where the result is 2-D (else COO).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.fromdense(np.array([[0, 1], [2, 0]]), device="cpu")
    >>> y = gs.full_like(x, 5)
    >>> y.nnz, y.todense()
    (0, array([[5, 5],
           [5, 5]]))
    """
    dtype = x.dtype if dtype is None else check_value_dtype(dtype, "dtype")
    dev = x.device if device is None else as_device(device)
    if shape is None:
        shape, sparse_dim = x.shape, x.sparse_dim
    else:
        shape = check_shape(shape, "shape")
        sparse_dim = len(shape)
    return _nothing_stored(shape, sparse_dim, dtype, _cast_fill(fill_value, dtype), dev,
                           _like_format(x, format, shape))


def ones_like(x, dtype=None, format=None, device=None, *, shape=None):
    """An array of ones like ``x``, none of them stored: ``full_like(x, 1, ...)``.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> gs.ones_like(gs.fromdense(np.array([0.0, 3.0]), device="cpu")).todense()
    array([1., 1.])
    """
    return full_like(x, 1, dtype=dtype, format=format, device=device, shape=shape)


def copy(x):
    """A deep copy of ``x`` on its device (NumPy's ``copy``; the method ``x.copy()``).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.fromdense(np.array([0, 4]), device="cpu")
    >>> y = gs.copy(x)
    >>> y.data is x.data, y.todense()
    (False, array([0, 4]))
    """
    return convert.copy(x)


def eye(N, M=None, k=0, dtype=np.float64, format="coo", device=None):
    """A 2-D array with ones on the ``k``-th diagonal.

    Examples
    --------
    >>> import gpusparse as gs
    >>> gs.eye(3, k=1, device="cpu").todense()
    array([[0., 1., 0.],
           [0., 0., 1.],
           [0., 0., 0.]])
    """
    from gpusparse.containers import COO
    M = N if M is None else M
    N, M = check_shape((N, M), "N, M")
    dtype = check_value_dtype(dtype, "dtype")
    k = int(k)
    dev = as_device(device)
    be = backend(dev)
    xp = be.xp
    length = max(0, min(N - max(-k, 0), M - max(k, 0)))
    with be.scope():
        diag = xp.arange(length, dtype=np.int64)
        coords = xp.stack([diag + max(-k, 0), diag + max(k, 0)])
        data = xp.ones(length, dtype=dtype)
    coo = COO._from_parts(coords, data, (N, M), dtype.type(0), dev, sorted=True, unique=True)
    return _finish(coo, format, None, be)


def random(shape, density=0.01, dtype=np.float64, format="coo", device=None, *, seed=None,
           fill_value=None):
    """A random array with ``round(density * prod(shape))`` stored entries at distinct places.

    The positions are a uniformly random subset; float values are uniform
    in [0, 1), complex ones have uniform real and imaginary parts, integers
    are uniform in [1, 100) and booleans are True. Runs on ``device``.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.random((100, 100, 10), density=0.01, seed=0, device="cpu")
    >>> x.nnz, x.is_coalesced()
    (1000, True)
    """
    from gpusparse.containers import COO
    shape = check_shape(shape)
    dtype = check_value_dtype(dtype, "dtype")
    if not 0 <= density <= 1:
        raise ValueError(f"density must be in [0, 1], got {density}")
    size = math.prod(shape)
    if size >= 2**63:
        raise ValueError(f"shape {shape} has too many elements ({size}) for random()")
    nnz = int(round(density * size))
    dev = as_device(device)
    be = backend(dev)
    k, xp = be.kernels, be.xp
    with be.scope():
        rng = xp.random.default_rng(seed)
        keys = _distinct_sorted_keys(size, nnz, rng, k, xp)
        coords = k.delinearize(keys, shape)
        data = _random_values(rng, nnz, dtype, xp)
    coo = COO._from_parts(coords, data, shape, normalize_fill_value(fill_value, dtype), dev,
                          sorted=True, unique=True)
    return _finish(coo, format, None, be)


def _distinct_sorted_keys(size, nnz, rng, k, xp):
    """``nnz`` distinct keys drawn uniformly from ``range(size)``, sorted."""
    bits = canonical.key_bits((size,))
    if nnz == 0:
        return xp.zeros(0, dtype=np.int64)
    if nnz > size // 4:  # dense enough: keep a random subset of all positions
        chosen = xp.argsort(rng.random(size))[:nnz]
        return xp.sort(chosen).astype(np.int64)
    keys = xp.zeros(0, dtype=np.int64)
    while keys.shape[0] < nnz:  # draw with repeats, drop them, top up
        draw = rng.integers(0, size, size=nnz + nnz // 8 + 16, dtype=np.int64)
        merged, _ = k.sort_pairs(xp.concatenate([keys, draw]), None, bits)
        keys = xp.take(merged, k.run_starts(merged)[:-1])  # the distinct ones so far
    if keys.shape[0] > nnz:  # a uniform subset of a uniform set is uniform
        chosen = xp.sort(xp.argsort(rng.random(keys.shape[0]))[:nnz])
        keys = xp.take(keys, chosen)
    return keys


def _random_values(rng, n, dtype, xp):
    if dtype.kind == "b":
        return xp.ones(n, dtype=dtype)
    if dtype.kind in "iu":
        return rng.integers(1, 100, size=n).astype(dtype)
    if dtype.kind == "c":
        real = rng.random(n) + 1j * rng.random(n)
        return real.astype(dtype)
    return rng.random(n).astype(dtype)
