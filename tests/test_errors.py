"""Bad input raises ValueError, TypeError or RuntimeError naming the argument at fault."""

from __future__ import annotations

import numpy as np
import pytest

import gpusparse as gs
from gpusparse import COO, CSC, CSR
from gpusparse._device import to_device_array, to_host


@pytest.fixture(autouse=True)
def _on_the_cpu():
    # Errors are raised before any kernel runs; the CPU keeps them fast.
    with gs.device("cpu"):
        yield


OK_COORDS = np.array([[0, 1], [1, 0]])
OK_DATA = np.array([1.0, 2.0])


# --------------------------------------------------------------------------
# COO
# --------------------------------------------------------------------------

@pytest.mark.parametrize("coords, shape", [
    ([[0, 3]], (3,)),
    ([[0, 1], [1, 2]], (2, 2)),
    ([[5, 0], [0, 0]], (2, 2)),
    ([[0, 2**40]], (2**40,)),
])
def test_coo_coordinates_out_of_bounds(coords, shape):
    with pytest.raises(ValueError, match="coords out of bounds"):
        COO(np.array(coords), np.ones(np.array(coords).shape[1]), shape)


@pytest.mark.parametrize("coords", [[[0, -1]], [[-5, 0], [0, 0]]])
def test_coo_negative_coordinates(coords):
    coords = np.asarray(coords)
    with pytest.raises(ValueError, match="coords must be non-negative"):
        COO(coords, np.ones(coords.shape[1]))
    with pytest.raises(ValueError, match="coords must be non-negative"):
        COO(coords, np.ones(coords.shape[1]), shape=(2**63 - 1,) * coords.shape[0])


def test_coo_unsigned_coordinates_beyond_int64():
    # Checked in their own dtype: 2**63 + 1 is a coordinate past every int64 dimension, never
    # wrapped into a negative (or valid-looking) int64.
    coords = np.array([[2**63 + 1]], dtype=np.uint64)
    with pytest.raises(ValueError, match=r"coords imply .* beyond the int64 limit"):
        COO(coords, np.ones(1))
    with pytest.raises(ValueError, match="coord"):
        COO(coords, np.ones(1), shape=(2**63 - 1,))


def test_coo_coordinates_of_the_wrong_dimensionality():
    with pytest.raises(ValueError, match="coords must have shape"):
        COO(np.zeros((1, 2, 3), np.int64), np.ones(3))
    with pytest.raises(ValueError, match="coords must have shape"):
        COO(np.array(0), np.ones(1))


def test_coo_length_mismatch():
    with pytest.raises(ValueError, match="coords and data"):
        COO(OK_COORDS, np.ones(3))
    with pytest.raises(ValueError, match="coords and data"):
        COO(OK_COORDS, np.ones((1, 2)))


@pytest.mark.parametrize("coords", [
    np.array([[0.0, 1.0]]),
    np.array([[0, None]], dtype=object),
    np.array([[True, False]]),
    np.array([[1 + 0j, 0j]]),
    [["0", "1"]],
])
def test_coo_coordinates_must_be_integers(coords):
    with pytest.raises(TypeError, match="coords must have an integer dtype|coords has unsupported dtype"):
        COO(coords, np.ones(2))


def test_coo_zero_sparse_dimensions_hold_one_entry():
    with pytest.raises(ValueError, match="coords"):
        COO(np.zeros((0, 2), np.int64), np.ones(2))


@pytest.mark.parametrize("shape, match", [
    ((2,), "shape"),  # too short
    ((2, 2, 2), "shape"),  # too long for all-sparse data
    ((2, -1), "shape must not have negative"),
    ((2, 1), "coords out of bounds"),  # too small
])
def test_coo_bad_shape_values(shape, match):
    with pytest.raises(ValueError, match=match):
        COO(OK_COORDS, OK_DATA, shape)


@pytest.mark.parametrize("shape", [(2.0, 2.0), ("a", "b"), (2, None), "ab", 2.5])
def test_coo_shape_of_non_integers(shape):
    with pytest.raises(TypeError, match="shape"):
        COO(OK_COORDS, OK_DATA, shape)


def test_coo_shape_disagreeing_with_dense_dimensions():
    with pytest.raises(ValueError, match="shape"):
        COO(OK_COORDS, np.ones((2, 3)), shape=(2, 2, 4))


@pytest.mark.parametrize("data", [
    np.ones(2, dtype=np.float16),
    np.array([1, "a"], dtype=object),
    np.array(["a", "b"]),
    np.array([b"a", b"b"]),
    np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[D]"),
    np.ones(2, dtype=np.longdouble) if np.dtype(np.longdouble) != np.float64 else np.ones(2, dtype=np.float16),
])
def test_coo_unsupported_value_dtypes(data):
    with pytest.raises(TypeError, match="data has unsupported dtype"):
        COO(OK_COORDS, data)


@pytest.mark.parametrize("dtype, fill", [
    (np.int64, 0.5),
    (np.int64, np.nan),
    (np.int32, 2**40),
    (np.uint8, -1),
    (np.uint8, 300),
    (np.bool_, 2),
    (np.float64, 1j),
    (np.float32, 1e300),
    (np.int8, "a"),
])
def test_fill_value_that_cannot_be_represented(dtype, fill):
    with pytest.raises(TypeError, match="fill_value"):
        COO(OK_COORDS, OK_DATA.astype(dtype), fill_value=fill)


def test_fill_value_must_be_a_scalar():
    with pytest.raises(ValueError, match="fill_value must be a scalar"):
        COO(OK_COORDS, OK_DATA, fill_value=[1.0, 2.0])


def test_default_value_that_cannot_be_represented():
    x = COO(OK_COORDS, np.array([1, 2]))
    with pytest.raises(TypeError, match="default_value"):
        x.to_dense(default_value=0.5)


# --------------------------------------------------------------------------
# CSR / CSC
# --------------------------------------------------------------------------

def _csr(indptr=(0, 1, 2), indices=(1, 0), data=(1.0, 2.0), shape=(2, 2), cls=CSR):
    return cls(np.asarray(indptr), np.asarray(indices), np.asarray(data), shape)


@pytest.mark.parametrize("cls", [CSR, CSC])
@pytest.mark.parametrize("indptr, match", [
    ((1, 1, 2), "indptr must start at 0"),
    ((0, 1, 1), "indptr must start at 0 and end at nnz"),
    ((0, 1, 3), "indptr must start at 0 and end at nnz"),
    ((0, 3, 2), "indptr must be non-decreasing"),
    ((0, 2), "indptr must have 3 entries"),
    ((0, 1, 2, 2), "indptr must have 3 entries"),
    (((0, 1, 2),), "indptr must be 1-d"),
])
def test_bad_indptr(cls, indptr, match):
    with pytest.raises(ValueError, match=match):
        _csr(indptr=indptr, cls=cls)


@pytest.mark.parametrize("cls", [CSR, CSC])
@pytest.mark.parametrize("indices", [(2, 0), (0, -1), (5, 7)])
def test_indices_out_of_range(cls, indices):
    with pytest.raises(ValueError, match="indices out of range"):
        _csr(indices=indices, cls=cls)


def test_bad_compressed_component_types_and_shapes():
    with pytest.raises(TypeError, match="indptr must have an integer dtype"):
        _csr(indptr=(0.0, 1.0, 2.0))
    with pytest.raises(TypeError, match="indices must have an integer dtype"):
        _csr(indices=(1.0, 0.0))
    with pytest.raises(ValueError, match="indices must be 1-d"):
        _csr(indices=((1, 0),))
    with pytest.raises(ValueError, match="indices has 2 entries but data has 3"):
        _csr(data=(1.0, 2.0, 3.0))
    with pytest.raises(TypeError, match="data has unsupported dtype"):
        _csr(data=np.ones(2, np.float16))


@pytest.mark.parametrize("shape", [(2,), (2, 2, 3), ()])
def test_bad_compressed_shape(shape):
    with pytest.raises(ValueError, match="shape must be"):
        _csr(shape=shape)


def test_compressed_shape_inferred_needs_indptr():
    with pytest.raises(ValueError, match="indptr must have at least one entry"):
        _csr(indptr=np.zeros(0, np.int64), indices=np.zeros(0, np.int64), data=np.zeros(0), shape=None)


def test_compressed_fill_value():
    with pytest.raises(TypeError, match="fill_value"):
        CSR(np.array([0, 1]), np.array([0]), np.array([1]), (1, 1), fill_value=0.5)


# --------------------------------------------------------------------------
# Formats
# --------------------------------------------------------------------------

@pytest.mark.parametrize("format", ["dense", "bsr", "", None, 3, "csr "])
def test_bad_format_names(format):
    x = COO(OK_COORDS, OK_DATA)
    with pytest.raises(ValueError, match="format must be one of"):
        x.asformat(format)
    with pytest.raises(ValueError, match="format must be one of"):
        gs.fromdense(np.eye(2), format=format if format is not None else "none")
    with pytest.raises(ValueError, match="format must be one of"):
        gs.zeros((2, 2), format=format if format is not None else "none")


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("coords", [np.array([[0, 1]]), np.array([[0, 1], [1, 0], [0, 0]]), np.zeros((0, 1), np.int64)])
def test_compressed_formats_need_two_sparse_dimensions(fmt, coords):
    x = COO(coords, np.ones(coords.shape[1]))
    with pytest.raises(ValueError, match="exactly 2 sparse dimensions"):
        x.asformat(fmt)


# --------------------------------------------------------------------------
# Creation functions and conversions
# --------------------------------------------------------------------------

@pytest.mark.parametrize("density", [-0.1, 1.5, float("nan"), float("inf")])
def test_random_density_out_of_range(density):
    with pytest.raises(ValueError, match="density"):
        gs.random((3, 3), density=density)


def test_random_too_many_elements():
    with pytest.raises(ValueError, match="shape"):
        gs.random((2**32, 2**32), density=0.0)


@pytest.mark.parametrize("make", [
    lambda dtype: gs.zeros((2,), dtype=dtype),
    lambda dtype: gs.eye(2, dtype=dtype),
    lambda dtype: gs.random((2,), dtype=dtype),
    lambda dtype: COO(OK_COORDS, OK_DATA).astype(dtype),
    lambda dtype: gs.zeros_like(gs.zeros((2,)), dtype=dtype),
])
@pytest.mark.parametrize("dtype", [np.float16, object, str, "datetime64[s]"])
def test_unsupported_dtype_arguments(make, dtype):
    with pytest.raises(TypeError, match="dtype has unsupported dtype"):
        make(dtype)


def test_negative_sizes():
    with pytest.raises(ValueError, match="shape"):
        gs.zeros((2, -1))
    with pytest.raises(ValueError, match="shape"):
        gs.random((-3,))
    with pytest.raises(ValueError, match="N, M"):
        gs.eye(-1)
    with pytest.raises(ValueError, match="N, M"):
        gs.eye(2, -2)


def test_fromdense_bad_arguments():
    with pytest.raises(ValueError, match="sparse_dim"):
        gs.fromdense(np.eye(2), sparse_dim=3)
    with pytest.raises(ValueError, match="sparse_dim"):
        gs.fromdense(np.eye(2), sparse_dim=-1)
    with pytest.raises(TypeError, match="dense has unsupported dtype"):
        gs.fromdense(np.eye(2, dtype=np.float16))
    with pytest.raises(TypeError, match="fill_value"):
        gs.fromdense(np.eye(2, dtype=np.int8), fill_value=0.5)


def test_asarray_copy_false_where_a_copy_is_needed():
    with pytest.raises(ValueError, match="copy=False"):
        gs.asarray(np.eye(2), copy=False)
    x = COO(OK_COORDS, OK_DATA)
    with pytest.raises(ValueError, match="copy=False"):
        gs.asarray(x, format="csr", copy=False)


def test_bad_target_devices():
    x = COO(OK_COORDS, OK_DATA)
    with pytest.raises(ValueError, match="device"):
        x.to("tpu")
    with pytest.raises(TypeError, match="device"):
        x.to(0)


# --------------------------------------------------------------------------
# Byte order: non-native components are converted, not refused
# --------------------------------------------------------------------------

def _swapped(arr):
    """``arr`` with the same values in the other byte order (``>f8`` on a little-endian host)."""
    arr = np.asarray(arr)
    return arr.astype(arr.dtype.newbyteorder("S"))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.complex64, np.int64, np.uint16])
def test_non_native_byte_order_is_converted(dtype):
    coords = _swapped(np.array([[0, 2, 1], [1, 0, 1]]))
    data = _swapped(np.array([1, 2, 3], dtype=dtype))
    assert not data.dtype.isnative and not coords.dtype.isnative
    x = COO(coords, data, shape=(3, 2))
    assert x.dtype == dtype and x.dtype.isnative and x.coords.dtype == np.int64
    expected = np.zeros((3, 2), dtype)
    expected[[0, 2, 1], [1, 0, 1]] = [1, 2, 3]
    np.testing.assert_array_equal(x.todense(), expected)
    for indices_dtype in (np.int32, np.int64):
        csr = CSR(_swapped(np.array([0, 1, 2], indices_dtype)), _swapped(np.array([1, 0], indices_dtype)),
                  _swapped(np.array([1, 2], dtype)), shape=(2, 2))
        assert csr.dtype == dtype and csr.indices.dtype == indices_dtype and csr.indptr.dtype.isnative
        np.testing.assert_array_equal(csr.todense(), np.array([[0, 1], [2, 0]], dtype))
    y = gs.fromdense(_swapped(expected))
    assert y.dtype == dtype and y.dtype.isnative
    np.testing.assert_array_equal(y.todense(), expected)


def test_non_native_dense_operands_and_dtype_arguments():
    x = COO(OK_COORDS, OK_DATA, shape=(2, 2))
    dense = np.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(gs.matmul(x, _swapped(dense)), x.todense() @ dense)
    masked = gs.sparse_mask(_swapped(dense), x)
    np.testing.assert_array_equal(masked.todense(), np.where(x.todense() != 0, dense, 0))
    swapped_f8 = np.dtype(np.float64).newbyteorder("S")
    assert gs.zeros((2,), dtype=swapped_f8).dtype == np.float64
    assert x.astype(np.dtype(np.int32).newbyteorder("S")).dtype == np.int32
    # An unsupported dtype is named as given, not as a supported name.
    with pytest.raises(TypeError, match=r"dtype has unsupported dtype [<>]f2; supported"):
        gs.zeros((2,), dtype=np.dtype(np.float16).newbyteorder("S"))
    with pytest.raises(TypeError, match=r"data has unsupported dtype float16; supported"):
        COO(OK_COORDS, _swapped(np.ones(2, np.float16)))


# --------------------------------------------------------------------------
# Shapes beyond int64 coordinates
# --------------------------------------------------------------------------

def test_reshape_beyond_int64_coordinates():
    big = COO(np.array([[0, 2**40 - 1], [0, 2**40 - 1]]), OK_DATA, shape=(2**40, 2**40))
    for shape in [(2**80,), (-1,), (2, 2**79), (2**16, 2**64)]:
        with pytest.raises(ValueError, match=r"shape \(.*\) has dimension \d of length \d+, beyond the int64"):
            big.reshape(shape)
    # More than 2**63 elements is fine while every dimension fits int64.
    split = big.reshape((2**20, 2**20, 2**40))
    assert split.coords.tolist() == [[0, 2**20 - 1], [0, 2**20 - 1], [0, 2**40 - 1]]
    exact = big.reshape((2**30, 2**50))  # keys beyond 63 bits: the exact path
    assert exact.coords.tolist() == [[0, 2**30 - 1], [0, 2**50 - 1]]
    np.testing.assert_array_equal(exact.data, OK_DATA)


@pytest.mark.parametrize("make, argument", [
    (lambda shape: COO(np.array([[0]]), np.array([1.0]), shape=shape[:1]), "shape"),
    (lambda shape: COO(np.array([[0], [0]]), np.array([1.0]), shape=shape), "shape"),
    (lambda shape: CSR(np.array([0, 1]), np.array([0]), np.array([1.0]), shape=(1, shape[0])), "shape"),
    (lambda shape: gs.zeros(shape), "shape"),
    (lambda shape: gs.broadcast_to(COO(np.array([[0]]), OK_DATA[:1], shape=(1,)), shape), "shape"),
    (lambda shape: gs.resize(COO(np.array([[0]]), OK_DATA[:1], shape=(1,)), shape), "new_shape"),
])
@pytest.mark.parametrize("dim", [2**63, 2**64, 2**80])
def test_dimensions_beyond_int64_are_refused(make, argument, dim):
    with pytest.raises(ValueError, match=rf"^{argument} \(.*\) has dimension [01] of length {dim}, beyond the int64"):
        make((dim, 1))


def test_the_largest_int64_dimension_and_huge_sizes_are_allowed():
    x = COO(np.array([[2**63 - 2]]), np.array([1.0]), shape=(2**63 - 1,))
    assert x.shape == (2**63 - 1,)
    y = COO(np.array([[1], [2]]), np.array([1.0]), shape=(2**62, 2**62))  # 2**124 elements
    assert y.sum() == 1.0 and y.shape == (2**62, 2**62)


# --------------------------------------------------------------------------
# DLPack producers that cannot share their data as is
# --------------------------------------------------------------------------

def test_torch_tensor_that_requires_grad():
    torch = pytest.importorskip("torch")
    data = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ValueError, match=r"^data requires grad; pass data\.detach\(\)"):
        COO(OK_COORDS, data)
    with pytest.raises(ValueError, match=r"^dense requires grad; pass dense\.detach\(\)"):
        gs.fromdense(torch.eye(2, requires_grad=True))
    with pytest.raises(ValueError, match=r"^b requires grad"):
        gs.matmul(COO(OK_COORDS, OK_DATA), torch.ones(2, dtype=torch.float64, requires_grad=True))
    x = COO(OK_COORDS, data.detach())  # what the message says works
    np.testing.assert_array_equal(x.data, [1.0, 2.0])


def test_torch_tensor_with_lazy_conjugation_or_negation_bits():
    torch = pytest.importorskip("torch")
    values = torch.tensor([1 + 2j, 3 - 4j])
    with pytest.raises(ValueError, match=r"^data carries torch's lazy conjugation bit.*data\.resolve_conj\(\)"):
        COO(OK_COORDS, values.conj())
    np.testing.assert_array_equal(COO(OK_COORDS, values.conj().resolve_conj()).data, [1 - 2j, 3 + 4j])
    negated = values.conj().imag  # a view with the negation bit: DLPack alone would lose the sign
    assert negated.is_neg()
    with pytest.raises(ValueError, match=r"^data carries torch's lazy negation bit.*data\.resolve_neg\(\)"):
        COO(OK_COORDS, negated)
    np.testing.assert_array_equal(COO(OK_COORDS, negated.resolve_neg()).data, [-2.0, 4.0])


def test_torch_tensor_of_another_layout_or_dtype():
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match=r"^dense is a torch tensor with layout torch\.sparse_coo.*from_torch"):
        gs.fromdense(torch.eye(2).to_sparse())
    with pytest.raises(TypeError, match=r"^data has unsupported dtype torch\.bfloat16"):
        COO(OK_COORDS, torch.ones(2, dtype=torch.bfloat16))


class _RefusingProducer:
    """A CPU DLPack producer that refuses to export, as read-only or exotic layouts do."""

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, *args, **kwargs):
        raise BufferError("cannot export a read-only array")


def test_dlpack_buffer_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"^data cannot be shared through DLPack: cannot export a read-only"):
        COO(OK_COORDS, _RefusingProducer())
    with pytest.raises(ValueError, match=r"^indptr cannot be shared through DLPack"):
        CSR(_RefusingProducer(), np.array([1, 0]), OK_DATA, shape=(2, 2))


# --------------------------------------------------------------------------
# Products: unstored zeros times inf contribute nothing (SciPy's rule)
# --------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore::gpusparse.GpuSparseEfficiencyWarning")  # int64 SpGEMM on CUDA < 13
def test_products_skip_unstored_zeros_times_inf(device):
    sparse = pytest.importorskip("scipy.sparse")
    # Row 0 stores columns 0 and 2: its unstored zero meets the inf of v. Row 1
    # stores a zero in column 1: 0.0 * inf is nan there, in SciPy as here.
    indptr, indices, values = np.array([0, 2, 3]), np.array([0, 2, 1]), np.array([2.0, 1.0, 0.0])
    a = CSR(indptr, indices, values, shape=(2, 3), device=device)
    ref = sparse.csr_array((values, indices, indptr), shape=(2, 3))
    v = np.array([1.0, np.inf, 1.0])
    expected = ref @ v
    np.testing.assert_array_equal(expected, [3.0, np.nan])  # SciPy's rule; dense NumPy gives [nan, nan]
    vd = to_device_array(v, device)
    for result in (gs.matmul(a, vd), a @ vd, gs.dot(a, vd), gs.mv(a, vd), gs.matmul(a.tocoo(), vd),
                   gs.matmul(a.tocsc(), vd), gs.mm(a, vd.reshape(3, 1)).reshape(2)):
        np.testing.assert_array_equal(to_host(result), expected)
    w = np.array([np.inf, 1.0])  # dense @ sparse: column 1 of row 0 is unstored
    np.testing.assert_array_equal(to_host(gs.matmul(to_device_array(w, device), a)), w @ ref)
    b = gs.fromdense(to_device_array(v.reshape(3, 1), device))  # sparse @ sparse
    np.testing.assert_array_equal(to_host((a @ b).todense()).ravel(), expected)
