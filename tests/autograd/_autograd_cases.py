"""Sparse operands for the gpusparse.autograd tests: every layout and both forms (torch tensors, parts tuples)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import gpusparse.autograd as ga  # noqa: E402

#: COO with duplicates in shuffled order, coalesced COO, CSR, CSC.
LAYOUTS = ("coo_dup", "coo", "csr", "csc")


@pytest.fixture
def tdev(device):
    """The torch device of the gpusparse ``device`` parameter (skips where torch has no such device)."""
    if device.is_cuda:
        if not torch.cuda.is_available():
            pytest.skip("torch has no CUDA device here (the emulated CUDA path has no torch tensors)")
        return torch.device(f"cuda:{device.index or 0}")
    return torch.device("cpu")


def random_coo(shape, nnz, gen, *, dense_shape=(), dtype=torch.float64, device="cpu", empty_row=True):
    """An uncoalesced COO tensor (duplicates, shuffled): ``nnz`` entries, row 1 left empty where there is one."""
    coords = torch.stack([torch.randint(0, s, (nnz,), generator=gen) for s in shape]) if nnz else \
        torch.zeros((len(shape), 0), dtype=torch.int64)
    if empty_row and shape[0] > 2:
        coords = coords[:, coords[0] != 1]
    if coords.shape[1] > 1:  # one certain duplicate
        coords = torch.cat([coords, coords[:, :1]], 1)
    values = torch.randn((coords.shape[1], *dense_shape), generator=gen, dtype=dtype)
    return torch.sparse_coo_tensor(coords, values, (*shape, *dense_shape), check_invariants=True).to(device)


def as_layout(t, layout):
    """The uncoalesced COO ``t`` in ``layout`` (a torch sparse tensor)."""
    if layout == "coo_dup":
        return t
    c = t.coalesce()
    if layout == "coo":
        return c
    return c.to_sparse_csr() if layout == "csr" else c.to_sparse_csc()


def values_of(t):
    return (t._values() if t.layout == torch.sparse_coo else t.values()).detach().clone()


def parts(t, values):
    """The parts tuple of torch sparse ``t`` over the tensor ``values``."""
    if t.layout == torch.sparse_coo:
        return ga.COOParts(t._indices(), values, tuple(t.shape), t.is_coalesced())
    if t.layout == torch.sparse_csr:
        return ga.CSRParts(t.crow_indices(), t.col_indices(), values, tuple(t.shape))
    return ga.CSCParts(t.ccol_indices(), t.row_indices(), values, tuple(t.shape))


def leaf(t):
    """A copy of sparse ``t`` that requires grad (a leaf)."""
    return t.detach().clone().requires_grad_()


def out_values(x):
    """The values of a sparse result (parts tuple or torch tensor), or a dense result as it is."""
    if isinstance(x, tuple):
        return x.values
    if x.layout == torch.strided:
        return x
    return x._values() if x.layout == torch.sparse_coo else x.values()


def dense_of(x):
    """A sparse result (either form) or a dense one as a dense tensor."""
    if isinstance(x, tuple):
        return ga.to_dense(x)
    return x.to_dense() if x.layout != torch.strided else x
