"""Differentiable sparse operators for PyTorch, computed by gpusparse's kernels.

Torch tensors in, torch tensors out, on the tensors' own device: a sparse
operand is a torch sparse tensor (COO, hybrid and uncoalesced included;
CSR; CSC) whose values may require grad, or -- for ``torch.compile``,
which refuses sparse tensors -- a tuple of plain tensors
(:class:`COOParts`, :class:`CSRParts`, :class:`CSCParts`, or plain
``(indices, values, size[, is_coalesced])`` COO / ``(crow_indices,
col_indices, values, size)`` CSR tuples). Sparse results come back in the
form their operand was given. Operands are validated as torch's
``check_invariants=True`` would (indices in range, compressed indices from 0
non-decreasing to nnz, CSR/CSC sorted and unique, ``is_coalesced`` promises
kept, sizes non-negative): ``ValueError`` / ``TypeError`` naming the argument.
Each operator is a ``torch.library`` custom operator (``gpusparse::...``)
with a fake implementation and a registered backward, so models using them
trace under ``torch.compile(fullgraph=True)``.

Gradients for a sparse operand lie on its pattern, as torch gives them: for
a torch sparse tensor, a sparse tensor of its layout (for an uncoalesced COO
tensor, coalesced: each coordinate once, carrying the derivative there, so
that torch's backward of ``sparse_coo_tensor`` hands every duplicate that
derivative); for a parts tuple, the gradient of its ``values`` tensor (each
duplicate the derivative at its coordinate). This module imports
torch; ``import gpusparse`` does not import it.

Examples
--------
>>> import torch, gpusparse.autograd as ga
>>> i = torch.tensor([[0, 1, 1], [1, 0, 0]])
>>> v = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
>>> x = ga.mm((i, v, (2, 2)), torch.ones(2, 1))
>>> x.sum().backward()
>>> x.detach()[:, 0], v.grad
(tensor([1., 5.]), tensor([1., 1., 1.]))
"""

from gpusparse.autograd._api import (
    addmm,
    bmm,
    coalesce,
    log_softmax,
    mm,
    mul,
    mv,
    sampled_addmm,
    softmax,
    sparse_dense_matmul,
    sparse_mask,
    spgemm,
    sum,
    to_dense,
    transpose,
)
from gpusparse.autograd._lowrank import pca_lowrank, svd_lowrank
from gpusparse.autograd._parts import COOParts, CSCParts, CSRParts
from gpusparse.autograd._semiring import mxm, mxv

__all__ = [
    "COOParts",
    "CSCParts",
    "CSRParts",
    "addmm",
    "bmm",
    "coalesce",
    "log_softmax",
    "mm",
    "mul",
    "mv",
    "mxm",
    "mxv",
    "pca_lowrank",
    "sampled_addmm",
    "softmax",
    "sparse_dense_matmul",
    "sparse_mask",
    "spgemm",
    "sum",
    "svd_lowrank",
    "to_dense",
    "transpose",
]
