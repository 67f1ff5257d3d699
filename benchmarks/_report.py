"""Rows and tables shared by the benchmark modules.

Every ``bench_*`` module measures its cases the same way:

1. :func:`measure` calls one implementation once (timed on its own as
   ``first_call_s``, see :mod:`benchmarks._timing`), checks its result and
   records ``status``: ``"ok"``, ``"skipped"`` (:class:`Skip`, e.g. a peer that
   is not installed), ``"error"`` or ``"mismatch"``, with the reason in
   ``error``.
2. The checked implementations of a case are timed, in alternating rounds
   (:func:`run_case`) or one after the other (:func:`run_sequential`).
3. :func:`finish` adds the load average, the module's rates and
   ``speedup`` (peer time / gpusparse time) and logs one :func:`progress`
   line.

The Markdown side: :func:`ms` for times, :func:`summary_table` (one line
per case, one column per peer) and :func:`details_table` (one line per row,
columns given as ``(title, render)`` pairs, see :func:`opt`).

Examples
--------
>>> ms(0.0123), ms(2.5), ms(None)
('12.3 ms', '2.5 s', '—')
>>> rows = [{"case": "a", "impl": "gpusparse", "status": "ok", "median_s": 0.002},
...         {"case": "a", "impl": "scipy", "status": "ok", "median_s": 0.004, "speedup": 2.0}]
>>> print(details_table(rows, [("case", lambda r: r["case"]), ("speedup", opt("speedup", "{:.2f}".format))]))
| case | speedup |
|---|---|
| a |  |
| a | 2.00 |
"""

from __future__ import annotations

import functools
import math
import os
import warnings

import numpy as np

from benchmarks import Context
from benchmarks._timing import (
    call_once,
    copy_bandwidth,
    free_memory,
    time_call,
    time_interleaved,
)

__all__ = [
    "LEAD_COLUMNS", "Skip", "add_bandwidth", "as_2d", "by_case", "copy_gb_s", "delinearize", "details_table",
    "error_text", "finish", "floor_details", "host", "linearize", "load_1min", "measure", "ms", "need", "opt",
    "peer_cell", "progress", "run_case", "run_sequential", "smoke", "summary_table", "table", "time_rows",
    "when_ok",
]


class Skip(Exception):
    """The implementation is unavailable here; the message says why."""


def need(name: str, label: str | None = None):
    """Import the module ``name``, or raise :class:`Skip` saying ``<label> not importable``.

    Examples
    --------
    >>> need("math").sqrt(4.0)
    2.0
    >>> need("no_such_module", "nothing")
    Traceback (most recent call last):
    ...
    benchmarks._report.Skip: nothing not importable (No module named 'no_such_module')
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return __import__(name, fromlist=["_"])
    except ImportError as exc:
        raise Skip(f"{label or name} not importable ({exc})") from None


# --------------------------------------------------------------------------
# arrays, for the inputs and the checks
# --------------------------------------------------------------------------

def host(arr) -> np.ndarray:
    """``arr`` (NumPy, CuPy or torch) as a NumPy array on the host."""
    if hasattr(arr, "get"):
        return arr.get()
    if type(arr).__module__.startswith("torch"):
        return arr.detach().cpu().numpy()
    return np.asarray(arr)


def linearize(coords, shape, xp=np):
    """Row-major linear keys of ``(d, k)`` coordinates in ``shape`` (int64, module ``xp``).

    Examples
    --------
    >>> linearize(np.array([[0, 1], [2, 3]]), (2, 4))
    array([2, 7])
    """
    keys = xp.zeros(coords.shape[1], dtype=xp.int64)
    for k, n in enumerate(shape):
        keys *= n
        keys += coords[k]
    return keys


def delinearize(keys, shape, xp=np):
    """The ``(d, k)`` int64 coordinates of row-major linear ``keys`` in ``shape``.

    Examples
    --------
    >>> delinearize(np.array([2, 7]), (2, 4))
    array([[0, 1],
           [2, 3]])
    """
    out = xp.empty((len(shape), keys.size), dtype=xp.int64)
    for k in reversed(range(len(shape))):
        out[k] = keys % shape[k]
        keys = keys // shape[k]
    return out


def as_2d(coords, shape, xp=np):
    """Rows, columns and shape of the 2-D row-major reshape (split at ``d // 2``), for 2-D-only peers.

    Examples
    --------
    >>> rows, cols, shape2 = as_2d(np.array([[1], [2], [3], [4]]), (2, 3, 4, 5))
    >>> rows, cols, shape2
    (array([5]), array([19]), (6, 20))
    """
    if len(shape) == 2:
        return coords[0], coords[1], shape
    h = len(shape) // 2
    rows = linearize(coords[:h], shape[:h], xp)
    cols = linearize(coords[h:], shape[h:], xp)
    return rows, cols, (math.prod(shape[:h]), math.prod(shape[h:]))


# --------------------------------------------------------------------------
# measuring: rows
# --------------------------------------------------------------------------

def error_text(exc) -> str:
    """``Type: message`` of an exception, cut to 300 characters."""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 300 else text[:297] + "..."


def load_1min() -> float | None:
    """The 1-minute load average (None where the platform has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def copy_gb_s(ctx: Context, nbytes: int, cache: dict | None = None) -> float:
    """GB/s of ``dst[...] = src`` over ``nbytes`` on ``ctx``'s device (:func:`benchmarks._timing.copy_bandwidth`).

    Rows keep it as ``copy_gb_s``, for :func:`add_bandwidth`. With ``cache``
    (a dict), each size is measured once.
    """
    if cache is not None and nbytes in cache:
        return cache[nbytes]
    gb_s = copy_bandwidth(nbytes, ctx.xp, device=ctx.device, target_s=min(ctx.target_s, 0.5))["gb_s"]
    if cache is not None:
        cache[nbytes] = gb_s
    return gb_s


def measure(row: dict, make, check, ctx: Context, *, timed: bool = True):
    """Call one implementation once, check its result and, with ``timed``, time it.

    Parameters
    ----------
    row : dict
        The implementation's row, with ``impl`` and ``status = "ok"``. It
        gets ``first_call_s``, then, with ``timed``, the keys of
        :class:`benchmarks._timing.Timing`; or ``status`` ``"skipped"``,
        ``"error"`` or ``"mismatch"`` and the reason in ``error``.
    make : callable
        ``make()`` returns ``(fn, result)``: the callable to time (no
        arguments) and ``result(out)``, which turns ``fn``'s output into what
        ``check`` takes (None: the output itself). It raises :class:`Skip`
        where the implementation is unavailable.
    check : callable
        ``check(got, row)`` returns None when the result is right, else what
        differs.
    ctx : benchmarks.Context
    timed : bool
        Time ``fn`` (:func:`benchmarks._timing.time_call`) right after the
        check; otherwise the caller times it (:func:`time_rows`).

    Returns
    -------
    callable or None
        ``fn`` when it ran and its result is right, else None. Pooled device
        memory is released before returning, in every case.

    Examples
    --------
    >>> ctx = Context(target_s=0.001)
    >>> row = {"impl": "sum", "status": "ok"}
    >>> fn = measure(row, lambda: (lambda: sum(range(10)), None), lambda got, row: None, ctx)
    >>> row["status"], "median_s" in row
    ('ok', True)
    >>> row = {"impl": "wrong", "status": "ok"}
    >>> measure(row, lambda: (lambda: 1, None), lambda got, row: f"got {got}", ctx) is None, row["error"]
    (True, 'got 1')
    """
    fn = None
    try:
        fn, result = make()
        out, row["first_call_s"] = call_once(fn, ctx.device)
        problem = check(out if result is None else result(out), row)
        del out
        if problem:
            row.update(status="mismatch", error=problem)
            fn = None
        elif timed:
            row.update(time_call(fn, ctx.device, target_s=ctx.target_s, warmed=True).as_dict())
    except Skip as exc:
        row.update(status="skipped", error=str(exc))
        fn = None
    except Exception as exc:  # noqa: BLE001 (a failing implementation is a result, not a crash)
        row.update(status="error", error=error_text(exc))
        fn = None
    finally:
        free_memory(ctx.device)
    return fn


def time_rows(fns: dict, rows: dict, ctx: Context) -> None:
    """Time the checked callables ``{impl: fn}`` in alternation; the timings go into ``rows[impl]``.

    If alternating fails (e.g. out of memory with every peer's pool held at
    once), each is timed on its own, which every row then records in
    ``timing`` with the reason, and one that fails becomes an ``error``.
    """
    try:
        timings = time_interleaved(fns, ctx.device, target_s=ctx.target_s, warmed=True)
    except Exception as exc:  # noqa: BLE001
        free_memory(ctx.device)
        timings = {}
        for row in rows.values():
            row["timing"] = f"one implementation after another: alternating failed ({error_text(exc)})"
        for name, fn in fns.items():
            try:
                timings[name] = time_call(fn, ctx.device, target_s=ctx.target_s, warmed=True)
            except Exception as exc:  # noqa: BLE001
                rows[name].update(status="error", error=error_text(exc))
            finally:
                free_memory(ctx.device)
    for name, timing in timings.items():
        rows[name].update(timing.as_dict())
    free_memory(ctx.device)


def add_bandwidth(row: dict, nbytes: int, seconds: float, suffix: str = "_floor") -> None:
    """Add ``gb_s<suffix>``, ``nbytes`` moved in ``seconds``, and ``pct_copy<suffix>``, its % of ``copy_gb_s``.

    Examples
    --------
    >>> row = {"copy_gb_s": 4.0}
    >>> add_bandwidth(row, 2e9, 1.0)
    >>> row
    {'copy_gb_s': 4.0, 'gb_s_floor': 2.0, 'pct_copy_floor': 50.0}
    """
    gb_s = nbytes / seconds / 1e9
    row["gb_s" + suffix] = gb_s
    row["pct_copy" + suffix] = 100 * gb_s / row["copy_gb_s"]


def finish(row: dict, ctx: Context, describe, rates=None, ours: float | None = None) -> dict:
    """Complete a measured row: ``load_1min``, ``rates(row, median_s)``, ``speedup``; log ``describe(row)``.

    ``ours`` is gpusparse's median on the same case (None when it has none);
    ``speedup`` is this row's median over it, on peer rows.
    """
    row["load_1min"] = load_1min()
    if "median_s" in row:
        if rates is not None:
            rates(row, row["median_s"])
        if row["impl"] != "gpusparse" and ours:
            row["speedup"] = row["median_s"] / ours
    ctx.log(describe(row))
    return row


def run_case(ctx: Context, case, base: dict, impls, check, describe, rates=None):
    """Yield the rows of one case whose implementations are timed in alternating rounds.

    Parameters
    ----------
    ctx : benchmarks.Context
    case : object
        The module's case, passed on to ``factory``, ``check`` and ``rates``.
    base : dict
        The keys every row of the case starts with (``bench``, ``case``, ...).
    impls : iterable of (name, factory, kind)
        ``factory(case, ctx)`` is ``make`` of :func:`measure`; ``kind`` is
        ``"ours"``, ``"peer"`` or ``"reference"``.
    check : callable
        ``check(case, got, row)``, as in :func:`measure`.
    describe : callable
        ``describe(row)``: the progress line, as in :func:`finish`.
    rates : callable, optional
        ``rates(case, row, median_s)``, as in :func:`finish`.

    Yields
    ------
    dict
        One row per implementation, after all of them are timed.
    """
    rows, fns = {}, {}
    check = functools.partial(check, case)
    for name, factory, kind in impls:
        row = rows[name] = {**base, "impl": name, "kind": kind, "status": "ok"}
        fn = measure(row, functools.partial(factory, case, ctx), check, ctx, timed=False)
        if fn is not None:
            fns[name] = fn
    time_rows(fns, rows, ctx)
    ours = rows.get("gpusparse", {}).get("median_s")
    rates = None if rates is None else functools.partial(rates, case)
    for row in rows.values():
        yield finish(row, ctx, describe, rates, ours)


def run_sequential(ctx: Context, impls, check, describe, rates=None):
    """Yield rows of implementations measured and timed one after the other, gpusparse's first.

    ``impls`` yields ``(row, make)``: the row to fill (with ``impl`` and
    ``status = "ok"``) and ``make`` as in :func:`measure`; ``check``,
    ``describe`` and ``rates`` as in :func:`measure` and :func:`finish`. Each row
    is yielded as soon as it is measured.
    """
    ours = None
    for row, make in impls:
        measure(row, make, check, ctx)
        if row["impl"] == "gpusparse":
            ours = row.get("median_s")
        yield finish(row, ctx, describe, rates, ours)


def progress(row: dict, case_width: int = 24, impl_width: int = 10, entries: bool = False) -> str:
    """One log line: the median, entries/s (with ``entries``), the floor bandwidth and the speedup where known.

    Examples
    --------
    >>> progress({"bench": "b", "case": "c", "impl": "scipy", "status": "ok", "median_s": 0.5,
    ...           "speedup": 2.0}, case_width=2, impl_width=6)
    'b c  scipy      500.00 ms  speedup 2.00'
    """
    head = f"{row['bench']} {row['case']:<{case_width}} {row['impl']:<{impl_width}}"
    if row["status"] != "ok":
        return f"{head} {row['status']}: {row.get('error', '')}"
    text = f"{head} {row['median_s'] * 1e3:10.2f} ms"
    if entries:
        text += f"  {row['entries_per_s'] / 1e6:8.1f} M/s"
    if "pct_copy_floor" in row:
        text += f"  {row['gb_s_floor']:7.2f} GB/s floor ({row['pct_copy_floor']:.0f}% copy)"
    if "speedup" in row:
        text += f"  speedup {row['speedup']:.2f}"
    return text


def smoke(run, size: int | None = None) -> str:
    """Run a module's ``run`` on the CPU with quick, tiny sizes; say in how many cases gpusparse's row is ``ok``.

    ``size`` is passed as :attr:`benchmarks.Context.size`. Every module's
    doctest calls it: a smoke test of the module, not a measurement.
    """
    ctx = Context(device="cpu", quick=True, target_s=0.001, log=lambda m: None, size=size)
    statuses = [r["status"] for r in run(ctx) if r["impl"] == "gpusparse"]
    return f"gpusparse ok in {statuses.count('ok')} of {len(statuses)} cases"


# --------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------

def ms(seconds) -> str:
    """``seconds`` as milliseconds below one second, else seconds; a dash for None."""
    return "—" if seconds is None else f"{seconds * 1e3:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"


def table(head, body) -> str:
    """A Markdown table: the column titles ``head`` and one line per list of cells in ``body``."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    return "\n".join(lines)


def by_case(rows) -> tuple[dict, list]:
    """``({case: {impl: row}}, peers)``: the rows grouped by case and every impl but gpusparse, in order."""
    cases, peers = {}, []
    for row in rows:
        cases.setdefault(row["case"], {})[row["impl"]] = row
        if row["impl"] != "gpusparse" and row["impl"] not in peers:
            peers.append(row["impl"])
    return cases, peers


def peer_cell(row) -> str:
    """A peer's summary cell: ``speedup (median)``, the median alone, or the status."""
    if row is None:
        return ""
    if row["status"] != "ok":
        return row["status"]
    if "speedup" in row:
        return f"{row['speedup']:.2f} ({ms(row['median_s'])})"
    return ms(row["median_s"])


def summary_table(rows, counts, rates, note: str) -> str:
    """One line per case and one column per peer (peer time / gpusparse time), then ``note``.

    Parameters
    ----------
    rows : list of dict
    counts : list of (title, render)
        Columns before gpusparse's median; ``render(row)`` gets the case's
        first row.
    rates : list of (title, render)
        Columns after gpusparse's median; ``render(row)`` gets gpusparse's
        row, and they stay empty when it is not ``ok``.
    note : str
        The paragraph below the table.
    """
    cases, peers = by_case(rows)
    head = ["case", *(t for t, _ in counts), "gpusparse", *(t for t, _ in rates), "first call", *peers]
    body = []
    for name, impls in cases.items():
        ours = impls.get("gpusparse", {})
        first = next(iter(impls.values()))
        ok = ours.get("status") == "ok"
        body.append([name, *(render(first) for _, render in counts),
                     ms(ours["median_s"]) if ok else ours.get("status", ""),
                     *(render(ours) if ok else "" for _, render in rates),
                     ms(ours.get("first_call_s")), *(peer_cell(impls.get(p)) for p in peers)])
    return table(head, body) + "\n\n" + note


def details_table(rows, columns) -> str:
    """A Markdown table of every row; ``columns`` are ``(title, render)`` with ``render(row) -> str``."""
    return table([t for t, _ in columns], [[render(r) for _, render in columns] for r in rows])


def opt(key: str, render=str):
    """A column of ``render(row[key])``, empty where the row has no ``key``."""
    return lambda row: render(row[key]) if key in row else ""


def when_ok(render):
    """A column of ``render(row)``, empty where the row's status is not ``ok``."""
    return lambda row: render(row) if row["status"] == "ok" else ""


LEAD_COLUMNS = (
    ("case", lambda r: r["case"]), ("impl", lambda r: r["impl"]), ("status", lambda r: r["status"]),
    ("median", when_ok(lambda r: ms(r["median_s"]))), ("min", when_ok(lambda r: ms(r["min_s"]))),
)


def floor_details(rows) -> str:
    """Every row: times, repeats, bandwidth against the floor model, speedup, load average and note."""
    return details_table(rows, [
        *LEAD_COLUMNS, ("first call", lambda r: ms(r.get("first_call_s"))), ("repeats", opt("repeats")),
        ("GB/s floor", when_ok(lambda r: f"{r['gb_s_floor']:.2f}")),
        ("% copy", when_ok(lambda r: f"{r['pct_copy_floor']:.0f}")), ("speedup", opt("speedup", "{:.2f}".format)),
        ("load", opt("load_1min")), ("note", lambda r: r.get("error", "")),
    ])
