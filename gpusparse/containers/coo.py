"""The N-d coordinate format with hybrid dense trailing dimensions."""

from __future__ import annotations


from gpusparse.containers._base import SparseArray, read_only
from gpusparse.containers._bound import ops

__all__ = ["COO"]


class COO(SparseArray):
    """An N-d sparse array in coordinate format.

    Parameters
    ----------
    coords : array_like, shape (sparse_dim, nnz)
        Integer coordinates of the stored entries; any DLPack producer
        (NumPy, CuPy, torch, JAX) is used without copying when it is int64
        and C-contiguous. A 1-D array is taken as one sparse dimension.
    data : array_like, shape ``(nnz, *dense_shape)``
        The stored values. Trailing dimensions beyond the first are dense
        dimensions of the array (torch's hybrid tensors). A scalar is
        broadcast to every entry.
    shape : tuple of int, optional
        The array's shape, ``sparse_shape + dense_shape``. Inferred when
        omitted: one past the largest coordinate of each sparse dimension,
        followed by ``data.shape[1:]``.
    fill_value : scalar, optional
        The value of every element that is not stored (default 0).
    device : {"cpu", "cuda", "cuda:N"}, optional
        Where to put the array. By default, where ``coords`` and ``data``
        already are (they must agree), or the default device for host-only
        input such as lists.
    check : bool, default True
        Validate the coordinates (integer dtype, non-negative, inside
        ``shape``), in the dtype they are given in, before they are cast to
        int64: a uint64 coordinate of 2**63 or more is refused, not wrapped.
        ``check=False`` skips the bounds validation, which costs one pass
        over ``coords`` and a device synchronisation; out-of-bounds
        coordinates then give unspecified results inside the buffers (they
        act as if clipped into the shape). Even then the cast never wraps: a
        uint64 coordinate beyond the int64 range is saturated to 2**63 - 1,
        out of bounds like the value it stands for, never a valid-looking
        coordinate.

    Notes
    -----
    Coordinates may repeat: duplicates mean the sum of their values, as in
    torch's uncoalesced tensors. :meth:`coalesce` sorts them and sums the
    duplicates; :meth:`reorder` only sorts. The flags behind
    :meth:`is_coalesced` are only ever True when the property holds.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 1, 1], [2, 0, 0]], [1.0, 2.0, 3.0], device="cpu")
    >>> x.shape, x.nnz, x.is_coalesced()
    ((2, 3), 3, False)
    >>> x.todense()
    array([[0., 0., 1.],
           [5., 0., 0.]])
    >>> y = x.coalesce()
    >>> y.indices()
    array([[0, 1],
           [2, 0]])
    >>> y.values()
    array([1., 5.])
    """

    format = "coo"

    def __init__(self, coords, data, shape=None, *, fill_value=None, device=None, check=True):
        parts = ops._validate.coo_components(coords, data, shape, fill_value, device, check)
        self._set(*parts, sorted=False, unique=False)

    @classmethod
    def _from_parts(cls, coords, data, shape, fill_value, device, *, sorted, unique):
        """Wrap validated components without copying or checking (internal)."""
        self = cls.__new__(cls)
        self._set(coords, data, tuple(shape), fill_value, device, sorted=sorted, unique=unique)
        return self

    def _set(self, coords, data, shape, fill_value, device, *, sorted, unique):
        self._coords = coords
        self._data = data
        self._shape = shape
        self._fill_value = fill_value
        self._device = device
        self._sorted = bool(sorted)
        self._unique = bool(unique)

    # -- components -----------------------------------------------------
    @property
    def coords(self):
        """Coordinates, int64 of shape ``(sparse_dim, nnz)`` (read-only on the CPU)."""
        return read_only(self._coords)

    @property
    def data(self):
        """Stored values, shape ``(nnz, *dense_shape)`` (read-only on the CPU)."""
        return read_only(self._data)

    @property
    def nbytes(self) -> int:
        return int(self._coords.nbytes + self._data.nbytes)

    def indices(self):
        """The coordinates, ``(sparse_dim, nnz)`` int64 (torch's ``indices()``)."""
        return read_only(self._coords)

    # -- canonical form -------------------------------------------------
    @property
    def sorted(self) -> bool:
        """True only if the coordinates are known to be in row-major order."""
        return self._sorted

    @property
    def unique(self) -> bool:
        """True only if no coordinate is known to repeat."""
        return self._unique

    def is_coalesced(self) -> bool:
        """True only if the coordinates are known to be sorted and unique (torch)."""
        return self._sorted and self._unique

    def coalesce(self):
        """Sort the coordinates in row-major order and sum duplicates (torch's ``coalesce``).

        Returns ``self`` when already coalesced. May synchronise the device
        once to learn the number of unique coordinates.

        Examples
        --------
        >>> import gpusparse as gs
        >>> x = gs.COO([[1, 0, 1]], [1, 2, 3], device="cpu").coalesce()
        >>> x.coords, x.data
        (array([[0, 1]]), array([2, 4]))
        """
        return ops.canonical.coalesce(self)

    def reorder(self):
        """Sort the coordinates in row-major order without summing duplicates (TF's ``sparse.reorder``).

        The sort is stable: duplicates keep their relative order.

        Examples
        --------
        >>> import gpusparse as gs
        >>> x = gs.COO([[1, 0, 1]], [1, 2, 3], device="cpu").reorder()
        >>> x.coords, x.data
        (array([[0, 1, 1]]), array([2, 1, 3]))
        """
        return ops.canonical.reorder(self)

    def _repr_flags(self) -> str:
        return f", coalesced={self.is_coalesced()}"
