"""The hostile integer inputs of the memory-safety tests (``test_bounds_safety*.py``).

Values outside every buffer (negative, ``2**40``, ``2**62``, the int64
extremes), index arrays that mix them with valid ones, and pointer arrays
that break the ``indptr`` precondition in every way, with the row ranges
the contract clips them to.
"""

from __future__ import annotations

import numpy as np

I64 = np.int64
BIG = [2**40, 2**62, 2**63 - 1]
NEGATIVE = [-1, -7, -(2**40), -(2**63)]


def hostile_index(rng, n, m):
    """``n`` int64 indices: valid ones in ``[0, m)`` mixed with every hostile value (m, m + 1 included)."""
    extra = NEGATIVE + BIG + [m, m + 1]
    assert n >= len(extra)
    index = rng.integers(0, max(m, 1), size=n, dtype=I64)
    index[: len(extra)] = extra
    return rng.permutation(index)


def clipped_ranges(indptr, nnz):
    """The contract's row ranges: pointers clipped into [0, nnz], ``[lo, max(lo, hi))``."""
    ptr = np.clip(np.asarray(indptr, dtype=I64), 0, nnz)
    return ptr[:-1], np.maximum(ptr[:-1], ptr[1:])


def hostile_indptrs(rng, n_rows, nnz):
    """Pointer arrays (n_rows + 1,) that break the precondition in every way, by name.

    ``monotone`` ones are non-decreasing once clipped into ``[0, nnz]`` (they
    only run out of range); the others decrease somewhere.
    """
    valid = np.sort(rng.integers(0, nnz + 1, size=n_rows + 1)).astype(I64)
    valid[0], valid[-1] = 0, nnz
    past_end = valid.copy()
    past_end[n_rows // 2:] += nnz + 3
    past_end[-1] = 2**62
    below_zero = valid.copy()
    below_zero[: n_rows // 2] -= 2**40
    below_zero[0] = -(2**63)
    extremes = np.where(np.arange(n_rows + 1) < n_rows // 2, -(2**63), 2**63 - 1).astype(I64)
    decreasing = valid[::-1].copy()
    shuffled = rng.permutation(valid)
    wild = rng.choice(np.array(NEGATIVE + BIG + [0, nnz, nnz // 2], dtype=I64), size=n_rows + 1)
    return {
        "monotone past nnz": past_end,
        "monotone below 0": below_zero,
        "monotone extremes": extremes,
        "decreasing": decreasing,
        "shuffled": shuffled,
        "wild": wild,
    }


INDPTR_CASES = ["monotone past nnz", "monotone below 0", "monotone extremes", "decreasing", "shuffled", "wild"]
MONOTONE_CASES = [c for c in INDPTR_CASES if c.startswith("monotone")]


def ref_expand(indptr, nnz):
    """Rows of the clipped pointers: the first row starts at 0, the last ends at nnz."""
    n_rows = len(indptr) - 1
    ptr = np.clip(np.asarray(indptr, dtype=I64), 0, nnz)
    return np.clip(np.searchsorted(ptr, np.arange(nnz), side="right") - 1, 0, max(n_rows - 1, 0))
