"""CUDA ``reduce_by_key``: reductions by unsorted key into a dense output.

Composed of the sort and segment primitives, so the result is deterministic
(no atomics: the order in which equal keys are folded is the stable sort
order, which is the entry order): sort the keys with their positions, find
the runs of equal keys, reduce each run with ``segment_reduce`` and scatter
the run results into an output that holds the identity elsewhere. Nothing
synchronises with the host.
"""

from __future__ import annotations

import cupy
import numpy as np

__all__ = ["reduce_by_key"]

_I64 = np.dtype(np.int64)
_OPS = ("sum", "prod", "min", "max", "any", "all")


def _identity(op, dtype):
    if op in ("any", "all"):
        return op == "all"
    if op == "sum":
        return 0
    if op == "prod":
        return 1
    if dtype.kind == "c":
        inf = np.inf if op == "min" else -np.inf
        return complex(inf, inf)
    if dtype.kind == "f":
        return np.inf if op == "min" else -np.inf
    if dtype.kind == "b":
        return op == "min"
    info = np.iinfo(dtype)
    return info.max if op == "min" else info.min


def reduce_by_key(keys, values, n_out, op, with_counts=True):
    """keys (n,) int32/int64 in [0, n_out); values (n, w); not validated."""
    from gpusparse._kernels import cuda as k
    if op not in _OPS:
        raise ValueError(f"op must be one of {_OPS}, got {op!r}")
    keys = cupy.ascontiguousarray(cupy.asarray(keys, dtype=_I64))
    values = cupy.ascontiguousarray(values)
    n_out = int(n_out)
    n, width = values.shape
    out_dtype = np.dtype(np.bool_) if op in ("any", "all") else values.dtype
    # One spare row (index n_out) takes the writes of unused runs.
    out = cupy.full((n_out + 1, width), _identity(op, values.dtype), dtype=out_dtype)
    counts = cupy.zeros(n_out + 1, dtype=_I64)
    if n == 0 or n_out == 0:
        return out[:n_out], (counts[:n_out] if with_counts else None)
    key_bits = max(n_out - 1, 0).bit_length()
    sorted_keys, perm = k.sort_pairs(keys, None, key_bits)
    # Run heads without a host round trip: a run starts where the key changes.
    # There are at most n runs; the unused ones are empty (start n) and are
    # scattered into the spare slots, never by boolean indexing (which
    # would synchronise to size its result).
    head = cupy.ones(n, dtype=cupy.bool_)
    head[1:] = sorted_keys[1:] != sorted_keys[:-1]
    run_of = cupy.cumsum(head, dtype=_I64) - 1
    slot = cupy.where(head, run_of, n + 1)
    starts = cupy.full(n + 2, n, dtype=_I64)
    starts[slot] = cupy.arange(n, dtype=_I64)
    starts = starts[: n + 1]
    run_keys = cupy.full(n + 2, n_out, dtype=_I64)
    run_keys[slot] = sorted_keys
    run_keys = run_keys[:n]
    reduced = k.segment_reduce(values, cupy.ascontiguousarray(starts), op, perm)
    out[run_keys] = reduced
    if not with_counts:
        return out[:n_out], None
    counts[run_keys] = starts[1:] - starts[:-1]
    return out[:n_out], counts[:n_out]
