"""Dask arrays over the blocks of a gpusparse array, cut once, without densifying."""

from __future__ import annotations

import itertools
import uuid

import dask.array as da
from dask.array.core import normalize_chunks

__all__ = ["from_array", "meta_like"]


def meta_like(x, ndim=None, dtype=None):
    """The ``meta`` of a Dask array of ``x``'s chunks: a 0-size :func:`gpusparse.zeros`.

    Same format (COO where the compressed formats do not fit the number of
    dimensions), dtype, fill value and device as ``x``; a hybrid CSR/CSC (dense
    trailing dimensions) gets an empty slice of itself, which keeps its layout.
    """
    from gpusparse.ops import creation
    ndim = x.ndim if ndim is None else ndim
    dtype = x.dtype if dtype is None else dtype
    if x.format != "coo" and x.dense_dim and ndim == x.ndim and dtype == x.dtype:
        return x[(slice(0, 0),) * ndim]  # hybrid CSR/CSC: zeros() makes every dimension sparse
    fmt = x.format if x.format == "coo" or ndim == 2 else "coo"
    try:
        fill = x.fill_value.astype(dtype)
    except (TypeError, ValueError):
        fill = None
    return creation.zeros((0,) * ndim, dtype=dtype, format=fmt, device=x.device, fill_value=fill)


def _normalized(chunks, shape, dtype, argument, shown=None):
    """Dask's ``normalize_chunks``, with errors that name ``chunks`` and without empty chunks.

    Each axis gets non-negative lengths adding up to its length; chunks of
    length 0 are dropped where the axis has elements (an empty axis keeps
    its one chunk of length 0).
    """
    def refuse(why):
        spec = chunks if shown is None else shown
        return ValueError(f"{argument} {spec!r} do not fit shape {tuple(shape)}: {why}")

    try:
        normalized = normalize_chunks(chunks, tuple(shape), dtype=dtype)
    except ZeroDivisionError:  # Dask divides by a chunk size of 0
        raise refuse("a chunk size of 0 cannot cover an axis of positive length") from None
    except (ValueError, TypeError) as exc:
        raise refuse(exc) from None
    out = []
    for axis, (lengths, n) in enumerate(zip(normalized, shape)):
        if any(c < 0 for c in lengths) or sum(lengths) != n:
            raise refuse(f"axis {axis} is cut into {lengths}, which must be non-negative and add up to {n}")
        kept = tuple(int(c) for c in lengths if c)
        out.append(kept or (0,))
    return tuple(out)


def from_array(x, chunks="auto", *, name=None):
    """A Dask array whose chunks are the blocks of the gpusparse array ``x``.

    Unlike ``dask.array.from_array(x, chunks, asarray=False)``, which puts
    ``x`` itself in the graph and slices it in every task (so dask.distributed
    sends the whole array to every worker), this cuts the blocks once, here,
    with gpusparse's indexing: each task holds only its block. Row blocks of a
    CSR (column blocks of a CSC) are views sharing ``indices`` and ``data``
    with ``x``; other blocks are gathered, never densified.

    Parameters
    ----------
    x : gpusparse.SparseArray
        The array; its chunks keep its format, fill value and device.
    chunks : int, tuple, dict or "auto"
        Dask's chunk specification (``dask.array.core.normalize_chunks``);
        ``"auto"`` sizes chunks by the dense element count and Dask's
        ``array.chunk-size`` setting, so sparse chunks come out smaller.
        Chunks of length 0 along an axis of positive length are left out
        (they hold no element, and Dask's ``max``/``min`` fail on them), so
        ``chunks=((2, 0, 2), 5)`` gives ``((2, 2), (5,))``.

    Raises
    ------
    ValueError
        ``chunks`` that do not cover ``x.shape`` (a negative length, a
        chunk size of 0 along an axis of positive length, lengths that do
        not add up).
    name : str, optional
        The key name of the chunks; a unique one by default.

    Returns
    -------
    dask.array.Array
        With ``meta`` a 0-size gpusparse array of ``x``'s format and dtype.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> from gpusparse.dask import from_array
    >>> x = gs.random((6, 4), density=0.5, format="csr", device="cpu", seed=0)
    >>> X = from_array(x, chunks=(2, 4))
    >>> X.numblocks, type(X._meta).__name__
    ((3, 1), 'CSR')
    >>> np.allclose(X.sum(axis=0).compute().todense(), x.sum(axis=0).todense())
    True
    """
    from gpusparse.containers import SparseArray
    if not isinstance(x, SparseArray):
        raise TypeError(f"from_array: x must be a gpusparse array, not {type(x).__name__}; "
                        "for other arrays use dask.array.from_array")
    if x.ndim == 0:
        raise ValueError("from_array: x must have at least one dimension")
    chunks = _normalized(chunks, x.shape, x.dtype, "from_array: chunks")
    name = name or f"gpusparse-from-array-{uuid.uuid4().hex}"
    bounds = [list(itertools.accumulate(c, initial=0)) for c in chunks]
    graph = {}
    for index in itertools.product(*(range(len(c)) for c in chunks)):
        key = tuple(slice(b[i], b[i + 1]) for b, i in zip(bounds, index))
        graph[(name,) + index] = x[key]
    return da.Array(graph, name, chunks, meta=meta_like(x))
