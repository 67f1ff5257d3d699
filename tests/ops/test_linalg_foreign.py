"""Products with foreign operands (torch, JAX, SciPy, device arrays, lists): the result has the operand's kind."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

import gpusparse as gs
from _helpers import put
from _products import EXAMPLES, _dense, assert_product, build, matmul_cases, matmul_oracle
from gpusparse.containers import SparseArray
from gpusparse.ops import linalg

pytestmark = pytest.mark.filterwarnings("ignore::gpusparse._errors.GpuSparseEfficiencyWarning")



# --------------------------------------------------------------------------
# Foreign operands: the result has the operand's kind
# --------------------------------------------------------------------------

def _torch_on(arr, device):
    """``arr`` as a torch tensor on ``device`` (skips where torch cannot reach that device)."""
    torch = pytest.importorskip("torch")
    if not device.is_cuda:
        return torch.from_numpy(np.ascontiguousarray(arr))
    if not torch.cuda.is_available():
        pytest.skip("torch was built without CUDA or sees no GPU")
    return torch.from_numpy(np.ascontiguousarray(arr)).to(f"cuda:{device.index}")


def _assert_torch_result(result, expected, device, bound=None):
    torch = pytest.importorskip("torch")
    assert isinstance(result, torch.Tensor), type(result)
    assert result.device.type == ("cuda" if device.is_cuda else "cpu")
    if device.is_cuda:
        assert result.device.index == device.index
    assert_product(result.cpu().numpy(), expected, bound)


_PRODUCTS = {  # name: (call with sparse x and dense d, dense oracle)
    "@": (lambda x, d: x @ d, lambda a, b: a @ b),
    "rmatmul": (lambda x, d: d.T @ x.T, lambda a, b: b.T @ a.T),
    "np.matmul": (lambda x, d: np.matmul(x, d), lambda a, b: a @ b),
    "np.dot": (lambda x, d: np.dot(x, d), lambda a, b: a @ b),
    "gs.matmul": (lambda x, d: gs.matmul(x, d), lambda a, b: a @ b),
    "gs.dot": (lambda x, d: gs.dot(x, d), lambda a, b: a @ b),
    "x.dot": (lambda x, d: x.dot(d), lambda a, b: a @ b),
    "gs.mm": (lambda x, d: gs.mm(x, d), lambda a, b: a @ b),
    "gs.mm(reduce)": (lambda x, d: gs.mm(x, d, reduce="sum"), lambda a, b: a @ b),
    "gs.tensordot": (lambda x, d: gs.tensordot(x, d, axes=1), lambda a, b: a @ b),
    "gs.inner": (lambda x, d: gs.inner(x, d.T), lambda a, b: a @ b),
    "gs.sparse_dense_matmul": (lambda x, d: gs.sparse_dense_matmul(x, d), lambda a, b: a @ b),
    "gs.addmm": (lambda x, d: gs.addmm(d[:1] * 0, x, d), lambda a, b: a @ b),
}


_TORCH_DLPACK = tuple(np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                                             np.float32, np.float64, np.complex64, np.complex128))


@EXAMPLES
@given(case=matmul_cases(kinds=("sd", "ds")))
def test_matmul_with_torch_dense_operands(device, case):
    kind, a, b, fmt_a, fmt_b = case
    sa, sb = kind[0] == "s", kind[1] == "s"
    dense = b if sa else a
    if dense.dtype not in _TORCH_DLPACK:
        dense = dense.astype(np.int64)
    a, b = (a, dense) if sa else (dense, b)
    expected, bound = matmul_oracle(_dense(a, sa), _dense(b, sb))
    A = build(a, device, fmt_a) if sa else _torch_on(a, device)
    B = build(b, device, fmt_b) if sb else _torch_on(b, device)
    _assert_torch_result(linalg.matmul(A, B), expected, device, bound)
    _assert_torch_result(A @ B, expected, device, bound)


@pytest.mark.parametrize("name", list(_PRODUCTS))
@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
def test_torch_operands_give_torch_results(device, name, fmt, rng):
    call, oracle = _PRODUCTS[name]
    a = rng.standard_normal((5, 4)) * (rng.random((5, 4)) < 0.5)
    b = rng.standard_normal((4, 3))
    x = gs.fromdense(put(a, device)).asformat(fmt)
    if name in ("np.matmul", "np.dot") and device.is_cuda:
        pytest.skip("NumPy's protocols dispatch CPU operands")
    result = call(x, _torch_on(b, device))
    _assert_torch_result(result, oracle(a, b), device, oracle(np.abs(a), np.abs(b)))


def test_torch_results_share_memory_and_keep_dtypes(device, rng):
    torch = pytest.importorskip("torch")
    x = gs.fromdense(put(np.eye(3, dtype=np.float32), device))
    for dtype, np_dtype in ((torch.float32, np.float32), (torch.int64, np.float64), (torch.complex128, np.complex128),
                            (torch.bool, np.float32)):
        d = _torch_on(np.ones((3, 2)), device).to(dtype)
        out = x @ d
        assert isinstance(out, torch.Tensor) and out.dtype == getattr(torch, np.dtype(np_dtype).name)
        _assert_torch_result(out, np.ones((3, 2), np_dtype), device)
    vector = gs.fromdense(put(np.array([1.0, 0.0, 2.0]), device))
    out = vector @ _torch_on(np.array([1.0, 5.0, 3.0]), device)
    assert isinstance(out, torch.Tensor) and out.shape == () and float(out) == 7.0


def test_device_arrays_and_lists_give_device_arrays(device):
    x = gs.fromdense(put(np.eye(3, dtype=np.float32), device))
    array_type = type(put(np.ones(1), device))
    assert type(x @ put(np.ones((3, 2), np.float32), device)) is array_type
    assert type(put(np.ones((2, 3)), device) @ x) is array_type
    assert type(x @ np.ones((3, 2)).tolist()) is array_type
    assert type(gs.tensordot(x, np.ones(3).tolist(), axes=1)) is array_type


def test_torch_operand_on_another_device_is_refused(device):
    torch = pytest.importorskip("torch")
    if not device.is_cuda:
        pytest.skip("needs a CUDA device")
    x = gs.eye(2, device=device)
    with pytest.raises(ValueError, match="b"):
        gs.matmul(x, torch.ones(2, 2, dtype=torch.float64))


def test_first_dense_operand_decides(rng):
    torch = pytest.importorskip("torch")
    x = gs.fromdense(np.eye(2), device="cpu")
    d = np.ones((2, 2))
    assert isinstance(gs.addmm(torch.from_numpy(d), x, d), torch.Tensor)
    assert isinstance(gs.addmm(d, x, torch.from_numpy(d)), np.ndarray)
    assert isinstance(gs.addmm(d.tolist(), x, torch.from_numpy(d)), torch.Tensor)
    sparse = gs.addmm(x, x, x)  # sparse results stay gpusparse arrays
    assert isinstance(sparse, SparseArray)


def test_jax_operands_give_jax_results():
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    x = gs.fromdense(np.array([[1.0, 0.0], [0.0, 2.0]], np.float32), device="cpu")
    out = x @ jnp.ones((2, 3), jnp.float32)
    assert isinstance(out, jax.Array) and out.dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(out), [[1, 1, 1], [2, 2, 2]])
    x64 = x.astype(np.float64)
    out = x64 @ jnp.ones((2, 3), jnp.float32)  # float64: JAX keeps it only with x64 enabled
    wide = jax.dtypes.canonicalize_dtype(np.float64) == np.float64
    assert isinstance(out, jax.Array) == wide
    assert np.asarray(out).dtype == np.float64


_SCIPY_FORMATS = ["csr_array", "csc_array", "coo_array", "csr_matrix", "coo_matrix"]


@pytest.mark.parametrize("kind", _SCIPY_FORMATS)
@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
def test_scipy_operands_both_orders(kind, fmt, rng):
    sps = pytest.importorskip("scipy.sparse")
    a = rng.standard_normal((5, 4)) * (rng.random((5, 4)) < 0.5)
    b = rng.standard_normal((4, 3)) * (rng.random((4, 3)) < 0.5)
    m = getattr(sps, kind)(b)
    ma = getattr(sps, kind)(a)
    x = gs.fromdense(a, device="cpu").asformat(fmt)
    for name, result in [("x @ m", x @ m), ("np.matmul", np.matmul(x, m)), ("gs.matmul", gs.matmul(x, m)),
                         ("gs.dot", gs.dot(x, m)), ("gs.mm", gs.mm(x, m)),
                         ("gs.tensordot", gs.tensordot(x, m, axes=1)),
                         ("gs.sparse_dense_matmul", gs.sparse_dense_matmul(x, m))]:
        assert isinstance(result, SparseArray), name
        assert_product(result, a @ m.toarray(), np.abs(a) @ np.abs(b))
    expected = ma.toarray() @ b
    y = gs.fromdense(b, device="cpu").asformat(fmt)
    for name, result in [("np.matmul", np.matmul(ma, y)), ("np.dot", np.dot(ma, y)),
                         ("gs.matmul", gs.matmul(ma, y)), ("gs.dot", gs.dot(ma, y)),
                         ("gs.sparse_dense_matmul", gs.sparse_dense_matmul(ma, y))]:
        assert isinstance(result, SparseArray), name
        assert_product(result, expected, np.abs(a) @ np.abs(b))
    # ``ma @ y``: SciPy's ``__matmul__`` converts y with np.asanyarray, which gpusparse refuses
    # (no implicit densification) instead of returning NotImplemented; gs.matmul is the way
    with pytest.raises(RuntimeError, match="densify"):
        ma @ y


def test_torch_sparse_operand_gives_a_sparse_result(rng):
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((3, 4)) * (rng.random((3, 4)) < 0.5)
    b = rng.standard_normal((4, 2)) * (rng.random((4, 2)) < 0.5)
    x = gs.fromdense(a, device="cpu")
    for t in (torch.from_numpy(b).to_sparse(), torch.from_numpy(b).to_sparse_csr()):
        result = x @ t
        assert isinstance(result, SparseArray)
        assert_product(result, a @ b, np.abs(a) @ np.abs(b))


def test_scipy_csr_operand_is_not_copied():
    sps = pytest.importorskip("scipy.sparse")
    from gpusparse.ops.linalg.operands import prepare
    from gpusparse.ops.interop._common import pointer
    m = sps.csr_array(np.array([[0.0, 1.0], [2.0, 0.0]]))
    (_, y), _ = prepare((gs.eye(2, device="cpu"), m), ("a", "b"))
    assert pointer(y.data) == pointer(m.data) and pointer(y.indices) == pointer(m.indices)


def test_scipy_operand_on_another_device_is_refused(device):
    sps = pytest.importorskip("scipy.sparse")
    if not device.is_cuda:
        pytest.skip("needs a CUDA device")
    x = gs.eye(2, device=device)
    with pytest.raises(ValueError, match="b"):
        x @ sps.csr_array(np.eye(2))
