"""torch.library.opcheck of every gpusparse:: custom operator: schema, fake implementation, autograd registration."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import gpusparse.autograd as ga  # noqa: E402 (registers the operators)
from _autograd_cases import as_layout, random_coo  # noqa: E402

F64 = torch.float64


def _cases():
    gen = torch.Generator().manual_seed(0)
    a = as_layout(random_coo((5, 4), 9, gen), "csr")
    coo = random_coo((5, 4), 9, gen)
    c = coo.coalesce()
    e = random_coo((4, 3), 6, gen).coalesce()
    # plain tensors (not views of sparse tensors, which fake tensors cannot mirror)
    c_index, c_values = c.indices().clone(), c.values().clone().requires_grad_()
    e_index, e_values = e.indices().clone(), e.values().clone().requires_grad_()
    csr_index = [a.crow_indices().clone(), a.col_indices().clone()]
    v = a.values().clone().requires_grad_()
    b = torch.randn(4, 3, dtype=F64, generator=gen, requires_grad=True)
    x = torch.randn(5, 2, dtype=F64, generator=gen, requires_grad=True)
    y = torch.randn(4, 2, dtype=F64, generator=gen, requires_grad=True)
    d = torch.randn(5, 4, dtype=F64, generator=gen, requires_grad=True)
    ops = torch.ops.gpusparse
    assert ga.mm is not None
    return [
        ("spmm", ops.spmm, ("csr", csr_index, v, [5, 4], b, False)),
        ("spmm_t", ops.spmm, ("coo", [c_index], c_values, [5, 4], x, True)),
        ("sddmm", ops.sddmm, ("csr", csr_index, [5, 4], x, y)),
        ("gather", ops.gather, ("csr", csr_index, [5, 4], d)),
        ("scatter", ops.scatter, ("csr", csr_index, v, [5, 4])),
        ("coalesce", ops.coalesce, (coo._indices().clone(), coo._values().clone().requires_grad_(), [5, 4])),
        ("softmax", ops.softmax, ("csr", csr_index, v, [5, 4], 1, False)),
        ("spmm_reduce", ops.spmm_reduce, ("csr", csr_index, v, [5, 4], b, "max")),
        ("spgemm", ops.spgemm, ("csr", csr_index, v, [5, 4], "coo", [e_index], e_values, [4, 3])),
        ("check_operand", ops.check_operand, ("a", "coo", [c_index], [5, 4], True, F64)),
    ]


#: Operators whose first output is an integer tensor: opcheck's dynamic-shape check sums every output
#: into one accumulator, which an integer first output makes integral (a limitation of the harness).
_INTEGER_FIRST = ("coalesce", "spgemm")


@pytest.mark.parametrize("case", range(len(_cases())), ids=[c[0] for c in _cases()])
def test_opcheck(case):
    name, op, args = _cases()[case]
    checks = ("test_schema", "test_autograd_registration", "test_faketensor")
    if name not in _INTEGER_FIRST:
        checks += ("test_aot_dispatch_dynamic",)
    torch.library.opcheck(op, args, test_utils=checks)
