"""The GPU cost model: launches, syncs and device memory of every operation.

Runs each public operation on the CUDA path at two sizes and counts what a
GPU would be asked to do (see
:mod:`gpusparse._kernels.cuda_emulation._counting`): kernel launches,
host-device synchronisations, device allocations, the peak device memory
above inputs and outputs, and the bytes of every launch's array arguments
against the bytes of the inputs and outputs. No GPU is needed: the counts
come from the emulated CUDA device (``GPUSPARSE_CUDA_EMULATION=1``, set
here when the variable is absent), which runs the launchers and kernels of
the CUDA path unmodified.

::

    python -m benchmarks.gpu_cost              # writes benchmarks/results/gpu-cost.{json,md}
    python -m benchmarks.gpu_cost --check      # fails when an operation exceeds its budget
    python -m benchmarks.gpu_cost --only coalesce,sum --sizes 1024,8192
    python -m benchmarks.gpu_cost --write-budgets  # proposes budgets from a run (review the diff)

Each row of ``gpu-cost.json`` has ``op``, ``n`` (stored entries of the
sparse operand), ``launches``, ``syncs``, ``allocations``, ``peak_bytes``
(device bytes at the high-water mark above what the operation leaves
allocated: inputs, outputs and caches), ``arg_bytes`` (the sum over launches
of their device arrays' bytes: an upper bound on the traffic) and
``min_bytes`` (the bytes of the device inputs plus outputs: the floor), then
details (``raw_launches``, ``alloc_bytes``, ``d2h_bytes``, ``h2d``,
``seconds``, and the launches and syncs by name).

Not counted: the autograd operators, whose torch tensors cannot live on the
emulated device, and cuSPARSE, which is not emulated (the products run
their hand-written kernels). The counts are those of the emulation's
``cupy`` namespace: a CuPy call that runs several kernels (a sort, a scan)
counts as one launch.

The budgets (``benchmarks/gpu_cost_budgets.json``, one reviewed file) give
each operation its allowed ``launches`` and ``syncs`` (at any size), the
growth of each from the smaller size to the larger one that is accepted
(``launch_growth``, ``sync_growth``, 0 unless a ``note`` says why) and
``peak_factor``, the bound on ``peak_bytes`` as a multiple of ``min_bytes``.
``--check`` exits non-zero naming every operation and figure over budget,
every operation without a budget and every budget without an operation.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

if __name__ == "__main__":
    # Run as a program: the emulated device unless the environment chose (read when gpusparse is
    # imported). Never on import, which would switch every later subprocess of the importer too.
    os.environ.setdefault("GPUSPARSE_CUDA_EMULATION", "1")

__all__ = ["Case", "cases", "check", "main", "measure", "render_markdown"]

ROOT = Path(__file__).resolve().parent
BUDGETS = ROOT / "gpu_cost_budgets.json"
RESULTS = ROOT / "results"
#: Stored entries of the sparse operand at the two sizes.
SIZES = (2 ** 10, 2 ** 13)
#: Rows and columns of the sparse matrix at every size.
SIDE = 512
#: Added to every peak bound: the scalars and small plans of a tiny operation.
PEAK_SLACK_BYTES = 4096


# --------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------

def _cupy():
    from gpusparse._device import cuda_module
    return cuda_module()


def _side(n: int) -> int:
    """The side of the square matrix holding the ``n`` entries (the same at every size).

    A fixed shape makes a count that grows from one size to the next a
    dependence on ``n``, not on the width of the coordinates.
    """
    return SIDE


def _rng(n: int, salt: int = 0) -> np.random.Generator:
    return np.random.default_rng(n * 1000 + salt)


def coo(n: int, *, salt: int = 0, shape=None, fill_value=None, coalesced: bool = True, dtype=np.float64):
    """A random COO matrix with ``n`` stored entries on the CUDA device.

    Coalesced by default; with ``coalesced=False`` the coordinates are in
    random order and about one in eight repeats another.
    """
    import gpusparse as gs
    rng = _rng(n, salt)
    shape = (_side(n),) * 2 if shape is None else tuple(shape)
    size = int(np.prod(shape))
    if coalesced:
        flat = np.sort(rng.choice(size, n, replace=False))
    else:
        flat = rng.choice(size, n - n // 8, replace=False)
        flat = rng.permutation(np.concatenate([flat, rng.choice(flat, n // 8)]))
    coords = np.stack(np.unravel_index(flat, shape)).astype(np.int64)
    data = rng.random(n).astype(dtype) + 0.5
    x = gs.COO(coords, data, shape=shape, fill_value=fill_value, device="cpu")
    if coalesced:
        x = x.coalesce()
    return x.to("cuda")


def dense(shape, salt: int = 0, n: int = 0):
    """A random dense device array."""
    return _cupy().asarray(_rng(n, salt + 7).random(shape))


def device_index(values) -> object:
    """A host index array moved to the device."""
    return _cupy().asarray(np.asarray(values))


# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Case:
    """One operation: ``run(*setup(n))`` is counted, ``setup`` is not.

    Attributes
    ----------
    op : str
        The row's name.
    group : str
        Its section of the table.
    setup : callable
        ``setup(n) -> tuple`` of arguments (device inputs), built uncounted.
    run : callable
        The operation; its result is the output.
    """

    op: str
    group: str
    setup: Callable
    run: Callable


def _npz_file(n):
    import gpusparse as gs
    path = Path(tempfile.mkdtemp(prefix="gs-cost-")) / "x.npz"
    gs.save_npz(path, coo(n).to("cpu"))
    return (path,)


def _mtx_file(n):
    from gpusparse import io
    path = Path(tempfile.mkdtemp(prefix="gs-cost-")) / "x.mtx"
    io.mmwrite(path, coo(n).to("cpu"))
    return (path,)


def _binsparse_file(n):
    from gpusparse import io
    path = Path(tempfile.mkdtemp(prefix="gs-cost-")) / "x.bsp.h5"
    io.write_binsparse(path, coo(n).to("cpu"))
    return (path,)


def _row_mask(n):
    m = _side(n)
    return coo(n), device_index(_rng(n, 3).random(m) < 0.5)


def _row_index(n):
    m = _side(n)
    return coo(n), device_index(_rng(n, 4).integers(0, m, m // 4))


def _densifying(func):
    """``func`` with ``auto_densify`` on: sparse + dense gives a dense array."""
    def run(*args):
        import gpusparse as gs
        with gs.set_options(auto_densify=True):
            return func(*args)
    return run


def cases() -> "list[Case]":
    """Every counted operation."""
    import gpusparse as gs
    from gpusparse import io

    def parts(n):
        x = coo(n)
        return x.coords.copy(), x.data.copy(), x.shape

    def csr_parts(n):
        x = coo(n).tocsr()
        return x.indptr.copy(), x.indices.copy(), x.data.copy(), x.shape

    def pair(n):
        return coo(n), coo(n, salt=1)

    def csr_pair(n):
        return coo(n).tocsr(), coo(n, salt=1).tocsr()

    def with_dense(n):
        return coo(n), dense((_side(n),) * 2, n=n)

    def with_row(n):
        return coo(n), dense((1, _side(n)), n=n)

    def filled_pair(n):
        return coo(n, fill_value=1.0), coo(n, salt=1, fill_value=1.0)

    def csr(n):
        return (coo(n).tocsr(),)

    def csc(n):
        return (coo(n).tocsc(),)

    def one(n):
        return (coo(n),)

    def csr_vec(n):
        return coo(n).tocsr(), dense(_side(n), n=n)

    def csr_mat(n):
        return coo(n).tocsr(), dense((_side(n), 16), n=n)

    def sddmm_in(n):
        m = _side(n)
        return coo(n).tocsr(), dense((m, 16), n=n), dense((16, m), salt=1, n=n)

    table = [
        # construction, validation, canonical form
        Case("COO(coords, data)", "construction", parts, lambda c, d, s: gs.COO(c, d, shape=s)),
        Case("COO(check=False)", "construction", parts, lambda c, d, s: gs.COO(c, d, shape=s, check=False)),
        Case("CSR(indptr, indices, data)", "construction", csr_parts, lambda p, i, d, s: gs.CSR(p, i, d, shape=s)),
        Case("check (COO)", "construction", one, lambda x: x.check()),
        Case("coalesce", "construction", lambda n: (coo(n, coalesced=False),), lambda x: x.coalesce()),
        # conversions
        Case("COO.tocsr", "conversion", one, lambda x: x.tocsr()),
        Case("COO.tocsc", "conversion", one, lambda x: x.tocsc()),
        Case("CSR.tocoo", "conversion", csr, lambda x: x.tocoo()),
        Case("CSR.tocsc", "conversion", csr, lambda x: x.tocsc()),
        Case("CSC.tocoo", "conversion", csc, lambda x: x.tocoo()),
        Case("CSC.tocsr", "conversion", csc, lambda x: x.tocsr()),
        Case("COO.todense", "conversion", one, lambda x: x.todense()),
        Case("CSR.todense", "conversion", csr, lambda x: x.todense()),
        Case("fromdense (COO)", "conversion", lambda n: (coo(n).todense(),), lambda d: gs.fromdense(d)),
        Case("fromdense (CSR)", "conversion", lambda n: (coo(n).todense(),), lambda d: gs.fromdense(d, format="csr")),
        # elementwise
        Case("add COO+COO", "elementwise", pair, lambda a, b: a + b),
        Case("multiply COO*COO", "elementwise", pair, lambda a, b: a * b),
        Case("add CSR+CSR", "elementwise", csr_pair, lambda a, b: a + b),
        Case("multiply COO*dense", "elementwise", with_dense, lambda a, d: a * d),
        Case("add COO+dense (auto_densify)", "elementwise", with_dense, _densifying(lambda a, d: a + d)),
        Case("multiply COO*row (broadcast)", "elementwise", with_row, lambda a, d: a * d),
        Case("multiply COO*scalar", "elementwise", one, lambda a: a * 2.0),
        Case("exp (fill value 1)", "elementwise", one, lambda a: np.exp(a)),
        Case("add fill 1 + fill 1", "elementwise", filled_pair, lambda a, b: a + b),
        # reductions
        *[Case(f"{name} axis={axis}", "reduction", one,
               (lambda f, ax: (lambda x: f(x, axis=ax)))(func, axis))
          for name, func in (("sum", gs.sum), ("max", gs.max))
          for axis in (None, 0, 1)],
        Case("sum CSR axis=1", "reduction", csr, lambda x: gs.sum(x, axis=1)),
        # indexing
        Case("x[i] (integer)", "indexing", one, lambda x: x[3]),
        Case("x[i, j] (scalar)", "indexing", one, lambda x: x[3, 5]),
        Case("x[a:b] (slice)", "indexing", one, lambda x: x[x.shape[0] // 4: x.shape[0] // 2]),
        Case("x[:, a:b] (slice)", "indexing", one, lambda x: x[:, x.shape[1] // 4: x.shape[1] // 2]),
        Case("x[mask] (boolean)", "indexing", _row_mask, lambda x, m: x[m]),
        Case("x[idx] (advanced)", "indexing", _row_index, lambda x, i: x[i]),
        Case("index_select axis=1", "indexing", _row_index, lambda x, i: gs.index_select(x, 1, i)),
        # manipulation
        Case("reshape", "manipulation", one, lambda x: gs.reshape(x, (x.shape[0] * 2, x.shape[1] // 2))),
        Case("transpose", "manipulation", one, lambda x: x.T),
        Case("concatenate axis=0", "manipulation", pair, lambda a, b: gs.concatenate([a, b], axis=0)),
        Case("concatenate axis=1", "manipulation", pair, lambda a, b: gs.concatenate([a, b], axis=1)),
        Case("stack", "manipulation", pair, lambda a, b: gs.stack([a, b])),
        # products
        Case("SpMV CSR@x", "linalg", csr_vec, lambda a, v: a @ v),
        Case("SpMV COO@x", "linalg", lambda n: (coo(n), dense(_side(n), n=n)), lambda a, v: a @ v),
        Case("SpMM CSR@X", "linalg", csr_mat, lambda a, d: a @ d),
        Case("SpGEMM CSR@CSR", "linalg", csr_pair, lambda a, b: a @ b),
        Case("SDDMM sampled_addmm", "linalg", sddmm_in, lambda s, a, b: gs.sampled_addmm(s, a, b)),
        # softmax, selection
        Case("softmax axis=-1", "softmax", one, lambda x: gs.softmax(x, axis=-1)),
        Case("log_softmax axis=-1", "softmax", one, lambda x: gs.log_softmax(x, axis=-1)),
        Case("topk k=4 axis=-1", "selection", one, lambda x: gs.topk(x, 4, axis=-1)),
        # graph algorithms (each round a prepared semiring product; one sync per round)
        Case("bfs", "graph", csr, lambda a: gs.graph.bfs(a, 0)),
        Case("sssp", "graph", csr, lambda a: gs.graph.sssp(a, 0)),
        Case("pagerank", "graph", csr, lambda a: gs.graph.pagerank(a)),
        Case("connected_components", "graph", csr, lambda a: gs.graph.connected_components(a)),
        Case("triangle_count", "graph", csr, lambda a: gs.graph.triangle_count(a)),
        # reading files onto the device
        Case("load_npz device=cuda", "io", _npz_file, lambda p: gs.load_npz(p, device="cuda")),
        Case("mmread device=cuda", "io", _mtx_file, lambda p: io.mmread(p, device="cuda")),
        Case("read_binsparse device=cuda", "io", _binsparse_file, lambda p: io.read_binsparse(p, device="cuda")),
    ]
    return table


# --------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------

def _device_arrays(obj, found: dict, depth: int = 0) -> None:
    """The device arrays reachable from ``obj`` (arrays, containers, sparse arrays' attributes)."""
    from gpusparse._kernels.cuda_emulation._array import ndarray
    if isinstance(obj, ndarray):
        found[(obj._a.ctypes.data, obj._a.nbytes)] = obj._a.nbytes
        return
    if depth >= 4 or obj is None or isinstance(obj, (str, bytes, int, float, complex, Path, np.ndarray)):
        return
    if isinstance(obj, (list, tuple)):
        items = obj
    elif isinstance(obj, dict):
        items = obj.values()
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        items = vars(obj).values()
    else:
        return
    for item in items:
        _device_arrays(item, found, depth + 1)


def device_bytes(*objs) -> int:
    """Bytes of the distinct device buffers reachable from ``objs``."""
    found: dict = {}
    for obj in objs:
        _device_arrays(obj, found)
    return int(sum(found.values()))


def measure(case: Case, n: int) -> dict:
    """One row: ``case`` counted at size ``n`` on fresh inputs."""
    from gpusparse._kernels.cuda_emulation._counting import counting
    args = case.setup(n)
    in_bytes = device_bytes(args)
    start = time.perf_counter()
    with counting() as c:
        out = case.run(*args)
    seconds = time.perf_counter() - start
    out_bytes = device_bytes(out)
    # An output that aliases an input is counted once.
    min_bytes = device_bytes(args, out)
    counts = c.as_dict()
    row = {
        "op": case.op,
        "group": case.group,
        "n": n,
        "launches": c.launches,
        "syncs": c.syncs,
        "allocations": c.allocations,
        "peak_bytes": c.peak_above_end,
        "arg_bytes": c.arg_bytes,
        "min_bytes": min_bytes,
        "in_bytes": in_bytes,
        "out_bytes": out_bytes,
        "raw_launches": c.raw_launches,
        "alloc_bytes": c.alloc_bytes,
        "d2h_bytes": c.d2h_bytes,
        "h2d": c.h2d,
        "h2d_bytes": c.h2d_bytes,
        "seconds": round(seconds, 4),
        "launch_names": counts["launch_names"],
        "sync_names": counts["sync_names"],
    }
    del out, args
    return row


def run_cases(cases, sizes=SIZES, *, log=None) -> "list[dict]":
    """Rows for every case at every size; a failing case gives a row with ``error``.

    Each case is first run once, uncounted, at the smallest size: kernels are
    compiled and one-time caches filled before anything is counted.
    """
    rows = []
    for case in cases:
        started = time.perf_counter()
        try:
            case.run(*case.setup(min(sizes)))
            case_rows = [measure(case, n) for n in sizes]
        except Exception as exc:  # noqa: BLE001 -- reported as the op's failure
            case_rows = [{"op": case.op, "group": case.group, "n": n, "error": f"{type(exc).__name__}: {exc}"}
                         for n in sizes]
        rows.extend(case_rows)
        if log is not None:
            figures = ", ".join(
                f"n={r['n']}: {r['launches']} launches, {r['syncs']} syncs" if "error" not in r else r["error"]
                for r in case_rows
            )
            log(f"{case.op:32s} {time.perf_counter() - started:6.2f}s  {figures}")
    return rows


# --------------------------------------------------------------------------
# Budgets
# --------------------------------------------------------------------------

def load_budgets(path=BUDGETS) -> dict:
    """The budgets file: ``{"ops": {op: {"launches", "syncs", "peak_factor", ...}}}``."""
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def _by_op(rows) -> "dict[str, list[dict]]":
    grouped: "dict[str, list[dict]]" = {}
    for row in rows:
        grouped.setdefault(row["op"], []).append(row)
    for op_rows in grouped.values():
        op_rows.sort(key=lambda r: r["n"])
    return grouped


def check(rows, budgets: dict, *, complete: bool = True) -> "list[str]":
    """Every way ``rows`` exceed ``budgets``, one message each (empty: within budget).

    Parameters
    ----------
    rows : list of dict
        Measured rows, at two or more sizes per operation.
    budgets : dict
        As :func:`load_budgets` returns.
    complete : bool
        Whether every operation was measured: a budget with no rows is then
        reported as stale.
    """
    failures = []
    ops = budgets.get("ops", {})
    slack = int(budgets.get("peak_slack_bytes", PEAK_SLACK_BYTES))
    grouped = _by_op(rows)
    for op, op_rows in grouped.items():
        errors = [r for r in op_rows if "error" in r]
        if errors:
            failures.append(f"{op}: failed at n={errors[0]['n']}: {errors[0]['error']}")
            continue
        budget = ops.get(op)
        if budget is None:
            failures.append(f"{op}: no budget in the budgets file (measured {op_rows[-1]['launches']} launches, "
                            f"{op_rows[-1]['syncs']} syncs at n={op_rows[-1]['n']})")
            continue
        for key, word in (("launches", "launches"), ("syncs", "syncs")):
            allowed = int(budget.get(key, 0))
            for row in op_rows:
                if row[key] > allowed:
                    if key == "syncs" and allowed == 0:
                        names = ", ".join(f"{k} x{v}" for k, v in row["sync_names"].items())
                        failures.append(f"{op}: {row[key]} sync(s) at n={row['n']} ({names}) in an operation "
                                        "whose budget has none")
                    else:
                        failures.append(f"{op}: {row[key]} {word} at n={row['n']}, budget {allowed}")
            growth_allowed = int(budget.get(f"{key[:-1] if key == 'syncs' else 'launch'}_growth", 0))
            small, large = op_rows[0], op_rows[-1]
            growth = large[key] - small[key]
            if growth > growth_allowed:
                failures.append(
                    f"{op}: {word} grow with n: {small[key]} at n={small['n']} -> {large[key]} at "
                    f"n={large['n']} (+{growth}, accepted growth {growth_allowed})"
                )
        factor = float(budget.get("peak_factor", 1.0))
        for row in op_rows:
            bound = factor * row["min_bytes"] + slack
            if row["peak_bytes"] > bound:
                failures.append(
                    f"{op}: peak device memory {row['peak_bytes']} bytes at n={row['n']} above its bound "
                    f"{int(bound)} ({factor:g} x {row['min_bytes']} bytes of inputs and outputs + {slack})"
                )
    if complete:
        for op in ops:
            if op not in grouped:
                failures.append(f"{op}: budgeted but not measured (stale budget)")
    return failures


def propose_budgets(rows, old: "dict | None" = None) -> dict:
    """Budgets that the measured ``rows`` meet exactly (launches, syncs) or with headroom (peak).

    Notes of ``old`` are kept; review the proposal before committing it.
    """
    old_ops = (old or {}).get("ops", {})
    ops = {}
    for op, op_rows in _by_op(rows).items():
        if any("error" in r for r in op_rows):
            continue
        small, large = op_rows[0], op_rows[-1]
        ratio = max(r["peak_bytes"] / max(r["min_bytes"], 1) for r in op_rows)
        entry = {
            "launches": max(r["launches"] for r in op_rows),
            "syncs": max(r["syncs"] for r in op_rows),
            "peak_factor": max(0.5, math.ceil(ratio * 1.25 * 4 + 1) / 4),
        }
        if large["launches"] > small["launches"]:
            entry["launch_growth"] = large["launches"] - small["launches"]
        if large["syncs"] > small["syncs"]:
            entry["sync_growth"] = large["syncs"] - small["syncs"]
        if "note" in old_ops.get(op, {}):
            entry["note"] = old_ops[op]["note"]
        ops[op] = entry
    return {
        "about": (old or {}).get("about", "Per operation: allowed kernel launches and host-device syncs at any "
                                          "size, accepted growth of each from the smaller size to the larger "
                                          "(launch_growth, sync_growth; 0 when absent), and peak_factor, the "
                                          "bound on peak device memory above inputs and outputs as a multiple "
                                          "of their bytes. Checked by python -m benchmarks.gpu_cost --check."),
        "sizes": list(sorted({r["n"] for r in rows})),
        "peak_slack_bytes": int((old or {}).get("peak_slack_bytes", PEAK_SLACK_BYTES)),
        "ops": ops,
    }


# --------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------

def _kib(nbytes) -> str:
    return f"{nbytes / 1024:.1f}"


def render_markdown(rows, sizes) -> str:
    """The table of ``rows`` and a headline: which operations sync, which launch counts grow."""
    grouped = _by_op(rows)
    lines = [
        "# GPU cost model",
        "",
        "Counted on the emulated CUDA device (`python -m benchmarks.gpu_cost`): kernel launches (the "
        "library's kernels plus the CuPy calls that launch one), host-device syncs (device-to-host reads "
        "and output sizes read back), device allocations, peak device memory above inputs and outputs, and "
        "the bytes of every launch's array arguments (an upper bound on traffic) against the bytes of "
        f"inputs plus outputs (the floor). n = stored entries: {', '.join(str(s) for s in sizes)}, of a "
        f"{SIDE} x {SIDE} matrix at every size. Budgets: `benchmarks/gpu_cost_budgets.json`.",
        "",
        "## Headline",
        "",
    ]
    syncing = [(op, r[-1]) for op, r in grouped.items() if "error" not in r[-1] and r[-1]["syncs"]]
    growing = [(op, r[0], r[-1]) for op, r in grouped.items()
               if "error" not in r[-1] and (r[-1]["launches"] > r[0]["launches"] or r[-1]["syncs"] > r[0]["syncs"])]
    failing = [(op, r[0]["error"]) for op, r in grouped.items() if "error" in r[0]]
    lines.append(f"- {len(grouped)} operations; {len(syncing)} synchronise the device, "
                 f"{len(grouped) - len(syncing) - len(failing)} do not.")
    lines.append("- Syncing operations (at the larger size, by source): " + ("; ".join(
        f"{op} {r['syncs']} ({', '.join(f'{k} x{v}' for k, v in r['sync_names'].items())})" for op, r in syncing)
        or "none") + ".")
    lines.append("- Launches or syncs growing with n: " + ("; ".join(
        f"{op} {a['launches']}->{b['launches']} launches, {a['syncs']}->{b['syncs']} syncs"
        for op, a, b in growing) or "none") + ".")
    if failing:
        lines.append("- Failed: " + "; ".join(f"{op} ({err})" for op, err in failing) + ".")
    lines.append("- Not counted: the autograd operators (their torch tensors cannot live on the emulated "
                 "device) and cuSPARSE (not emulated: the products run their hand-written kernels, as they "
                 "do on a GPU without cuSPARSE). A CuPy call that runs several kernels (sort, scan, unique) "
                 "counts as one launch.")
    lines += [
        "",
        "## Every operation",
        "",
        "| group | op | n | launches (own kernels) | syncs | allocations | alloc KiB | peak KiB | arg KiB | "
        "min KiB | arg/min |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for op, op_rows in grouped.items():
        for r in op_rows:
            if "error" in r:
                lines.append(f"| {r['group']} | {op} | {r['n']} | failed: {r['error'][:80]} | | | | | | | |")
                continue
            ratio = r["arg_bytes"] / r["min_bytes"] if r["min_bytes"] else float("nan")
            lines.append(
                f"| {r['group']} | {op} | {r['n']} | {r['launches']} ({r['raw_launches']}) | {r['syncs']} | "
                f"{r['allocations']} | {_kib(r['alloc_bytes'])} | {_kib(r['peak_bytes'])} | "
                f"{_kib(r['arg_bytes'])} | {_kib(r['min_bytes'])} | {ratio:.1f} |"
            )
    lines.append("")
    return "\n".join(lines)


def write_results(rows, sizes, out_dir=RESULTS) -> "tuple[Path, Path]":
    """``gpu-cost.json`` and ``gpu-cost.md`` in ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out_dir / "gpu-cost.json", out_dir / "gpu-cost.md"
    json_path.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    md_path.write_text(render_markdown(rows, sizes), encoding="utf-8")
    return json_path, md_path


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------

def _select(cases, only: "str | None"):
    if not only:
        return cases
    wanted = [w.strip().lower() for w in only.split(",") if w.strip()]
    return [c for c in cases if any(w in c.op.lower() for w in wanted)]


def main(argv=None) -> int:
    """Command line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="compare with the budgets; exit 1 naming every operation over budget")
    parser.add_argument("--budgets", default=str(BUDGETS), help="the budgets file (default: %(default)s)")
    parser.add_argument("--only", help="comma-separated substrings of operation names")
    parser.add_argument("--sizes", help=f"comma-separated sizes (default: {','.join(map(str, SIZES))})")
    parser.add_argument("--out-dir", help="where gpu-cost.{json,md} go (default: benchmarks/results; "
                                          "with --check nothing is written unless this is given)")
    parser.add_argument("--write-budgets", action="store_true",
                        help="write budgets that this run meets to --budgets (review the diff)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)

    from gpusparse._kernels import cuda_emulation
    if not cuda_emulation.enabled():
        print("the GPU cost model counts on the emulated CUDA device: run with GPUSPARSE_CUDA_EMULATION=1 "
              "(set before gpusparse is imported)", file=sys.stderr)
        return 2
    sizes = tuple(int(s) for s in args.sizes.split(",")) if args.sizes else SIZES
    if len(sizes) < 2:
        parser.error("--sizes needs at least two sizes (growth with n compares them)")
    selected = _select(cases(), args.only)
    if not selected:
        parser.error(f"no operation matches --only {args.only!r}")
    log = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = run_cases(selected, sizes, log=log)
    elapsed = time.perf_counter() - started
    if not args.check or args.out_dir:
        json_path, md_path = write_results(rows, sizes, args.out_dir or RESULTS)
        print(f"wrote {json_path} and {md_path} ({len(selected)} operations, {elapsed:.1f} s)")
    if args.write_budgets:
        old = load_budgets(args.budgets) if Path(args.budgets).is_file() else None
        Path(args.budgets).write_text(json.dumps(propose_budgets(rows, old), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.budgets}")
    if args.check:
        failures = check(rows, load_budgets(args.budgets), complete=not args.only)
        if failures:
            print(f"GPU cost check failed ({len(failures)}):", file=sys.stderr)
            for failure in failures:
                print(f"  {failure}", file=sys.stderr)
            return 1
        print(f"GPU cost check passed: {len(selected)} operations within budget ({elapsed:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
