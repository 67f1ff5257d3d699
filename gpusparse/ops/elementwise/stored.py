"""The stored entries of an elementwise result: which path computes them.

* One sparse operand: its own entries (coalesced first, unless the function
  is linear in it, when duplicates may be mapped one by one); a CSR/CSC
  operand that is not broadcast keeps its structure.
* ``x + y`` of arrays with fill 0, one uncoalesced: the concatenation of
  their entries.
* Several sparse operands: a merge plan of their coordinates (see
  :mod:`~gpusparse.ops.elementwise.merging`), row by row for two CSR (CSC)
  operands.
"""

from __future__ import annotations

import numpy as np

from gpusparse.ops import canonical
from gpusparse.ops._broadcast import as_coo, broadcast_coo, sparse_prefix
from gpusparse.ops._merge_plan import spread
from gpusparse.ops.elementwise.assembly import finish, finish_csc, prune_on
from gpusparse.ops.elementwise.evaluation import evaluate, prepare_values
from gpusparse.ops.elementwise.merging import compressed_merge, merge_plan, read_plan, rows_mergeable

__all__ = ["sparse_result"]


#: Ufuncs linear in their single sparse argument (with scalars elsewhere):
#: duplicates of an uncoalesced array may be mapped one by one.
_LINEAR_UNARY = ("negative", "positive", "conjugate")
_LINEAR_SCALE = ("multiply",)
_LINEAR_DIVIDE = ("divide", "true_divide")


def _output_format(sparse, prefix):
    formats = {op.value.format for op in sparse}
    if len(formats) == 1 and prefix == 2 and formats != {"coo"}:
        return formats.pop()
    return "coo"


def _is_linear(func, operands, dtypes) -> bool:
    """Whether ``func`` may map the duplicates of its one sparse operand one by one.

    True where ``func`` is linear in it (others scalars, same dtype) and the
    scaled duplicates cannot overflow or make a NaN their sum would not give:
    an inexact array is multiplied only by a scalar of magnitude at most 1
    (or NaN) and divided only by one of magnitude at least 1 (or NaN). ``[5.0,
    0.0] / 0.0`` mapped one by one would give ``inf + nan = nan`` where the
    array's value ``5.0 / 0.0`` is ``inf``; ``[1e300, -1e300] * 1e10`` would
    give ``inf - inf = nan`` where the value is ``0``. Integers wrap
    consistently, so their products are always mapped one by one.
    """
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
    if len(operands) != 2:
        return False
    scalar = operands[1 - kinds.index("sparse")].value
    if func.__name__ in _LINEAR_SCALE:
        return _scale_is_safe(scalar, x.dtype, shrinks=True)
    return func.__name__ in _LINEAR_DIVIDE and kinds[0] == "sparse" and _scale_is_safe(scalar, x.dtype,
                                                                                       shrinks=False)


def _scale_is_safe(scalar, dtype, *, shrinks) -> bool:
    """Whether scaling an ``dtype`` array's duplicates one by one by ``scalar`` gives their sum's result.

    ``shrinks``: multiplication (safe for ``|scalar| <= 1``); otherwise division
    (safe for ``|scalar| >= 1``, infinity included). NaN is safe either way.
    """
    if np.dtype(dtype).kind not in "fc":
        return True
    try:
        magnitude = abs(complex(scalar))
    except (TypeError, ValueError, OverflowError):
        return False
    if magnitude != magnitude:  # NaN makes every entry NaN, summed or not
        return True
    return magnitude <= 1 if shrinks else magnitude >= 1


def _is_concat_add(func, operands, fills, dtypes) -> bool:
    """``x + y`` / ``x - y`` of two sparse arrays with fill 0 of the result dtype, one uncoalesced."""
    if not isinstance(func, np.ufunc) or func.__name__ not in ("add", "subtract"):
        return False
    if len(operands) != 2 or any(op.kind != "sparse" for op in operands):
        return False
    if any(op.value.dtype != dtypes[0] or op.value.fill_value != 0 for op in operands):
        return False
    return any(op.value.format == "coo" and not op.value.unique for op in operands)


def sparse_result(func, dfunc, operands, kwargs, shape, fills, dtypes, be, keep_fill_entries):
    """The sparse results of ``func`` on the classified ``operands``, on backend ``be``."""
    k, xp = be.kernels, be.xp
    sparse = [op for op in operands if op.kind == "sparse"]
    ndim = len(shape)
    prefix = max(sparse_prefix(op.value, ndim) for op in sparse)
    fmt = _output_format(sparse, prefix)
    order = (1, 0) if fmt == "csc" else tuple(range(prefix))
    dense_shape = tuple(shape[prefix:])

    def part(op):  # the operand as COO broadcast to the result (built only where needed)
        return broadcast_coo(as_coo(op.value, be=be), shape, prefix, be=be)

    if len(sparse) == 1 and sparse[0].value.format != "coo" and sparse[0].value.shape == shape:
        return _compressed_unary(sparse[0].value, dfunc, operands, kwargs, shape, fills, dtypes,
                                 be, keep_fill_entries)
    if len(sparse) == 1:
        x = part(sparse[0])
        if not _is_linear(func, operands, dtypes):
            x = canonical.coalesce(x, be=be)
        values = evaluate(dfunc, operands, [x.data], x.coords, shape, prefix, kwargs, xp)
        coords, flags = x.coords, (x.sorted, x.unique)
        if fmt == "csc":
            flags = (False, x.unique)
        return tuple(finish(coords, v, fill, dt, shape, prefix, dense_shape, flags, fmt, be,
                            keep_fill_entries or not (x.unique or fill == 0))
                     for v, fill, dt in zip(values, fills, dtypes))

    if prefix and _is_concat_add(func, operands, fills, dtypes):
        a, b = (part(op) for op in sparse)
        b_data = -b.data if func.__name__ == "subtract" else b.data
        coords = xp.concatenate([a.coords, b.coords], axis=1)
        data = xp.concatenate([xp.broadcast_to(a.data, (a.nnz,) + dense_shape),
                               xp.broadcast_to(b_data, (b.nnz,) + dense_shape)])
        return (finish(coords, data, fills[0], dtypes[0], shape, prefix, dense_shape,
                       (False, False), "coo", be, keep_fill_entries),)

    if rows_mergeable(sparse, operands, shape, order):
        return compressed_merge(dfunc, operands, kwargs, shape, fills, dtypes, be, keep_fill_entries)
    # One output in COO of two sparse operands: the plan's size is read with the result's (one sync).
    defer = (len(sparse) == 2 and len(fills) == 1 and fmt == "coo" and not keep_fill_entries
             and not any(op.kind == "dense" for op in operands))
    force_union = False
    while True:
        coalesced, coords, maps, present, deferred = merge_plan(
            part, dfunc, operands, kwargs, fills, shape, prefix, order, k, xp, keep_fill_entries, defer,
            force_union)
        values = [spread(y.data, m, y.fill_value, k, p)
                  for y, m, p in zip(coalesced, maps, present)]
        inv = list(np.argsort(order))
        natural = None if deferred else coords if order == tuple(range(prefix)) else \
            xp.ascontiguousarray(coords[inv])
        scratch = values[0] if values and values[0].dtype == dtypes[0] else None  # ours: may be overwritten
        results = evaluate(dfunc, operands, values, natural, shape, prefix, kwargs, xp, out=scratch)
        if not deferred:
            break
        v = prepare_values(results[0], dtypes[0], maps[0].shape[0], dense_shape, xp)
        kept_part = read_plan(deferred, coords, v, fills[0], k, xp)
        if kept_part is None:  # the intersection did not suffice: plan the union
            force_union = True
            continue
        natural, v = kept_part  # fill entries dropped already
        return (finish(natural, v, fills[0], dtypes[0], shape, prefix, dense_shape, (True, True), fmt, be,
                       True),)
    out = []
    for v, fill, dt in zip(results, fills, dtypes):
        if fmt == "csc":
            out.append(finish_csc(coords, v, fill, dt, shape, dense_shape, be, keep_fill_entries))
        else:
            out.append(finish(natural, v, fill, dt, shape, prefix, dense_shape, (True, True), fmt, be,
                              keep_fill_entries))
    return tuple(out)


def _compressed_unary(x, dfunc, operands, kwargs, shape, fills, dtypes, be, keep_fill_entries):
    """One CSR/CSC operand, not broadcast: the structure is kept, only values change."""
    xp = be.xp
    coords = as_coo(x).coords if any(op.kind == "dense" for op in operands) else None
    values = evaluate(dfunc, operands, [x.data], coords, shape, 2, kwargs, xp)
    out = []
    for v, fill, dt in zip(values, fills, dtypes):
        v = prepare_values(v, dt, x.nnz, tuple(shape[2:]), xp)
        fill = np.asarray(fill).astype(dt)[()]
        y = type(x)._from_parts(x.indptr, x.indices, v, shape, fill, be.device)
        out.append(y if keep_fill_entries else prune_on(y, be))
    return tuple(out)
