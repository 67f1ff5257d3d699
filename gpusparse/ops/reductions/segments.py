"""The segments of a reduction: the entries of a COO array grouped by their kept coordinates.

:func:`group_by_kept` sorts the entries by the coordinates of the kept
sparse axes (stably, skipped when already in order) and delimits runs of
equal keys; :func:`kept_keys` linearises those coordinates for the
sort-free ``reduce_by_key`` path.
"""

from __future__ import annotations

import numpy as np

from gpusparse._device import to_host
from gpusparse.ops import canonical

__all__ = ["group_by_kept", "kept_keys"]


def group_by_kept(x, kept, k, xp, need_starts=True, need_ids=True):
    """Segments of COO ``x`` by the coordinates of the ``kept`` sparse axes.

    Returns ``(perm, starts, ids, group_coords)``: ``perm`` orders the
    entries by group (None when already in order), ``starts`` delimits the
    groups in that order (None when every entry is a group of its own and
    not ``need_starts``),
    ``ids`` numbers the group of every entry in that order (None unless
    ``need_ids``), ``group_coords`` ``(len(kept), n_groups)`` are the groups'
    coordinates, row-major sorted. Stable: within a group, entries keep
    their order. Synchronises to learn the number of groups.
    """
    kept_shape = tuple(x.shape[a] for a in kept)
    leading = list(kept) == list(range(len(kept)))
    if leading:  # a contiguous view of the rows, sorted already when x is
        coords = x.coords[: len(kept)]
    else:
        coords = xp.ascontiguousarray(x.coords[list(kept)])
    keys, perm, _ = canonical.sorted_keys(coords, kept_shape, k, xp, known_sorted=leading and x.sorted)
    if need_ids:
        ids = k.segment_ids(keys)
        n_groups = int(to_host(ids[-1:])[0]) + 1  # sync: the number of groups
    else:
        ids, starts = None, k.run_starts(keys)  # sync: the number of groups
        n_groups = starts.shape[0] - 1
    if n_groups == x.nnz:  # every entry is a group of its own: nothing to delimit
        starts = xp.arange(n_groups + 1, dtype=np.int64) if need_starts else None
        group_coords = coords if perm is None else k.take_columns(coords, perm)
        return perm, starts, ids, group_coords
    if need_ids:
        starts = k.segment_starts(ids, n_groups)
    firsts = starts[:-1]
    source = firsts if perm is None else xp.take(perm, firsts)
    group_coords = k.take_columns(coords, source)  # a gather: cheaper than dividing keys
    return perm, starts, ids, group_coords


def kept_keys(x, kept, kept_shape, k, xp):
    """Linear keys of the kept sparse axes of COO ``x`` (a coordinate row itself for one axis)."""
    if len(kept) == 1:
        return x.coords[kept[0]]
    coords = x.coords if list(kept) == list(range(x.sparse_dim)) else xp.ascontiguousarray(x.coords[list(kept)])
    return k.linearize(coords, kept_shape)
