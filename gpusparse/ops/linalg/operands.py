"""Operands of the products: validation, devices, dtypes, and 2-D views of sparse arrays.

Every product in :mod:`gpusparse.ops.linalg` starts here. :func:`prepare`
turns its inputs into sparse containers and dense arrays on one device (a
dense operand given as a list follows the sparse one; an array on another
device is an error naming both), :func:`result_dtype` applies NumPy's type
promotion, and :func:`require_zero_fill` enforces pydata's rule that
products need a zero fill value.

Operands of other libraries are normalised here too. A sparse array of
SciPy, torch, CuPy, pydata or JAX becomes a gpusparse array through
:func:`gpusparse.ops.interop.from_foreign`, sharing its components where
the layouts allow (SciPy CSR/CSC: no copy). A dense operand enters as a
NumPy or CuPy array through DLPack (zero-copy), and :func:`returns_operand_kind`
gives a dense result back as the type of the first dense operand: a torch
tensor for torch input (same device), a JAX array for JAX input, NumPy or
CuPy otherwise.

A sparse matrix enters a kernel as a :class:`CsrView`: CSR arrays plus the
operation (``"N"``, ``"T"``, ``"H"``) that turns the stored matrix into the
operand. CSR is used as it is, CSC as the transpose of its own arrays read as
CSR (no conversion), and COO is compressed once per product.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import sys

import numpy as np

from gpusparse._components import to_array
from gpusparse._backend import backend
from gpusparse._device import array_device, device_of, is_cupy_array, to_device_array
from gpusparse._dtypes import VALUE_DTYPES, check_value_dtype
from gpusparse._errors import warn_efficiency
from gpusparse.ops import canonical, convert

__all__ = [
    "CsrView",
    "compute_dtype",
    "csr_view",
    "is_sparse",
    "prepare",
    "require_zero_fill",
    "result_dtype",
    "returns_operand_kind",
    "settle_duplicates",
]


_SPARSE_ARRAY = None  # gpusparse.containers.SparseArray, looked up on first use (it imports this module)


def is_sparse(x) -> bool:
    """Whether ``x`` is a gpusparse array (called on every operand of every product: no import per call)."""
    global _SPARSE_ARRAY
    if _SPARSE_ARRAY is None:
        from gpusparse.containers import SparseArray
        _SPARSE_ARRAY = SparseArray
    return isinstance(x, _SPARSE_ARRAY)


# --------------------------------------------------------------------------
# Operands on one device
# --------------------------------------------------------------------------

def prepare(operands, names):
    """``(arrays, device)``: sparse operands as they are, dense ones as arrays on the common device.

    Sparse arrays of other libraries (SciPy, torch, CuPy, pydata, JAX)
    become gpusparse arrays here, sharing their components where the
    layouts allow. Raises ``ValueError`` naming both operands when they live on different
    devices, ``TypeError`` naming an operand that is not array-like or has a
    dtype gpusparse does not support.
    """
    from gpusparse.ops.interop import from_foreign
    converted, placed = [], []
    for obj, name in zip(operands, names):
        if not (obj is None or is_sparse(obj) or isinstance(obj, np.ndarray) or is_cupy_array(obj)):
            obj = _foreign_sparse(obj, name, from_foreign)
        if obj is None or is_sparse(obj):
            converted.append(obj)
            placed.append(True)
            continue
        arr, was_placed = to_array(obj, name)
        if arr.dtype not in VALUE_DTYPES:
            check_value_dtype(arr.dtype, name)
        converted.append(arr)
        placed.append(was_placed)
    anchors = [x if p else None for x, p in zip(converted, placed)]
    dev = device_of(*anchors, what=tuple(names))
    out = []
    for x, p in zip(converted, placed):
        if x is not None and not p:
            x = to_device_array(x, dev)
        out.append(x)
    return out, dev


def _foreign_sparse(obj, name, from_foreign):
    """``obj`` as a gpusparse array when it is another library's sparse array, else ``obj`` itself."""
    try:
        sparse = from_foreign(obj)
    except TypeError as exc:
        raise TypeError(f"{name}: {exc}") from exc
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from exc
    return obj if sparse is None else sparse


def _dense_kind(obj):
    """How to give a dense result back for operand ``obj``: a converter, ``False`` (as it is) or None (not dense)."""
    if isinstance(obj, np.ndarray) or is_cupy_array(obj):
        return False
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor) and obj.layout == torch.strided:
        return _to_torch
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(obj, jax.Array):
        return _to_jax
    return None


def _to_torch(out):
    import torch
    return torch.from_dlpack(out)


def _to_jax(out):
    """A JAX array over ``out``'s memory where JAX keeps its dtype (x64 off narrows 64-bit types): else ``out``."""
    import jax
    import jax.numpy as jnp
    if jax.dtypes.canonicalize_dtype(out.dtype) != out.dtype:
        return out
    return jnp.from_dlpack(out)


def returns_operand_kind(product):
    """Decorate a product so that a dense result has the type of its first dense array operand.

    torch tensors give torch tensors (on their device), JAX arrays give JAX
    arrays (where JAX can hold the result's dtype: with x64 disabled a
    64-bit result stays a NumPy/CuPy array rather than being narrowed),
    NumPy and CuPy arrays their own type; lists and scalars do not count.
    Results share memory with the computed array (DLPack, no copy). Sparse
    results are gpusparse arrays whatever the operands.
    """
    @functools.wraps(product)
    def wrapped(*args, **kwargs):
        out = product(*args, **kwargs)
        if is_sparse(out):
            return out
        for arg in itertools.chain(args, kwargs.values()):
            kind = _dense_kind(arg)
            if kind is not None:
                if not kind:
                    return out
                return kind(np.asarray(out) if isinstance(out, np.generic) else out)
        return out
    return wrapped


def result_dtype(*named_dtypes) -> np.dtype:
    """NumPy's promotion of ``(name, dtype)`` pairs, checked against the value dtypes."""
    dtypes = [np.dtype(dt) for _, dt in named_dtypes]
    try:
        dtype = np.result_type(*dtypes)
    except TypeError:
        listed = ", ".join(f"{name} {np.dtype(dt).name}" for name, dt in named_dtypes)
        raise TypeError(f"the operands have no common dtype: {listed}") from None
    if dtype not in VALUE_DTYPES:
        listed = ", ".join(f"{name} {np.dtype(dt).name}" for name, dt in named_dtypes)
        raise TypeError(f"the operands promote to {dtype.name}, which gpusparse does not support: {listed}")
    return dtype


def compute_dtype(dtype) -> np.dtype:
    """The dtype a product is computed in: int64 for bool (then compared with 0), else ``dtype``."""
    dtype = np.dtype(dtype)
    return np.dtype(np.int64) if dtype == np.bool_ else dtype


def require_zero_fill(x, name: str, what: str) -> None:
    """``ValueError`` unless sparse ``x`` has a zero fill value (pydata's rule for products)."""
    fill = x.fill_value
    if not (fill == 0 and fill == fill):
        raise ValueError(
            f"{what}: {name} has fill value {fill.item()!r}; products need a zero fill value. "
            f"Densify it explicitly ({name}.todense()) or rebuild it with fill_value=0"
        )


def settle_duplicates(x, dtype, *, be=None):
    """``x`` coalesced when it may hold duplicates and is about to be computed in another dtype.

    Duplicates mean their sum *in the array's own dtype* (bool: or; integers
    wrap). Summed after a cast (bool to int64, int8 to float64) they would
    mean something else, so such operands are coalesced first. Computed in
    their own dtype, duplicates may stay: the products are linear.
    """
    if x.format != "coo" or x.unique or np.dtype(dtype) == x.dtype or x.nnz <= 1:
        return x
    return canonical.coalesce(x, be=be)


# --------------------------------------------------------------------------
# 2-D views for the kernels
# --------------------------------------------------------------------------

_FLIP = {"N": "T", "T": "N"}


@dataclasses.dataclass(frozen=True)
class CsrView:
    """A sparse matrix operand: ``op(stored)`` where ``stored`` is the CSR ``(indptr, indices, data)``.

    ``stored_shape`` is the stored matrix's shape; :attr:`shape` is the
    operand's, transposed for ``trans`` ``"T"`` or ``"H"``.
    """

    indptr: object
    indices: object
    data: object
    stored_shape: tuple
    trans: str = "N"

    @property
    def shape(self) -> tuple:
        return self.stored_shape if self.trans == "N" else self.stored_shape[::-1]

    @property
    def nnz(self) -> int:
        return int(self.indices.shape[0])

    def transposed(self) -> "CsrView":
        """The view of the transpose (no conjugation)."""
        if self.trans == "H":
            xp = _array_module(self.data)
            return dataclasses.replace(self, data=xp.conj(self.data), trans="N")
        return dataclasses.replace(self, trans=_FLIP[self.trans])

    def adjoint(self) -> "CsrView":
        """The view of the conjugate transpose."""
        if self.data.dtype.kind != "c":
            return self.transposed()
        if self.trans == "N":
            return dataclasses.replace(self, trans="H")
        xp = _array_module(self.data)
        if self.trans == "T":
            return dataclasses.replace(self, data=xp.conj(self.data), trans="N")
        return dataclasses.replace(self, trans="N")

    def astype(self, dtype) -> "CsrView":
        return dataclasses.replace(self, data=self.data.astype(dtype, copy=False))


def _array_module(arr):
    return backend(array_device(arr)).xp


def coo_to_csr(x, *, warn=True, be=None):
    """A canonical CSR of 2-D all-sparse COO ``x``; warns (``warn=True``) when ``x`` has to be sorted.

    A COO not flagged sorted is checked first (one pass and a sync); when its
    entries are in row-major order already, no sort happens and nothing is
    said.
    """
    from gpusparse.containers import CSR
    be = be or backend(x.device)
    if not x.sorted:
        x = canonical.flag_sorted([x], be=be)[0]  # sync: does the product need a sort?
        if not x.sorted and warn:
            warn_efficiency(
                "multiplying an unsorted COO array sorts its entries on every call; convert it "
                "once with .tocsr() (or .coalesce()) and reuse the result"
            )
    return convert.coo_to_compressed(x, CSR, be=be)


def csr_view(x, *, warn=True, be=None) -> CsrView:
    """The :class:`CsrView` of a 2-D sparse array with no dense dimensions (any format).

    The view holds the container's own components (not the read-only views
    its accessors hand out: products only read them, and every call of a
    product builds a view).
    """
    if x.format == "csr":
        return CsrView(x._indptr, x._indices, x._data, tuple(x.shape), "N")
    if x.format == "csc":
        return CsrView(x._indptr, x._indices, x._data, (x.shape[1], x.shape[0]), "T")
    csr = coo_to_csr(x, warn=warn, be=be)
    return CsrView(csr.indptr, csr.indices, csr.data, tuple(csr.shape), "N")


# --------------------------------------------------------------------------
# COO helpers shared by the engines
# --------------------------------------------------------------------------

def as_coo(x, *, be=None):
    """``x`` as COO (a view over new coordinates for compressed formats)."""
    return x if x.format == "coo" else convert.compressed_to_coo(x, be=be)


def all_sparse(x, *, be=None):
    """``x`` with every dense dimension made sparse (each stored block becomes entries).

    ``be`` is the backend of ``x``'s device, when the caller has it already.
    """
    if x.dense_dim == 0:
        return x
    from gpusparse.ops.shape import sparsify
    return sparsify(x, x.ndim, be=be)


def new_coo(coords, data, shape, be, *, sorted, unique, fill=None):
    """A COO on ``be``'s device over ``coords`` (made C-contiguous int64) and ``data``."""
    from gpusparse.containers import COO
    xp = be.xp
    dtype = data.dtype
    fill = dtype.type(0) if fill is None else fill
    with be.scope():
        coords = xp.ascontiguousarray(coords, dtype=np.int64)
        data = xp.ascontiguousarray(data)
    return COO._from_parts(coords, data, tuple(shape), fill, be.device, sorted=sorted, unique=unique)


def insert_zero_axis(x, axis: int, *, be=None):
    """All-sparse COO ``x`` with a new length-1 axis at ``axis`` (0 or ndim)."""
    be = be or backend(x.device)
    coo = as_coo(x, be=be)
    xp = be.xp
    with be.scope():
        zeros = xp.zeros((1, coo.nnz), dtype=np.int64)
        parts = [zeros, coo.coords] if axis == 0 else [coo.coords, zeros]
        coords = xp.concatenate(parts, axis=0)
    shape = coo.shape[:axis] + (1,) + coo.shape[axis:]
    return new_coo(coords, coo.data, shape, be, sorted=coo.sorted, unique=coo.unique,
                   fill=coo.fill_value)


def drop_axes(coo, axes, *, be=None):
    """COO without the (length-1, coordinate-0) ``axes``; order and uniqueness are kept."""
    be = be or backend(coo.device)
    keep = [d for d in range(coo.ndim) if d not in axes]
    with be.scope():
        coords = coo.coords[keep] if keep else be.xp.zeros((0, coo.nnz), dtype=np.int64)
    shape = tuple(coo.shape[d] for d in keep)
    return new_coo(coords, coo.data, shape, be, sorted=coo.sorted, unique=coo.unique,
                   fill=coo.fill_value)


def linear_keys(coords_rows, shape, k, xp):
    """Row-major linear keys of the coordinate rows ``coords_rows`` (a list) in ``shape``."""
    n = coords_rows[0].shape[0] if coords_rows else 0
    if not coords_rows:
        return xp.zeros(n, dtype=np.int64)
    if math.prod(shape) >= 2**63:
        raise ValueError(
            f"the product needs a matrix of shape dimensions {tuple(shape)} whose size does "
            "not fit in 63 bits; split the operands into smaller blocks"
        )
    stacked = xp.stack(coords_rows) if len(coords_rows) > 1 else coords_rows[0].reshape(1, -1)
    return k.linearize(xp.ascontiguousarray(stacked), tuple(shape))
