"""Solvers and decompositions on gpusparse arrays, on every device: they converge on a Poisson matrix.

SciPy's (CPU) and CuPy's (CUDA) iterative solvers run through
``gpusparse.linalg.aslinearoperator``; ``lobpcg``, ``svd_lowrank``,
``pca_lowrank`` and ``norm`` are gpusparse's. Results are checked against
the analytic spectrum of the 2-D Poisson matrix, dense NumPy, and torch.
"""

from __future__ import annotations

import numpy as np
import pytest

import gpusparse as gs
from _helpers import put
from gpusparse._device import to_host
from gpusparse.linalg import aslinearoperator, lobpcg, norm, pca_lowrank, svd_lowrank

pytestmark = [
    pytest.mark.filterwarnings("ignore::gpusparse._errors.GpuSparseEfficiencyWarning"),
    # LOBPCG's block holds more columns than the eigenpairs checked; the extra
    # ones may stop short of the tolerance, which the library reports.
    pytest.mark.filterwarnings("ignore:(?s).*not reaching the requested tolerance:UserWarning"),
]

GRID = 12  # a 144 x 144 Poisson matrix


def poisson_2d(n, device, fmt="csr"):
    """The 5-point Laplacian on an n x n grid (Dirichlet), and its dense form."""
    idx = np.arange(n * n).reshape(n, n)
    rows, cols, vals = [idx.ravel()], [idx.ravel()], [np.full(n * n, 4.0)]
    for a, b in ((idx[:, :-1], idx[:, 1:]), (idx[:-1, :], idx[1:, :])):
        rows += [a.ravel(), b.ravel()]
        cols += [b.ravel(), a.ravel()]
        vals += [np.full(a.size, -1.0)] * 2
    coords = np.stack([np.concatenate(rows), np.concatenate(cols)])
    data = np.concatenate(vals)
    dense = np.zeros((n * n, n * n))
    np.add.at(dense, tuple(coords), data)
    return gs.COO(coords, data, shape=(n * n, n * n), device=device).asformat(fmt), dense


def poisson_eigenvalues(n):
    """Sorted eigenvalues of :func:`poisson_2d`: ``mu_j + mu_k`` with ``mu_j = 2 - 2 cos(j pi / (n + 1))``."""
    mu = 2 - 2 * np.cos(np.arange(1, n + 1) * np.pi / (n + 1))
    return np.sort((mu[:, None] + mu[None, :]).ravel())


def _spla(device):
    if device.is_cuda:
        import cupyx.scipy.sparse.linalg as spla
        return spla
    import scipy.sparse.linalg as spla
    return spla


def _solve(solver, op, b):
    try:
        return solver(op, b, rtol=1e-10, maxiter=2000)
    except TypeError:  # older keyword
        return solver(op, b, tol=1e-10, maxiter=2000)


@pytest.fixture(params=["csr", "csc", "coo"])
def fmt(request):
    return request.param


def test_poisson_spectrum_formula():
    _, dense = poisson_2d(4, gs.Device("cpu"))
    np.testing.assert_allclose(np.linalg.eigvalsh(dense), poisson_eigenvalues(4), atol=1e-12)


@pytest.mark.parametrize("method", ["cg", "minres", "gmres"])
def test_krylov_solvers_converge_on_poisson(device, fmt, method):
    A, dense = poisson_2d(GRID, device, fmt)
    rng = np.random.default_rng(0)
    b = rng.standard_normal(GRID * GRID)
    x, info = _solve(getattr(_spla(device), method), aslinearoperator(A), put(b, device))
    assert info == 0
    x = to_host(x)
    assert np.linalg.norm(dense @ x - b) <= 1e-7 * np.linalg.norm(b)
    np.testing.assert_allclose(x, np.linalg.solve(dense, b), rtol=1e-6, atol=1e-8)


def test_gmres_on_a_nonsymmetric_operator(device):
    A, dense = poisson_2d(GRID, device, "coo")
    n = GRID * GRID
    conv = gs.COO([np.arange(n - 1), np.arange(1, n)], np.full(n - 1, 0.5), shape=(n, n), device=device)
    coords = np.concatenate([to_host(A.coords), to_host(conv.coords)], axis=1)
    data = np.concatenate([to_host(A.data), to_host(conv.data)])
    M = gs.COO(coords, data, shape=(n, n), device=device).tocsr()
    dense_m = dense.copy()
    dense_m[np.arange(n - 1), np.arange(1, n)] += 0.5
    b = np.ones(n)
    x, info = _solve(_spla(device).gmres, aslinearoperator(M), put(b, device))
    assert info == 0
    assert np.linalg.norm(dense_m @ to_host(x) - b) <= 1e-7 * np.linalg.norm(b)


def test_eigsh_and_svds_match_the_analytic_spectrum(device, fmt):
    A, dense = poisson_2d(GRID, device, fmt)
    exact = poisson_eigenvalues(GRID)
    spla = _spla(device)
    top = to_host(spla.eigsh(aslinearoperator(A), k=4, which="LA", return_eigenvectors=False))
    np.testing.assert_allclose(np.sort(top), exact[-4:], rtol=1e-8)
    s = to_host(spla.svds(aslinearoperator(A), k=3, return_singular_vectors=False))
    np.testing.assert_allclose(np.sort(s), exact[-3:], rtol=1e-6)


def test_linear_operator_products_and_adjoint(device, fmt):
    rng = np.random.default_rng(1)
    dense = (rng.standard_normal((7, 5)) + 1j * rng.standard_normal((7, 5))) * (rng.random((7, 5)) < 0.5)
    op = aslinearoperator(gs.fromdense(dense, format=fmt, device=device))
    assert op.shape == (7, 5) and op.dtype == np.complex128
    v, w = rng.standard_normal(5), rng.standard_normal((7, 3))
    np.testing.assert_allclose(to_host(op.matvec(put(v, device))), dense @ v, atol=1e-12)
    np.testing.assert_allclose(to_host(op.matmat(put(w[:5], device))), dense @ w[:5], atol=1e-12)
    np.testing.assert_allclose(to_host(op.rmatvec(put(w[:, 0], device))), dense.conj().T @ w[:, 0], atol=1e-12)
    np.testing.assert_allclose(to_host(op.rmatmat(put(w, device))), dense.conj().T @ w, atol=1e-12)
    np.testing.assert_allclose(to_host(op.H.matvec(put(w[:, 0], device))), dense.conj().T @ w[:, 0],
                               atol=1e-12)


def test_aslinearoperator_refuses_bad_input(device):
    with pytest.raises(ValueError, match="must be 2-D"):
        aslinearoperator(gs.zeros((2, 2, 2), device=device))
    with pytest.raises(ValueError, match="fill value"):
        aslinearoperator(gs.zeros((2, 2), fill_value=1.0, device=device))


@pytest.mark.parametrize("largest", [True, False])
def test_lobpcg_on_poisson(device, fmt, largest):
    A, dense = poisson_2d(GRID, device, fmt)
    exact = poisson_eigenvalues(GRID)
    E, X = lobpcg(A, k=3, n=6, largest=largest, tol=1e-7, niter=500, seed=0)
    E, X = to_host(E), to_host(X)
    want = exact[::-1][:3] if largest else exact[:3]
    np.testing.assert_allclose(E, want, rtol=1e-6)
    residual = dense @ X - X * E
    assert np.abs(residual).max() < 1e-4


def test_lobpcg_generalized_and_starting_block(device):
    A, dense = poisson_2d(6, device)
    d = np.linspace(1.0, 2.0, 36)
    B = gs.fromdense(np.diag(d), format="csr", device=device)
    X0 = np.random.default_rng(2).standard_normal((36, 4))
    E, X = lobpcg(A, B=B, X=put(X0, device), k=2, largest=False, tol=1e-10, niter=1000)
    import scipy.linalg
    exact = scipy.linalg.eigh(dense, np.diag(d), eigvals_only=True)[:2]
    np.testing.assert_allclose(to_host(E), exact, rtol=1e-6)
    with pytest.raises(ValueError, match="must be square"):
        lobpcg(gs.zeros((3, 4), device=device))
    with pytest.raises(ValueError, match="n .* must be at least k"):
        lobpcg(A, k=3, n=2)


def test_svd_lowrank_is_exact_for_low_rank(device, fmt):
    rng = np.random.default_rng(3)
    left = rng.standard_normal((40, 4)) * (rng.random((40, 4)) < 0.5)
    right = rng.standard_normal((4, 30)) * (rng.random((4, 30)) < 0.5)
    dense = left @ right
    x = gs.fromdense(dense, format=fmt, device=device)
    exact = np.linalg.svd(dense, compute_uv=False)
    for a, d in ((x, dense), (x.T, dense.T)):  # tall and wide
        U, S, V = svd_lowrank(a, q=6, niter=2, seed=0)
        U, S, V = to_host(U), to_host(S), to_host(V)
        assert U.shape == (d.shape[0], 6) and S.shape == (6,) and V.shape == (d.shape[1], 6)
        np.testing.assert_allclose(S[:4], exact[:4], rtol=1e-8)
        np.testing.assert_allclose((U * S) @ V.conj().T, d, atol=1e-8)


def test_svd_lowrank_with_a_shift_matches_torch(device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    dense = (rng.standard_normal((30, 3)) @ rng.standard_normal((3, 20))) * (rng.random((30, 20)) < 0.7)
    M = rng.standard_normal((1, 20))
    U, S, V = svd_lowrank(gs.fromdense(dense, device=device), q=8, niter=4, M=put(M, device), seed=1)
    tU, tS, tV = torch.svd_lowrank(torch.from_numpy(dense), q=8, niter=4, M=torch.from_numpy(M).expand(30, 20))
    np.testing.assert_allclose(to_host(S)[:3], tS.numpy()[:3], rtol=1e-6)
    np.testing.assert_allclose(to_host(S)[:3], np.linalg.svd(dense - M, compute_uv=False)[:3], rtol=1e-6)


def test_pca_lowrank_matches_dense_pca(device, fmt):
    rng = np.random.default_rng(5)
    left = rng.standard_normal((60, 3)) * (rng.random((60, 3)) < 0.4)
    data = left @ (rng.standard_normal((3, 12)) * (rng.random((3, 12)) < 0.6))  # sparse, rank 3
    x = gs.fromdense(data, format=fmt, device=device)
    U, S, V = pca_lowrank(x, q=5, seed=0)
    centered = data - data.mean(axis=0)
    u, s, vt = np.linalg.svd(centered, full_matrices=False)
    np.testing.assert_allclose(to_host(S)[:3], s[:3], rtol=1e-6)
    for j in range(3):  # principal directions up to sign
        assert abs(abs(to_host(V)[:, j] @ vt[j]) - 1) < 1e-6
    U, S, V = pca_lowrank(x, q=3, center=False, seed=0)
    np.testing.assert_allclose(to_host(S), np.linalg.svd(data, compute_uv=False)[:3], rtol=1e-6)
    with pytest.raises(ValueError, match="q must be an integer"):
        pca_lowrank(x, q=13)


# --------------------------------------------------------------------------
# norm
# --------------------------------------------------------------------------

MATRIX_ORDS = [None, "fro", 1, -1, np.inf, -np.inf]
VECTOR_ORDS = [None, 2, 1, np.inf, -np.inf, 0, 3, 0.5, -1]


def _norm_cases(rng):
    dense = rng.standard_normal((5, 4)) * (rng.random((5, 4)) < 0.5)
    dense[:, 3] = rng.standard_normal(5)  # a column without zeros (for the -inf / negative p norms)
    yield dense
    yield (dense + 1j * rng.standard_normal((5, 4))) * (dense != 0)
    yield (dense * 10).astype(np.int32)


def test_matrix_and_vector_norms_match_numpy(device, rng):
    for dense in _norm_cases(rng):
        for fmt in ("coo", "csr", "csc"):
            x = gs.fromdense(dense, format=fmt, device=device)
            for ord in MATRIX_ORDS:
                got = to_host(norm(x, ord))
                np.testing.assert_allclose(got, np.linalg.norm(dense, ord), rtol=1e-6)
            for ord in VECTOR_ORDS:
                for axis in (0, 1, -1):
                    with np.errstate(divide="ignore"):
                        want = np.linalg.norm(dense, ord, axis=axis)
                    got = to_host(norm(x, ord, axis=axis))
                    assert got.dtype == want.dtype, (ord, got.dtype, want.dtype)
                    np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"ord={ord} axis={axis}")
            np.testing.assert_allclose(to_host(norm(x, axis=0, keepdims=True)),
                                       np.linalg.norm(dense, axis=0, keepdims=True), rtol=1e-6)


def test_norm_scipy_agreement_uncoalesced_nd_and_hybrid(device, rng):
    sps_linalg = pytest.importorskip("scipy.sparse.linalg")
    import scipy.sparse as sps
    coords = np.array([[0, 1, 1, 2, 0], [1, 0, 0, 2, 1]])
    data = np.array([1.0, -2.0, 5.0, 3.0, 4.0])  # (1, 0) and (0, 1) repeat
    x = gs.COO(coords, data, shape=(3, 3), device=device)
    ref = sps.coo_array((data, tuple(coords)), shape=(3, 3)).tocsr()
    for ord in (None, 1, np.inf, -1, -np.inf):
        np.testing.assert_allclose(to_host(norm(x, ord)), sps_linalg.norm(ref, ord), rtol=1e-12)
    t = rng.standard_normal((3, 4, 5)) * (rng.random((3, 4, 5)) < 0.4)
    for sparse_dim in (3, 2, 1):
        y = gs.fromdense(t, sparse_dim=sparse_dim, device=device)
        np.testing.assert_allclose(to_host(norm(y)), np.linalg.norm(t), rtol=1e-12)
        for axis in (0, 1, 2):
            for ord in (None, 1, np.inf):
                np.testing.assert_allclose(to_host(norm(y, ord, axis=axis)), np.linalg.norm(t, ord, axis=axis),
                                           rtol=1e-12)
    with pytest.raises(ValueError, match="needs axis"):
        norm(gs.fromdense(t, device=device), 1)
    with pytest.raises(ValueError, match="svd_lowrank"):
        norm(x, 2)
    with pytest.raises(ValueError, match="fill value"):
        norm(gs.zeros((2, 2), fill_value=1.0, device=device))
