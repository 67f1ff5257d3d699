"""Compressed sparse row and column formats, one implementation for both.

A compressed array has two sparse dimensions and any number of trailing
dense ones. Along the *major* axis (rows for CSR, columns for CSC) an index
pointer ``indptr`` delimits each row's (column's) entries; ``indices`` holds
the *minor* coordinate of each entry. After construction the entries are
canonical: sorted by minor index within each major slice and unique.

Trusted structures
------------------
cuSPARSE reads ``indptr`` and ``indices`` without checking them, so before a
cuSPARSE product the CUDA path checks the structure on the device (one pass
and one synchronisation) unless the pair is *trusted*
(:func:`is_trusted_structure`). A structure is trusted when both hold:

* its values are known valid and canonical for its stored shape: produced
  by the library's own kernels from valid input, or validated by a
  constructor with ``check=True`` or by :meth:`~gpusparse.CSR.check`;
* no caller holds the buffers: the library allocated them (a copy, a cast,
  the canonical form a constructor built, a product's output), so nothing
  outside the API can change them after the validation.

Trust belongs to the very array objects ``(indptr, indices)`` together with
the stored shape they were validated for, so every array that holds them (a
transpose over the same arrays, an array whose state an in-place operation
replaced with another's) is trusted as well, and a new array object (a
pickle, a DLPack import) is not until it is checked. Components a
constructor kept from the caller (a CuPy array or torch tensor shared
without a copy) stay untrusted even after a successful check: CuPy has no
read-only arrays, so the caller can change them before the next product.
"""

from __future__ import annotations

from gpusparse._trusted import (  # noqa: F401  (the registry's names, kept importable from here)
    _TRUSTED, _TRUSTED_LOCK, _behind_read_only_view, forget_structure, is_trusted_structure, trust_structure,
)
from gpusparse.containers._base import SparseArray, read_only
from gpusparse.containers._bound import ops

__all__ = ["CSC", "CSR", "forget_structure", "is_trusted_structure", "trust_structure"]

def _span(arr):
    """``(device kind, first byte, end byte)`` of the memory ``arr`` reads, or None where unknown."""
    import numpy as np
    try:
        if isinstance(arr, np.ndarray):
            kind, start = "host", int(arr.__array_interface__["data"][0])
        else:
            kind, start = "device", int(arr.data.ptr)
        shape, strides, itemsize = tuple(arr.shape), tuple(arr.strides), int(arr.dtype.itemsize)
    except (AttributeError, TypeError, KeyError):
        return None
    if 0 in shape:
        return kind, start, start
    low = sum(s * (n - 1) for n, s in zip(shape, strides) if s < 0)
    high = sum(s * (n - 1) for n, s in zip(shape, strides) if s > 0)
    return kind, start + low, start + high + itemsize


def _shares_memory(component, given) -> bool:
    """Whether ``component`` may read memory of the caller's argument ``given`` (True where unsure)."""
    if isinstance(given, (list, tuple, range, int, float, complex, bool)) or given is None:
        return False  # host-only input: converted into a new array
    from gpusparse._components import to_array
    try:
        theirs = _span(to_array(given, "component")[0])
    except Exception:  # unreadable a second time: assume it is shared
        return True
    ours = _span(component)
    if ours is None or theirs is None:
        return True
    if ours[0] != theirs[0] or ours[1] == ours[2] or theirs[1] == theirs[2]:
        return False
    return ours[1] < theirs[2] and theirs[1] < ours[2]


class _Compressed(SparseArray):
    """Shared implementation of :class:`CSR` and :class:`CSC`."""

    #: 0 for CSR (rows are compressed), 1 for CSC (columns are compressed).
    _major_axis: int = 0
    #: Whether a constructor built ``indptr`` and ``indices`` itself (from
    #: host input, a copy to the device, a cast, the canonical form) instead
    #: of keeping arrays the caller holds. Kept in the instance state, so an
    #: in-place operation that replaces the state takes the new state's value;
    #: False for arrays made by ``_from_parts`` (their origin is not known).
    _owns_structure: bool = False

    def __init__(self, indptr, indices, data, shape=None, *, fill_value=None, device=None, check=True):
        given = (indptr, indices, data)
        parts = ops._validate.compressed_components(
            indptr, indices, data, shape, fill_value, device, check, self._major_axis
        )
        self._set(*parts)
        if check:
            ops.canonical.make_compressed_canonical(self)
        self._owns_structure = not any(_shares_memory(mine, theirs)
                                       for mine in (self._indptr, self._indices) for theirs in given)
        if check and self._owns_structure:
            self._trust()

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

    def _stored_shape(self) -> tuple:
        """``(n_major, n_minor)``: the shape of the CSR matrix ``indptr`` and ``indices`` describe."""
        return (self._shape[self._major_axis], self._shape[1 - self._major_axis])

    def _trust(self) -> None:
        trust_structure(self._indptr, self._indices, self._stored_shape())

    @property
    def structure_trusted(self) -> bool:
        """Whether products may hand ``indptr`` and ``indices`` to cuSPARSE without checking them first.

        True when the structure is known valid and canonical *and* only the
        library holds its buffers: it was produced by the library's kernels
        (a conversion, a product, an operation's result over such arrays),
        or validated -- by a constructor with ``check=True`` or by
        :meth:`check` -- on components the constructor built itself (from
        lists or host arrays, a copy to another device, a cast to the index
        dtype, the canonical form). False for ``check=False`` and for
        components shared with the caller (a CuPy array or torch tensor
        kept without a copy, which the caller can change at any time): the
        CUDA path then checks the structure before every cuSPARSE product
        (one pass over ``indptr`` and ``indices`` and one synchronisation)
        and runs its bounds-safe kernels where the check fails. Pickled and
        DLPack-imported arrays start untrusted. Writing into the arrays the
        accessors return (CUDA arrays are not read-only) is outside the API:
        call :meth:`check` afterwards.
        """
        return is_trusted_structure(self._indptr, self._indices, self._stored_shape())

    def check(self) -> None:
        """Validate the components again; see :meth:`SparseArray.check`.

        On components the constructor built itself (see
        :attr:`structure_trusted`) a successful check makes the structure
        trusted, so later products skip their own check. Components shared
        with the caller stay untrusted. A failed check withdraws the trust
        (after a write into the arrays the accessors returned).
        """
        try:
            super().check()
        except ValueError:
            forget_structure(self._indptr, self._indices)
            raise
        if self._owns_structure:
            self._trust()

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
    data : array_like, shape ``(nnz, *dense_shape)``
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
