"""Canonical order: coalesce (sort + sum duplicates) and reorder (sort only).

Coordinates are sorted through linear int64 keys. Where the product of the
sparse dimensions does not fit in 63 bits, the dimensions are split into
groups whose products do, and the groups are sorted least significant first
with a stable sort (a lexicographic radix sort) -- never a silent overflow.

The operations take the :class:`~gpusparse._backend.Backend` of their
operand's device as the keyword ``be`` when their caller has resolved it
already, and resolve it once themselves when not.
"""

from __future__ import annotations

import math

import numpy as np

from gpusparse._backend import backend
from gpusparse._device import to_host
from gpusparse._kernels import c_strides  # noqa: F401  (part of this module's vocabulary: canonical.c_strides)

__all__ = ["coalesce", "flag_sorted", "is_compressed_canonical", "make_compressed_canonical", "reorder", "sum_segments", "take_rows"]

_KEY_LIMIT = 2**63  # linear keys must stay below this


def key_groups(shape) -> "list[tuple[int, int]]":
    """Split ``range(len(shape))`` into consecutive ``(start, stop)`` groups whose sizes multiply below 2**63."""
    groups, start, size = [], 0, 1
    for k, dim in enumerate(shape):
        if k > start and size * max(dim, 1) > _KEY_LIMIT:
            groups.append((start, k))
            start, size = k, 1
        size *= max(dim, 1)
    groups.append((start, len(shape)))
    return groups


def key_bits(shape) -> int:
    """Bits needed by linear keys of ``shape``."""
    return max(math.prod(shape) - 1, 0).bit_length()


def grouped_keys(coords, shape, k, xp):
    """Row-major linear keys of ``coords`` (``(d, n)`` in ``shape``): ``(n,)`` for one key group, ``(g, n)`` for several."""
    rows = [k.linearize(coords[a:b], shape[a:b]) for a, b in key_groups(shape)]
    return rows[0] if len(rows) == 1 else xp.stack(rows)


def sorted_keys(coords, shape, k, xp, payload=None, known_sorted=False, test_order=True):
    """Row-major sort keys of ``coords`` (``(d, n)`` in ``shape``).

    Returns ``(keys, moved, state)``: ``keys`` in sorted order, ``(n,)`` for
    one key group and ``(g, n)`` for several; ``moved`` is None if the input
    was already sorted, else the stable sorting permutation, or ``payload``
    (an int64 array, or a callable returning one or None, called only if
    the keys are sorted here) in sorted order when one is given and the keys form a
    single group (so that callers can carry values through the sort instead
    of gathering them afterwards); ``state`` is 2 if the input was strictly
    increasing, 1 if sorted with repeats, 0 if it was sorted here.
    Synchronises once to test the order, unless the caller knows
    ``coords`` are sorted (``known_sorted``: state 1, nothing tested) or
    asks for the sort without a test (``test_order=False``: state 0).
    """
    groups = key_groups(shape)
    keys = grouped_keys(coords, shape, k, xp)
    rows = [keys] if keys.ndim == 1 else [keys[i] for i in range(keys.shape[0])]
    if known_sorted:
        state = 1
    elif test_order:
        state = int(to_host(k.sortedness(keys)))  # sync: skip the sort when sorted
    else:
        state = 0
    if state:
        return keys, None, state
    if len(rows) == 1:
        payload = payload() if callable(payload) else payload
        return (*k.sort_pairs(keys, payload, key_bits(shape)), 0)
    perm = None
    for (a, b), row in zip(reversed(groups), reversed(rows)):
        current = row if perm is None else xp.take(row, perm)
        _, step = k.sort_pairs(current, None, key_bits(shape[a:b]))
        perm = step if perm is None else xp.take(perm, step)
    keys = xp.stack([xp.take(row, perm) for row in rows])
    return keys, perm, 0


_PAYLOAD_VIEWS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.int64}


def has_payload(data) -> bool:
    """Whether :func:`value_payload` carries ``data`` (its rows are 1, 2, 4 or 8 bytes)."""
    return data.dtype.itemsize * math.prod(data.shape[1:]) in _PAYLOAD_VIEWS


def value_payload(data):
    """``data``'s rows as int64 sort payload, or None if a row is not 1, 2, 4 or 8 bytes.

    Carrying values through the sort lets the reduction read them in order
    instead of gathering them through a permutation. :func:`sorted_keys`
    takes ``lambda: value_payload(data)`` so that input found sorted
    builds none.
    """
    n = data.shape[0]
    row_bytes = data.dtype.itemsize * math.prod(data.shape[1:])
    if row_bytes not in _PAYLOAD_VIEWS:
        return None
    bits = data.reshape(n, -1).view(_PAYLOAD_VIEWS[row_bytes]).reshape(n)
    return bits if row_bytes == 8 else bits.astype(np.int64)


def payload_values(payload, like):
    """Invert :func:`value_payload`: rows shaped and typed like ``like``."""
    row_bytes = like.dtype.itemsize * math.prod(like.shape[1:])
    view = _PAYLOAD_VIEWS[row_bytes]
    bits = payload if row_bytes == 8 else payload.astype(view)
    return bits.reshape(-1, 1).view(like.dtype).reshape((-1,) + like.shape[1:])


def take_rows(data, index, k, fill=None):
    """``data[index]`` along the first axis (any trailing shape) with the ``gather`` primitive.

    ``index`` is an int64 array of in-bounds positions, not validated; with
    a scalar ``fill``, positions -1 take ``fill``. On the CPU this is a
    parallel gather (``numpy.take`` runs on one thread).

    Examples
    --------
    >>> import numpy as np
    >>> from gpusparse._backend import backend
    >>> from gpusparse._device import as_device
    >>> take_rows(np.arange(6).reshape(3, 2), np.array([2, 0]), backend(as_device("cpu")).kernels)
    array([[4, 5],
           [0, 1]])
    """
    n, rest = data.shape[0], data.shape[1:]
    rows = data.reshape(n, math.prod(rest)) if data.flags.c_contiguous else \
        data.copy().reshape(n, math.prod(rest))
    return k.gather(rows, index, fill).reshape((index.shape[0],) + rest)


def sum_segments(data, starts, perm, k):
    """Sum ``data[perm]`` (``(n, *dense)``) over the segments ``starts`` delimits.

    bool values are OR-ed (the sum of booleans is True when any is) and
    complex values are summed as pairs of reals, so the primitives need no
    complex or bool arithmetic.
    """
    n, dense = data.shape[0], data.shape[1:]
    values = data.reshape(n, math.prod(dense))
    if values.dtype == np.bool_:
        out = k.segment_reduce(values.view(np.uint8), starts, "max", perm).view(np.bool_)
    elif values.dtype.kind == "c":
        real = np.float32 if values.dtype == np.complex64 else np.float64
        out = k.segment_reduce(values.view(real), starts, "sum", perm).view(values.dtype)
    else:
        out = k.segment_reduce(values, starts, "sum", perm)
    return out.reshape((starts.shape[0] - 1,) + dense)


def coalesce(x, test_order=True, *, be=None):
    """Sort ``x``'s coordinates row-major and sum duplicates; ``x`` itself if already coalesced.

    Parameters
    ----------
    x : COO
    test_order : bool
        Test whether the coordinates are sorted already (one sync) and skip
        the sort if they are. False sorts at once: for callers that know the
        order is all but certainly not row-major (entries sorted in another
        order), where the test would cost a sync and save nothing.
    be : Backend, optional
        The backend of ``x``'s device, when the caller has it already.

    Synchronises the device to learn the number of unique coordinates,
    unless ``x`` is flagged unique (then there is nothing to sum).
    """
    from gpusparse.containers import COO
    if x.is_coalesced():
        return x
    sparse_shape = x.shape[: x.sparse_dim]
    if x.nnz <= 1 or x.sparse_dim == 0 and x.nnz == 0:
        return _flagged(x, unique=True)
    be = be or backend(x.device)
    dev, k, xp = be.device, be.kernels, be.xp
    with be.scope():
        keys, moved, state = sorted_keys(x.coords, sparse_shape, k, xp, lambda: value_payload(x.data),
                                         test_order=test_order)
        if state == 2:
            return _flagged(x, unique=True)
        carried = moved is not None and keys.ndim == 1 and has_payload(x.data)
        values = payload_values(moved, x.data) if carried else x.data
        perm = None if carried else moved
        # sync: the size of the output (none when x is flagged unique: nothing to sum)
        starts = None if x.unique else k.run_starts(keys)
        if starts is None or starts.shape[0] - 1 == x.nnz:  # no duplicates: a permutation only
            firsts, starts = None, None
        else:
            firsts = starts[:-1]
        if keys.ndim == 1:
            coords = k.delinearize(keys if firsts is None else xp.take(keys, firsts), sparse_shape)
        else:
            source = firsts if perm is None else perm if firsts is None else xp.take(perm, firsts)
            coords = k.take_columns(x.coords, source)
        if starts is None:
            data = values if perm is None else take_rows(values, perm, k)
        else:
            data = sum_segments(values, starts, perm, k)
    return COO._from_parts(coords, data, x.shape, x.fill_value, dev, sorted=True, unique=True)


def reorder(x, *, be=None):
    """Stable row-major sort of ``x``'s entries without summing duplicates (TF's ``sparse.reorder``)."""
    from gpusparse.containers import COO
    if x.sorted or x.nnz <= 1:
        return _flagged(x, unique=x.unique or x.nnz <= 1)
    be = be or backend(x.device)
    dev, k, xp = be.device, be.kernels, be.xp
    with be.scope():
        _, perm, state = sorted_keys(x.coords, x.shape[: x.sparse_dim], k, xp)
        if perm is None:
            return _flagged(x, unique=x.unique or state == 2)
        coords = k.take_columns(x.coords, perm)
        data = take_rows(x.data, perm, k)
    return COO._from_parts(coords, data, x.shape, x.fill_value, dev, sorted=True, unique=x.unique)


def flag_sorted(arrays, *, be=None):
    """The COO ``arrays`` with their order tested: those found sorted come back flagged so.

    Arrays flagged sorted already are kept; every other one costs a pass
    over its keys, and all of them together one synchronisation. Components
    are shared, never copied; arrays found unsorted are returned as they are.

    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 1, 1], [2, 0, 2]], [1.0, 2.0, 3.0], device="cpu")
    >>> x.sorted, flag_sorted([x])[0].is_coalesced()
    (False, True)
    """
    arrays = [_flagged(x, unique=True) if not x.sorted and x.nnz <= 1 else x for x in arrays]
    todo = [i for i, x in enumerate(arrays) if not x.sorted]
    if not todo:
        return arrays
    be = be or backend(arrays[todo[0]].device)
    k, xp = be.kernels, be.xp
    with be.scope():
        states = []
        for i in todo:
            x = arrays[i]
            keys = grouped_keys(x.coords, x.shape[: x.sparse_dim], k, xp)
            states.append(k.sortedness(keys).reshape(1))
        states = to_host(xp.concatenate(states))  # sync: the order of every unflagged array, in one read
    for i, state in zip(todo, states):
        if state:
            arrays[i] = _flagged(arrays[i], unique=arrays[i].unique or state == 2)
    return arrays


def _flagged(x, *, unique):
    """``x`` (same components) with the sorted flag set, and unique if known."""
    from gpusparse.containers import COO
    return COO._from_parts(x.coords, x.data, x.shape, x.fill_value, x.device,
                           sorted=True, unique=unique)


def compressed_keys(x, k):
    """Linear int64 keys ``major * n_minor + minor`` of a CSR/CSC array's entries, in storage order.

    Built in place in the expanded majors; the caller checks that
    ``shape[0] * shape[1]`` stays below 2**63.
    """
    keys = k.expand(x.indptr, x.nnz)
    keys *= x.shape[1 - x._major_axis]
    keys += x.indices
    return keys


def is_compressed_canonical(x, *, be=None) -> bool:
    """Whether a CSR/CSC array's entries are sorted and unique within each major slice.

    One pass over the structure and one synchronisation (none for nnz <= 1).
    """
    if x.nnz <= 1:
        return True
    be = be or backend(x.device)
    k, xp = be.kernels, be.xp
    with be.scope():
        if math.prod(x.shape[:2]) < _KEY_LIMIT:
            keys = compressed_keys(x, k)
        else:  # compared as (major, minor) pairs
            keys = xp.stack([k.expand(x.indptr, x.nnz), x.indices.astype(np.int64)])
        return int(to_host(k.sortedness(keys))) == 2  # sync: canonical?


def make_compressed_canonical(x) -> None:
    """Sort ``x``'s entries within each major slice and sum duplicates, in place.

    Called once by the CSR/CSC constructors; a no-op when the components
    are canonical already.
    """
    from gpusparse.ops.convert import compressed_to_coo, coo_to_compressed
    be = backend(x.device)
    if is_compressed_canonical(x, be=be):
        return
    canonical = coo_to_compressed(compressed_to_coo(x, trusted=False, be=be), type(x),
                                  index_dtype=x.index_dtype, be=be)
    x._set(canonical.indptr, canonical.indices, canonical.data, x.shape, x.fill_value, be.device)
