"""Einstein summation (NumPy's ``einsum``) as transposes, products and sums of existing operations.

The subscripts are parsed as NumPy parses them (explicit ``->`` output or the
implicit one, ``...`` for broadcast dimensions, the interleaved
``einsum(op, [0, 1], op, [1, 2])`` form). Then:

1. a label found in one operand only and not in the output is summed out
   of that operand (:func:`gpusparse.sum`);
2. two operands at a time -- the pair sharing the most labels first -- are
   combined: labels both have and that are needed later are *batch* labels,
   those both have and nobody needs any more are *contracted*:

   * nothing contracted: an elementwise product, broadcast over the labels
     only one operand has (:func:`gpusparse.elemwise` of ``multiply``);
   * no batch labels: :func:`gpusparse.tensordot`;
   * both: a batched :func:`gpusparse.matmul` of the operands transposed
     and reshaped to ``(batch, rows, contracted)`` and
     ``(batch, contracted, columns)``;

3. the labels left that are not in the output are summed out, and the rest
   is transposed to the output's order.

An index repeated within one operand (``"ii->i"``, a diagonal or trace) has
no such reduction and raises ``ValueError``; take the diagonal first with
:func:`gpusparse.diagonal`. Boolean operands follow NumPy (sums of products
become ``any`` of ``all``); the result has NumPy's dtype.
"""

from __future__ import annotations

import itertools
import math
import string

import numpy as np

__all__ = ["einsum"]

_LETTERS = string.ascii_letters


def _is_sparse(x) -> bool:
    from gpusparse.containers import SparseArray
    return isinstance(x, SparseArray)


# --------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------

def _sublist_term(sublist, what) -> str:
    term = []
    for item in sublist:
        if item is Ellipsis:
            term.append("...")
        elif isinstance(item, (int, np.integer)) and 0 <= int(item) < len(_LETTERS):
            term.append(_LETTERS[int(item)])
        else:
            raise ValueError(f"einsum: {what} must hold integers in [0, {len(_LETTERS)}) or Ellipsis, "
                             f"got {item!r}")
    return "".join(term)


def _split_arguments(args):
    """``(subscripts, operands)`` from either calling convention."""
    if not args:
        raise TypeError("einsum: no subscripts and no operands given")
    if isinstance(args[0], str):
        return args[0], list(args[1:])
    pairs, output = (args[:-1], args[-1]) if len(args) % 2 else (args, None)
    subscripts = ",".join(_sublist_term(s, "a sublist") for s in pairs[1::2])
    if output is not None:
        subscripts += "->" + _sublist_term(output, "the output sublist")
    return subscripts, list(pairs[0::2])


def _expand_ellipsis(term, ndim, ell, position):
    """``term`` with ``...`` replaced by the last ``ndim - letters`` labels of ``ell``."""
    if term.count("...") > 1 or "." in term.replace("...", ""):
        raise ValueError(f"einsum: invalid subscript {term!r} of operand {position}")
    if "..." not in term:
        return term
    n = ndim - (len(term) - 3)
    if n < 0:
        raise ValueError(f"einsum: operand {position} has {ndim} dimensions, fewer than "
                         f"subscript {term!r} names")
    return term.replace("...", ell[len(ell) - n:] if n else "")


def _parse(subscripts, operands):
    """``(input label strings, output label string)`` with ellipses expanded."""
    subscripts = subscripts.replace(" ", "")
    lhs, arrow, rhs = subscripts.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum: subscripts {subscripts!r} name {len(terms)} operands, "
                         f"got {len(operands)}")
    letters = set(subscripts.replace(".", "").replace(",", "").replace("-", "").replace(">", ""))
    bad = sorted(c for c in letters if c not in _LETTERS)
    if bad:
        raise ValueError(f"einsum: invalid subscript character {bad[0]!r} in {subscripts!r}")
    if any(c in lhs + rhs for c in "->"):
        raise ValueError(f"einsum: subscripts {subscripts!r} hold a '-' or '>' outside one '->'")
    n_ell = max((op.ndim - (len(t) - 3) for t, op in zip(terms, operands) if "..." in t), default=0)
    ell = "".join(c for c in _LETTERS if c not in letters)[:max(n_ell, 0)]
    labels = [_expand_ellipsis(t, op.ndim, ell, i) for i, (t, op) in enumerate(zip(terms, operands))]
    for i, (term, op) in enumerate(zip(labels, operands)):
        if len(term) != op.ndim:
            raise ValueError(f"einsum: subscript {terms[i]!r} has {len(term)} labels but operand {i} "
                             f"has {op.ndim} dimensions")
        repeated = [c for c in dict.fromkeys(term) if term.count(c) > 1]
        if repeated:
            raise ValueError(
                f"einsum: index {repeated[0]!r} repeated within operand {i} ({terms[i]!r}) takes a "
                "diagonal, which sparse einsum does not do; take it first with "
                "gpusparse.diagonal(x, axis1=..., axis2=...) and name it once"
            )
    if arrow:
        out = _expand_ellipsis(rhs, len(rhs) - 3 + len(ell) if "..." in rhs else len(rhs), ell, "out")
        for c in out:
            if out.count(c) > 1:
                raise ValueError(f"einsum: output subscript {c!r} appears more than once")
            if not any(c in t for t in labels):
                raise ValueError(f"einsum: output subscript {c!r} does not appear in the inputs")
    else:
        joined = "".join(labels)
        out = ell + "".join(sorted((c for c in set(joined) if joined.count(c) == 1 and c not in ell),
                                   key=_LETTERS.index))
    return labels, out


# --------------------------------------------------------------------------
# Building blocks on sparse and dense operands alike
# --------------------------------------------------------------------------

def _sum(x, labels, drop, be):
    """``x`` summed over the labels in ``drop`` on backend ``be``; the labels left."""
    axes = tuple(i for i, c in enumerate(labels) if c in drop)
    if not axes:
        return x, labels
    left = "".join(c for c in labels if c not in drop)
    if _is_sparse(x):
        from gpusparse.ops.reductions.engine import reduce_with
        from gpusparse.ops.reductions.monoid import Monoid
        return reduce_with(x, Monoid(np.add), axes, False, None, "sum", be=be), left
    return x.sum(axis=axes), left


def _permute(x, labels, order, be):
    if labels == order:
        return x
    perm = tuple(labels.index(c) for c in order)
    if _is_sparse(x):
        from gpusparse.ops.shape.permutation import permute_dims_on
        return permute_dims_on(x, perm, be)
    return x.transpose(perm)


def _reshape(x, shape, be):
    if tuple(x.shape) == tuple(shape):
        return x
    if _is_sparse(x):
        from gpusparse.ops.shape.reshaping import reshape_on
        return reshape_on(x, shape, be)
    return x.reshape(shape)


def _combine(a, la, b, lb, keep, sizes, be):
    """The product of two labelled operands on backend ``be``, summed over the labels nobody needs any more."""
    from gpusparse.ops.elementwise.dispatch import apply, classify
    from gpusparse.ops.linalg.products import matmul_on, tensordot_on
    shared = [c for c in la if c in lb]
    batch = "".join(c for c in shared if c in keep)
    contract = "".join(c for c in shared if c not in keep)
    a_only = "".join(c for c in la if c not in lb)
    b_only = "".join(c for c in lb if c not in la)
    if not (_is_sparse(a) or _is_sparse(b)):
        out = batch + a_only + b_only
        with be.scope():
            return be.xp.einsum(f"{la},{lb}->{out}", a, b), out
    if not contract:  # an elementwise product, broadcast over the labels of one operand
        a = _reshape(_permute(a, la, batch + a_only, be),
                     [sizes[c] for c in batch + a_only] + [1] * len(b_only), be)
        b = _permute(b, lb, batch + b_only, be)
        b = _reshape(b, [sizes[c] for c in batch] + [1] * len(a_only) + [sizes[c] for c in b_only], be)
        return apply(np.multiply, classify((a, b)), {}, be=be), batch + a_only + b_only
    if not batch:
        axes = ([la.index(c) for c in contract], [lb.index(c) for c in contract])
        return tensordot_on(a, b, axes, be), a_only + b_only
    nb, m, n, k = (math.prod(sizes[c] for c in part) for part in (batch, a_only, b_only, contract))
    a = _reshape(_permute(a, la, batch + a_only + contract, be), (nb, m, k), be)
    b = _reshape(_permute(b, lb, batch + contract + b_only, be), (nb, k, n), be)
    out = batch + a_only + b_only
    return _reshape(matmul_on(a, b, be), [sizes[c] for c in out], be), out


def _next_pair(labels):
    """The two operands sharing the most labels (the first two when none share any)."""
    best, pair = -1, (0, 1)
    for i, j in itertools.combinations(range(len(labels)), 2):
        shared = len(set(labels[i]) & set(labels[j]))
        if shared > best:
            best, pair = shared, (i, j)
    return pair


def _cast(x, dtype, be):
    if x.dtype == dtype:
        return x
    if _is_sparse(x):
        from gpusparse.ops.convert import astype
        return astype(x, dtype, be=be)  # the caller checked the casting rule
    return x.astype(dtype)


def _prepare(operands, dtype, casting):
    """The operands as arrays of the dtype the computation runs in, NumPy's result dtype, and their backend."""
    from gpusparse._backend import backend
    from gpusparse._device import device_of
    from gpusparse.ops.elementwise import classify
    classified = classify(operands, [f"operand {i}" for i in range(len(operands))])
    if classified is None:
        bad = next(type(o).__name__ for o in operands if classify([o]) is None)
        raise TypeError(f"einsum: unsupported operand type {bad}")
    if not any(op.kind == "sparse" for op in classified):
        raise TypeError("einsum: no sparse operand; use numpy.einsum on dense arrays")
    arrays = [op.value for op in classified]
    dev = device_of(*(op.value for op in classified if op.kind != "scalar"),
                    what=tuple(op.name for op in classified if op.kind != "scalar"))
    be = backend(dev)
    with be.scope():
        arrays = [be.xp.asarray(a) if op.kind == "scalar" else a for a, op in zip(arrays, classified)]
    result = np.result_type(*(a.dtype for a in arrays)) if dtype is None else np.dtype(dtype)
    for i, a in enumerate(arrays):
        if not np.can_cast(a.dtype, result, casting=casting):
            raise TypeError(f"einsum: cannot cast operand {i} from {a.dtype} to {result} "
                            f"with casting={casting!r}")
    compute = np.dtype(np.int64) if result == np.bool_ else result
    return [_cast(a, compute, be) for a in arrays], result, be


def einsum(*operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    """Einstein summation over sparse (and dense) operands, NumPy's ``einsum``.

    Parameters
    ----------
    *operands
        ``subscripts, op0, op1, ...`` or the interleaved form
        ``op0, sublist0, op1, sublist1, ..., [sublist_out]``. At least one
        operand is a gpusparse array; the others are dense arrays on its
        device or scalars.
    out : None
        Not supported (``TypeError`` otherwise).
    dtype, casting
        The result dtype and the casting rule the operands must satisfy, as
        in NumPy.
    order, optimize
        Accepted for NumPy's signature; the operands are paired greedily by
        the labels they share whatever ``optimize`` says.

    Returns
    -------
    SparseArray or dense array
        What the products give: sparse where every operand taking part is
        sparse, dense for a full contraction (a 0-d array) and where dense
        operands make it so.

    Raises
    ------
    ValueError
        Malformed subscripts, sizes that disagree, or an index repeated within
        one operand (a diagonal or trace: use :func:`gpusparse.diagonal`).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> a = gs.fromdense(np.array([[1.0, 0.0], [0.0, 2.0]]), device="cpu")
    >>> gs.einsum("ij,jk->ik", a, a).todense()
    array([[1., 0.],
           [0., 4.]])
    >>> gs.einsum("ij->j", a).todense(), gs.einsum("ij,ij->", a, a)
    (array([1., 2.]), array(5.))
    """
    if out is not None:
        raise TypeError("einsum: out= is not supported for sparse operands")
    if order not in ("K", "A", "C", "F"):
        raise ValueError(f"einsum: order must be one of 'K', 'A', 'C', 'F', got {order!r}")
    subscripts, arrays = _split_arguments(operands)
    arrays, result_dtype, be = _prepare(arrays, dtype, casting)
    labels, output = _parse(subscripts, arrays)
    sizes = {}
    for i, (term, a) in enumerate(zip(labels, arrays)):
        for c, n in zip(term, a.shape):
            if sizes.get(c, 1) == 1:
                sizes[c] = n
            elif n not in (1, sizes[c]):
                raise ValueError(f"einsum: dimension {c!r} of operand {i} has size {n}, "
                                 f"elsewhere {sizes[c]}")
    # Dimensions of size 1 broadcast: drop them where the label is longer elsewhere.
    for i, (term, a) in enumerate(zip(labels, arrays)):
        ones = "".join(c for c, n in zip(term, a.shape) if n == 1 and sizes[c] != 1)
        if ones:
            arrays[i] = _reshape(a, [n for c, n in zip(term, a.shape) if c not in ones], be)
            labels[i] = "".join(c for c in term if c not in ones)
    while True:
        for i in range(len(arrays)):
            others = set(output).union(*(labels[j] for j in range(len(arrays)) if j != i))
            arrays[i], labels[i] = _sum(arrays[i], labels[i], set(labels[i]) - others, be)
        if len(arrays) == 1:
            break
        i, j = _next_pair(labels)
        keep = set(output).union(*(labels[t] for t in range(len(arrays)) if t not in (i, j)))
        combined = _combine(arrays[i], labels[i], arrays[j], labels[j], keep, sizes, be)
        arrays = [a for t, a in enumerate(arrays) if t not in (i, j)] + [combined[0]]
        labels = [t for s, t in enumerate(labels) if s not in (i, j)] + [combined[1]]
    x, term = arrays[0], labels[0]
    missing = "".join(c for c in output if c not in term)
    if missing:  # a label every operand had with size 1
        x, term = _reshape(x, tuple(x.shape) + (1,) * len(missing), be), term + missing
    x = _permute(x, term, output, be)
    if result_dtype == np.bool_:
        if _is_sparse(x):
            from gpusparse.ops.elementwise.dispatch import apply, classify
            return apply(np.not_equal, classify((x, 0)), {}, be=be)
        return x != 0
    return _cast(x, result_dtype, be)
