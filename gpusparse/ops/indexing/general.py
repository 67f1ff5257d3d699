"""The general path of ``x[key]``, on the COO view of any format.

1. *Filter* the entries by the integer and slice indices of sparse
   dimensions: a mask per dimension, one compaction, and the surviving
   coordinates remapped (``(c - start) // step``).
2. *Match* the entries with the advanced index tuples over sparse
   dimensions (:mod:`~gpusparse.ops.indexing.matching`).
3. Build the coordinates of the sparse output dimensions.
4. *Index the values* (``data``, shape ``(nnz, *dense_shape)``) with the
   dense part of the key, directly with the array module.

A dense dimension that must come before a sparse one in the result (an
advanced block moved in front) becomes sparse.
"""

from __future__ import annotations

import math

import numpy as np

from gpusparse.ops import canonical, convert
from gpusparse.ops.indexing.keys import _Key
from gpusparse.ops.indexing.matching import _match, _taker


def _out_dims(spec: _Key):
    """Output dimensions in order: ("slice", item) / ("new", item) / ("adv", j)."""
    out, adv_done = [], False
    if spec.bshape is not None and spec.adv_front:
        out.extend(("adv", j) for j in range(len(spec.bshape)))
        adv_done = True
    for item in spec.items:
        if item.kind in ("slice", "new"):
            out.append((item.kind, item))
        elif item.kind == "adv" and not adv_done:
            out.extend(("adv", j) for j in range(len(spec.bshape)))
            adv_done = True
    return out


def _select(x, spec: _Key, be):
    """The general path on the COO view, on backend ``be``."""
    from gpusparse.containers import COO
    dev, k, xp = be.device, be.kernels, be.xp
    coo = x if x.format == "coo" else convert.compressed_to_coo(x, be=be)
    S = x.sparse_dim
    coords = coo.coords
    take = _taker(k)
    adv = [it for it in spec.items if it.kind == "adv"]
    adv_sp = [it for it in adv if it.dim < S]
    adv_dn = [it for it in adv if it.dim >= S]
    out_dims = _out_dims(spec)

    def sparse_origin(d):
        kind, ref = d
        return (kind == "slice" and ref.dim < S) or (kind == "adv" and bool(adv_sp))
    last = max((i for i, d in enumerate(out_dims) if sparse_origin(d)), default=-1)
    out_sparse, out_dense = out_dims[: last + 1], out_dims[last + 1:]
    b_sparse = any(kind == "adv" for kind, _ in out_sparse)

    # 1. filter by integers and slices of sparse dimensions
    keep, remapped = None, {}
    for it in spec.items:
        if it.dim is None or it.dim >= S:
            continue
        if it.kind == "int":
            hit = coords[it.dim] == it.payload
        elif it.kind == "slice":
            start, step, length = it.payload
            if start == 0 and step == 1 and length == x.shape[it.dim]:
                continue
            hit, remapped[it.dim] = _slice_hits(coords[it.dim], start, step, length)
        else:
            continue
        keep = hit if keep is None else keep & hit
    src = None if keep is None else xp.nonzero(keep)[0]  # sync: entries that survive
    n_cur = coo.nnz if src is None else int(src.shape[0])

    # 2. match advanced index tuples
    b = None
    if adv_sp:
        entry_cols = [coords[it.dim] if src is None else take(coords[it.dim], src) for it in adv_sp]
        ent, b = _match(entry_cols, [it.payload for it in adv_sp],
                        [x.shape[it.dim] for it in adv_sp], k, xp)
        src = ent if src is None else take(src, ent)
    elif b_sparse:  # advanced indices on dense dimensions placed before sparse ones
        nb = math.prod(spec.bshape)
        base = xp.arange(coo.nnz, dtype=np.int64) if src is None else src
        src = xp.repeat(base, nb)
        b = xp.tile(xp.arange(nb, dtype=np.int64), n_cur)
    n_out = coo.nnz if src is None else int(src.shape[0])

    # 3. coordinates of the sparse output dimensions
    rows = []
    bcoords = None
    for kind, ref in out_sparse:
        if kind == "new":
            rows.append(xp.zeros(n_out, dtype=np.int64))
        elif kind == "slice":
            row = remapped.get(ref.dim, coords[ref.dim])
            rows.append(row if src is None else take(row, src))
        else:
            if bcoords is None:
                bcoords = k.delinearize(b, spec.bshape) if n_out else xp.zeros((len(spec.bshape), 0), np.int64)
            rows.append(bcoords[ref])
    new_coords = xp.stack(rows) if rows else xp.zeros((0, n_out), dtype=np.int64)

    # 4. values: the dense part of the key applied to data
    data = coo.data if src is None else take(coo.data, src)
    dense_in_out = {id(ref) for kind, ref in out_dense if kind == "new"}
    key = [slice(None)]
    for it in spec.items:
        if it.kind == "new":
            if id(it) in dense_in_out:
                key.append(None)
        elif it.dim >= S:
            if it.kind == "int":
                key.append(it.payload)
            elif it.kind == "slice":
                key.append(it.source)
            elif b_sparse:
                key.append(xp.take(it.payload, b))
            else:
                key.append(it.payload.reshape(spec.bshape))
    if adv_dn and b_sparse:
        key[0] = xp.arange(n_out, dtype=np.int64)
    if len(key) > 1:
        data = data[tuple(key)]
        if adv_dn and not b_sparse and spec.adv_front:
            data = xp.moveaxis(data, len(spec.bshape), 0)
    data = xp.ascontiguousarray(data)

    shape = []
    for kind, ref in out_dims:
        shape.append(spec.bshape[ref] if kind == "adv" else 1 if kind == "new" else ref.payload[2])
    shape = tuple(shape)
    fill = x.fill_value
    if not out_sparse:  # every sparse dimension was consumed: sum what remains
        if n_out > 1:
            data = canonical.sum_segments(data, xp.asarray([0, n_out], dtype=np.int64), None, k)
        if not shape and not spec.ellipsis:
            return _scalar(data, fill, dev, xp)
        out = COO._from_parts(xp.zeros((0, min(n_out, 1)), np.int64), data[: min(n_out, 1)], shape,
                              fill, dev, sorted=True, unique=True)
        return out
    positive = all(it.payload[1] > 0 for it in spec.items if it.kind == "slice" and it.dim < S)
    out = COO._from_parts(xp.ascontiguousarray(new_coords), data, shape, fill, dev,
                          sorted=coo.sorted and positive and not b_sparse, unique=coo.unique)
    return _finish(x, out, out_sparse, S, be)


def _slice_hits(c, start, step, length):
    """Which of the coordinates ``c`` a slice keeps, and their new coordinates (int64)."""
    if step == 1:
        hit = (c >= start) & (c < start + length)
        return hit, (c - start if start else c).astype(np.int64, copy=False)
    t = c.astype(np.int64) - start
    q = t // step
    return (q * step == t) & (q >= 0) & (q < length), q


def _scalar(data, fill, dev, xp):
    """The one element: a NumPy scalar on the CPU, a 0-d device array on a GPU (no sync)."""
    value = xp.asarray(fill) if data.shape[0] == 0 else data[0]
    if dev.kind != "cpu":
        return xp.array(value, copy=True).reshape(())
    return np.asarray(value).reshape(())[()]


def _finish(x, out, out_sparse, S, be):
    """Compressed input keeps its format when the result has two sparse dimensions."""
    if x.format == "coo" or len(out_sparse) != 2:
        return out
    return convert.asformat(out, x.format, be=be)
