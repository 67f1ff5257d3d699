"""Byte-traffic models: how many bytes an operation must move.

A result's bandwidth is ``model_bytes / median_s``; divided by the copy
bandwidth measured in the same run it gives "% of copy", the fraction of the
achievable memory bandwidth the operation reaches. Two models per operation:
the *floor* (compulsory traffic: read the input, write the output; the
headline number) and, where a sort is involved, a *sort model* (what a good
radix-sort implementation moves; a measure of implementation quality).
Above 100 % of the floor means cache reuse, not a bug.

Notation: ``k`` input entries, ``u`` unique entries after coalescing, ``d``
sparse dimensions, ``I`` index bytes, ``V`` value bytes, ``K`` linear key
bytes (4 or 8), ``p`` radix passes.

Examples
--------
>>> coalesce_floor_bytes(k=4, u=2, d=2, index_bytes=8, value_bytes=4)
120
>>> key_bits((2**20, 2**20))
40
"""

from __future__ import annotations

import math

__all__ = ["coalesce_floor_bytes", "coalesce_sort_bytes", "key_bits"]


def key_bits(shape) -> int:
    """Bits of a linear key: ``sum(ceil(log2(n)) for n in shape)``.

    Examples
    --------
    >>> key_bits((14371, 91, 109, 91))
    35
    """
    return sum(max(int(n) - 1, 0).bit_length() for n in shape)


def coalesce_floor_bytes(k: int, u: int, d: int, index_bytes: int, value_bytes: int) -> int:
    """Compulsory traffic of a coalesce: ``k(dI+V) + u(dI+V)``.

    Read every input entry once and write every output entry once. The same
    count is the whole cost of the already-sorted fast path.

    Examples
    --------
    >>> coalesce_floor_bytes(k=2**26, u=2**25, d=2, index_bytes=8, value_bytes=4) / 2**26
    30.0
    """
    entry = d * index_bytes + value_bytes
    return k * entry + u * entry


def coalesce_sort_bytes(k: int, u: int, d: int, index_bytes: int, value_bytes: int,
                        bits: int, digit_bits: int = 8) -> int:
    """Traffic of a sort-based coalesce with a one-sweep radix sort.

    ``k(dI+V)`` read and linearise, ``k(K+V)`` write keys and values,
    ``kK`` histogram, ``p * 2k(K+V)`` radix passes with
    ``p = ceil(bits / digit_bits)``, ``k(K+V)`` run-length reduce,
    ``u(dI+V)`` write the output. ``K`` is 4 bytes when ``bits <= 32``.

    Examples
    --------
    >>> coalesce_sort_bytes(k=2, u=1, d=2, index_bytes=8, value_bytes=4, bits=48) / 2
    206.0
    """
    K = 4 if bits <= 32 else 8
    p = max(1, math.ceil(bits / digit_bits))
    entry = d * index_bytes + value_bytes
    pair = K + value_bytes
    return k * entry + k * pair + k * K + p * 2 * k * pair + k * pair + u * entry
