"""CUDA launches of ``cuda_kernels/merge.cu``: union and intersection plans of two sorted key arrays.

Three kernels and one device-side scan, no host synchronisation: the
merge-path cuts of every tile, the number of outputs per tile, an exclusive
scan of those counts (``cupy.cumsum``), and the outputs themselves. The
outputs are allocated at capacity (``na + nb`` for a union, ``min(na, nb)``
for an intersection); the number actually written is returned as a 0-d
device array for the caller to read.
"""

from __future__ import annotations

import numpy as np

import gpusparse._kernels.cuda._grid as _grid
from gpusparse._kernels.cuda._backend import cupy, get_function

__all__ = ["merge_sorted"]

_I64 = np.dtype(np.int64)
_THREADS = 256
_TILE = 2048  # GS_MERGE_TILE
_HOW = {"union": 0, "intersection": 1}


def merge_sorted(a_keys, b_keys, how):
    """a_keys (na,), b_keys (nb,) int64, each strictly increasing; not validated.

    Other keys give some merge of the two (unspecified) with ``count`` at
    most the capacity, every write inside the outputs.
    """
    if how not in _HOW:
        raise ValueError(f"how must be 'union' or 'intersection', got {how!r}")
    code = _HOW[how]
    a = cupy.ascontiguousarray(cupy.asarray(a_keys, dtype=_I64))
    b = cupy.ascontiguousarray(cupy.asarray(b_keys, dtype=_I64))
    na, nb = a.size, b.size
    capacity = na + nb if code == 0 else min(na, nb)
    keys = cupy.empty(capacity, dtype=_I64)
    a_index = cupy.empty(capacity, dtype=_I64)
    b_index = cupy.empty(capacity, dtype=_I64)
    total = na + nb
    if total == 0 or capacity == 0:
        return keys, a_index, b_index, cupy.zeros((), dtype=_I64)
    n_tiles = _grid.tiles(total, _TILE)
    grid = (_grid.blocks(n_tiles, 1),)  # one block per tile, clamped (the kernels loop over tiles)
    cuts = cupy.empty(2 * (n_tiles + 1), dtype=_I64)
    partition = get_function("merge", "gs_merge_partition", (_I64,))
    partition((_grid.blocks(n_tiles + 1, _THREADS),), (_THREADS,),
              (a, np.int64(na), b, np.int64(nb), np.int64(n_tiles), cuts))
    counts = cupy.empty(n_tiles, dtype=_I64)
    count = get_function("merge", "gs_merge_count", (_I64, code))
    count(grid, (_THREADS,), (a, b, cuts, np.int64(n_tiles), counts))
    offsets = cupy.zeros(n_tiles + 1, dtype=_I64)
    cupy.cumsum(counts, out=offsets[1:])
    write = get_function("merge", "gs_merge_write", (_I64, code))
    write(grid, (_THREADS,),
          (a, b, cuts, offsets, np.int64(n_tiles), np.int64(capacity), keys, a_index, b_index))
    # At most ``capacity`` outputs for strictly increasing keys; keys that are
    # not can count more, whose writes the kernel dropped.
    return keys, a_index, b_index, cupy.minimum(offsets[n_tiles], capacity)
