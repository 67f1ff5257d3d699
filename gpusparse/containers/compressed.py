"""Compressed sparse row and column formats, one implementation for both.

A compressed array has two sparse dimensions and any number of trailing
dense ones. Along the *major* axis (rows for CSR, columns for CSC) an index
pointer ``indptr`` delimits each row's (column's) entries; ``indices`` holds
the *minor* coordinate of each entry. After construction the entries are
canonical: sorted by minor index within each major slice and unique.
"""

from __future__ import annotations

from gpusparse.containers._base import SparseArray, read_only

__all__ = ["CSC", "CSR"]


class _Compressed(SparseArray):
    """Shared implementation of :class:`CSR` and :class:`CSC`."""

    #: 0 for CSR (rows are compressed), 1 for CSC (columns are compressed).
    _major_axis: int = 0

    def __init__(self, indptr, indices, data, shape=None, *, fill_value=None, device=None, check=True):
        from gpusparse.ops import _validate, canonical
        parts = _validate.compressed_components(
            indptr, indices, data, shape, fill_value, device, check, self._major_axis
        )
        self._set(*parts)
        if check:
            canonical.make_compressed_canonical(self)

    @classmethod
    def _from_parts(cls, indptr, indices, data, shape, fill_value, device):
        """Wrap canonical components without copying or checking (internal)."""
        self = cls.__new__(cls)
        self._set(indptr, indices, data, tuple(shape), fill_value, device)
        return self

    def _set(self, indptr, indices, data, shape, fill_value, device):
        self._indptr = indptr
        self._indices = indices
        self._data = data
        self._shape = shape
        self._fill_value = fill_value
        self._device = device

    @property
    def indptr(self):
        """Index pointer along the major axis, ``(shape[major] + 1,)``."""
        return read_only(self._indptr)

    @property
    def indices(self):
        """Minor-axis index of every entry, ``(nnz,)`` int32 or int64."""
        return read_only(self._indices)

    @property
    def data(self):
        """Stored values, ``(nnz, *dense_shape)``."""
        return read_only(self._data)

    @property
    def index_dtype(self):
        """The dtype of ``indptr`` and ``indices``."""
        return self._indices.dtype

    @property
    def nbytes(self) -> int:
        return int(self._indptr.nbytes + self._indices.nbytes + self._data.nbytes)

    def is_coalesced(self) -> bool:
        """Always True: compressed arrays are canonical (sorted, unique)."""
        return True

    def coalesce(self):
        """Return ``self``: compressed arrays are always canonical."""
        return self

    def reorder(self):
        """Return ``self``: compressed arrays are always sorted."""
        return self


class CSR(_Compressed):
    """A sparse array in compressed sparse row format (torch's ``sparse_csr``).

    Parameters
    ----------
    indptr : array_like, shape (n_rows + 1,)
        Row pointer: the entries of row ``i`` are ``indptr[i]:indptr[i+1]``.
        Starts at 0, non-decreasing, ends at nnz.
    indices : array_like, shape (nnz,)
        Column index of each entry.
    data : array_like, shape (nnz, *dense_shape)
        Values; trailing dimensions are dense (hybrid CSR).
    shape : tuple of int, optional
        ``(n_rows, n_cols, *dense_shape)``. Inferred when omitted, as
        torch's ``sparse_csr_tensor`` does: ``len(indptr) - 1`` rows, one
        column past the largest index (0 without entries), and the dense
        dimensions of ``data``. On a CUDA device, reading the largest index
        synchronises once.
    fill_value : scalar, optional
        Value of the elements that are not stored (default 0).
    device : {"cpu", "cuda", "cuda:N"}, optional
        Where to put the array; by default where the components are.
    check : bool, default True
        Validate ``indptr`` and ``indices`` and make the entries canonical
        (sorted within rows, duplicates summed). ``check=False`` skips both:
        the caller promises valid, canonical components.

    Notes
    -----
    int32 and int64 indices are kept as given (so that foreign arrays are
    not copied); other integer dtypes become int32 when the sizes allow and
    int64 otherwise. Conversions from other formats pick the same way.

    The values are validated in the dtype they are given in, before that
    cast: a uint64 index of 2**63 + 5 or an int64 pointer beyond int32 is
    refused, not wrapped into a valid-looking one. With ``check=False`` a
    narrowing cast saturates instead of wrapping (a value beyond the target
    range becomes its largest or smallest value), so an out-of-range index
    stays out of range and acts as if clipped into the shape, as the
    bounds-safe kernels document.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.CSR([0, 2, 3], [0, 2, 1], [1.0, 2.0, 3.0], shape=(2, 3), device="cpu")
    >>> x.todense()
    array([[1., 0., 2.],
           [0., 3., 0.]])
    >>> x.crow_indices(), x.col_indices()
    (array([0, 2, 3]), array([0, 2, 1]))
    >>> gs.CSR([0, 2, 3], [0, 2, 1], [1.0, 2.0, 3.0], device="cpu").shape  # inferred
    (2, 3)
    """

    format = "csr"
    _major_axis = 0

    def crow_indices(self):
        """The row pointer (torch's ``crow_indices()``)."""
        return read_only(self._indptr)

    def col_indices(self):
        """The column index of each entry (torch's ``col_indices()``)."""
        return read_only(self._indices)


class CSC(_Compressed):
    """A sparse array in compressed sparse column format (torch's ``sparse_csc``).

    Parameters are those of :class:`CSR` with rows and columns swapped:
    ``indptr`` has ``n_cols + 1`` entries and ``indices`` holds row indices;
    an omitted ``shape`` has ``len(indptr) - 1`` columns and one row past
    the largest row index (torch's ``sparse_csc_tensor``).

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.CSC([0, 1, 2, 3], [0, 1, 0], [1.0, 3.0, 2.0], shape=(2, 3), device="cpu")
    >>> x.todense()
    array([[1., 0., 2.],
           [0., 3., 0.]])
    >>> x.ccol_indices(), x.row_indices()
    (array([0, 1, 2, 3]), array([0, 1, 0]))
    >>> gs.CSC([0, 1, 2, 3], [0, 1, 0], [1.0, 3.0, 2.0], device="cpu").shape  # inferred
    (2, 3)
    """

    format = "csc"
    _major_axis = 1

    def ccol_indices(self):
        """The column pointer (torch's ``ccol_indices()``)."""
        return read_only(self._indptr)

    def row_indices(self):
        """The row index of each entry (torch's ``row_indices()``)."""
        return read_only(self._indices)
