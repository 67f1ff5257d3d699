"""CUDA ``reduce_by_key``: reductions by unsorted key into a dense output.

Composed of the sort and segment primitives, so the result is deterministic
(no atomics: the order in which equal keys are folded is the stable sort
order, which is the entry order): sort the keys with their positions, find
where each key's run starts (``searchsorted`` of every key in ``[0, n_out]``)
and reduce every key's run with ``segment_reduce``, straight into the
output; keys without entries get the op's identity from the empty segment.
Nothing synchronises with the host.
"""

from __future__ import annotations

import numpy as np

from gpusparse._kernels.cuda._backend import cupy

__all__ = ["reduce_by_key"]

_I64 = np.dtype(np.int64)
_OPS = ("sum", "prod", "min", "max", "any", "all")


def reduce_by_key(keys, values, n_out, op, with_counts=True):
    """keys (n,) int32/int64 in [0, n_out); values (n, w); not validated.

    Keys out of range count in the nearest group (the sort clips them as it
    loads them, as a histogram clips its buckets).
    """
    import gpusparse._kernels.cuda._primitives as k
    if op not in _OPS:
        raise ValueError(f"op must be one of {_OPS}, got {op!r}")
    keys = cupy.ascontiguousarray(cupy.asarray(keys, dtype=_I64))
    values = cupy.ascontiguousarray(values)
    n_out = int(n_out)
    n, width = values.shape
    if n_out == 0:
        empty = cupy.empty((0, width), dtype=np.bool_ if op in ("any", "all") else values.dtype)
        return empty, (cupy.empty(0, dtype=_I64) if with_counts else None)
    # Sort by key, then one segment per key (an empty one for a key without
    # entries, which segment_reduce fills with the op's identity): no
    # scatter, so no run of the output is written twice and nothing is
    # sized by n when n_out is smaller.
    sorted_keys, perm = k._sort_pairs(keys, None, max(n_out - 1, 0).bit_length(), n_out - 1)
    starts = cupy.searchsorted(sorted_keys, cupy.arange(n_out + 1, dtype=_I64), side="left")
    out = k.segment_reduce(values, starts, op, perm)
    return out, ((starts[1:] - starts[:-1]) if with_counts else None)
