"""Coalesce (sort and sum duplicates) of N-d COO input, against peers.

Cases: a 2-D shape (2**20, 2**20) and a 4-D shape (14371, 91, 109, 91)
(the shape of pydata/sparse#557), ``k`` entries (2**22 on the CPU, 2**26 on
the GPU, 2**14 and 2**16 with ``--quick``), float32 and float64 values, in
three input orders:

``shuffled``
    Half the entries are random coordinates, the other half copies of
    randomly chosen ones (50 % duplicates), in random order.
``sorted``
    The same entries in row-major order: the already-sorted fast path, which
    only has to sum runs of duplicates.
``coalesced``
    ``k`` distinct coordinates in row-major order, no duplicates (the input
    is not flagged as coalesced, so it is still checked).

Implementations (each times the user-level call from the same int64 inputs,
including its constructor):

* ``gpusparse``: ``gs.COO(coords, data, shape, check=False).coalesce()``.
* CPU peers: ``scipy`` (``coo_array((data, (r, c)), shape).tocsr()``, which
  sums duplicates; the 4-D shape is linearised to the 2-D matrix
  ``(s0*s1, s2*s3)`` inside the timed call), ``pydata``
  (``sparse.COO(coords, data, shape, has_duplicates=True, sorted=False)``:
  construction is what sorts and sums there) and ``torch``
  (``torch.sparse_coo_tensor(coords, data, shape).coalesce()``, invariant
  checks off, as by default) and ``graphblas`` (SuiteSparse:GraphBLAS,
  ``Matrix.from_coo(rows, cols, data, dup_op=plus)`` on the same 2-D
  linearisation, :mod:`benchmarks._graphblas`).
* GPU peers: ``torch`` on CUDA, ``cupyx`` (``coo_matrix(...).sum_duplicates()``,
  linearised to 2-D like scipy; it casts indices to int32 inside the call).
* Sort-only references, not coalesces: ``numpy.argsort`` / ``cupy.argsort``
  of the precomputed linear keys, the cost of the sort alone.

Every result is checked before it is timed: the number of unique entries
and the coordinates must equal a NumPy/CuPy oracle (``unique`` +
``bincount``) and the values must be allclose to it (after sorting, for a
peer whose output is not sorted). A mismatching implementation is reported,
not timed. The implementations of one case are then timed in alternating
rounds (:func:`benchmarks._timing.time_interleaved`), so that a change in
machine load affects all of them alike.

Rows carry entries/s, the median time, the first-call time (compilation),
the 1-minute load average when measured (a busy machine inflates medians),
``speedup`` (peer time / gpusparse time: above 1 means gpusparse is faster),
and bandwidth against the models of :mod:`benchmarks._models`: the floor
``k(dI+V) + u(dI+V)`` and, for shuffled input, the radix-sort model, each
also as a fraction of the copy bandwidth measured in the same run.

Examples
--------
>>> from benchmarks._report import smoke
>>> smoke(run, size=256)
'gpusparse ok in 12 of 12 cases'
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from benchmarks import _models, _report
from benchmarks._report import (
    Skip,
    as_2d,
    delinearize,
    host,
    linearize,
    ms,
    need,
    opt,
    when_ok,
)

__all__ = ["details", "run", "summarize"]

NAME = "coalesce"
SHAPES = {"2d": (2**20, 2**20), "4d": (14371, 91, 109, 91)}
ORDERS = ("shuffled", "sorted", "coalesced")
DTYPES = ("float32", "float64")
SIZES = {(False, False): 2**22, (False, True): 2**14, (True, False): 2**26, (True, True): 2**16}
INDEX_BYTES = 8
SEED = 20240601


# --------------------------------------------------------------------------
# inputs and the oracle
# --------------------------------------------------------------------------

def _argsort(keys, xp):
    if xp.__name__ == "numpy":
        return np.argsort(keys, kind="stable")
    return xp.argsort(keys)  # CuPy's sort is stable


def _random_coords(rng, shape, n):
    return np.stack([rng.integers(0, s, n, dtype=np.int64) for s in shape])


def _make_coords(shape, k, order, xp):
    """``(d, k')`` int64 coordinates on the device of ``xp`` for one order."""
    rng = np.random.default_rng([SEED, len(shape), k, ORDERS.index(order)])
    if order == "coalesced":
        keys = xp.unique(linearize(xp.asarray(_random_coords(rng, shape, k)), shape, xp))
        return delinearize(keys, shape, xp)
    base = _random_coords(rng, shape, k - k // 2)
    copies = base[:, rng.integers(0, base.shape[1], k // 2)]
    coords = np.concatenate([base, copies], axis=1)
    del base, copies
    coords = xp.asarray(np.ascontiguousarray(coords[:, rng.permutation(k)]))
    if order == "sorted":
        coords = xp.ascontiguousarray(coords[:, _argsort(linearize(coords, shape, xp), xp)])
    return coords


@dataclasses.dataclass
class _Case:
    shape_label: str
    shape: tuple
    order: str
    dtype: str
    coords: object          # (d, k) int64, xp
    data: object            # (k,) dtype, xp
    keys: object            # (k,) int64 linear keys, xp (for the sort references)
    ref_keys: np.ndarray    # (u,) sorted unique keys, host
    ref_sums: np.ndarray    # (u,) float64 sums, host

    @property
    def name(self) -> str:
        return f"{self.shape_label}-{self.order}-{self.dtype}"

    @property
    def k(self) -> int:
        return int(self.coords.shape[1])

    @property
    def u(self) -> int:
        return int(self.ref_keys.size)


def _cases(ctx, k):
    """Yield every case; inputs are built once per shape and order."""
    xp = ctx.xp
    for label, shape in SHAPES.items():
        for order in ORDERS:
            coords = _make_coords(shape, k, order, xp)
            keys = linearize(coords, shape, xp)
            unique, inverse = xp.unique(keys, return_inverse=True)
            ref_keys = host(unique)
            n = coords.shape[1]
            base = np.random.default_rng([SEED, n]).random(n) + 0.5
            for dtype in DTYPES:
                data = xp.asarray(base.astype(dtype))
                sums = xp.bincount(inverse.ravel(), weights=data.astype(xp.float64), minlength=unique.size)
                yield _Case(label, shape, order, dtype, coords, data, keys, ref_keys, host(sums))
            del coords, keys, unique, inverse


def _check(case, got, row):
    """None if ``got``, a result's ``(keys, values)``, is the coalesced input, else what differs.

    gpusparse's result must be sorted, a peer's may come in any order; the
    sort references compute something else and are not checked.
    """
    if row["kind"] == "reference":
        return None
    keys, values = host(got[0]).astype(np.int64, copy=False), host(got[1])
    if keys.size != case.u:
        return f"{keys.size} unique entries, expected {case.u}"
    if keys.size > 1 and not bool((keys[1:] > keys[:-1]).all()):
        if row["kind"] == "ours":
            return "output not sorted and unique"
        order = np.argsort(keys, kind="stable")
        keys, values = keys[order], values[order]
    if not np.array_equal(keys, case.ref_keys):
        return "coordinates differ from the oracle"
    rtol = 1e-5 if values.dtype == np.float32 else 1e-12
    got = values.astype(np.float64)
    if not np.allclose(got, case.ref_sums, rtol=rtol, atol=0):
        err = np.max(np.abs(got - case.ref_sums) / np.abs(case.ref_sums))
        return f"values differ from the oracle (max relative error {err:.3g})"
    return None


# --------------------------------------------------------------------------
# implementations: each returns (fn, result) or raises Skip
# --------------------------------------------------------------------------

def _impl_gpusparse(case, ctx):
    import gpusparse as gs

    def fn():
        return gs.COO(case.coords, case.data, case.shape, check=False).coalesce()

    def result(y):
        return linearize(host(y.coords), case.shape, np), y.data

    return fn, result


def _impl_scipy(case, ctx):
    sp = need("scipy.sparse", "scipy")

    def fn():
        rows, cols, shape2 = as_2d(case.coords, case.shape)
        return sp.coo_array((case.data, (rows, cols)), shape=shape2).tocsr()

    def result(m):
        rows = np.repeat(np.arange(m.shape[0], dtype=np.int64), np.diff(m.indptr))
        return rows * m.shape[1] + m.indices, m.data

    return fn, result


def _impl_pydata(case, ctx):
    sparse = need("sparse", "pydata sparse")

    def fn():
        return sparse.COO(case.coords, case.data, shape=case.shape, has_duplicates=True, sorted=False)

    def result(s):
        return linearize(s.coords.astype(np.int64), case.shape, np), s.data

    return fn, result


def _impl_torch(case, ctx):
    torch = need("torch")
    if not ctx.is_cuda:
        from benchmarks._graphblas import hold_torch
        hold_torch(torch)
    if ctx.is_cuda:
        if not torch.cuda.is_available():
            raise Skip("torch has no CUDA")
        indices, values = torch.from_dlpack(case.coords), torch.from_dlpack(case.data)
    else:
        indices, values = torch.from_numpy(case.coords), torch.from_numpy(case.data)

    def fn():
        return torch.sparse_coo_tensor(indices, values, case.shape, check_invariants=False).coalesce()

    def result(t):
        coords = t.indices().cpu().numpy()
        return linearize(coords, case.shape, np), t.values().cpu().numpy()

    return fn, result


def _impl_graphblas(case, ctx):
    from benchmarks import _graphblas
    gb = _graphblas.module()

    def fn():
        rows, cols, shape2 = as_2d(case.coords, case.shape)
        return _graphblas.wait(gb.Matrix.from_coo(rows, cols, case.data, nrows=shape2[0], ncols=shape2[1],
                                                  dup_op=gb.binary.plus))

    def result(m):
        rows, cols, values = m.to_coo()
        return rows.astype(np.int64) * m.shape[1] + cols.astype(np.int64), values

    return fn, result


def _impl_cupyx(case, ctx):
    csp = need("cupyx.scipy.sparse", "cupyx")

    def fn():
        rows, cols, shape2 = as_2d(case.coords, case.shape, ctx.xp)
        m = csp.coo_matrix((case.data, (rows, cols)), shape=shape2)
        m.sum_duplicates()
        return m

    def result(m):
        rows, cols = host(m.row).astype(np.int64), host(m.col).astype(np.int64)
        return rows * m.shape[1] + cols, host(m.data)

    return fn, result


def _impl_argsort(case, ctx):
    xp = ctx.xp
    return (lambda: xp.argsort(case.keys)), None


def _implementations(ctx):
    """``(name, factory, kind)`` in running order; kind is "ours", "peer" or "reference"."""
    if ctx.is_cuda:
        return [("gpusparse", _impl_gpusparse, "ours"), ("torch", _impl_torch, "peer"),
                ("cupyx", _impl_cupyx, "peer"), ("cupy.argsort", _impl_argsort, "reference")]
    return [("gpusparse", _impl_gpusparse, "ours"), ("scipy", _impl_scipy, "peer"),
            ("pydata", _impl_pydata, "peer"), ("torch", _impl_torch, "peer"),
            ("graphblas", _impl_graphblas, "peer"), ("numpy.argsort", _impl_argsort, "reference")]


# --------------------------------------------------------------------------
# running
# --------------------------------------------------------------------------

def _add_rates(case, row, t):
    row["entries_per_s"] = case.k / t
    if row["kind"] == "reference":
        return
    d, v = len(case.shape), np.dtype(case.dtype).itemsize
    floor = _models.coalesce_floor_bytes(case.k, case.u, d, INDEX_BYTES, v)
    row["floor_bytes"] = floor
    _report.add_bandwidth(row, floor, t)
    if case.order == "shuffled":
        model = _models.coalesce_sort_bytes(case.k, case.u, d, INDEX_BYTES, v,
                                            _models.key_bits(case.shape))
        row["sort_model_bytes"] = model
        _report.add_bandwidth(row, model, t, suffix="_sort_model")


def run(ctx):
    """Yield one row per (case, implementation); see the module docstring.

    ``ctx.size`` (when set) overrides the number of entries.
    """
    k = getattr(ctx, "size", None) or SIZES[(ctx.is_cuda, ctx.quick)]
    copies = {}
    describe = functools.partial(_report.progress, case_width=22, impl_width=14, entries=True)
    for case in _cases(ctx, k):
        d, v = len(case.shape), np.dtype(case.dtype).itemsize
        base = {"bench": NAME, "case": case.name, "shape": list(case.shape),
                "shape_label": case.shape_label, "order": case.order, "dtype": case.dtype,
                "entries": case.k, "unique": case.u,
                "copy_gb_s": _report.copy_gb_s(ctx, case.k * (d * INDEX_BYTES + v), copies)}
        yield from _report.run_case(ctx, case, base, _implementations(ctx), _check, describe, _add_rates)


# --------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------

def summarize(rows) -> str:
    """A Markdown table with one line per case and one column per peer."""
    return _report.summary_table(
        rows, [("entries", lambda r: f"{r['entries']:,}"), ("unique", lambda r: f"{r['unique']:,}")],
        [("M entries/s", lambda r: f"{r['entries_per_s'] / 1e6:.1f}"),
         ("GB/s floor", lambda r: f"{r['gb_s_floor']:.2f}"), ("% copy", lambda r: f"{r['pct_copy_floor']:.0f}")],
        "Peer columns: peer time / gpusparse time (above 1: gpusparse is faster), "
        "the peer's median in parentheses. `*.argsort` sorts the precomputed linear "
        "keys only (a sort floor, not a coalesce). GB/s floor counts "
        "`k(dI+V) + u(dI+V)` bytes; % copy relates it to `dst[...] = src` of the input "
        "bytes measured in the same run.")


def details(rows) -> str:
    """A Markdown table with every row."""
    return _report.details_table(rows, [
        *_report.LEAD_COLUMNS, ("first call", opt("first_call_s", ms)), ("repeats", opt("repeats")),
        ("M entries/s", when_ok(lambda r: f"{r['entries_per_s'] / 1e6:.1f}")),
        ("GB/s floor", opt("gb_s_floor", "{:.2f}".format)), ("% copy", opt("pct_copy_floor", "{:.0f}".format)),
        ("GB/s sort model", opt("gb_s_sort_model", "{:.2f}".format)),
        ("% copy (sort)", opt("pct_copy_sort_model", "{:.0f}".format)),
        ("speedup", opt("speedup", "{:.2f}".format)),
        ("note", lambda r: str(r.get("error", "")).replace("|", "/")),
    ])
