"""What every sparse container shares: metadata, conversions, protocols."""

from __future__ import annotations

import abc
import math

import numpy as np

from gpusparse._device import Device

__all__ = ["SparseArray"]


class SparseArray(abc.ABC):
    """Base class of :class:`~gpusparse.COO`, :class:`~gpusparse.CSR` and :class:`~gpusparse.CSC`.

    A sparse array has ``sparse_dim`` leading sparse dimensions and
    ``dense_dim`` trailing dense ones (torch's *hybrid* layout): each stored
    entry holds a dense block of shape ``shape[sparse_dim:]``. Elements that
    are not stored equal :attr:`fill_value`. Containers hold data; every
    operation lives in ``gpusparse.ops`` and the methods forward to it.
    """

    format: str = ""

    _shape: tuple
    _fill_value: np.generic
    _device: Device

    # -- metadata --------------------------------------------------------
    @property
    def shape(self) -> tuple:
        """The array's shape, sparse dimensions first."""
        return self._shape

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        """Number of elements, stored or not (``prod(shape)``)."""
        return math.prod(self._shape)

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def device(self) -> Device:
        """Where the components live; operations run there."""
        return self._device

    @property
    def fill_value(self):
        """The value of every element that is not stored."""
        return self._fill_value

    @property
    def dense_dim(self) -> int:
        """Number of trailing dense dimensions (torch's ``dense_dim()``)."""
        return self.data.ndim - 1

    @property
    def sparse_dim(self) -> int:
        """Number of leading sparse dimensions (torch's ``sparse_dim()``)."""
        return self.ndim - self.dense_dim

    @property
    def nnz(self) -> int:
        """Number of stored entries (duplicates counted, as torch's ``_nnz()``)."""
        return int(self.data.shape[0])

    @property
    def density(self) -> float:
        """Stored elements over all elements (``nan`` for a 0-size array)."""
        stored = self.nnz * math.prod(self._shape[self.sparse_dim:])
        return stored / self.size if self.size else float("nan")

    @property
    @abc.abstractmethod
    def nbytes(self) -> int:
        """Bytes held by the component arrays."""

    # -- conversions shared by every format -----------------------------
    def values(self):
        """The stored values, shape ``(nnz, *dense_shape)`` (torch's ``values()``)."""
        return self.data

    def to_dense(self, default_value=None):
        """A dense array (NumPy or CuPy, on this device) with the unstored elements set.

        Parameters
        ----------
        default_value : scalar, optional
            Value of every element that is not stored; defaults to
            :attr:`fill_value` (TF's ``sparse_to_dense(default_value=...)``).

        Examples
        --------
        >>> import gpusparse as gs
        >>> x = gs.COO([[0, 2]], [1.0, 5.0], shape=(4,), device="cpu")
        >>> x.to_dense()
        array([1., 0., 5., 0.])
        >>> x.to_dense(default_value=-1)
        array([ 1., -1.,  5., -1.])
        """
        from gpusparse.ops import convert
        return convert.to_dense(self, default_value)

    def todense(self):
        """A dense array with the unstored elements equal to the fill value (NumPy's name)."""
        return self.to_dense()

    def asformat(self, format: str):
        """This array in ``format`` (``"coo"``, ``"csr"`` or ``"csc"``)."""
        from gpusparse.ops import convert
        return convert.asformat(self, format)

    def tocoo(self):
        """This array as :class:`~gpusparse.COO`."""
        return self.asformat("coo")

    def tocsr(self):
        """This array as :class:`~gpusparse.CSR` (needs exactly two sparse dimensions)."""
        return self.asformat("csr")

    def tocsc(self):
        """This array as :class:`~gpusparse.CSC` (needs exactly two sparse dimensions)."""
        return self.asformat("csc")

    def astype(self, dtype, copy: bool = True):
        """This array with values (and fill value) cast to ``dtype``."""
        from gpusparse.ops import convert
        return convert.astype(self, dtype, copy=copy)

    def to(self, device):
        """This array on ``device`` (``"cpu"``, ``"cuda"``, ``"cuda:N"``); self if already there."""
        from gpusparse.ops import convert
        return convert.to_device(self, device)

    to_device = to

    def copy(self):
        """A deep copy: new component arrays on the same device."""
        from gpusparse.ops import convert
        return convert.copy(self)

    # -- protocols ------------------------------------------------------
    def __dlpack__(self, *args, **kwargs):
        raise BufferError(
            f"DLPack has no sparse layout, so a {type(self).__name__} cannot be exported "
            "as one tensor; export its component arrays instead (each is a NumPy or CuPy "
            "array with __dlpack__), or densify explicitly with .todense()"
        )

    def __dlpack_device__(self):
        return (2, self._device.index) if self._device.is_cuda else (1, 0)

    def __array__(self, dtype=None, copy=None):
        raise RuntimeError(
            "gpusparse does not densify implicitly; call .todense() to get a dense array"
        )

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d sparse array")
        return self._shape[0]

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__}: shape={self._shape}, dtype={self.dtype.name}, "
            f"nnz={self.nnz}, sparse_dim={self.sparse_dim}, fill_value={self._fill_value.item()!r}, "
            f"device='{self._device}'{self._repr_flags()}>"
        )

    def _repr_flags(self) -> str:
        return ""
