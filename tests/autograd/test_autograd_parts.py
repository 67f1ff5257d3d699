"""Sparse operands of gpusparse.autograd: parts tuples recognised unambiguously, malformed components refused.

torch defines which components are valid (``check_invariants=True`` of its
constructors raises on each malformed case below); every operator refuses
them too, parts tuples and torch tensors built unchecked alike, with an
error naming the argument and the part at fault, instead of returning a
result computed from them.
"""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

import gpusparse.autograd as ga  # noqa: E402

F64 = torch.float64
I = torch.tensor([[0, 1, 0], [1, 0, 1]])  # (0, 1) twice
V = torch.tensor([1.0, 2.0, 3.0], dtype=F64)
B = torch.arange(2.0, dtype=F64).reshape(2, 1) + 1


def _t(*values):
    return torch.tensor(values, dtype=torch.int64)


#: Operators taking a 2-D float64 operand ``x``, with the name they give it.
OPERATORS = {
    "mm": (lambda x: ga.mm(x, B), "a"),
    "mm_dense_left": (lambda x: ga.mm(B.T, x), "b"),
    "sum": (lambda x: ga.sum(x, 1), "x"),
    "to_dense": (ga.to_dense, "x"),
    "softmax": (lambda x: ga.softmax(x, 1), "x"),
    "sampled_addmm": (lambda x: ga.sampled_addmm(x, B.expand(2, 1), B.T.expand(1, 2)), "input"),
}


@pytest.mark.parametrize("is_coalesced", [False, True])
def test_plain_four_tuple_is_coo(is_coalesced):
    """``(indices, values, size, is_coalesced)`` is COO (it was taken as CSR parts), with torch's result."""
    indices, values = (I, V) if not is_coalesced else (_t(0, 1, 1, 0).reshape(2, 2), V[:2])
    want = torch.sparse.mm(torch.sparse_coo_tensor(indices, values, (2, 2), check_invariants=True), B)
    torch.testing.assert_close(ga.mm((indices, values, (2, 2), is_coalesced), B), want)
    torch.testing.assert_close(ga.mm(ga.COOParts(indices, values, (2, 2), is_coalesced), B), want)
    out = ga.coalesce((indices, values, (2, 2), is_coalesced))
    assert isinstance(out, ga.COOParts) and out.is_coalesced


def test_plain_four_tuple_is_csr():
    crow, col = _t(0, 1, 2), _t(1, 0)
    want = torch.sparse.mm(torch.sparse_csr_tensor(crow, col, V[:2], (2, 2), check_invariants=True), B)
    torch.testing.assert_close(ga.mm((crow, col, V[:2], (2, 2)), B), want)
    torch.testing.assert_close(ga.mm((crow, col, V[:2], torch.Size([2, 2])), B), want)


def test_ambiguous_tuples_are_refused():
    with pytest.raises(TypeError, match=r"x as a 4-tuple must end in is_coalesced .* got str"):
        ga.to_dense((I, V, (2, 2), "yes"))
    with pytest.raises(TypeError, match=r"x as a tuple must be .*got 5 elements"):
        ga.to_dense((I, V, (2, 2), True, True))
    with pytest.raises(TypeError, match=r"x\.is_coalesced must be a bool"):
        ga.to_dense(ga.COOParts(I, V, (2, 2), 1))


#: (layout, components, size, torch's constructor accepts it with check_invariants, expected message).
MALFORMED = {
    "csr_indptr_decreasing": ("csr", (_t(0, 5, 1, 3), _t(0, 1, 0)), (3, 2), r"crow_indices must be non-decreasing"),
    "csr_indptr_not_from_0": ("csr", (_t(1, 2, 3), _t(0, 1, 0)), (2, 2), r"crow_indices must start at 0"),
    "csr_indptr_not_to_nnz": ("csr", (_t(0, 1, 2), _t(0, 1, 0)), (2, 2), r"end at nnz=3"),
    "csr_indptr_length": ("csr", (_t(0, 3), _t(0, 1, 0)), (2, 2), r"crow_indices must have 3 entries"),
    "csr_col_out_of_range": ("csr", (_t(0, 2, 3), _t(0, 2, 0)), (2, 2), r"col_indices out of range \[0, 2\)"),
    "csr_col_negative": ("csr", (_t(0, 2, 3), _t(-1, 1, 0)), (2, 2), r"col_indices out of range .* -1"),
    "csr_unsorted": ("csr", (_t(0, 2, 3), _t(1, 0, 0)), (2, 2), r"col_indices must be sorted and unique"),
    "csr_duplicate": ("csr", (_t(0, 2, 3), _t(1, 1, 0)), (2, 2), r"col_indices must be sorted and unique"),
    "csc_indptr": ("csc", (_t(0, 2, 1), _t(0, 1, 0)), (2, 2), r"ccol_indices must"),
    "csc_row_out_of_range": ("csc", (_t(0, 2, 3), _t(0, 3, 0)), (2, 2), r"row_indices out of range"),
    "coo_out_of_range": ("coo", (_t(0, 2, 0, 1, 0, 1).reshape(2, 3),), (2, 2), r"indices out of bounds"),
    "coo_negative": ("coo", (_t(0, -1, 0, 1, 0, 1).reshape(2, 3),), (2, 2), r"indices must be non-negative"),
    "coo_false_coalesced": ("coo_flag", (_t(1, 0, 0, 1).reshape(2, 2),), (2, 2), r"is_coalesced=True promises"),
    "coo_false_coalesced_duplicates": ("coo_flag", (_t(0, 0, 1, 1).reshape(2, 2),), (2, 2),
                                       r"is_coalesced=True promises"),
    "negative_size": ("coo", (I,), (-2, 2), r"size must not have negative dimensions"),
    "size_too_short": ("coo", (I,), (2,), r"size \(2,\) has 1 dimensions"),
}


def _parts(layout, index, values, size):
    if layout == "coo":
        return ga.COOParts(index[0], values, size)
    if layout == "coo_flag":
        return ga.COOParts(index[0], values, size, True)
    return (ga.CSRParts if layout == "csr" else ga.CSCParts)(*index, values, size)


def _torch(layout, index, values, size, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if layout.startswith("coo"):
            return torch.sparse_coo_tensor(index[0], values, size, is_coalesced=layout == "coo_flag",
                                           check_invariants=check)
        make = torch.sparse_csr_tensor if layout == "csr" else torch.sparse_csc_tensor
        return make(*index, values, size, check_invariants=check)


def _outcome(fn, operand):
    try:
        fn(operand)
    except Exception as e:  # noqa: BLE001 -- reported to the parent
        return [type(e).__name__, str(e)]
    return ["returned", ""]


def run_malformed_cases() -> None:
    """In a child process: every malformed case through every operator, one JSON line per result, flushed."""
    import json
    import sys
    for case in sorted(MALFORMED):
        layout, index, size, _ = MALFORMED[case]
        values = V[: index[-1].shape[-1]]
        for op in sorted(OPERATORS):
            fn, _ = OPERATORS[op]
            line = {"case": case, "op": op, "parts": _outcome(fn, _parts(layout, index, values, size))}
            if case not in ("negative_size", "size_too_short"):  # torch builds no such tensor even unchecked
                line["tensor"] = _outcome(fn, _torch(layout, index, values, size, check=False))
            sys.stdout.write(json.dumps(line) + "\n")
            sys.stdout.flush()
    compiled = torch.compile(lambda x: ga.mm(x, B), fullgraph=True, backend="aot_eager", dynamic=True)
    for case in COMPILED:
        layout, index, size, _ = MALFORMED[case]
        line = {"case": case, "op": "mm_compiled",
                "parts": _outcome(compiled, _parts(layout, index, V[: index[-1].shape[-1]], size))}
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()


@pytest.fixture(scope="module")
def malformed_outcomes():
    """What every operator did with every malformed operand, run in a child process (some crashed it once:
    ``torch.repeat_interleave`` aborts on a decreasing ``crow_indices``); ``(outcomes, how the child ended)``."""
    import json
    import os
    import subprocess
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    code = f"import sys; sys.path.insert(0, {here!r}); import test_autograd_parts as t; t.run_malformed_cases()"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    outcomes = {}
    for line in proc.stdout.splitlines():
        d = json.loads(line)
        outcomes[d["case"], d["op"]] = d
    return outcomes, f"exit status {proc.returncode}; stderr: {proc.stderr[-2000:]}"


@pytest.mark.parametrize("op", sorted(OPERATORS))
@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_parts_are_refused(case, op, malformed_outcomes):
    import re
    layout, index, size, message = MALFORMED[case]
    values = V[: index[-1].shape[-1]]
    _, name = OPERATORS[op]
    with pytest.raises(RuntimeError):  # torch calls these invalid
        _torch(layout, index, values, size, check=True)
    outcomes, ending = malformed_outcomes
    got = outcomes.get((case, op))
    assert got is not None, f"the child process died at or before this case ({ending})"
    kind, text = got["parts"]
    assert kind in ("ValueError", "TypeError") and re.search(rf"^{name}[.:]? ?.*{message}", text), got
    if "tensor" in got:  # torch's default: built, not checked
        kind, text = got["tensor"]
        assert kind == "ValueError" and re.search(rf"^{name}[.:] ?.*{message}", text), got


#: Malformed contents a compiled graph checks too (by an operator in the graph).
COMPILED = ("csr_indptr_decreasing", "csr_col_out_of_range", "csr_unsorted", "coo_out_of_range",
            "coo_false_coalesced")


@pytest.mark.parametrize("case", COMPILED)
def test_malformed_parts_are_refused_compiled(case, malformed_outcomes):
    """Under ``torch.compile(fullgraph=True)`` as in eager mode (the check is not traced away)."""
    import re
    message = MALFORMED[case][3]
    outcomes, ending = malformed_outcomes
    got = outcomes.get((case, "mm_compiled"))
    assert got is not None, f"the child process died at or before this case ({ending})"
    kind, text = got["parts"]
    assert kind == "ValueError" and re.search(rf"^a: .*{message}", text), got


def test_parts_of_the_wrong_kind_name_the_part():
    with pytest.raises(TypeError, match=r"a\.col_indices must be a 1-D"):
        ga.mm(ga.CSRParts(_t(0, 1, 2), _t(0, 1).reshape(1, 2), V[:2], (2, 2)), B)
    with pytest.raises(TypeError, match=r"a\.indices must be an int64"):
        ga.mm(ga.COOParts(I.to(torch.int32), V, (2, 2)), B)
    with pytest.raises(TypeError, match=r"a\.values must be a dense torch tensor"):
        ga.mm(ga.COOParts(I, [1.0, 2.0, 3.0], (2, 2)), B)
    with pytest.raises(TypeError, match=r"a\.size must be a tuple"):
        ga.mm(ga.COOParts(I, V, 4), B)
    with pytest.raises(TypeError, match=r"a\.size must be a sequence of integers"):
        ga.mm(ga.COOParts(I, V, (2.0, 2)), B)
    with pytest.raises(ValueError, match=r"a: 2 values for 3 indices"):
        ga.mm(ga.COOParts(I, V[:2], (2, 2)), B)


def test_valid_edges_still_pass():
    """Empty operands, 0- and 1-size dimensions and int32 CSR indices are valid (torch accepts them)."""
    for size in ((0, 2), (2, 0), (1, 1)):
        crow = torch.zeros(size[0] + 1, dtype=torch.int32)
        col = torch.zeros(0, dtype=torch.int32)
        b = torch.ones(size[1], 3, dtype=F64)
        want = torch.sparse.mm(torch.sparse_csr_tensor(crow, col, V[:0], size, check_invariants=True), b)
        torch.testing.assert_close(ga.mm(ga.CSRParts(crow, col, V[:0], size), b), want)
        torch.testing.assert_close(ga.mm(ga.COOParts(torch.zeros(2, 0, dtype=torch.int64), V[:0], size, True), b),
                                   want)
