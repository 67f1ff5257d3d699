"""Semiring products (mxm, mxv) with masks, and the GraphBLAS element-wise operations, against dense oracles.

The oracle loops over the product terms of the coalesced operands (each
term rounded to the value dtype, the reduction starting from the first
term, min / max as fmin / fmax), so structure, values and fill values are
checked exactly (floats within a few ulps where ``plus`` sums). Every test
runs on every device the ``device`` fixture yields (the CPU and the CUDA
device, emulated on machines without one). python-graphblas is a second
oracle where it is installed.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpusparse as gs
from _helpers import check_invariants, put
from gpusparse._device import to_host
from gpusparse.ops.semiring import SEMIRINGS, identity, parse
from gpusparse.ops.semiring._defs import plan

EXAMPLES = settings(deadline=None)

pytestmark = pytest.mark.filterwarnings("ignore::gpusparse._errors.GpuSparseEfficiencyWarning")


# --------------------------------------------------------------------------
# The oracle
# --------------------------------------------------------------------------

def _coalesced(coords, data, shape, dtype):
    """Dense values and presence of a COO with duplicates: duplicates summed in ``dtype`` (bool: or)."""
    values = np.zeros(shape, dtype=dtype)
    present = np.zeros(shape, dtype=bool)
    for idx, v in zip(zip(*coords), data):
        if dtype == np.bool_:
            values[idx] = values[idx] or v
        else:
            with np.errstate(over="ignore"):
                values[idx] = np.array([values[idx], v], dtype=dtype).sum(dtype=dtype)
        present[idx] = True
    return values, present


def _mul(op, x, y, dtype):
    with np.errstate(over="ignore", invalid="ignore"):
        if op == "times":
            r = np.multiply(x, y, dtype=dtype)
        elif op == "plus":
            r = np.add(x, y, dtype=dtype)
        elif op == "min":
            r = np.minimum(x, y)
        elif op == "max":
            r = np.maximum(x, y)
        elif op == "land":
            r = bool(x) and bool(y)
        elif op == "pair":
            r = 1
        elif op == "first":
            r = x
        else:
            r = y
    return np.array(r).astype(dtype)[()]


def _add(op, acc, v, dtype):
    with np.errstate(over="ignore"):
        if op == "plus":
            return np.add(acc, v, dtype=dtype) if dtype != np.bool_ else np.bool_(acc or v)
        if op == "min":
            return v if (v < acc or acc != acc) else acc
        if op == "max":
            return v if (v > acc or acc != acc) else acc
        if op == "lor":
            return np.bool_(acc or v)
        return v


def oracle(av, ap, bv, bp, semiring, dtype, allowed=None):
    """Dense values and presence of ``A (add.mul) B`` from dense values and presence of both operands."""
    p = plan(semiring, av.dtype, bv.dtype)
    sr, cdt = p.semiring, p.compute
    av, bv = av.astype(cdt), bv.astype(cdt)
    m, kk = av.shape
    n = bv.shape[1]
    out = np.full((m, n), identity(sr.add, cdt), dtype=cdt)
    present = np.zeros((m, n), dtype=bool)
    for i in range(m):
        for j in range(n):
            if allowed is not None and not allowed[i, j]:
                continue
            for k in range(kk):
                if ap[i, k] and bp[k, j]:
                    t = _mul(sr.mul, av[i, k], bv[k, j], cdt)
                    out[i, j] = t if not present[i, j] else _add(sr.add, out[i, j], t, cdt)
                    present[i, j] = True
    if p.as_bool:
        out = out != 0
    return out.astype(p.result), present, p.fill


def _values(rng, n, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(n) < 0.7
    if dtype.kind == "u":
        return rng.integers(0, 5, n).astype(dtype)
    if dtype.kind == "i":
        return rng.integers(-4, 5, n).astype(dtype)
    return (rng.integers(-8, 9, n) / 2).astype(dtype)


def random_coo(rng, shape, dtype, density=0.4, duplicates=True):
    """A COO on the host with duplicates (possibly), and its coalesced dense values and presence."""
    size = int(np.prod(shape))
    nnz = int(rng.integers(0, max(1, int(size * density)) + 1)) if size else 0
    coords = np.stack([rng.integers(0, s, nnz) for s in shape]) if size else np.zeros((len(shape), 0), np.int64)
    if duplicates and nnz > 1:
        coords = np.concatenate([coords, coords[:, : nnz // 3]], axis=1)
    data = _values(rng, coords.shape[1], dtype)
    values, present = _coalesced(coords, data, shape, np.dtype(dtype))
    return coords, data, values, present


def sparse_on(device, coords, data, shape, fmt="coo"):
    x = gs.COO(put(coords, device), put(data, device), shape)
    return x if fmt == "coo" else x.asformat(fmt)


def assert_sparse_result(got, values, present, fill):
    check_invariants(got)
    assert got.dtype == values.dtype, (got.dtype, values.dtype)
    assert got.fill_value == fill or (got.fill_value != got.fill_value and fill != fill)
    got_present = np.zeros(got.shape, dtype=bool)
    coo = got.asformat("coo")
    coords = to_host(coo.coords)
    got_present[tuple(coords)] = True
    np.testing.assert_array_equal(got_present, present)
    dense = to_host(got.todense())
    expected = np.where(present, values, fill)
    _assert_values(dense, expected)


def _assert_values(actual, expected):
    actual = np.asarray(actual)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(actual, expected, rtol=1e-5 if expected.dtype == np.float32 else 1e-12)
    else:
        np.testing.assert_array_equal(actual, expected)


# --------------------------------------------------------------------------
# Definitions
# --------------------------------------------------------------------------

def test_semiring_names_and_identities():
    assert parse("min_plus").add == "min" and parse("min_plus").mul == "plus"
    assert identity("min", np.int32) == np.iinfo(np.int32).max
    assert identity("max", np.uint8) == 0
    assert identity("max", np.float32) == -np.inf
    assert identity("lor", np.bool_) is np.False_ or identity("lor", np.bool_) == False  # noqa: E712
    for name in SEMIRINGS:
        parse(name)
    with pytest.raises(ValueError, match="unknown semiring"):
        parse("any_times")
    with pytest.raises(ValueError, match="semiring"):
        parse("plus")


def test_errors(device):
    a = gs.fromdense(put(np.eye(3), device), format="csr")
    with pytest.raises(ValueError, match="align"):
        gs.mxm(a, gs.fromdense(put(np.eye(2), device)), "min_plus")
    with pytest.raises(ValueError, match="mask has shape"):
        gs.mxm(a, a, "min_plus", mask=gs.fromdense(put(np.eye(2), device)))
    with pytest.raises(TypeError, match="complex"):
        gs.mxm(a.astype(np.complex128), a, "min_plus")
    with pytest.raises(TypeError, match="sparse"):
        gs.mxm(np.eye(3), a)


# --------------------------------------------------------------------------
# Every semiring: sparse x sparse, sparse x dense, sparse x vector, masks
# --------------------------------------------------------------------------

_SEMIRING_DTYPE = {
    "plus_times": np.float64, "min_plus": np.int64, "max_plus": np.float64, "max_times": np.int32,
    "min_times": np.float64, "min_max": np.int64, "max_min": np.float64, "lor_land": np.bool_,
    "plus_pair": np.int64, "any_pair": np.float64, "min_first": np.float64, "min_second": np.int64,
    "max_first": np.int64, "max_second": np.float64,
}


def _mask_for(rng, device, shape, kind):
    """(mask argument, complement, allowed oracle) for ``kind`` in none/structure/complement."""
    if kind == "none":
        return None, False, None
    coords, data, _, present = random_coo(rng, shape, np.float64, density=0.5)
    mask = sparse_on(device, coords, np.zeros_like(data), shape)  # values ignored: the structure selects
    complement = kind == "complement"
    return mask, complement, (~present if complement else present)


@pytest.mark.parametrize("semiring", SEMIRINGS)
@pytest.mark.parametrize("mask_kind", ["none", "structure", "complement"])
def test_mxm_sparse_sparse(device, semiring, mask_kind, rng):
    dtype = _SEMIRING_DTYPE[semiring]
    for m, k, n in [(5, 4, 6), (0, 3, 2), (3, 0, 2), (1, 1, 1), (4, 5, 0)]:
        ac, ad, av, ap = random_coo(rng, (m, k), dtype)
        bc, bd, bv, bp = random_coo(rng, (k, n), dtype)
        a = sparse_on(device, ac, ad, (m, k), "coo")
        b = sparse_on(device, bc, bd, (k, n), "csr")
        mask, complement, allowed = _mask_for(rng, device, (m, n), mask_kind)
        got = gs.mxm(a, b, semiring, mask=mask, complement=complement)
        values, present, fill = oracle(av, ap, bv, bp, semiring, dtype, allowed)
        assert got.format == "csr"
        assert_sparse_result(got, values, present, fill)


@pytest.mark.parametrize("semiring", SEMIRINGS)
@pytest.mark.parametrize("mask_kind", ["none", "complement"])
def test_mxm_sparse_dense_and_mxv(device, semiring, mask_kind, rng):
    dtype = _SEMIRING_DTYPE[semiring]
    for m, k, n in [(5, 4, 3), (0, 2, 2), (3, 0, 1), (1, 1, 1)]:
        ac, ad, av, ap = random_coo(rng, (m, k), dtype)
        a = sparse_on(device, ac, ad, (m, k), "csc")
        b = _values(rng, k * n, dtype).reshape(k, n)
        mask, complement, allowed = _mask_for(rng, device, (m, n), mask_kind)
        got = gs.mxm(a, put(b, device), semiring, mask=mask, complement=complement)
        values, present, fill = oracle(av, ap, b, np.ones((k, n), bool), semiring, dtype, allowed)
        _assert_values(to_host(got), np.where(present, values, fill))
        # the vector forms: a dense vector and a sparse one
        v = b[:, 0] if n else _values(rng, k, dtype)
        vmask, vcomplement, vallowed = _mask_for(rng, device, (m,), mask_kind)
        got_v = gs.mxv(a, put(v, device), semiring, mask=vmask, complement=vcomplement)
        values, present, fill = oracle(av, ap, v.reshape(-1, 1), np.ones((k, 1), bool), semiring, dtype,
                                       None if vallowed is None else vallowed.reshape(-1, 1))
        _assert_values(to_host(got_v), np.where(present, values, fill).reshape(-1))
        vc, vd, vv, vp = random_coo(rng, (k,), dtype)
        got_s = gs.mxv(a, sparse_on(device, vc, vd, (k,)), semiring, mask=vmask, complement=vcomplement)
        values, present, fill = oracle(av, ap, vv.reshape(-1, 1), vp.reshape(-1, 1), semiring, dtype,
                                       None if vallowed is None else vallowed.reshape(-1, 1))
        assert got_s.ndim == 1
        assert_sparse_result(got_s, values.reshape(-1), present.reshape(-1), fill)


_DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
           np.float32, np.float64]


@pytest.mark.parametrize("dtype", _DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("semiring", ["min_plus", "max_times", "plus_times"])
def test_every_dtype(device, dtype, semiring, rng):
    """Integer products wrap before they are compared; bool follows GraphBLAS's bool algebra."""
    m, k, n = 4, 5, 3
    ac, ad, av, ap = random_coo(rng, (m, k), dtype, density=0.7)
    bc, bd, bv, bp = random_coo(rng, (k, n), dtype, density=0.7)
    if np.dtype(dtype).kind in "iu":  # values that overflow the dtype in products and sums
        info = np.iinfo(dtype)
        ad = np.where(ad > 0, ad.astype(np.float64) * (info.max // 5), ad).astype(dtype)
        av, ap = _coalesced(ac, ad, (m, k), np.dtype(dtype))
    a = sparse_on(device, ac, ad, (m, k), "csr")
    b = sparse_on(device, bc, bd, (k, n), "coo")
    mask, complement, allowed = _mask_for(rng, device, (m, n), "complement")
    got = gs.mxm(a, b, semiring, mask=mask, complement=complement)
    values, present, fill = oracle(av, ap, bv, bp, semiring, dtype, allowed)
    assert_sparse_result(got, values, present, fill)
    got_d = gs.mxm(a, put(bv, device), semiring, mask=mask, complement=complement)
    values, present, fill = oracle(av, ap, bv, np.ones_like(bp), semiring, dtype, allowed)
    _assert_values(to_host(got_d), np.where(present, values, fill))


@given(m=st.integers(0, 5), k=st.integers(0, 5), n=st.integers(0, 5), seed=st.integers(0, 2**16),
       semiring=st.sampled_from(["min_plus", "max_second", "plus_pair", "min_max"]),
       mask_kind=st.sampled_from(["none", "structure", "complement"]))
@EXAMPLES
def test_mxm_hypothesis_cpu(m, k, n, seed, semiring, mask_kind):
    rng = np.random.default_rng(seed)
    cpu = gs.Device("cpu")
    ac, ad, av, ap = random_coo(rng, (m, k), np.int64)
    bc, bd, bv, bp = random_coo(rng, (k, n), np.int64)
    mask, complement, allowed = _mask_for(rng, cpu, (m, n), mask_kind)
    got = gs.mxm(sparse_on(cpu, ac, ad, (m, k)), sparse_on(cpu, bc, bd, (k, n)), semiring, mask=mask,
                 complement=complement)
    values, present, fill = oracle(av, ap, bv, bp, semiring, np.int64, allowed)
    assert_sparse_result(got, values, present, fill)


def test_fill_value_of_operands_is_ignored(device):
    a = gs.fromdense(put(np.array([[np.inf, 1.0], [2.0, np.inf]]), device), fill_value=np.inf, format="csr")
    got = gs.mxm(a, a, "min_plus")
    assert got.fill_value == np.inf
    np.testing.assert_array_equal(to_host(got.todense()), [[3.0, np.inf], [np.inf, 3.0]])
    got = gs.mxm(a, a, "plus_times")  # a stored-structure product, not the dense one
    np.testing.assert_array_equal(to_host(got.todense()), [[2.0, 0.0], [0.0, 2.0]])


def test_matches_python_graphblas(rng):
    gb = pytest.importorskip("graphblas", reason="python-graphblas is not installed")
    m, k, n = 6, 5, 4
    ac, ad, av, ap = random_coo(rng, (m, k), np.int64, duplicates=False)
    bc, bd, bv, bp = random_coo(rng, (k, n), np.int64, duplicates=False)
    A = gb.Matrix.from_coo(*np.nonzero(ap), av[ap], nrows=m, ncols=k)
    B = gb.Matrix.from_coo(*np.nonzero(bp), bv[bp], nrows=k, ncols=n)
    cpu = gs.Device("cpu")
    a = sparse_on(cpu, np.array(np.nonzero(ap)), av[ap], (m, k))
    b = sparse_on(cpu, np.array(np.nonzero(bp)), bv[bp], (k, n))
    for name in SEMIRINGS:
        if name == "lor_land":
            continue
        C = A.mxm(B, getattr(gb.semiring, name)).new()
        rows, cols, vals = C.to_coo()
        got = gs.mxm(a, b, name)
        present = np.zeros((m, n), bool)
        present[rows, cols] = True
        expected = np.full((m, n), got.fill_value, dtype=got.dtype)
        expected[rows, cols] = vals
        assert_sparse_result(got, expected, present, got.fill_value)


# --------------------------------------------------------------------------
# ewise_add / ewise_mult / select / apply
# --------------------------------------------------------------------------

_BINARY_ORACLE = {
    "plus": np.add, "minus": np.subtract, "times": np.multiply, "min": np.minimum, "max": np.maximum,
    "first": lambda x, y: x, "second": lambda x, y: y, "pair": lambda x, y: np.ones_like(x),
    "land": np.logical_and, "lor": np.logical_or, "gt": np.greater,
}


@pytest.mark.parametrize("op", sorted(_BINARY_ORACLE))
def test_ewise_add_and_mult(device, op, rng):
    for shape in [(4, 5), (0, 3), (6,)]:
        ac, ad, av, ap = random_coo(rng, shape, np.int64)
        bc, bd, bv, bp = random_coo(rng, shape, np.int64)
        a = sparse_on(device, ac, ad, shape, "coo" if len(shape) == 1 else "csr")
        b = sparse_on(device, bc, bd, shape, "coo")
        f = _BINARY_ORACLE[op]
        both = np.asarray(f(av, bv))
        dtype = both.dtype
        fill = np.asarray(f(np.int64(0), np.int64(0))).astype(dtype)[()]
        union = np.where(ap & bp, both, np.where(ap, av.astype(dtype), bv.astype(dtype)))
        got = gs.ewise_add(a, b, op)
        assert_sparse_result(got, union.astype(dtype), ap | bp, fill)
        got = gs.ewise_mult(a, b, op)
        assert_sparse_result(got, both.astype(dtype), ap & bp, fill)


@pytest.mark.parametrize("op,thunk", [("tril", 0), ("tril", -1), ("triu", 1), ("diag", 0), ("offdiag", 0),
                                      ("rowle", 1), ("colgt", 2), ("valuegt", 0), ("valuele", -1),
                                      ("valueeq", 2), ("valuene", 0)])
def test_select(device, op, thunk, rng):
    shape = (5, 4)
    coords, data, values, present = random_coo(rng, shape, np.int32)
    i, j = np.indices(shape)
    keep = {"tril": j <= i + thunk, "triu": j >= i + thunk, "diag": j == i + thunk,
            "offdiag": j != i + thunk, "rowle": i <= thunk, "colgt": j > thunk,
            "valuegt": values > thunk, "valuele": values <= thunk, "valueeq": values == thunk,
            "valuene": values != thunk}[op]
    for fmt in ("coo", "csr", "csc"):
        x = sparse_on(device, coords, data, shape, fmt)
        got = gs.select(x, (op, thunk))
        assert got.format == fmt
        assert_sparse_result(got, values, present & keep, np.int32(0))


def test_apply(device, rng):
    shape = (4, 3)
    coords, data, values, present = random_coo(rng, shape, np.float64)
    x = sparse_on(device, coords, data, shape, "csr")
    assert_sparse_result(gs.apply(x, "ainv"), -values + 0.0, present, np.float64(0))
    assert_sparse_result(gs.apply(x, "abs"), np.abs(values), present, np.float64(0))
    assert_sparse_result(gs.apply(x, ("plus", 2.5)), values + 2.5, present, np.float64(2.5))
    assert_sparse_result(gs.apply(x, "max", thunk=1.0), np.maximum(values, 1.0), present, np.float64(1.0))
    assert_sparse_result(gs.apply(x, "one"), np.ones(shape), present, np.float64(1.0))
    with pytest.raises(ValueError, match="unknown operator"):
        gs.apply(x, "nope")
    with pytest.raises(ValueError, match="unknown operator"):
        gs.select(x, "nope")


# --------------------------------------------------------------------------
# The primitives: conformance and hostile structures
# --------------------------------------------------------------------------

def test_semiring_primitives_conform():
    """Both implementations define them with the Protocol's signature and first docstring line (CUDA: read from
    its source, importable without CuPy)."""
    import ast
    import inspect
    from pathlib import Path

    from gpusparse._kernels import SEMIRING_PRIMITIVES, Primitives, cpu

    def sig(f):
        return [(p.name, p.default) for p in inspect.signature(f).parameters.values()]

    cuda_dir = Path(cpu.__file__).parent.parent / "cuda"
    cuda_defs = {node.name: node for path in cuda_dir.glob("*.py")
                 for node in ast.parse(path.read_text()).body if isinstance(node, ast.FunctionDef)}
    cuda_all = (cuda_dir / "__init__.py").read_text()
    for name in SEMIRING_PRIMITIVES:
        spec = getattr(Primitives, name)
        expected = sig(spec)[1:]  # without self
        first = spec.__doc__.strip().splitlines()[0]
        func = getattr(cpu, name)
        assert name in cpu.__all__
        assert sig(func) == expected
        assert func.__doc__.strip().splitlines()[0] == first
        node = cuda_defs[name]
        assert f'"{name}"' in cuda_all
        args = node.args.args
        defaults = [inspect.Parameter.empty] * (len(args) - len(node.args.defaults)) + [
            ast.literal_eval(d) for d in node.args.defaults]
        assert [(a.arg, d) for a, d in zip(args, defaults)] == expected
        assert ast.get_docstring(node).splitlines()[0] == first


def test_semiring_primitives_stay_inside_their_buffers(device):
    """Garbage pointers and indices give some result, never an access outside the buffers."""
    from gpusparse._device import kernels_for
    k = kernels_for(device)
    indptr = put(np.array([0, 5, -3, 2**40, 1]), device)
    indices = put(np.array([7, -1, 3, 2**40, 0]), device)
    data = put(np.arange(5, dtype=np.float64), device)
    b = put(np.ones((3, 2)), device)
    out = k.spmm_semiring(indptr, indices, data, (4, 3), b, "min", "plus")
    assert to_host(out).shape == (4, 2)
    for mask in (None, (indptr, indices)):
        ip, ix, dd = k.spgemm_semiring(indptr, indices, data, put(np.array([0, 2, 9, 1]), device),
                                       put(np.array([5, -2, 1, 0, 0]), device), data, (4, 3, 2), "max", "times",
                                       *(mask or (None, None)), complement=False)
        ip, ix = to_host(ip), to_host(ix)
        assert ip.shape == (5,) and ix.size == ip[-1] and ((ix >= 0) & (ix < 2)).all()
