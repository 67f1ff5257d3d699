"""einsum against ``np.einsum`` on the dense oracles, as ``gs.einsum`` and through ``np.einsum``.

Matrix products, batched products, outer and inner products, contractions
over several indices, transpositions, sums over axes, elementwise and
broadcast products, ellipses, implicit outputs, three operands and the
interleaved form -- on sparse operands of every format (COO with duplicates,
CSR, CSC), mixed with dense ones, over the dtypes the products support. What
the reduction to products cannot express (an index repeated within one
operand) raises ``ValueError`` saying so.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gpusparse as gs
from _helpers import assert_dense_equal, assert_sparse_equal, put
from gpusparse.containers import SparseArray

EXAMPLES = settings(deadline=None) if os.environ.get("GPUSPARSE_HYPOTHESIS_PROFILE") else \
    settings(max_examples=25, deadline=None)

DTYPES = [np.float64, np.float32, np.complex128, np.int64, np.int32, np.bool_]

#: (subscripts, whether the operands may have a non-zero fill value)
CASES = [
    ("ij,jk->ik", False),        # matmul
    ("ij,jk", False),            # implicit output
    ("bij,bjk->bik", False),     # batched matmul
    ("bij,bjk->bki", False),     # batched, transposed output
    ("i,j->ij", True),           # outer
    ("i,i->", False),            # inner
    ("i,i", False),
    ("ijk,jkl->il", False),      # contraction over two indices (tensordot)
    ("ijk,kj->i", False),
    ("ij->ji", True),            # transposition
    ("ijk->kij", True),
    ("ij->i", True),             # sums over axes
    ("ijk->j", True),
    ("ij->", True),
    ("ij,ij->ij", True),         # elementwise products
    ("ij,ij->i", False),
    ("ij,j->ij", True),          # broadcast elementwise product
    ("ij,ik->ijk", True),        # batched outer
    ("...ij,...jk->...ik", False),
    ("...i->...", True),
    ("ij,jk,kl->il", False),     # three operands
    ("ij,kl,jk->li", False),     # three operands, none sharing with its neighbour
]


def quiet(func, *args, **kwargs):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(*args, **kwargs)


def _sizes(draw, subscripts):
    letters = sorted(set(subscripts) - set(",->."))
    return {c: draw(st.integers(0 if draw(st.integers(0, 5)) == 0 else 1, 3)) for c in letters}


@st.composite
def operands(draw, device, subscripts, nonzero_fill, dense_ok=True):
    """Sparse (sometimes dense) operands of the shapes ``subscripts`` asks for, and their oracles."""
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    sizes = _sizes(draw, subscripts)
    ell = tuple(draw(st.lists(st.integers(1, 2), max_size=2)))
    terms = subscripts.split("->")[0].split(",")
    values = st.sampled_from([0, 0, 0, 1, 2, -3]) if dtype.kind != "b" else st.booleans()
    if dtype.kind == "c":
        values = st.sampled_from([0, 0, 1 + 2j, -3j])
    fill = draw(st.sampled_from([0, 0, 2])) if nonzero_fill and dtype.kind != "b" else 0
    dense_ok = dense_ok and fill == 0  # a dense operand and a non-zero fill give a dense result
    result, dense = [], []
    for i, term in enumerate(terms):
        shape = (ell if "..." in term else ()) + tuple(sizes[c] for c in term.replace("...", ""))
        arr = draw(hnp.arrays(dtype, shape, elements=values))
        if dense_ok and i and draw(st.integers(0, 3)) == 0:
            result.append(put(arr, device))
        else:
            x = gs.fromdense(put(arr, device), fill_value=fill)
            if x.ndim == 2 and draw(st.booleans()):
                x = x.asformat(draw(st.sampled_from(["csr", "csc"])))
            result.append(x)
        dense.append(arr)
    return result, dense


def check(result, expected, sparse_expected):
    expected = np.asarray(expected)
    if isinstance(result, SparseArray):
        assert_sparse_equal(result, expected, rtol=1e-4)
    else:
        assert not sparse_expected, "a product of sparse operands came back dense"
        assert_dense_equal(result, expected, rtol=1e-4)


@pytest.mark.parametrize("subscripts, nonzero_fill", CASES, ids=[c[0] for c in CASES])
@EXAMPLES
@given(data=st.data())
def test_einsum(device, subscripts, nonzero_fill, data):
    ops, dense = data.draw(operands(device, subscripts, nonzero_fill))
    expected = quiet(np.einsum, subscripts, *dense)
    all_sparse = all(isinstance(o, SparseArray) for o in ops)
    output = subscripts.partition("->")[2] if "->" in subscripts else "x"
    sparse_expected = all_sparse and output.replace("...", "") != "" and np.ndim(expected) > 0
    check(quiet(gs.einsum, subscripts, *ops), expected, sparse_expected)
    check(quiet(np.einsum, subscripts, *ops), expected, sparse_expected)


@EXAMPLES
@given(data=st.data())
def test_interleaved_form(device, data):
    ops, dense = data.draw(operands(device, "ij,jk", False))
    a, b = ops
    da, db = dense
    check(quiet(np.einsum, a, [0, 1], b, [1, 2], [0, 2]), quiet(np.einsum, da, [0, 1], db, [1, 2], [0, 2]),
          False)
    check(quiet(gs.einsum, a, [0, 1], b, [1, 2]), quiet(np.einsum, da, [0, 1], db, [1, 2]), False)
    check(quiet(gs.einsum, a, [Ellipsis, 1], [1, Ellipsis]), quiet(np.einsum, da, [Ellipsis, 1], [1, Ellipsis]),
          False)


@pytest.mark.filterwarnings("ignore::gpusparse.GpuSparseEfficiencyWarning")  # integer SpGEMM on a GPU
def test_dtype_and_casting(device):
    a = gs.fromdense(put(np.array([[1, 0], [0, 2]], np.int32), device))
    result = gs.einsum("ij,jk->ik", a, a, dtype=np.float64)
    assert result.dtype == np.float64
    assert_sparse_equal(result, np.array([[1.0, 0.0], [0.0, 4.0]]))
    with pytest.raises(TypeError, match="cast"):
        gs.einsum("ij->ji", a, dtype=np.int8)  # int32 -> int8 is not a safe cast
    assert gs.einsum("ij->ji", a, dtype=np.int8, casting="unsafe").dtype == np.int8
    b = gs.fromdense(put(np.array([[True, False], [True, True]]), device))
    assert_sparse_equal(gs.einsum("ij,jk->ik", b, b), [[True, False], [True, True]])


def test_what_einsum_cannot_express(device):
    a = gs.fromdense(put(np.eye(3), device))
    with pytest.raises(ValueError, match="repeated within operand 0.*diagonal"):
        gs.einsum("ii->i", a)
    with pytest.raises(ValueError, match="repeated"):
        np.einsum("ii", a)
    with pytest.raises(ValueError, match="repeated within operand 1"):
        gs.einsum("ij,kk->ij", a, a)


def test_errors(device):
    a = gs.fromdense(put(np.eye(3), device))
    b = gs.fromdense(put(np.ones((2, 2)), device))
    with pytest.raises(ValueError, match="size"):
        gs.einsum("ij,jk->ik", a, b)
    with pytest.raises(ValueError, match="operands"):
        gs.einsum("ij,jk->ik", a)
    with pytest.raises(ValueError, match="output subscript 'z'"):
        gs.einsum("ij->z", a)
    with pytest.raises(ValueError, match="more than once"):
        gs.einsum("ij->ii", a)
    with pytest.raises(ValueError, match="invalid subscript"):
        gs.einsum("i1->i", a)
    with pytest.raises(ValueError, match="labels"):
        gs.einsum("ijk->i", a)
    with pytest.raises(ValueError, match="'-' or '>'"):
        gs.einsum("ij->i->j", a)
    with pytest.raises(TypeError, match="out="):
        gs.einsum("ij->ji", a, out=put(np.empty((3, 3)), device))
    with pytest.raises(TypeError, match="out="):
        np.einsum("ij->ji", a, out=put(np.empty((3, 3)), device))
    with pytest.raises(TypeError, match="no sparse operand"):
        gs.einsum("ij->ji", np.eye(2))
    with pytest.raises(TypeError, match="unsupported operand"):
        gs.einsum("i,i->", a[0], object())
