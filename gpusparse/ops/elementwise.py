"""Elementwise operations: any ufunc or N-ary function, broadcasting, fill values.

:func:`elemwise` applies a function to sparse arrays, dense arrays and
scalars with NumPy broadcasting. The result's fill value is the function of
the operands' fill values (pydata sparse's rule): ``x + 1`` has fill value
``x.fill_value + 1``, ``~x`` of a bool array with fill False has fill True.

How the stored entries are found
--------------------------------
* One sparse operand: its own entries (coalesced first, unless the function
  is linear in it -- ``-x``, ``2 * x``, ``x / 4``, ``x.conj()`` -- when
  duplicates may stay: each one is mapped on its own).
* Several sparse operands: their coordinates are linearised to int64 keys
  and merged on the device (primitive ``merge_sorted``). Positions stored
  in only one operand take the other operands' fill values there. When the
  function maps the entries of each operand to the result's fill value
  wherever the other operand is unstored -- multiplication with fill 0 and
  no infinities or NaN -- only the intersection is computed, otherwise the
  union. ``x + y`` of arrays with fill 0 where either is uncoalesced is the
  concatenation of their entries (addition is linear; nothing is sorted).
* Dense operands are read at the stored coordinates. They must map the
  fill value to a single value everywhere -- ``x * dense`` with fill 0 and a
  finite ``dense`` -- otherwise the result would be dense and
  ``ValueError`` is raised, unless auto-densify is on
  (``gpusparse.set_options(auto_densify=True)`` or
  ``GPUSPARSE_AUTO_DENSIFY=1``), which returns a dense array.

Entries of the result equal to its fill value are dropped (pydata does the
same), so ``x * 0`` stores nothing.

On a GPU every function runs on the device: a NumPy ufunc or function is
replaced by the function of the same name of the device's array module.
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

import gpusparse._memory as _memory
from gpusparse._device import array_device, device_of, device_scope, kernels_for, to_host, xp_for
from gpusparse._dtypes import VALUE_DTYPES, check_value_dtype, index_dtype_for, native_dtype
from gpusparse._options import get_option
from gpusparse.ops import canonical, convert
from gpusparse.ops._broadcast import as_coo, broadcast_coo, broadcast_shapes, gather_dense, sparse_prefix
from gpusparse.ops._fill import drop, fill_mask, kept
from gpusparse.ops._merge_plan import (compressed_in_order, fused_row_merge, keys_of, keys_of_compressed,
                                       permuted, spread, union_by_sort, unravel)

__all__ = [
    "abs",
    "add",
    "astype",
    "clip",
    "conj",
    "elemwise",
    "imag",
    "isfinite",
    "isnan",
    "maximum",
    "minimum",
    "nan_to_num",
    "prune",
    "real",
    "round",
    "where",
]

_builtin_abs = abs
_builtin_round = round

#: Ufuncs linear in their single sparse argument (with scalars elsewhere):
#: duplicates of an uncoalesced array may be mapped one by one.
_LINEAR_UNARY = ("negative", "positive", "conjugate")
_LINEAR_SCALE = ("multiply",)
_LINEAR_DIVIDE = ("divide", "true_divide")


# --------------------------------------------------------------------------
# Operands
# --------------------------------------------------------------------------

class _Operand:
    """One argument of :func:`elemwise`: ``kind`` is "sparse", "dense" or "scalar"."""

    __slots__ = ("kind", "value", "name")

    def __init__(self, kind, value, name):
        self.kind, self.value, self.name = kind, value, name

    @property
    def shape(self):
        return tuple(self.value.shape)


def _is_device_array(obj) -> bool:
    """A dense array of some device (NumPy on the CPU, the GPU array module's otherwise)."""
    if isinstance(obj, np.ndarray):
        return True
    try:
        array_device(obj)
    except TypeError:
        return False
    return True


def _is_scalar(obj) -> bool:
    return obj is None or isinstance(obj, (numbers.Number, np.generic))


def classify(args, names=None):
    """Sort ``args`` into sparse, dense and scalar operands, or return None for foreign types.

    Sparse arrays of other libraries (SciPy and its GPU twin, torch, pydata, JAX)
    are converted; 0-d NumPy arrays become NumPy scalars; any other object
    gives None (so that an operator can return ``NotImplemented``).
    """
    from gpusparse.containers import SparseArray
    from gpusparse.ops import interop
    out = []
    for i, arg in enumerate(args):
        name = names[i] if names else f"operand {i}"
        if isinstance(arg, SparseArray):
            out.append(_Operand("sparse", arg, name))
        elif isinstance(arg, np.ndarray) and arg.ndim == 0:
            out.append(_Operand("scalar", arg[()], name))
        elif _is_device_array(arg):
            out.append(_Operand("dense", arg, name))
        elif _is_scalar(arg):
            out.append(_Operand("scalar", arg, name))
        else:
            foreign = interop.from_foreign(arg)
            if foreign is None:
                return None
            out.append(_Operand("sparse", foreign, name))
    return out


def device_function(func, xp):
    """``func`` for arrays of ``xp``: ``xp``'s twin of a NumPy ufunc or function."""
    if xp is np:
        return func
    name = getattr(func, "__name__", None)
    if isinstance(func, np.ufunc) or getattr(func, "__module__", "") .startswith("numpy"):
        twin = getattr(xp, name, None) if name else None
        if twin is not None:
            return twin
    return func


def _as_tuple(result):
    return result if isinstance(result, tuple) else (result,)


def _result_dtype(dt, name):
    dt = native_dtype(dt)
    if dt == np.float16:
        return np.dtype(np.float32)
    if dt not in VALUE_DTYPES:
        raise TypeError(
            f"{name} gives values of dtype {dt}, which sparse arrays cannot hold; "
            f"supported: {', '.join(d.name for d in VALUE_DTYPES)}"
        )
    return dt


# --------------------------------------------------------------------------
# The fill value of the result, and the dense check
# --------------------------------------------------------------------------

def _call(func, args, kwargs):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return func(*args, **kwargs)


def _fill_args(operands):
    """Arguments giving f(fill values): NumPy scalars for sparse operands."""
    return [op.value.fill_value if op.kind == "sparse" else op.value for op in operands]


def _host_fills(func, operands, kwargs, name):
    """``(fills, dtypes, kwargs)`` of the result on the host, NumPy semantics.

    Sparse operands enter as 0-d arrays of their dtype so that NumPy's
    promotion treats them like arrays (NEP 50); a float16 result is
    computed in float32 instead, the narrowest float sparse arrays hold.
    """
    args = [np.asarray(op.value.fill_value) if op.kind == "sparse" else
            (np.zeros((), op.value.dtype) if op.kind == "dense" else op.value) for op in operands]
    result = _as_tuple(_call(func, args, kwargs))
    dtypes = [np.asarray(r).dtype for r in result]
    if any(dt == np.float16 for dt in dtypes):
        if isinstance(func, np.ufunc) and len(result) == 1 and "dtype" not in kwargs:
            kwargs = {**kwargs, "dtype": np.float32}
            result = _as_tuple(_call(func, args, kwargs))
            dtypes = [np.asarray(r).dtype for r in result]
    dtypes = [_result_dtype(dt, name) for dt in dtypes]
    fills = tuple(np.asarray(r).astype(dt)[()] for r, dt in zip(result, dtypes))
    return fills, dtypes, kwargs


def _empty_result_fills(func, operands, kwargs, name):
    """Fill values (zeros) and dtypes for a result without elements, where the fills raise.

    NumPy raises for some values (an integer to a negative power) only when
    it computes an element: a result with none gives no error there, so the
    dtypes come from 0-size operands and the fill value is irrelevant.
    """
    args = [np.empty((0,), op.value.dtype) if op.kind != "scalar" else op.value for op in operands]
    dtypes = [_result_dtype(np.asarray(r).dtype, name) for r in _as_tuple(_call(func, args, kwargs))]
    return tuple(np.zeros((), dt)[()] for dt in dtypes), dtypes


def _dense_fills(dfunc, operands, kwargs, dtypes, xp):
    """The result's fill values when dense operands take part, or None if not constant.

    ``f(fill values, dense operands)`` is evaluated over the dense operands
    (never over the full result shape); the result is sparse only if every
    element of it is the same value.
    """
    result = _as_tuple(_call(dfunc, _fill_args(operands), kwargs))
    fills = []
    for r, dt in zip(result, dtypes):
        r = xp.asarray(r).astype(dt, copy=False)
        flat = r.reshape(-1)
        if flat.size == 0:
            return None
        first = flat[:1]
        same = flat == first
        if dt.kind in "fc":
            same |= xp.isnan(flat) & xp.isnan(first)
        report = xp.concatenate([same.all().reshape(1).astype(dt), first])
        host = to_host(report)  # sync: is f(fill, dense) one value?
        if not bool(host[0]):
            return None
        fills.append(host[1])
    return tuple(fills)


def _densify(dfunc, operands, kwargs, name, shape):
    if not get_option("auto_densify"):
        raise ValueError(
            f"{name} would give a dense result of shape {shape}: a dense operand maps the "
            "fill value of the sparse operands to different values. Densify explicitly -- "
            "call .todense() on the sparse operands -- or switch auto-densify on with "
            "gpusparse.set_options(auto_densify=True) or GPUSPARSE_AUTO_DENSIFY=1"
        )
    sparse = [op.value for op in operands if op.kind == "sparse"]
    itemsize = max(np.dtype(op.value.dtype).itemsize for op in operands if op.kind in ("sparse", "dense"))
    dense = sum(_memory.nbytes(x.shape, x.dtype) for x in sparse) + math.prod(shape) * itemsize
    _memory.require(dense, sparse[0].device,
                    f"densifying the sparse operands and the dense result of shape {shape}", name)
    args = [op.value.todense() if op.kind == "sparse" else op.value for op in operands]
    result = dfunc(*args, **kwargs)
    return result


# --------------------------------------------------------------------------
# elemwise
# --------------------------------------------------------------------------

def elemwise(func, *args, **kwargs):
    """Apply ``func`` elementwise to sparse arrays, dense arrays and scalars.

    Parameters
    ----------
    func : callable
        A NumPy ufunc, or any function of arrays that the operands' array
        module broadcasts elementwise, such as ``np.where`` or a lambda. On a
        GPU, NumPy functions are replaced by the device array module's
        functions of the same name.
    *args
        gpusparse arrays (any format), sparse arrays of SciPy (or its GPU
        twin), torch, pydata or JAX, dense arrays on the operands' device,
        and scalars. Shapes broadcast as in NumPy.
    **kwargs
        Passed to ``func`` (``dtype=``, ``casting=``, ...).

    Returns
    -------
    SparseArray or tuple of SparseArray
        CSR (CSC) when every sparse operand is CSR (CSC) and the result has
        two sparse dimensions, else COO; a tuple for functions with several
        outputs (``np.divmod``). The fill value is ``func`` of the fill
        values. With auto-densify on, a result that would be dense is
        returned as a dense array.

    Raises
    ------
    ValueError
        Shapes that do not broadcast; a dense operand that would make the
        result dense (unless auto-densify is on); operands on different
        devices.
    TypeError
        Dtypes ``func`` rejects, or a result dtype sparse arrays cannot hold.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.COO([[0, 2]], [1.0, 2.0], shape=(4,), device="cpu")
    >>> y = gs.COO([[2, 3]], [10.0, 20.0], shape=(4,), device="cpu")
    >>> gs.elemwise(np.add, x, y).todense()
    array([ 1.,  0., 12., 20.])
    >>> z = gs.elemwise(np.add, x, 1)
    >>> z.fill_value, z.todense()
    (np.float64(1.0), array([2., 1., 3., 1.]))
    >>> gs.elemwise(lambda a, b: a * b + 1, x, y).fill_value
    np.float64(1.0)
    """
    operands = classify(args)
    if operands is None:
        bad = next(type(a).__name__ for a in args if classify([a]) is None)
        raise TypeError(f"elemwise: unsupported operand type {bad}")
    return apply(func, operands, kwargs)


def operator(ufunc, *args):
    """A Python operator: ``ufunc(*args)``, or ``NotImplemented`` for an operand of another type."""
    operands = classify(args)
    if operands is None:
        return NotImplemented
    return apply(ufunc, operands, {})


def _func_name(func) -> str:
    return getattr(func, "__name__", type(func).__name__)


def _zero_d_operands(operands, name):
    """Operands without a sparse one: NumPy scalars and 0-d device arrays become 0-d sparse arrays.

    So that the dense 0-d results of full reductions can be fed back, e.g.
    ``gs.isnan(x.sum())``; anything else raises ``TypeError``.
    """
    from gpusparse.ops.creation import zero_d_as_sparse
    promoted = [zero_d_as_sparse(op.value) for op in operands]
    if all(p is None for p in promoted):
        raise TypeError(f"{name}: no sparse operand")
    return [op if p is None else _Operand("sparse", p, op.name) for op, p in zip(operands, promoted)]


def apply(func, operands, kwargs, *, keep_fill_entries=False):
    """:func:`elemwise` on classified operands (see :func:`classify`)."""
    name = _func_name(func)
    sparse = [op for op in operands if op.kind == "sparse"]
    if not sparse:
        operands = _zero_d_operands(operands, name)
        sparse = [op for op in operands if op.kind == "sparse"]
    dense = [op for op in operands if op.kind == "dense"]
    dev = device_of(*(op.value for op in sparse + dense), what=tuple(op.name for op in sparse + dense))
    xp = xp_for(dev)
    shape = broadcast_shapes([op.shape for op in sparse + dense], [op.name for op in sparse + dense])
    try:
        fills, dtypes, kwargs = _host_fills(func, operands, kwargs, name)
    except (ValueError, ArithmeticError):
        if math.prod(shape):
            raise
        fills, dtypes = _empty_result_fills(func, operands, kwargs, name)  # no element to compute
    dfunc = device_function(func, xp)
    with device_scope(dev), _memory.operation(name):
        if dense and math.prod(shape):
            dense_fills = _dense_fills(dfunc, operands, kwargs, dtypes, xp)
            if dense_fills is None:
                return _densify(dfunc, operands, kwargs, name, shape)
            fills = tuple(np.asarray(f).astype(dt)[()] for f, dt in zip(dense_fills, dtypes))
        results = _sparse_result(func, dfunc, operands, kwargs, shape, fills, dtypes, dev,
                                 keep_fill_entries)
    return results if len(results) > 1 else results[0]


# --------------------------------------------------------------------------
# Computing the stored entries
# --------------------------------------------------------------------------

def _output_format(sparse, prefix):
    formats = {op.value.format for op in sparse}
    if len(formats) == 1 and prefix == 2 and formats != {"coo"}:
        return formats.pop()
    return "coo"


def _is_linear(func, operands, dtypes) -> bool:
    """Whether ``func`` is linear in its one sparse operand (others scalars, same dtype)."""
    if not isinstance(func, np.ufunc) or len(dtypes) != 1:
        return False
    kinds = [op.kind for op in operands]
    if "dense" in kinds or kinds.count("sparse") != 1:
        return False
    x = next(op.value for op in operands if op.kind == "sparse")
    if dtypes[0] != x.dtype or x.dtype == np.bool_:
        return False
    if func.__name__ in _LINEAR_UNARY and len(operands) == 1:
        return True
    if func.__name__ in _LINEAR_SCALE and len(operands) == 2:
        return True
    return func.__name__ in _LINEAR_DIVIDE and len(operands) == 2 and kinds[0] == "sparse"


def _is_concat_add(func, operands, fills, dtypes) -> bool:
    """``x + y`` / ``x - y`` of two sparse arrays with fill 0 of the result dtype, one uncoalesced."""
    if not isinstance(func, np.ufunc) or func.__name__ not in ("add", "subtract"):
        return False
    if len(operands) != 2 or any(op.kind != "sparse" for op in operands):
        return False
    if any(op.value.dtype != dtypes[0] or op.value.fill_value != 0 for op in operands):
        return False
    return any(op.value.format == "coo" and not op.value.unique for op in operands)


def _evaluate(dfunc, operands, values, coords, shape, prefix, kwargs, xp, out=None):
    """``dfunc`` at stored positions: ``values[i]`` for sparse operand i, dense ones gathered.

    ``out``: a scratch array a ufunc with one output may write its result
    into, when the shapes and dtype allow (saves an allocation).
    """
    args = []
    it = iter(values)
    for op in operands:
        if op.kind == "sparse":
            args.append(next(it))
        elif op.kind == "dense":
            args.append(gather_dense(op.value, coords, shape, prefix, xp))
        else:
            args.append(op.value)
    if out is not None and isinstance(dfunc, np.ufunc) and dfunc.nout == 1 and "out" not in kwargs \
            and "dtype" not in kwargs and all(getattr(a, "shape", out.shape) == out.shape for a in args) \
            and np.result_type(*[a.dtype if hasattr(a, "dtype") else a for a in args]) == out.dtype:
        return (dfunc(*args, out=out, **kwargs),)
    return _as_tuple(dfunc(*args, **kwargs))


_ANNIHILATED_BY_ZERO = ("multiply", "logical_and", "bitwise_and")
#: Binary ufuncs that keep an operand's entry where the other is unstored
#: (``x + 0`` is ``x``): their entries vanish there only when they are the
#: fill value, so the union is taken without testing.
_KEEPS_EACH_OPERAND = ("add", "subtract", "logical_or", "logical_xor", "bitwise_or", "bitwise_xor")


def _intersection_test(dfunc, operands, datas, coords, shape, prefix, kwargs, fills, xp, keep_fill_entries):
    """Whether the intersection of two sparse operands' entries suffices (see :func:`_vanishes`).

    Returns a bool, or a 0-d device bool for the caller to read together
    with the size of its merge plan (one sync for both). With fill entries
    dropped the union always gives the same result (entries that vanish are
    dropped), so for the functions of ``_KEEPS_EACH_OPERAND`` -- whose
    entries rarely vanish -- nothing is tested.
    """
    name = getattr(dfunc, "__name__", "")
    if not keep_fill_entries and not kwargs and len(operands) == 2 and name in _KEEPS_EACH_OPERAND:
        return False
    pending = None
    for i, data in enumerate(datas):
        v = _vanishes(dfunc, operands, i, data, coords[i], shape, prefix, kwargs, fills, xp, lazy=True)
        if v is False:
            return False
        if v is not True:
            pending = v if pending is None else pending & v
    return True if pending is None else pending


def _vanishes(dfunc, operands, which, data, coords, shape, prefix, kwargs, fills, xp, lazy=False):
    """Whether the entries of sparse operand ``which`` alone all map to the result's fill values.

    ``coords`` (the operand's coordinates in natural order) is a callable,
    called only when dense operands need gathering. ``lazy``: where the
    answer is one device reduction (a product with fill 0), return it as a
    0-d device bool instead of reading it.
    """
    n = data.shape[0]
    if n == 0:
        return True
    sparse = [o for o in operands if o.kind == "sparse"]
    name = getattr(dfunc, "__name__", "")
    if name in _ANNIHILATED_BY_ZERO and len(operands) == 2 and len(sparse) == 2 and not kwargs \
            and fills[0] == 0 and sparse[1 - which].value.fill_value == 0:
        # x * 0 is 0 unless x is infinite or NaN (and x & 0, x and 0, are 0 always).
        if data.dtype.kind not in "fc" or name != "multiply":
            return True
        # A finite sum means finite entries (an inf or NaN entry makes it inf
        # or NaN); a sum that overflows only sends us to the union: one
        # reduction instead of a mask (4M entries: 3 -> 1 ms).
        with np.errstate(all="ignore"):
            total = data.sum()
        finite = xp.isfinite(total)
        return finite if lazy else bool(to_host(finite))  # sync: does the intersection suffice?
    coords = coords() if any(o.kind == "dense" for o in operands) else None
    for stop in (min(n, 32), n):
        values = [data[:stop] if i == which else op.value.fill_value
                  for i, op in enumerate(o for o in operands if o.kind == "sparse")]
        with np.errstate(all="ignore"):
            results = _evaluate(dfunc, operands, values, None if coords is None else coords[:, :stop], shape,
                            prefix, kwargs, xp)
        ok = xp.stack([fill_mask(xp.asarray(r), f, xp).all() for r, f in zip(results, fills)]).all()
        if not bool(to_host(ok)):  # sync: does the intersection suffice?
            return False
        if stop == n:
            return True
    return True


def _merge_plan(part, dfunc, operands, kwargs, fills, shape, prefix, order, k, xp, keep_fill_entries=False,
                defer=False, force_union=False):
    """Coordinates (permuted order) and per-operand index maps of the result's candidate positions.

    Returns ``(values_of, coords, maps, present, deferred)``: ``values_of[i]``
    has the coalesced ``data`` and ``fill_value`` of operand i, ``maps[i]``
    indexes them for every output position (-1: not stored there).

    ``force_union``: the union without testing whether the intersection
    suffices. ``defer`` (two operands): the plan's size is not read. ``deferred`` is
    then ``(count, pending, perm_shape)`` -- the size as a 0-d device array,
    the device test of :func:`_intersection_test` or None -- ``coords`` are
    the merged linear keys and the maps have room for more positions than
    ``count`` (the rest undefined): the caller reads the size together with
    what it computes on the plan (:func:`_read_plan`). Otherwise
    ``deferred`` is None.
    """
    perm_shape = tuple(shape[a] for a in order)
    sparse = [op for op in operands if op.kind == "sparse"]
    keyed = [keys_of_compressed(op.value, order, k, xp) if compressed_in_order(op.value, shape, order) else
             keys_of(part(op), order, k, xp) for op in sparse]
    if any(y is None for y in keyed):
        coalesced = [canonical.coalesce(permuted(part(op), order, xp)) for op in sparse]
        coords, maps = union_by_sort(coalesced, perm_shape, k, xp)
        return coalesced, coords, maps, [False] * len(sparse), None
    how, pending = "union", None
    if len(sparse) == 2 and not force_union:
        inv = list(np.argsort(order))
        test = _intersection_test(dfunc, operands, [y.data for y in keyed],
                                  [lambda y=y: xp.ascontiguousarray(y.coords()[inv]) for y in keyed],
                                  shape, prefix, kwargs, fills, xp, keep_fill_entries)
        if isinstance(test, bool):
            how = "intersection" if test else "union"
        else:  # decided on the device: merge for the intersection, read the test with its size
            how, pending = "intersection", test
    out_keys, maps = keyed[0].keys, None
    if defer and len(sparse) == 2:
        merged, left, right, count = k.merge_sorted(out_keys, keyed[1].keys, how)
        return keyed, merged, [left, right], [how == "intersection"] * 2, (count, pending, perm_shape)
    for y in keyed[1:]:
        merged, left, right, count = k.merge_sorted(out_keys, y.keys, how)
        if pending is None:
            n_out = int(to_host(count))  # sync: size of the merged plan
        else:
            # sync: size of the intersection and whether it suffices, read together
            n_out, suffices = (int(v) for v in to_host(xp.stack([count, pending])))
            pending = None
            if not suffices:
                how = "union"
                merged, left, right, count = k.merge_sorted(out_keys, y.keys, how)
                n_out = int(to_host(count))  # sync: size of the merged plan
        merged, left, right = merged[:n_out], left[:n_out], right[:n_out]
        if maps is None:
            maps = [left, right]
        else:
            maps = [spread(m, left, -1, k, how == "intersection") for m in maps] + [right]
        out_keys = merged
    if maps is None:
        maps = [xp.arange(out_keys.shape[0], dtype=np.int64)]
    coords = unravel(out_keys, perm_shape, k, xp)
    present = [how == "intersection"] * len(sparse)
    return keyed, coords, maps, present, None


def _read_plan(deferred, keys, values, fill, k, xp):
    """The coordinates and values a deferred merge plan (see :func:`_merge_plan`) keeps, or None.

    ``values`` were computed over the whole room of the plan. One sync reads
    its size, how many of its values differ from ``fill`` and, with a
    pending test, whether the intersection sufficed (None when it did not:
    the caller plans the union). Entries equal to ``fill`` are dropped
    here (a second sync, only when there are some).
    """
    count, pending, perm_shape = deferred
    keep = ~fill_mask(values, fill, xp) & (xp.arange(values.shape[0]) < count)
    parts = [count, keep.sum()] + ([] if pending is None else [pending])
    report = [int(v) for v in to_host(xp.stack(parts))]  # sync: size of the plan, entries kept, test
    if pending is not None and not report[2]:
        return None
    n, n_keep = report[0], report[1]
    if n_keep == n:
        return unravel(keys[:n], perm_shape, k, xp), values[:n]
    index = xp.nonzero(keep)[0]  # sync: the entries kept
    return unravel(xp.take(keys, index), perm_shape, k, xp), xp.take(values, index, axis=0)


def _sparse_result(func, dfunc, operands, kwargs, shape, fills, dtypes, dev, keep_fill_entries):
    k, xp = kernels_for(dev), xp_for(dev)
    sparse = [op for op in operands if op.kind == "sparse"]
    ndim = len(shape)
    prefix = max(sparse_prefix(op.value, ndim) for op in sparse)
    fmt = _output_format(sparse, prefix)
    order = (1, 0) if fmt == "csc" else tuple(range(prefix))
    dense_shape = tuple(shape[prefix:])

    def part(op):  # the operand as COO broadcast to the result (built only where needed)
        return broadcast_coo(as_coo(op.value), shape, prefix)

    if len(sparse) == 1 and sparse[0].value.format != "coo" and sparse[0].value.shape == shape:
        return _compressed_unary(sparse[0].value, dfunc, operands, kwargs, shape, fills, dtypes,
                                 dev, keep_fill_entries)
    if len(sparse) == 1:
        x = part(sparse[0])
        if not _is_linear(func, operands, dtypes):
            x = canonical.coalesce(x)
        values = _evaluate(dfunc, operands, [x.data], x.coords, shape, prefix, kwargs, xp)
        coords, flags = x.coords, (x.sorted, x.unique)
        if fmt == "csc":
            flags = (False, x.unique)
        return tuple(_finish(coords, v, fill, dt, shape, prefix, dense_shape, flags, fmt, dev,
                             keep_fill_entries or not (x.unique or fill == 0))
                     for v, fill, dt in zip(values, fills, dtypes))

    if prefix and _is_concat_add(func, operands, fills, dtypes):
        a, b = (part(op) for op in sparse)
        b_data = -b.data if func.__name__ == "subtract" else b.data
        coords = xp.concatenate([a.coords, b.coords], axis=1)
        data = xp.concatenate([xp.broadcast_to(a.data, (a.nnz,) + dense_shape),
                               xp.broadcast_to(b_data, (b.nnz,) + dense_shape)])
        return (_finish(coords, data, fills[0], dtypes[0], shape, prefix, dense_shape,
                        (False, False), "coo", dev, keep_fill_entries),)

    if _rows_mergeable(sparse, operands, shape, order):
        return _compressed_merge(dfunc, operands, kwargs, shape, fills, dtypes, dev, keep_fill_entries)
    # One output in COO of two sparse operands: the plan's size is read with the result's (one sync).
    defer = (len(sparse) == 2 and len(fills) == 1 and fmt == "coo" and not keep_fill_entries
             and not any(op.kind == "dense" for op in operands))
    force_union = False
    while True:
        coalesced, coords, maps, present, deferred = _merge_plan(
            part, dfunc, operands, kwargs, fills, shape, prefix, order, k, xp, keep_fill_entries, defer,
            force_union)
        values = [spread(y.data, m, y.fill_value, k, p)
                  for y, m, p in zip(coalesced, maps, present)]
        inv = list(np.argsort(order))
        natural = None if deferred else coords if order == tuple(range(prefix)) else \
            xp.ascontiguousarray(coords[inv])
        scratch = values[0] if values and values[0].dtype == dtypes[0] else None  # ours: may be overwritten
        results = _evaluate(dfunc, operands, values, natural, shape, prefix, kwargs, xp, out=scratch)
        if not deferred:
            break
        v = _prepare_values(results[0], dtypes[0], maps[0].shape[0], dense_shape, xp)
        kept_part = _read_plan(deferred, coords, v, fills[0], k, xp)
        if kept_part is None:  # the intersection did not suffice: plan the union
            force_union = True
            continue
        natural, v = kept_part  # fill entries dropped already
        return (_finish(natural, v, fills[0], dtypes[0], shape, prefix, dense_shape, (True, True), fmt, dev,
                        True),)
    out = []
    for v, fill, dt in zip(results, fills, dtypes):
        if fmt == "csc":
            out.append(_finish_csc(coords, v, fill, dt, shape, dense_shape, dev, keep_fill_entries))
        else:
            out.append(_finish(natural, v, fill, dt, shape, prefix, dense_shape, (True, True), fmt, dev,
                               keep_fill_entries))
    return tuple(out)


def _rows_mergeable(sparse, operands, shape, order) -> bool:
    """Two CSR (CSC) operands of the result's shape, nothing dense: a row-by-row merge (``merge_rows``)."""
    return (len(sparse) == 2 and all(op.kind != "dense" for op in operands)
            and all(compressed_in_order(op.value, shape, order) for op in sparse)
            and math.prod(shape[:2]) < 2**63)


def _compressed_merge(dfunc, operands, kwargs, shape, fills, dtypes, dev, keep_fill_entries):
    """Two canonical CSR (CSC) operands merged row by row into CSR (CSC) results."""
    k, xp = kernels_for(dev), xp_for(dev)
    a, b = (op.value for op in operands if op.kind == "sparse")
    test = _intersection_test(dfunc, operands, [a.data, b.data], [None, None], shape, 2, kwargs, fills, xp,
                              keep_fill_entries)
    vanish = test if isinstance(test, bool) else bool(to_host(test))  # sync: does the intersection suffice?
    how = "intersection" if vanish else "union"
    fused = fused_row_merge(dfunc, operands, kwargs, fills, dtypes, how)  # CPU sum/product: one pass
    if fused is not None:
        indptr, indices, results = fused[0], fused[1], (fused[2],)
    else:
        indptr, indices, left, right = k.merge_rows(a.indptr, a.indices, b.indptr, b.indices,
                                                    shape[1 - a._major_axis], how)
        values = [spread(y.data, m, y.fill_value, k, vanish) for y, m in ((a, left), (b, right))]
        scratch = values[0] if values[0].dtype == dtypes[0] else None  # ours: may be overwritten
        results = _evaluate(dfunc, operands, values, None, shape, 2, kwargs, xp, out=scratch)
    n = int(indices.shape[0])
    index_dtype = np.promote_types(indices.dtype, index_dtype_for(n))  # the inputs' where it holds n
    indptr, indices = indptr.astype(index_dtype, copy=False), indices.astype(index_dtype, copy=False)
    out = []
    for v, fill, dt in zip(results, fills, dtypes):
        v = _prepare_values(v, dt, n, tuple(shape[2:]), xp)
        y = type(a)._from_parts(indptr, indices, v, shape, np.asarray(fill).astype(dt)[()], dev)
        out.append(y if keep_fill_entries else prune(y))
    return tuple(out)


def _compressed_unary(x, dfunc, operands, kwargs, shape, fills, dtypes, dev, keep_fill_entries):
    """One CSR/CSC operand, not broadcast: the structure is kept, only values change."""
    xp = xp_for(dev)
    coords = as_coo(x).coords if any(op.kind == "dense" for op in operands) else None
    values = _evaluate(dfunc, operands, [x.data], coords, shape, 2, kwargs, xp)
    out = []
    for v, fill, dt in zip(values, fills, dtypes):
        v = _prepare_values(v, dt, x.nnz, tuple(shape[2:]), xp)
        fill = np.asarray(fill).astype(dt)[()]
        y = type(x)._from_parts(x.indptr, x.indices, v, shape, fill, dev)
        out.append(y if keep_fill_entries else prune(y))
    return tuple(out)


def _prepare_values(values, dt, n, dense_shape, xp):
    values = xp.asarray(values)
    if values.dtype != dt:
        values = values.astype(dt)
    if values.shape != (n,) + dense_shape:
        values = xp.broadcast_to(values, (n,) + dense_shape)
    return xp.ascontiguousarray(values)


def _finish(coords, values, fill, dt, shape, prefix, dense_shape, flags, fmt, dev, keep_fill_entries):
    from gpusparse.containers import COO
    xp = xp_for(dev)
    values = _prepare_values(values, dt, coords.shape[1], dense_shape, xp)
    if not keep_fill_entries:
        coords, values = drop(coords, values, fill, xp)
    coords = xp.ascontiguousarray(coords)
    coo = COO._from_parts(coords, values, shape, np.asarray(fill).astype(dt)[()], dev,
                          sorted=flags[0], unique=flags[1])
    if fmt == "coo":
        return coo
    if fmt == "csr" and coo.is_coalesced():
        k = kernels_for(dev)
        from gpusparse.containers import CSR
        index_dtype = index_dtype_for(shape[0], shape[1], coo.nnz)
        indptr = k.compress(coords[0], shape[0], index_dtype)
        return CSR._from_parts(indptr, coords[1].astype(index_dtype), values, shape, coo.fill_value, dev)
    return coo.asformat(fmt)


def _finish_csc(coords_cm, values, fill, dt, shape, dense_shape, dev, keep_fill_entries):
    """A CSC result from column-major sorted, unique coordinates ``(col, row)``."""
    from gpusparse.containers import CSC
    k, xp = kernels_for(dev), xp_for(dev)
    values = _prepare_values(values, dt, coords_cm.shape[1], dense_shape, xp)
    if not keep_fill_entries:
        coords_cm, values = drop(coords_cm, values, fill, xp)
    index_dtype = index_dtype_for(shape[0], shape[1], values.shape[0])
    indptr = k.compress(xp.ascontiguousarray(coords_cm[0]), shape[1], index_dtype)
    indices = coords_cm[1].astype(index_dtype)
    return CSC._from_parts(indptr, xp.ascontiguousarray(indices), values, shape,
                           np.asarray(fill).astype(dt)[()], dev)


# --------------------------------------------------------------------------
# Named operations
# --------------------------------------------------------------------------

def _unary(func, x, **kwargs):
    return elemwise(func, x, **kwargs)


def abs(x):
    """Absolute value, elementwise (``np.absolute``); fill value ``abs(fill)``.

    Examples
    --------
    >>> import gpusparse as gs
    >>> gs.abs(gs.COO([[1]], [-2.0], shape=(3,), device="cpu")).todense()
    array([0., 2., 0.])
    """
    return _unary(np.absolute, x)


def isnan(x):
    """True where ``x`` is NaN (``np.isnan``); a bool sparse array.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> gs.isnan(gs.COO([[1]], [np.nan], shape=(3,), device="cpu")).todense()
    array([False,  True, False])
    """
    return _unary(np.isnan, x)


def isfinite(x):
    """True where ``x`` is finite (``np.isfinite``); fill value ``isfinite(fill)``.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> y = gs.isfinite(gs.COO([[1]], [np.inf], shape=(3,), device="cpu"))
    >>> y.fill_value, y.todense()
    (np.True_, array([ True, False,  True]))
    """
    return _unary(np.isfinite, x)


def conj(x):
    """Complex conjugate (``np.conjugate``); linear, so duplicates stay as they are.

    Examples
    --------
    >>> import gpusparse as gs
    >>> gs.conj(gs.COO([[0]], [1 + 2j], shape=(2,), device="cpu")).todense()
    array([1.-2.j, 0.-0.j])
    """
    return _unary(np.conjugate, x)


def real(x):
    """The real part (``np.real``); a real array for complex ``x``, ``x`` itself otherwise.

    Examples
    --------
    >>> import gpusparse as gs
    >>> gs.real(gs.COO([[0]], [1 + 2j], shape=(2,), device="cpu")).todense()
    array([1., 0.])
    """
    if x.dtype.kind != "c":
        return x
    return _unary(np.real, x)


def imag(x):
    """The imaginary part (``np.imag``); zeros of ``x``'s dtype for real ``x``.

    Examples
    --------
    >>> import gpusparse as gs
    >>> gs.imag(gs.COO([[0]], [1 + 2j], shape=(2,), device="cpu")).todense()
    array([2., 0.])
    """
    return _unary(np.imag, x)


def round(x, decimals: int = 0):
    """Round to ``decimals`` decimals (``np.round``: halves to even).

    Examples
    --------
    >>> import gpusparse as gs
    >>> gs.round(gs.COO([[0, 1]], [1.25, 2.5], shape=(3,), device="cpu"), 1).todense()
    array([1.2, 2.5, 0. ])
    """
    return _unary(np.round, x, decimals=_builtin_round(decimals))


def nan_to_num(x, copy: bool = True, nan=0.0, posinf=None, neginf=None):
    """Replace NaN and infinities (``np.nan_to_num``), in the fill value too.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.COO([[0, 1]], [np.nan, np.inf], shape=(3,), device="cpu")
    >>> gs.nan_to_num(x, posinf=9.0).todense()
    array([0., 9., 0.])
    """
    return _unary(np.nan_to_num, x, nan=nan, posinf=posinf, neginf=neginf)


def clip(x, a_min=None, a_max=None):
    """Limit the values to ``[a_min, a_max]`` (``np.clip``); bounds may be arrays.

    Examples
    --------
    >>> import gpusparse as gs
    >>> gs.clip(gs.COO([[0, 1]], [-5.0, 5.0], shape=(3,), device="cpu"), -1, 2).todense()
    array([-1.,  2.,  0.])
    """
    if a_min is None and a_max is None:
        raise ValueError("clip: at least one of a_min and a_max must be given")
    return elemwise(np.clip, x, a_min, a_max)


def where(condition, x, y):
    """``x`` where ``condition`` is true, else ``y`` (``np.where``), any of them sparse.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> c = gs.COO([[1]], [True], shape=(3,), device="cpu")
    >>> gs.where(c, 5.0, gs.COO([[2]], [7.0], shape=(3,), device="cpu")).todense()
    array([0., 5., 7.])
    """
    return elemwise(np.where, condition, x, y)


def maximum(x, y):
    """Elementwise maximum, NaN propagating (``np.maximum``).

    Examples
    --------
    >>> import gpusparse as gs
    >>> a = gs.COO([[0, 1]], [-1.0, 3.0], shape=(3,), device="cpu")
    >>> gs.maximum(a, 0).todense()
    array([0., 3., 0.])
    """
    return elemwise(np.maximum, x, y)


def minimum(x, y):
    """Elementwise minimum, NaN propagating (``np.minimum``).

    Examples
    --------
    >>> import gpusparse as gs
    >>> a = gs.COO([[0, 1]], [-1.0, 3.0], shape=(3,), device="cpu")
    >>> gs.minimum(a, 0).todense()
    array([-1.,  0.,  0.])
    """
    return elemwise(np.minimum, x, y)


def astype(x, dtype, casting: str = "unsafe", copy: bool = True):
    """``x`` with values and fill value cast to ``dtype`` under NumPy's ``casting`` rule.

    Parameters
    ----------
    casting : {"no", "equiv", "safe", "same_kind", "unsafe"}
        As in ``np.ndarray.astype``; a cast the rule forbids raises
        ``TypeError``.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0]], [1.5], shape=(2,), device="cpu")
    >>> gs.astype(x, "int32").todense()
    array([1, 0], dtype=int32)
    >>> gs.astype(x, "int32", casting="safe")
    Traceback (most recent call last):
        ...
    TypeError: astype: cannot cast float64 to int32 under casting='safe'
    """
    target = check_value_dtype(dtype, "dtype")
    if casting not in ("no", "equiv", "safe", "same_kind", "unsafe"):
        raise ValueError(f"casting must be 'no', 'equiv', 'safe', 'same_kind' or 'unsafe', got {casting!r}")
    if not np.can_cast(x.dtype, target, casting=casting):
        raise TypeError(f"astype: cannot cast {x.dtype} to {target} under casting={casting!r}")
    return convert.astype(x, target, copy=copy)


def prune(x):
    """``x`` without the stored entries equal to its fill value (blocks: all elements equal).

    NaN entries are dropped when the fill value is NaN. Duplicates are
    summed first unless the fill value is 0 (a stored 0 then adds
    nothing). SciPy calls this ``eliminate_zeros`` for fill value 0.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 1, 2]], [1.0, 0.0, 2.0], shape=(4,), device="cpu")
    >>> gs.prune(x).nnz
    2
    """
    from gpusparse.containers import COO
    dev = x.device
    xp = xp_for(dev)
    with device_scope(dev):
        if x.format != "coo":
            keep = kept(x.data, x.fill_value, xp)
            if keep is None:
                return x
            return convert.keep_entries(x, keep)
        coo = x
        if not coo.unique and not (x.fill_value == 0):
            coo = canonical.coalesce(coo)
        coords, values = drop(coo.coords, coo.data, x.fill_value, xp)
        if values.shape[0] == x.nnz:
            return x
        return COO._from_parts(xp.ascontiguousarray(coords), xp.ascontiguousarray(values), x.shape,
                               x.fill_value, dev, sorted=coo.sorted, unique=coo.unique)


eliminate_zeros = prune


def add(a, b, thresh=0):
    """TensorFlow's ``sparse.add``: the sum of two arrays, at least one sparse.

    Sparse + sparse gives a sparse array holding every position stored in
    either operand, except those whose sum has magnitude strictly below
    ``thresh`` (``thresh=0`` keeps them all, zeros included). Sparse + dense
    gives a dense array of the operands' array module.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> a = gs.COO([[0, 1]], [1.0, 0.1], shape=(3,), device="cpu")
    >>> b = gs.COO([[0, 2]], [-1.0, 5.0], shape=(3,), device="cpu")
    >>> gs.add(a, b).nnz, gs.add(a, b, thresh=0.11).nnz
    (3, 1)
    >>> gs.add(a, np.ones(3))
    array([2. , 1.1, 1. ])
    """
    from gpusparse.containers import SparseArray
    operands = classify([a, b], ["a", "b"])
    if operands is None:
        raise TypeError("add: a and b must be sparse or dense arrays")
    kinds = [op.kind for op in operands]
    if "sparse" not in kinds:
        raise TypeError("add: at least one of a and b must be sparse; use np.add for dense arrays")
    if "dense" in kinds or "scalar" in kinds:
        dense_args = [op.value.todense() if op.kind == "sparse" else op.value for op in operands]
        dev = device_of(*(op.value for op in operands if op.kind != "scalar"))
        xp = xp_for(dev)
        with device_scope(dev):
            return xp.add(*dense_args)
    for op in operands:  # TF's result is canonical: merge coalesced operands
        if op.value.format == "coo" and not op.value.unique:
            op.value = canonical.coalesce(op.value)
    out = apply(np.add, operands, {}, keep_fill_entries=True)
    if thresh is None or np.all(np.asarray(thresh) == 0):
        return out
    if np.iscomplexobj(thresh):
        raise TypeError(f"thresh must be real, got {thresh!r}")
    assert isinstance(out, SparseArray)
    dev = out.device
    xp = xp_for(dev)
    with device_scope(dev):
        coo = as_coo(out)
        magnitude = xp.abs(coo.data)
        if magnitude.ndim > 1:
            magnitude = magnitude.reshape(magnitude.shape[0], -1).max(axis=1)
        large = convert.keep_entries(coo, magnitude >= thresh)
    return large if out.format == "coo" else large.asformat(out.format)
