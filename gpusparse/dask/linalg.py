"""Row-partitioned sparse matrices times chunked vectors: SpMV/SpMM and CG on Dask.

``dask.array``'s own ``A @ x`` on a matrix cut into row blocks needs the
whole of ``x`` in every block's task (one column chunk) or a sum over column
blocks (many tasks, intermediate vectors). Sparse matrices from meshes,
graphs with locality or banded systems touch only a few columns per row
block: :class:`RowBlockMatrix` records, for each row block, which chunks of
the vector its columns fall in, stores the block with its columns shifted
to that window, and builds one task per row block that reads only those
vector chunks. The product stays chunked like the rows, so iterating
(``x = A @ x``) never gathers the vector.

A row block costs one pass over its column indices at construction (and
one device synchronisation on CUDA); products run gpusparse's SpMV/SpMM on
the block's device.
"""

from __future__ import annotations

import itertools
import math
import uuid

import dask
import dask.array as da
import numpy as np
from dask.array.utils import meta_from_array
from dask.highlevelgraph import HighLevelGraph

__all__ = ["RowBlockMatrix", "cg"]


def _block_product(block, *pieces):
    """``block @ concatenate(pieces)``: one row block times the vector chunks it reads."""
    from gpusparse.ops import linalg
    if len(pieces) == 1:
        x = pieces[0]
    else:
        from gpusparse._device import xp_for
        x = xp_for(block.device).concatenate(pieces, axis=0)
    return linalg.matmul(block, x)


class RowBlockMatrix:
    """A 2-D sparse matrix cut into row blocks, for products with vectors chunked on Dask.

    Parameters
    ----------
    a : gpusparse.SparseArray
        A 2-D matrix without dense dimensions, converted to CSR (on its device).
    row_chunks : int or tuple of int
        The row blocks (Dask's chunk notation for one axis); products are
        chunked like this.
    col_chunks : int or tuple of int, optional
        The chunks of the vectors it multiplies (default: ``row_chunks`` for a
        square matrix, one chunk otherwise); vectors chunked otherwise are
        rechunked.

    Attributes
    ----------
    spans : list of (int, int)
        For each row block, the first and one past the last vector chunk its
        columns fall in.

    Examples
    --------
    >>> import numpy as np, dask.array as da, gpusparse as gs
    >>> from gpusparse.dask import RowBlockMatrix
    >>> a = gs.eye(6, format="csr", device="cpu") * 2.0
    >>> A = RowBlockMatrix(a, row_chunks=2)
    >>> A.spans                                      # each block reads one chunk of x
    [(0, 1), (1, 2), (2, 3)]
    >>> y = A @ da.arange(6.0, chunks=2)
    >>> y.chunks, y.compute()
    (((2, 2, 2),), array([ 0.,  2.,  4.,  6.,  8., 10.]))
    """

    def __init__(self, a, row_chunks, col_chunks=None):
        from gpusparse.containers import SparseArray
        if not isinstance(a, SparseArray):
            raise TypeError(f"RowBlockMatrix: a must be a gpusparse array, not {type(a).__name__}")
        if a.ndim != 2 or a.dense_dim:
            raise ValueError(f"RowBlockMatrix: a must be a 2-D matrix without dense dimensions, got shape "
                             f"{a.shape} with {a.dense_dim} dense dimension(s)")
        if not _is_zero(a.fill_value):
            raise ValueError(f"RowBlockMatrix: a must have fill value 0 for a product, not {a.fill_value!r}")
        a = a.tocsr()
        n_rows, n_cols = a.shape
        self.shape = a.shape
        self.dtype = a.dtype
        self.device = a.device
        self.row_chunks = _chunks(row_chunks, n_rows, "row_chunks")
        if col_chunks is None:
            col_chunks = self.row_chunks if n_rows == n_cols else (n_cols,)
        self.col_chunks = _chunks(col_chunks, n_cols, "col_chunks")
        col_bounds = list(itertools.accumulate(self.col_chunks, initial=0))
        self._name = f"gpusparse-row-blocks-{uuid.uuid4().hex}"
        self.spans, self._blocks = [], []
        for i, (r0, r1) in enumerate(itertools.pairwise(itertools.accumulate(self.row_chunks, initial=0))):
            block = a[r0:r1]  # a view of a's indices and data
            lo, hi = _span(block, col_bounds)
            c0, c1 = col_bounds[lo], col_bounds[hi]
            if (c0, c1) != (0, n_cols):
                block = block[:, c0:c1]
            self.spans.append((lo, hi))
            self._blocks.append(dask.delayed(block, name=f"{self._name}-{i}"))

    def __repr__(self) -> str:
        return (f"<RowBlockMatrix: shape={self.shape}, dtype={self.dtype}, row blocks={len(self.row_chunks)}, "
                f"vector chunks={len(self.col_chunks)}, device='{self.device}'>")

    def persist(self, **kwargs):
        """Keep the blocks in the workers' memory (``dask.persist``): later products send only keys.

        Call it once under dask.distributed before iterating, otherwise every
        product's graph carries the blocks again. Returns ``self``.
        """
        self._blocks = list(dask.persist(*self._blocks, **kwargs))
        return self

    def matmul(self, x):
        """``self @ x`` for a Dask array ``x`` of shape ``(n_cols,)`` or ``(n_cols, k)`` (SpMV, SpMM).

        ``x`` holds dense chunks (NumPy or CuPy, on the matrix's device); it
        is rechunked to :attr:`col_chunks` along its first axis (and to one
        chunk along the second) where it differs. The result is chunked by
        :attr:`row_chunks`.
        """
        if not isinstance(x, da.Array):
            raise TypeError(f"RowBlockMatrix.matmul: x must be a dask array, not {type(x).__name__}")
        if x.ndim not in (1, 2) or x.shape[0] != self.shape[1]:
            raise ValueError(f"RowBlockMatrix.matmul: x must have shape ({self.shape[1]},) or "
                             f"({self.shape[1]}, k), got {x.shape}")
        if x.chunks[0] != self.col_chunks or (x.ndim == 2 and len(x.chunks[1]) != 1):
            x = x.rechunk((self.col_chunks,) + ((x.shape[1],) if x.ndim == 2 else ()))
        dtype = np.result_type(self.dtype, x.dtype)
        name = f"gpusparse-spmv-{uuid.uuid4().hex}"
        tail = (0,) if x.ndim == 2 else ()
        graph = {
            (name, i) + tail: (_block_product, block.key, *[(x.name, j) + tail for j in range(lo, hi)])
            for i, (block, (lo, hi)) in enumerate(zip(self._blocks, self.spans))
        }
        hlg = HighLevelGraph.from_collections(name, graph, dependencies=[x, *self._blocks])
        chunks = (self.row_chunks,) + x.chunks[1:]
        return da.Array(hlg, name, chunks, meta=meta_from_array(x._meta, ndim=x.ndim, dtype=dtype))

    __matmul__ = matmul

    def dot(self, x):
        """``self @ x`` (:meth:`matmul`)."""
        return self.matmul(x)


def _is_zero(value) -> bool:
    return bool(value == 0)


def _chunks(spec, n, argument):
    """One axis's chunks: non-negative lengths adding up to ``n`` (empty ones dropped), else ValueError."""
    from gpusparse.dask._chunked import _normalized
    return _normalized((spec,), (n,), None, f"RowBlockMatrix: {argument}", shown=spec)[0]


def _span(block, col_bounds):
    """The vector chunks ``[lo, hi)`` that ``block``'s columns fall in (at least one)."""
    from gpusparse._device import array_device, to_host, xp_for
    if block.nnz == 0:
        return 0, 1
    indices = block.indices
    xp = xp_for(array_device(indices))
    first, last = (int(v) for v in to_host(xp.stack([indices.min(), indices.max()])))  # sync: the span
    lo = int(np.searchsorted(col_bounds, first, side="right")) - 1
    hi = int(np.searchsorted(col_bounds, last, side="right"))
    return lo, max(hi, lo + 1)


def cg(a, b, x0=None, *, rtol=1e-5, atol=0.0, maxiter=None, callback=None):
    """Conjugate gradients for a symmetric positive definite ``a``, every vector a chunked Dask array.

    ``a @ p`` is :meth:`RowBlockMatrix.matmul`; the inner products are Dask
    reductions computed once per iteration (two small results to the
    client), and the iterates are persisted, so the task graph does not grow
    with the iterations. The stopping rule is SciPy's:
    ``norm(r) <= max(rtol * norm(b), atol)``.

    Parameters
    ----------
    a : RowBlockMatrix or gpusparse.SparseArray
        The matrix; a gpusparse array is cut into the row chunks of ``b``
        (and its blocks persisted).
    b : dask.array.Array
        Right-hand side, 1-D.
    x0 : dask.array.Array, optional
        Initial guess (zeros by default).
    rtol, atol : float
        Relative and absolute tolerances on the residual norm.
    maxiter : int, optional
        Most iterations (default ``10 * n``).
    callback : callable, optional
        Called with the iterate (a persisted Dask array) after each iteration.

    Returns
    -------
    x : dask.array.Array
        The solution, persisted, chunked like ``b``.
    info : int
        0 when converged, else the number of iterations run (SciPy's).

    Examples
    --------
    >>> import numpy as np, dask.array as da, gpusparse as gs
    >>> from gpusparse.dask import cg
    >>> a = gs.fromdense(np.array([[4.0, 1, 0], [1, 3, 1], [0, 1, 2]]), format="csr", device="cpu")
    >>> x, info = cg(a, da.ones(3, chunks=2), rtol=1e-10)
    >>> info, np.allclose(np.array([[4.0, 1, 0], [1, 3, 1], [0, 1, 2]]) @ x.compute(), 1)
    (0, True)
    """
    if not isinstance(b, da.Array) or b.ndim != 1:
        raise TypeError(f"cg: b must be a 1-D dask array, not {type(b).__name__}"
                        + (f" of {b.ndim} dimensions" if isinstance(b, da.Array) else ""))
    if not isinstance(a, RowBlockMatrix):
        a = RowBlockMatrix(a, b.chunks[0]).persist()
    if a.shape[0] != a.shape[1] or a.shape[1] != b.shape[0]:
        raise ValueError(f"cg: a must be square and match b, got a of shape {a.shape} and b of shape {b.shape}")
    if maxiter is None:
        maxiter = 10 * b.shape[0]
    b = (b.rechunk((a.row_chunks,)) if b.chunks[0] != a.row_chunks else b).persist()
    bb = float(_dot(b, b))
    if x0 is None:
        x = da.zeros_like(b, dtype=np.result_type(a.dtype, b.dtype)).persist()
        r, rr = b, bb
    else:
        x = x0.rechunk(b.chunks).persist()
        r = (b - a @ x).persist()
        rr = float(_dot(r, r))
    bound = max(rtol * math.sqrt(bb), atol)
    p = r
    for k in range(maxiter):
        if math.sqrt(rr) <= bound:
            return x, 0
        q = (a @ p).persist()
        alpha = rr / float(_dot(p, q))
        x = (x + alpha * p).persist()
        r = (r - alpha * q).persist()
        rr_next = float(_dot(r, r))
        p = (r + (rr_next / rr) * p).persist()
        rr = rr_next
        if callback is not None:
            callback(x)
    return x, (0 if math.sqrt(rr) <= bound else maxiter)


def _dot(u, v):
    """``<u, v>`` computed to a host scalar (the real part: ``a`` is Hermitian)."""
    value = (u.conj() * v).sum().compute()
    return np.real(_host(value))


def _host(value):
    from gpusparse._device import to_host
    return to_host(value) if hasattr(value, "shape") else value
