"""The product engines: sparse @ dense, dense @ sparse and sparse @ sparse, N-d with broadcasting.

Every product reduces to one 2-D product handed to a primitive:

* **2-D operands** go straight to ``spmv`` / ``spmm`` / ``spgemm`` through a
  :class:`~gpusparse.ops.linalg.operands.CsrView` (CSC as the transpose of
  its own arrays, so neither CSR nor CSC is ever converted for SpMV/SpMM).
  ``dense @ sparse`` is ``(sparse.T @ dense.T).T`` with the transposes taken
  as column-major views, which the primitives accept as they are.
* **N-d operands** (NumPy's ``matmul`` rules: the last two axes are the
  matrix, the others are batch axes that broadcast) become one
  block-diagonal 2-D product (:class:`BatchPlan`). Batch axes both operands
  have (*shared*) index the diagonal blocks; axes only the sparse left
  operand has go into its rows; axes only the right operand has go into its
  columns. No sparse entry is ever copied per batch, and a dense operand is
  transposed once at most.
* Sparse @ sparse whose output would need an index pointer or a dense
  accumulator far larger than the operands (huge sparse shapes) takes the
  expand-sort-compress route: every product term is generated and the terms
  are coalesced (:func:`esc_product`).

bool products are computed in int64 and compared with 0 (NumPy's bool
matmul is an OR of ANDs).
"""

from __future__ import annotations

import math

import numpy as np

import gpusparse._memory as _memory
from gpusparse._backend import backend
from gpusparse._device import to_host
from gpusparse._errors import warn_efficiency
from gpusparse.ops import canonical, convert
from gpusparse.ops.linalg.operands import (
    all_sparse,
    as_coo,
    compute_dtype,
    coo_to_csr,
    csr_view,
    drop_axes,
    insert_zero_axis,
    is_sparse,
    linear_keys,
    new_coo,
    require_zero_fill,
    result_dtype,
    settle_duplicates,
)

__all__ = [
    "BatchPlan",
    "dense_sparse",
    "esc_product",
    "finish_dense",
    "hybrid_left_dense",
    "sparse_dense",
    "sparse_sparse",
    "spgemm_2d",
    "spmm_into",
    "transpose_2d",
]
# ``_matmul`` (matmul of prepared operands) and the ``_check_*`` / ``_need_*`` helpers
# are shared by gpusparse.ops.linalg.products and gpusparse.ops.linalg.torch_names.


# --------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------

def finish_dense(out, dtype):
    """``out`` computed in :func:`compute_dtype` ``(dtype)`` as ``dtype``."""
    return out != 0 if np.dtype(dtype) == np.bool_ else out


def finish_sparse(x, dtype, be):
    """Sparse ``x`` computed in the compute dtype as ``dtype`` (bool: stored value != 0)."""
    if np.dtype(dtype) != np.bool_:
        return x
    from gpusparse.ops.convert import components, rebuild
    arrays = components(x)
    with be.scope():
        data = arrays[-1] != 0
    return rebuild(x, arrays[:-1] + (data,), fill_value=np.bool_(False))


def transpose_2d(x, *, be=None):
    """The transpose of a 2-D all-sparse array: CSR <-> CSC over the same arrays, COO rows swapped."""
    from gpusparse.containers import CSC, CSR
    m, n = x.shape
    if x.format == "csr":
        return CSC._from_parts(x.indptr, x.indices, x.data, (n, m), x.fill_value, x.device)
    if x.format == "csc":
        return CSR._from_parts(x.indptr, x.indices, x.data, (n, m), x.fill_value, x.device)
    return swap_last_two(x, be=be)


def swap_last_two(x, *, be=None):
    """All-sparse COO ``x`` with its last two axes swapped."""
    be = be or backend(x.device)
    coo = as_coo(x, be=be)
    d = coo.ndim
    order = list(range(d - 2)) + [d - 1, d - 2]
    with be.scope():
        coords = coo.coords[order]
    shape = tuple(coo.shape[i] for i in order)
    return new_coo(coords, coo.data, shape, be, sorted=coo.nnz <= 1, unique=coo.unique,
                   fill=coo.fill_value)


def spmm_into(view, b, out, be, alpha=1, beta=0):
    """``out = alpha * op(view) @ b + beta * out`` for 1-D or 2-D ``b`` / ``out`` of the view's dtype, on backend ``be``."""
    k, xp = be.kernels, be.xp
    if out.size == 0:
        return
    if view.nnz == 0 or b.shape[0] == 0:
        if beta == 0:
            out[...] = 0
        else:
            out[...] = out * out.dtype.type(beta)
        return
    if b.ndim == 2 and b.shape[1] == 1 and (out.flags.c_contiguous or out.flags.f_contiguous):
        b, out = b.reshape(-1), out.reshape(-1)  # one column: SpMV (a view of out, written in place)
    if b.ndim == 1:
        k.spmv(view.indptr, view.indices, view.data, view.stored_shape, xp.ascontiguousarray(b),
               out, alpha, beta, view.trans)
        return
    if not (b.flags.c_contiguous or b.flags.f_contiguous):
        b = xp.ascontiguousarray(b)
    k.spmm(view.indptr, view.indices, view.data, view.stored_shape, b, out, alpha, beta, view.trans)


# --------------------------------------------------------------------------
# Batch axes
# --------------------------------------------------------------------------

class BatchPlan:
    """How the batch axes of ``(*a_batch, M, K) @ (*b_batch, K, N)`` map onto one 2-D product.

    ``out`` is the broadcast batch shape. Each output batch axis is
    *shared* (both operands have it, size > 1), *a-only*, *b-only* (the
    other operand broadcasts along it) or trivial (size 1 in both). The
    left operand becomes the ``(shared, a_only, M) x (shared, K)`` matrix,
    the right one ``(shared, K) x (b_only, N)``: block diagonal in the
    shared axes.
    """

    def __init__(self, a_batch, b_batch, names=("a", "b")):
        a_batch, b_batch = tuple(a_batch), tuple(b_batch)
        if not a_batch and not b_batch:  # two matrices, the common case: nothing to broadcast
            self.out, self.a_off, self.b_off, self.shared, self.a_only, self.b_only = (), 0, 0, [], [], []
            return
        try:
            out = np.broadcast_shapes(a_batch, b_batch)
        except ValueError:
            raise ValueError(
                f"the batch dimensions of {names[0]} {a_batch} and {names[1]} {b_batch} "
                "cannot be broadcast together"
            ) from None
        L = len(out)
        pa = (1,) * (L - len(a_batch)) + a_batch
        pb = (1,) * (L - len(b_batch)) + b_batch
        self.out = tuple(out)
        self.a_off = L - len(a_batch)
        self.b_off = L - len(b_batch)
        self.shared = [i for i in range(L) if pa[i] == pb[i] and pa[i] != 1]
        self.a_only = [i for i in range(L) if pa[i] != 1 and pb[i] == 1]
        self.b_only = [i for i in range(L) if pb[i] != 1 and pa[i] == 1]

    def _sizes(self, axes):
        return [self.out[i] for i in axes]

    # -- the left (sparse) operand --------------------------------------
    def left_keeps_order(self) -> bool:
        return not self.shared or not self.a_only or max(self.shared) < min(self.a_only)

    def left_matrix(self, a, be):
        """All-sparse COO ``a`` as the 2-D COO ``(shared, a_only, M) x (shared, K)``."""
        k, xp = be.kernels, be.xp
        coo = as_coo(a, be=be)
        c = coo.coords
        M, K = coo.shape[-2:]
        rows = [c[i - self.a_off] for i in self.shared + self.a_only] + [c[coo.ndim - 2]]
        cols = [c[i - self.a_off] for i in self.shared] + [c[coo.ndim - 1]]
        row_shape = self._sizes(self.shared + self.a_only) + [M]
        col_shape = self._sizes(self.shared) + [K]
        r = linear_keys(rows, row_shape, k, xp)
        s = linear_keys(cols, col_shape, k, xp)
        return new_coo(xp.stack([r, s]), coo.data, (math.prod(row_shape), math.prod(col_shape)),
                       be, sorted=coo.sorted and self.left_keeps_order(), unique=coo.unique)

    # -- the right operand ----------------------------------------------
    def right_matrix(self, b, be):
        """All-sparse COO ``b`` as the 2-D COO ``(shared, K) x (b_only, N)``."""
        k, xp = be.kernels, be.xp
        coo = as_coo(b, be=be)
        c = coo.coords
        K, N = coo.shape[-2:]
        rows = [c[i - self.b_off] for i in self.shared] + [c[coo.ndim - 2]]
        cols = [c[i - self.b_off] for i in self.b_only] + [c[coo.ndim - 1]]
        row_shape = self._sizes(self.shared) + [K]
        col_shape = self._sizes(self.b_only) + [N]
        r = linear_keys(rows, row_shape, k, xp)
        s = linear_keys(cols, col_shape, k, xp)
        return new_coo(xp.stack([r, s]), coo.data, (math.prod(row_shape), math.prod(col_shape)),
                       be, sorted=coo.sorted and not self.b_only, unique=coo.unique)

    def right_dense(self, b, xp):
        """Dense ``b`` as the 2-D array ``(shared, K) x (b_only, N)`` (one copy at most)."""
        L = len(self.out)
        b = b.reshape((1,) * self.b_off + b.shape)
        keep = set(self.shared) | set(self.b_only)
        index = tuple(slice(None) if i in keep else 0 for i in range(L))
        b = b[index]
        kept = [i for i in range(L) if i in keep]  # axis j of b is batch axis kept[j]
        pos = {axis: j for j, axis in enumerate(kept)}
        n_kept = len(kept)
        perm = [pos[i] for i in self.shared] + [n_kept] + [pos[i] for i in self.b_only] + [n_kept + 1]
        b = xp.transpose(b, perm)
        K, N = b.shape[len(self.shared)], b.shape[-1]
        rows = math.prod(self._sizes(self.shared)) * K
        cols = math.prod(self._sizes(self.b_only)) * N
        return xp.ascontiguousarray(b).reshape(rows, cols)

    # -- the result -------------------------------------------------------
    def unpack_dense(self, out2, M, N, xp):
        """The 2-D result as the dense ``(*out, M, N)`` array (C order)."""
        lead = self.shared + self.a_only
        shape = self._sizes(lead) + [M] + self._sizes(self.b_only) + [N]
        res = out2.reshape(shape)
        axis_of = {i: j for j, i in enumerate(lead)}
        axis_of.update({i: len(lead) + 1 + j for j, i in enumerate(self.b_only)})
        order = [axis_of[i] for i in range(len(self.out)) if i in axis_of]
        order += [len(lead), len(shape) - 1]
        res = xp.ascontiguousarray(xp.transpose(res, order))
        return res.reshape(self.out + (M, N))

    def result_keeps_order(self) -> bool:
        return not self.b_only and self.left_keeps_order()

    def unpack_coords(self, rows, cols, M, N, k, xp):
        """Output coordinates ``(len(out) + 2, n)`` from the 2-D result's row and column keys."""
        lead = self.shared + self.a_only
        n = rows.shape[0]
        rc = k.delinearize(rows, tuple(self._sizes(lead) + [M]))
        cc = k.delinearize(cols, tuple(self._sizes(self.b_only) + [N]))
        out_rows = []
        for i in range(len(self.out)):
            if i in lead:
                out_rows.append(rc[lead.index(i)])
            elif i in self.b_only:
                out_rows.append(cc[self.b_only.index(i)])
            else:
                out_rows.append(xp.zeros(n, dtype=np.int64))
        out_rows += [rc[len(lead)], cc[len(self.b_only)]]
        return xp.stack(out_rows)


# --------------------------------------------------------------------------
# sparse @ dense, dense @ sparse
# --------------------------------------------------------------------------

def _zeros(shape, dtype, be):
    with be.scope():
        return be.xp.zeros(shape, dtype=dtype)


def sparse_dense(a, b, dtype, be):
    """All-sparse ``a`` (>= 2-D, zero fill) @ dense ``b`` (>= 2-D), NumPy broadcasting, in ``dtype``, on ``be``."""
    k, xp = be.kernels, be.xp
    cdt = compute_dtype(dtype)
    M, K = a.shape[-2:]
    N = b.shape[-1]
    plan = BatchPlan(a.shape[:-2], b.shape[:-2])
    out_shape = plan.out + (M, N)
    if math.prod(out_shape) == 0 or a.nnz == 0 or K == 0:
        return _zeros(out_shape, dtype, be)
    with be.scope():
        b = b.astype(cdt, copy=False)
        if a.ndim == 2:
            view = csr_view(a, be=be).astype(cdt)
            if b.ndim == 2:
                out = k.empty((M, N), dtype=cdt)
                spmm_into(view, b, out, be)
                return finish_dense(out, dtype)
            b2 = plan.right_dense(b, xp)
        else:
            warn = a.format == "coo" and not a.sorted
            view = csr_view(plan.left_matrix(a, be), warn=warn, be=be).astype(cdt)
            b2 = plan.right_dense(b, xp)
        out2 = k.empty((view.shape[0], b2.shape[1]), dtype=cdt)
        spmm_into(view, b2, out2, be)
        return finish_dense(plan.unpack_dense(out2, M, N, xp), dtype)


def dense_sparse(a, b, dtype, be):
    """Dense ``a`` (>= 2-D) @ all-sparse ``b`` (>= 2-D, zero fill): ``(b.T @ a.T).T`` per batch, on ``be``."""
    k, xp = be.kernels, be.xp
    cdt = compute_dtype(dtype)
    M, K = a.shape[-2:]
    N = b.shape[-1]
    if a.ndim == 2 and b.ndim == 2:
        if M * N == 0 or b.nnz == 0 or K == 0:
            return _zeros((M, N), dtype, be)
        with be.scope():
            a = a.astype(cdt, copy=False)
            view = csr_view(b, be=be).astype(cdt).transposed()
            out = k.empty((M, N), dtype=cdt)
            spmm_into(view, a.T, out.T, be)  # out.T = b.T @ a.T, both as column-major views
            return finish_dense(out, dtype)
    bt = transpose_2d(b, be=be) if b.ndim == 2 else swap_last_two(b, be=be)
    with be.scope():
        res = sparse_dense(bt, xp.swapaxes(a, -1, -2), dtype, be)
        return xp.ascontiguousarray(xp.swapaxes(res, -1, -2))


def hybrid_left_dense(a, b, dtype, be):
    """Sparse ``a`` with dense trailing dims @ dense ``b`` (1-D or 2-D): the contraction stays inside the blocks.

    Each stored block ``(*D, K)`` is multiplied by ``b``; the blocks are
    scattered into the dense result (duplicates add up).
    """
    from gpusparse.containers import COO
    from gpusparse.ops.convert import to_dense
    xp = be.xp
    cdt = compute_dtype(dtype)
    coo = as_coo(a, be=be)
    shape = a.shape[:-1] + ((b.shape[-1],) if b.ndim == 2 else ())
    with be.scope():
        blocks = xp.matmul(coo.data.astype(cdt, copy=False), b.astype(cdt, copy=False))
        res = COO._from_parts(coo.coords, xp.ascontiguousarray(blocks), shape, cdt.type(0), be.device,
                              sorted=coo.sorted, unique=coo.unique)
        return finish_dense(to_dense(res, be=be), dtype)


# --------------------------------------------------------------------------
# sparse @ sparse
# --------------------------------------------------------------------------

_INT32_LIMIT = 2**31 - 2


def _spgemm_fits(m, n, nnz) -> bool:
    """Whether the output index pointer and accumulators stay near the operands' size."""
    return max(m, n) <= _INT32_LIMIT and max(m, n) <= max(2**24, 16 * nnz)


def spgemm_2d(a, b, cdt, be):
    """2-D all-sparse ``a @ b`` (zero fills) in ``cdt`` on ``be``: CSR, or CSC for CSC @ CSC, or COO (huge shapes).

    May synchronise the device (the size of the output).
    """
    from gpusparse.containers import CSC, CSR
    dev, k = be.device, be.kernels
    m, kk = a.shape
    n = b.shape[1]
    zero = cdt.type(0)
    if not _spgemm_fits(m, n, a.nnz + b.nnz):
        return esc_product(a, b, cdt, be)
    with be.scope():
        if a.format == "csc" and b.format == "csc":  # C.T = B.T @ A.T: read both CSC as CSR
            ip, ix, dd = k.spgemm(b.indptr, b.indices, b.data.astype(cdt, copy=False),
                                  a.indptr, a.indices, a.data.astype(cdt, copy=False),
                                  (n, kk, m))  # sync: the primitive sizes its output
            return CSC._from_parts(ip, ix, dd, (m, n), zero, dev)
        ac = _as_csr(a, be)
        bc = _as_csr(b, be)
        ip, ix, dd = k.spgemm(ac.indptr, ac.indices, ac.data.astype(cdt, copy=False),
                              bc.indptr, bc.indices, bc.data.astype(cdt, copy=False),
                              (m, kk, n))  # sync: the primitive sizes its output
        return CSR._from_parts(ip, ix, dd, (m, n), zero, dev)


def _as_csr(x, be):
    """2-D all-sparse ``x`` as CSR: itself, its canonical CSR (COO) or its transpose (CSC)."""
    if x.format == "csr":
        return x
    return coo_to_csr(x, be=be) if x.format == "coo" else convert.asformat(x, "csr", be=be)


def esc_product(a, b, cdt, be):
    """2-D ``a @ b`` by expand-sort-compress: every product term, then one coalesce.

    Works for any shape whose 2-D keys fit the coalesce (which splits keys
    beyond 63 bits); costs memory and a sort proportional to the number of
    product terms. Synchronises once to size the terms.
    """
    dev, k, xp = be.device, be.kernels, be.xp
    A = as_coo(a, be=be)
    B = canonical.coalesce(as_coo(b, be=be), be=be)
    m, n = a.shape[0], b.shape[1]
    with be.scope():
        a_rows, a_cols = A.coords[0], A.coords[1]
        b_rows = B.coords[0]
        lo = xp.searchsorted(b_rows, a_cols, side="left")
        hi = xp.searchsorted(b_rows, a_cols, side="right")
        ptr = k.offsets(hi - lo)
        total = int(to_host(ptr[-1:])[0])  # sync: the number of product terms
        # every term: two sources, a row, a column (int64) and a value, then a coalesce of them
        _memory.require(total * 2 * (4 * 8 + np.dtype(cdt).itemsize), dev,
                        f"the product terms ({total:.3g}) of a ({m}, {a.shape[1]}) by ({b.shape[0]}, {n}) product")
        src_a = k.expand(ptr, total)
        src_b = lo[src_a] + (xp.arange(total, dtype=np.int64) - ptr[src_a])
        rows = a_rows[src_a]
        cols = B.coords[1][src_b]
        data = A.data.astype(cdt, copy=False)[src_a] * B.data.astype(cdt, copy=False)[src_b]
        terms = new_coo(xp.stack([rows, cols]), data, (m, n), be, sorted=False, unique=False)
    return canonical.coalesce(terms, be=be)


def sparse_sparse(a, b, dtype, fmt, be):
    """All-sparse ``a @ b`` (>= 2-D each, zero fills) in ``dtype``, on ``be``.

    2-D results take ``fmt`` (``"coo"``, ``"csr"``, ``"csc"``); N-d results are COO.
    """
    k, xp = be.kernels, be.xp
    cdt = compute_dtype(dtype)
    M = a.shape[-2]
    N = b.shape[-1]
    if a.ndim == 2 and b.ndim == 2:
        res = spgemm_2d(a, b, cdt, be)
        res = res if res.format == fmt else convert.asformat(res, fmt, be=be)
        return finish_sparse(res, dtype, be)
    plan = BatchPlan(a.shape[:-2], b.shape[:-2])
    out_shape = plan.out + (M, N)
    with be.scope():
        a2 = plan.left_matrix(a, be)
        b2 = plan.right_matrix(b, be)
        res = as_coo(spgemm_2d(a2, b2, cdt, be), be=be)
        coords = plan.unpack_coords(res.coords[0], res.coords[1], M, N, k, xp)
        out = new_coo(coords, res.data, out_shape, be,
                      sorted=res.sorted and plan.result_keeps_order(), unique=True)
    return finish_sparse(out, dtype, be)


# --------------------------------------------------------------------------
# matmul of prepared operands, and the checks every product front end shares
# --------------------------------------------------------------------------

def _check_operands(a, b, names, what):
    for x, name in zip((a, b), names):
        if x.ndim == 0:
            raise ValueError(f"{what}: {name} is 0-d; it needs at least one dimension "
                             "(multiply by a scalar instead)")
        if is_sparse(x):
            require_zero_fill(x, name, what)
    return result_dtype((names[0], a.dtype), (names[1], b.dtype))


def _matmul_shapes(a_shape, b_shape, names, what):
    """The shape of ``matmul(a, b)``; ``ValueError`` naming both operands when they cannot multiply."""
    a2 = (1,) + a_shape if len(a_shape) == 1 else a_shape
    b2 = b_shape + (1,) if len(b_shape) == 1 else b_shape
    if a2[-1] != b2[-2]:
        where = "its only" if len(b_shape) == 1 else "its second-to-last"
        raise ValueError(
            f"{what}: inner dimensions differ: {names[0]} has shape {a_shape} "
            f"({a2[-1]} along its last axis) but {names[1]} has shape {b_shape} "
            f"({b2[-2]} along {where} axis)"
        )
    out = BatchPlan(a2[:-2], b2[:-2], names).out
    if len(a_shape) > 1:
        out += (a2[-2],)
    if len(b_shape) > 1:
        out += (b2[-1],)
    return out


def _matmul(a, b, names=("a", "b"), what="matmul", *, be):
    """matmul of prepared operands (at least one sparse) on their device's backend ``be``."""
    dtype = _check_operands(a, b, names, what)
    out_shape = _matmul_shapes(tuple(a.shape), tuple(b.shape), names, what)
    sa, sb = is_sparse(a), is_sparse(b)
    cdt = compute_dtype(dtype)
    a = settle_duplicates(a, cdt, be=be) if sa else a
    b = settle_duplicates(b, cdt, be=be) if sb else b
    if sa and not sb and a.dense_dim > 0 and b.ndim <= 2:
        return hybrid_left_dense(a, b, dtype, be)
    a1, b1 = a.ndim == 1, b.ndim == 1
    fmt = a.format if sa and a.ndim == 2 and b.ndim == 2 else "coo"
    for x, name in ((a, names[0]), (b, names[1])):
        if is_sparse(x) and x.dense_dim and x.nnz:
            warn_efficiency(
                f"{what}: the dense dimensions of {name} (shape {x.shape}, dense_dim={x.dense_dim}) "
                "are made sparse for this product, one entry per element of every stored block; "
                "products that contract a dense dimension of the left operand with a 1-D or 2-D "
                "dense operand keep the blocks as they are"
            )
    if sa:
        a = all_sparse(a, be=be)
        a = insert_zero_axis(a, 0, be=be) if a1 else a
    elif a1:
        a = a.reshape(1, -1)
    if sb:
        b = all_sparse(b, be=be)
        b = insert_zero_axis(b, 1, be=be) if b1 else b
    elif b1:
        b = b.reshape(-1, 1)
    with _memory.operation(what):  # names the product in a MemoryError of its allocations
        if sa and sb:
            res = sparse_sparse(a, b, dtype, fmt, be)
            if not (a1 or b1):
                return res
            promoted = ([res.ndim - 2] if a1 else []) + ([res.ndim - 1] if b1 else [])
            res = drop_axes(as_coo(res, be=be), promoted, be=be)
            return convert.to_dense(res, be=be) if res.ndim == 0 else res
        res = sparse_dense(a, b, dtype, be) if sa else dense_sparse(a, b, dtype, be)
    return res.reshape(out_shape)


def _need_ndim(x, ndim, name, what):
    if x.ndim != ndim:
        raise ValueError(f"{what}: {name} must be {ndim}-D, got shape {tuple(x.shape)}")


def _need_sparse(x, name, what, dense_ok=False):
    if not is_sparse(x):
        raise TypeError(f"{what}: {name} must be a sparse array, got {type(x).__name__}")
    if x.dense_dim and not dense_ok:
        raise ValueError(f"{what}: {name} must have no dense dimensions, got dense_dim={x.dense_dim}")


def _need_dense(x, name, what):
    if is_sparse(x):
        raise TypeError(f"{what}: {name} must be dense, got a sparse {type(x).__name__}")
