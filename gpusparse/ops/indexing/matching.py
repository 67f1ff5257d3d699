"""Matching the entries with advanced index tuples over sparse dimensions.

Linear keys of the index tuples are sorted; each entry finds its matches
through a count table (small key ranges) or a binary search, and the matches
are expanded with their multiplicities.
"""

from __future__ import annotations

import math

import numpy as np

from gpusparse._device import to_host
from gpusparse.ops import canonical


_TABLE_MIN = 1 << 16


def _taker(k):
    """``take(a, index)``: rows of ``a`` at int64 ``index`` through the ``gather`` primitive."""
    return lambda a, index: canonical.take_rows(a, index, k)


def _match(entry_cols, index_cols, dims, k, xp):
    """Pairs ``(entry, b)`` with ``entry_cols[:, entry] == index_cols[:, b]``.

    Entry-major, ``b`` ascending within an entry. Index tuples are sorted by
    their linear key; entries count their matches through a count table when
    the key range is small and by binary search otherwise, and the matches
    are expanded from the running total of those counts (no compaction of
    the entries that match).
    """
    n, nb = int(entry_cols[0].shape[0]), int(index_cols[0].shape[0])
    take = _taker(k)
    if n == 0 or nb == 0:
        empty = xp.zeros(0, dtype=np.int64)
        return empty, empty
    entry_keys, index_keys, key_range = _tuple_keys(entry_cols, index_cols, dims, xp, k)
    bits = max(key_range - 1, 0).bit_length()
    if key_range <= max(_TABLE_MIN, 4 * (n + nb)):
        counts = xp.bincount(index_keys, minlength=key_range)
        _, order = k.sort_pairs(index_keys, None, bits)
        begin = k.offsets(counts)
        found = take(counts, entry_keys)

        def first_of(ent):
            return take(begin, take(entry_keys, ent))
    else:
        sorted_keys, order = k.sort_pairs(index_keys, None, bits)
        first = xp.searchsorted(sorted_keys, entry_keys, side="left")
        found = xp.searchsorted(sorted_keys, entry_keys, side="right") - first

        def first_of(ent):
            return take(first, ent)
    ends = k.offsets(found)
    total = int(to_host(ends[-1:])[0])  # sync: number of matches
    ent = k.expand(ends, total)
    j = xp.arange(total, dtype=np.int64) - take(ends, ent)
    return ent, take(order, first_of(ent) + j)


def _tuple_keys(entry_cols, index_cols, dims, xp, k):
    """Linear keys of entries and index tuples over ``dims``; never overflows.

    Where ``prod(dims)`` does not fit in 62 bits, dimensions are folded one
    at a time into dense ranks among the index tuples (entries that match no
    tuple get a key no tuple has).
    """
    if len(dims) == 1:
        return entry_cols[0], index_cols[0], max(dims[0], 1)
    if math.prod(dims) < 2**62:
        ekeys = k.linearize(xp.ascontiguousarray(xp.stack(entry_cols)), dims)
        ikeys = k.linearize(xp.ascontiguousarray(xp.stack(index_cols)), dims)
        return ekeys, ikeys, max(math.prod(dims), 1)
    erank = xp.zeros(entry_cols[0].shape[0], dtype=np.int64)
    irank = xp.zeros(index_cols[0].shape[0], dtype=np.int64)
    missing = xp.zeros(entry_cols[0].shape[0], dtype=bool)
    size = 1
    for ecol, icol in zip(entry_cols, index_cols):
        values = xp.unique(icol)  # sync: unique sizes its output
        m = int(values.shape[0])  # sync: distinct values of this index
        epos = xp.minimum(xp.searchsorted(values, ecol), m - 1)
        missing |= xp.take(values, epos) != ecol
        ecomb = erank * m + epos
        icomb = irank * m + xp.searchsorted(values, icol)
        combos = xp.unique(icomb)  # sync: unique sizes its output
        size = int(combos.shape[0])  # sync: distinct index tuples so far
        erank = xp.minimum(xp.searchsorted(combos, ecomb), size - 1)
        missing |= xp.take(combos, erank) != ecomb
        irank = xp.searchsorted(combos, icomb)
    erank = xp.where(missing, size, erank)
    return erank, irank, size + 1
