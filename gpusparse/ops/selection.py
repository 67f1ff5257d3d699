"""Selection: the k largest or smallest elements along an axis (torch's ``topk``).

:func:`topk` answers exactly what ``torch.topk`` answers for the dense array
(unstored elements take part as the fill value), but only looks at the
stored entries and at as many unstored positions as can still rank: at most
``k`` per slice, the first unstored indices of the slice.

How it runs
-----------
Entries are grouped by slice (the coordinates off ``axis``, linearised) and
sorted by their index along ``axis`` within the slice. For each slice the
``t``-th unstored index is ``t`` plus the number of stored entries with at
most ``t`` unstored positions before them, found with one search over
the stored entries; these become the fill value's candidates. All
candidates are then ordered by (slice, value, index) with stable radix
passes of ``sort_pairs`` (least significant first): values become
order-preserving integer keys (NaN above everything, ``-0.0`` equal to
``0.0``, as in torch), split into 32-bit halves where they need 64 bits.
The first ``k`` candidates of every slice are the answer. Work is linear in
``nnz + k * n_slices`` per radix pass; the dense outputs have
``k * n_slices`` elements.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from gpusparse._backend import backend
from gpusparse._device import to_host
from gpusparse.ops import canonical
from gpusparse.ops._validate import check_axis

__all__ = ["topk"]

_INT64_MIN = -(2**63)


def _check_k(k, n, axis):
    try:
        k = operator.index(k)
    except TypeError:
        raise TypeError(f"k must be an integer, got {k!r}") from None
    if not 0 <= k <= n:
        raise ValueError(f"k must lie in [0, {n}] (the length of axis {axis}), got {k}")
    return k


def _order_keys(values, largest, xp):
    """Radix passes ``[(keys, bits), ...]`` (most significant last) ordering ``values`` best first.

    Keys are non-negative int64. NaN ranks above every number (first when
    ``largest``, last otherwise, as in torch) and ``-0.0`` equals ``0.0``.
    """
    dtype = values.dtype
    if dtype.kind == "f":
        width = dtype.itemsize * 8
        signed, unsigned = (np.int32, np.uint32) if width == 32 else (np.int64, np.uint64)
        bits = values.view(signed)
        # -0.0 ranks as 0.0; by bits, not by adding 0.0, which flushes float32
        # subnormals to zero on a GPU (CuPy compiles with -ftz=true)
        bits = xp.where(bits == signed(np.iinfo(signed).min), signed(0), bits)
        magnitude = signed(np.iinfo(signed).max)
        key = xp.where(bits < 0, bits ^ magnitude, bits).astype(np.int64)  # the order of the floats
        key = xp.where(xp.isnan(values), np.int64(2**31 if width == 32 else 2**63 - 1), key)
        wide = width == 64
    elif dtype == np.uint64:
        key, wide = values.view(np.int64) ^ np.int64(_INT64_MIN), True
    else:
        key, wide = values.astype(np.int64), dtype == np.int64
    if not wide:  # within [-2**32, 2**32]: one pass of 34 bits
        key = -key if largest else key
        return [(key + np.int64(2**32), 34)]
    key = ~key if largest else key
    shifted = (key ^ np.int64(_INT64_MIN)).view(np.uint64)
    low = (shifted & np.uint64(0xFFFFFFFF)).astype(np.int64)
    high = (shifted >> np.uint64(32)).astype(np.int64)
    return [(low, 32), (high, 32)]


def _stable_order(passes, k, xp):
    """The permutation sorting by ``passes`` (``[(keys, bits), ...]``, least significant first), stably."""
    perm = None
    for keys, bits in passes:
        if bits == 0:
            continue
        current = keys if perm is None else xp.take(keys, perm)
        _, step = k.sort_pairs(xp.ascontiguousarray(current), None, bits)
        perm = step if perm is None else xp.take(perm, step)
    return perm


def topk(x, k, axis=-1, largest=True, sorted=True):
    """The ``k`` largest (or smallest) elements along ``axis`` and their indices (torch's ``topk``).

    Parameters
    ----------
    x : SparseArray
        Any format, N-d, hybrid, uncoalesced (duplicates are summed first).
        Real values and bool; complex values raise ``TypeError`` (torch's
        ``topk`` has no complex order either).
    k : int
        How many elements to return per slice, ``0 <= k <= x.shape[axis]``
        (a larger ``k`` raises ``ValueError``, as torch does).
    axis : int, default -1
        The axis to select along (torch's ``dim``); dense dimensions too.
    largest : bool, default True
        The largest elements, best first; False for the smallest.
    sorted : bool, default True
        Accepted for torch's signature; the result is always sorted.

    Returns
    -------
    values, indices : dense arrays of the device
        Shaped as ``x`` with ``axis`` of length ``k``; ``values`` has
        ``x.dtype``, ``indices`` is int64 and indexes along ``axis``.

    Notes
    -----
    The rule is that of the dense array: unstored elements take part with
    the fill value, so ``values`` equals ``torch.topk(x.todense(), k)``'s.
    Ties, among stored entries and copies of the fill value alike, go to
    the smaller index (the order of a stable sort), so when the fill value
    ranks, its copies are reported at the slice's first unstored indices.
    NaN ranks above every number (first for ``largest=True``, last
    otherwise) and ``-0.0`` ties with ``0.0``, as in torch. Only stored
    entries and at most ``k`` unstored positions per slice are examined;
    the device synchronises a few times (coalescing, the order test, the
    number of fill candidates).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.fromdense(np.array([[0.0, 5.0, 0.0, 2.0], [-1.0, 0.0, -3.0, 0.0]]), device="cpu")
    >>> values, indices = gs.topk(x, 2)
    >>> values.tolist(), indices.tolist()
    ([[5.0, 2.0], [0.0, 0.0]], [[1, 3], [1, 3]])
    >>> values, indices = gs.topk(x, 1, axis=0, largest=False)
    >>> values.tolist(), indices.tolist()
    ([[-1.0, 0.0, -3.0, 0.0]], [[1, 1, 1, 1]])
    """
    from gpusparse.containers import SparseArray
    from gpusparse.ops._broadcast import as_coo
    from gpusparse.ops.shape import sparsify
    if not isinstance(x, SparseArray):
        raise TypeError(f"x must be a gpusparse array, got {type(x).__name__}")
    if x.dtype.kind == "c":
        raise TypeError(f"topk: x has complex values ({x.dtype.name}), which have no order to select by")
    if x.ndim == 0:
        raise ValueError("topk: x is 0-d; it needs an axis to select along")
    axis = check_axis(axis, x.ndim)
    n = x.shape[axis]
    kk = _check_k(k, n, axis)
    kept = [a for a in range(x.ndim) if a != axis]
    kept_shape = tuple(x.shape[a] for a in kept)
    n_slices = math.prod(kept_shape)
    if n_slices * (n + 1) >= 2**63:
        raise ValueError(f"topk: x has shape {x.shape}, too many elements for 63-bit keys")
    out_shape = x.shape[:axis] + (kk,) + x.shape[axis + 1:]
    be = backend(x.device)
    kern, xp = be.kernels, be.xp
    with be.scope():
        if n_slices * kk == 0:
            return xp.empty(out_shape, dtype=x.dtype), xp.empty(out_shape, dtype=np.int64)
        coo = sparsify(canonical.coalesce(as_coo(x, be=be), be=be), x.ndim, be=be)
        fill = coo.fill_value
        # stored entries by (slice, index): keys slice * n + index
        keys, perm, _ = canonical.sorted_keys(coo.coords[kept + [axis]], kept_shape + (n,), kern, xp)
        keys = keys.reshape(-1)
        values = coo.data if perm is None else canonical.take_rows(coo.data, perm, kern)
        slices, along = keys // n, keys % n
        starts = kern.compress(slices, n_slices, np.int64)
        stored = starts[1:] - starts[:-1]
        # the fill value's candidates: the first min(k, n - stored) unstored indices of every slice
        wanted = xp.minimum(n - stored, kk)
        fill_ptr = kern.offsets(wanted)
        n_fill = int(to_host(fill_ptr[-1]))  # sync: the number of fill candidates
        fill_slices = kern.expand(fill_ptr, n_fill)
        t = xp.arange(n_fill, dtype=np.int64) - xp.take(fill_ptr, fill_slices)
        gaps = along - (xp.arange(coo.nnz, dtype=np.int64) - xp.take(starts, slices))  # unstored before each entry
        below = xp.searchsorted(slices * (n + 1) + gaps, fill_slices * (n + 1) + t, side="right")
        fill_along = t + below - xp.take(starts, fill_slices)
        # every candidate, ordered by (slice, value best first, index)
        cand_slices = xp.concatenate([slices, fill_slices])
        cand_along = xp.concatenate([along, fill_along])
        cand_values = xp.concatenate([values.reshape(-1), xp.full(n_fill, fill, dtype=coo.dtype)])
        passes = [(cand_along, canonical.key_bits((n,)))]
        passes += _order_keys(cand_values, bool(largest), xp)
        passes.append((cand_slices, canonical.key_bits((n_slices,))))
        order = _stable_order(passes, kern, xp)
        first = kern.compress(xp.take(cand_slices, order), n_slices, np.int64)[:-1]
        picks = xp.take(order, (first.reshape(-1, 1) + xp.arange(kk, dtype=np.int64)).reshape(-1))
        top_values = xp.take(cand_values, picks).reshape(kept_shape + (kk,))
        top_indices = xp.take(cand_along, picks).reshape(kept_shape + (kk,))
        return (xp.ascontiguousarray(xp.moveaxis(top_values, -1, axis)),
                xp.ascontiguousarray(xp.moveaxis(top_indices, -1, axis)))
