"""Cold start: the first call of each operation in a new process, with an empty and a warm kernel cache.

Numba compiles gpusparse's CPU kernels on their first call and caches them
on disk; :func:`gpusparse.warmup` fills that cache ahead of time. For each
operation this module starts fresh Python processes and times, inside them:

``first call, empty cache``
    the operation's first call in a process whose ``NUMBA_CACHE_DIR`` is a
    new, empty directory (one per operation): compilation included.
``first call, warm cache``
    its first call in a process whose cache was filled by
    ``gpusparse.warmup(dtypes=["float64"])`` (the dtype of the inputs), run
    once at the start of the module and timed as the ``warmup`` row.
``first call, prebuilt cache``
    its first call in a process whose own cache is empty, with the prebuilt
    cache of ``gpusparse.warmup(dtypes=["float64"], portable=...)``
    (kernels compiled for Numba's generic CPU, which any machine of the
    architecture loads; the ``prebuilt warmup`` row times building it).
    The empty-cache processes are given a missing prebuilt directory.
``steady state``
    the median of later calls in that warm process
    (:func:`benchmarks._timing.time_call`).
``warm first − steady``
    the cost a script pays once per process after a warmup.
``kernels compiled``, ``compiling``, ``slowest compilations``
    in the empty-cache process: the Numba specialisations the first call
    compiled (those compiled inside another's compilation included), the
    seconds spent compiling (Numba's ``numba:compile`` events, outermost
    ones), and the three slowest outermost compilations (a kernel's time
    includes the kernels it calls that compiled with it).
    ``tools/count_specialisations.py`` counts them over every default
    warmup dtype, kernel by kernel.

Operations (float64 values, ``k`` = 2**20 entries, 2**14 with ``--quick``;
``--size`` sets ``k``), each a set-up and a timed call:

* ``coalesce``: ``COO(coords, data, shape, check=False).coalesce()`` of
  ``k`` shuffled coordinates of a ``(2**20, 2**20)`` matrix, half of them
  duplicates. Its set-up uses NumPy only, so its first call also carries the
  once-per-process start of Numba (importing its implementations and
  loading or compiling the first kernels); the set-ups of the other
  operations run gpusparse code before the timed call.
* ``tocsr``, ``tocsc``, ``add``, ``multiply``, ``add+sum(axis=0)`` (the
  request's ``(y + y).sum(axis=0)``), ``sum(axis=0)`` and ``sum(axis=1)`` of
  the CSR, ``max(axis=1)``, ``SpMV`` and ``SpMM`` (8 columns) of the CSR,
  ``SpGEMM`` (``A @ A`` of a matrix of ``k / 4`` entries), ``index_select``
  (``k / 16`` random rows of the CSR), ``slice`` (the middle half of the
  COO in both dimensions), ``transpose`` (``x.T.coalesce()``); ``x`` and
  ``y`` are coalesced COO arrays of ``k`` entries in a square matrix with 16
  entries per row, ``A`` is ``x.tocsr()``.

The processes run one after the other, with the repository on
``PYTHONPATH``; no result is checked here (the other modules check the
same operations), and every figure depends on the machine's load, which the
rows record.

Examples
--------
>>> _child_snippets("spmv")[1]
'a @ vec'
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from benchmarks import _report
from benchmarks._report import Skip, ms, need, opt

__all__ = ["details", "run", "summarize"]

NAME = "coldstart"
DEVICES = ("cpu",)
SIZES = {False: 2**20, True: 2**14}
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: A child's common set-up: ``_canonical(seed)`` is a coalesced random COO of ``k`` entries, built
#: by the library under test (its import and its constructor).
_COMMON_TEMPLATE = """
import numpy as np
{library_import}
rng = np.random.default_rng(20240601)
k = {{k}}
side = max(64, k // 16)
def _canonical(seed):
    r = np.random.default_rng(seed)
    c = r.integers(0, side, (2, k))
    return {construct}
"""
_COMMON = _COMMON_TEMPLATE.format(
    library_import="import gpusparse as gs",
    construct="gs.COO(c, r.random(k) + 0.5, (side, side), check=False).coalesce()")

#: op -> (set-up, timed expression); the set-up runs in the child before the first call.
OPS = {
    "coalesce": ("n = 1 << 20; base = rng.integers(0, n, (2, k - k // 2)); "
                 "coords = np.concatenate([base, base[:, rng.integers(0, base.shape[1], k // 2)]], axis=1)"
                 "[:, rng.permutation(k)].copy(); data = rng.random(k)",
                 "gs.COO(coords, data, (n, n), check=False).coalesce()"),
    "add+sum(axis=0)": ("y = _canonical(1)", "(y + y).sum(axis=0)"),
    "sum(axis=0)": ("a = _canonical(1).tocsr()", "gs.sum(a, axis=0)"),
    "spmv": ("a = _canonical(1).tocsr(); vec = rng.random(side)", "a @ vec"),
    "index_select": ("a = _canonical(1).tocsr(); rows = rng.integers(0, side, k // 16)",
                     "gs.index_select(a, 0, rows)"),
    "transpose": ("x = _canonical(1)", "x.T.coalesce()"),
    "tocsr": ("x = _canonical(1)", "x.tocsr()"),
    "add": ("x = _canonical(1); y = _canonical(2)", "x + y"),
    "multiply": ("x = _canonical(1); y = _canonical(2)", "x * y"),
    "spmm": ("a = _canonical(1).tocsr(); mat = rng.random((side, 8))", "a @ mat"),
    "spgemm": ("k = k // 4; side = max(64, k // 16); a = _canonical(1).tocsr()",
               "a @ a"),
    "sum(axis=1)": ("a = _canonical(1).tocsr()", "gs.sum(a, axis=1)"),
    "max(axis=1)": ("a = _canonical(1).tocsr()", "gs.max(a, axis=1)"),
    "tocsc": ("a = _canonical(1).tocsr()", "a.tocsc()"),
    "slice": ("x = _canonical(1)", "x[side // 4: 3 * side // 4, side // 4: 3 * side // 4]"),
}
QUICK_OPS = ("coalesce", "add+sum(axis=0)", "spmv", "index_select")

_PYDATA_COMMON = _COMMON_TEMPLATE.format(
    library_import="import sparse",
    construct="sparse.COO(c, r.random(k) + 0.5, shape=(side, side), has_duplicates=True, sorted=False)")

#: The same operations in pydata sparse (its COO; GCXS for the compressed formats): op -> (set-up, call).
#: Its constructor sorts and sums duplicates, so ``coalesce`` times the constructor.
PYDATA_OPS = {
    "coalesce": (OPS["coalesce"][0],
                 "sparse.COO(coords, data, shape=(n, n), has_duplicates=True, sorted=False)"),
    "add+sum(axis=0)": ("y = _canonical(1)", "(y + y).sum(axis=0)"),
    "sum(axis=0)": ("a = _canonical(1)", "a.sum(axis=0)"),
    "spmv": ("a = _canonical(1); vec = rng.random(side)", "a @ vec"),
    "index_select": ("a = _canonical(1); rows = rng.integers(0, side, k // 16)", "a[rows]"),
    "transpose": ("x = _canonical(1)", "x.T"),
    "tocsr": ("x = _canonical(1)", "sparse.GCXS.from_coo(x, compressed_axes=(0,))"),
    "add": ("x = _canonical(1); y = _canonical(2)", "x + y"),
    "multiply": ("x = _canonical(1); y = _canonical(2)", "x * y"),
    "spmm": ("a = _canonical(1); mat = rng.random((side, 8))", "a @ mat"),
    "spgemm": ("k = k // 4; side = max(64, k // 16); a = _canonical(1)", "a @ a"),
    "sum(axis=1)": ("a = _canonical(1)", "a.sum(axis=1)"),
    "max(axis=1)": ("a = _canonical(1)", "a.max(axis=1)"),
    "tocsc": ("x = _canonical(1)", "sparse.GCXS.from_coo(x, compressed_axes=(1,))"),
    "slice": ("x = _canonical(1)", "x[side // 4: 3 * side // 4, side // 4: 3 * side // 4]"),
}

_CHILD = """
import json, sys, time
sys.path.insert(0, {repo!r})
t0 = time.perf_counter()
{common}
t_import = time.perf_counter() - t0
t0 = time.perf_counter()
{setup}
t_setup = time.perf_counter() - t0
fn = lambda: {call}
from numba.core import event as _event
_compiles, _open = [], []
class _Compiles(_event.Listener):
    # [kernel, seconds, depth] of every Numba compilation of the first call
    # (depth > 0: compiled inside another kernel's compilation, its time
    # included in that one's)
    def on_start(self, ev):
        _open.append(len(_compiles))
        _compiles.append([ev.data["dispatcher"].py_func.__qualname__, -time.perf_counter(), len(_open) - 1])
    def on_end(self, ev):
        _compiles[_open.pop()][1] += time.perf_counter()
_listener = _Compiles()
_event.register("numba:compile", _listener)
t0 = time.perf_counter()
fn()
first = time.perf_counter() - t0
_event.unregister("numba:compile", _listener)
out = {{"import_s": t_import, "setup_s": t_setup, "first_s": first, "compiles": len(_compiles),
        "compile_s": sum(c[1] for c in _compiles if c[2] == 0),
        "slowest": [c[:2] for c in sorted((c for c in _compiles if c[2] == 0), key=lambda c: -c[1])[:3]]}}
if {steady}:
    from benchmarks._timing import time_call
    out.update(time_call(fn, device="cpu", target_s={target}, warmed=True).as_dict())
print(json.dumps(out))
"""


def _child_snippets(op):
    """``(set-up, call)`` of ``op``."""
    return OPS[op]


def _run_child(op, k, cache, steady, target, timeout=1800, library="gpusparse", prebuilt=None):
    setup, call = (OPS if library == "gpusparse" else PYDATA_OPS)[op]
    common = (_COMMON if library == "gpusparse" else _PYDATA_COMMON).format(k=k)
    code = _CHILD.format(repo=REPO, common=common, setup=setup, call=call,
                         steady=steady, target=target)
    proc = subprocess.run([sys.executable, "-c", code], env=_env(cache, prebuilt), capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "child failed")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _env(cache, prebuilt=None):
    """A child's environment: its own Numba cache; the prebuilt cache ``prebuilt``, else a missing one."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, GPUSPARSE_DEVICE="cpu",
               GPUSPARSE_PREBUILT_CACHE=prebuilt or os.path.join(cache, "no-prebuilt-cache"))
    env.pop("GPUSPARSE_NUMBA_CACHE", None)
    return env


def _warm(cache, timeout=3600, portable=None):
    """``(seconds, summary)`` of a float64 warmup into ``cache``, or of building the prebuilt cache ``portable``."""
    code = ("import sys, json; sys.path.insert(0, %r); import gpusparse as gs; "
            "print(json.dumps(gs.warmup(dtypes=['float64'], progress=False, portable=%r)))"
            % (REPO, portable or False))
    env = _env(cache)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "warmup failed")
    return time.perf_counter() - t0, json.loads(proc.stdout.strip().splitlines()[-1])


def _slug(op):
    return op.replace("(", "").replace(")", "").replace("+", "-").replace("=", "")


def run(ctx):
    """Yield a ``warmup`` row, then one row per operation; see the module docstring."""
    k = getattr(ctx, "size", None) or SIZES[bool(ctx.quick)]
    ops = QUICK_OPS if ctx.quick else tuple(OPS)
    root = tempfile.mkdtemp(prefix="gpusparse-coldstart-")
    try:
        warm_cache = os.path.join(root, "warm")
        seconds, summary = _warm(warm_cache)
        row = {"bench": NAME, "case": "warmup", "impl": "gpusparse", "status": "ok", "entries": k,
               "warmup_s": seconds, "calls": summary["calls"], "load_1min": _report.load_1min()}
        ctx.log(f"  warmup (float64) {seconds:.1f} s, {summary['calls']} calls")
        yield row
        prebuilt = os.path.join(root, "prebuilt")
        seconds, summary = _warm(os.path.join(root, "prebuild-own"), portable=prebuilt)
        yield {"bench": NAME, "case": "prebuilt warmup", "impl": "gpusparse", "status": "ok", "entries": k,
               "warmup_s": seconds, "calls": summary["calls"], "load_1min": _report.load_1min()}
        ctx.log(f"  prebuilt warmup (float64, generic CPU) {seconds:.1f} s")
        for op in ops:
            row = {"bench": NAME, "case": op, "impl": "gpusparse", "entries": k}
            try:
                empty = _run_child(op, k, os.path.join(root, "empty-" + _slug(op)), False, 0)
                warm = _run_child(op, k, warm_cache, True, ctx.target_s)
                built = _run_child(op, k, os.path.join(root, "prebuilt-" + _slug(op)), False, 0, prebuilt=prebuilt)
            except (RuntimeError, subprocess.SubprocessError, ValueError) as exc:
                row.update(status="error", error=str(exc)[:300])
                yield row
                continue
            try:  # pydata sparse's first call with an empty cache of its own, and its steady state
                need("sparse", "pydata sparse")
                theirs = _run_child(op, k, os.path.join(root, "pydata-" + _slug(op)), True, ctx.target_s,
                                    library="pydata")
                row.update(pydata_first_empty_s=theirs["first_s"], pydata_steady_s=theirs["median_s"])
            except (Skip, RuntimeError, subprocess.SubprocessError, ValueError) as exc:
                row.update(pydata_error=str(exc)[:200])
            row.update({key: warm[key] for key in ("median_s", "min_s", "p25_s", "p75_s", "repeats")})
            row.update(status="ok", first_call_s=warm["first_s"], first_empty_s=empty["first_s"],
                       first_warm_s=warm["first_s"], steady_s=warm["median_s"],
                       first_prebuilt_s=built["first_s"], compiles_prebuilt=built["compiles"],
                       warm_minus_steady_s=warm["first_s"] - warm["median_s"],
                       compiles_empty=empty["compiles"], compile_empty_s=empty["compile_s"],
                       slowest_compiles=", ".join(f"{name} {sec:.1f} s" for name, sec in empty["slowest"]),
                       import_empty_s=empty["import_s"], import_warm_s=warm["import_s"],
                       setup_empty_s=empty["setup_s"], setup_warm_s=warm["setup_s"],
                       load_1min=_report.load_1min())
            ctx.log(f"  {op:<16} empty {ms(row['first_empty_s']):>9}  warm {ms(row['first_warm_s']):>9}  "
                    f"prebuilt {ms(row['first_prebuilt_s']):>9}  "
                    f"steady {ms(row['steady_s']):>9}  (load {row['load_1min']})")
            yield row
    finally:
        shutil.rmtree(root, ignore_errors=True)


# --------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------

def _table_rows(rows):
    return [r for r in rows if r.get("bench") == NAME and r.get("case") not in ("warmup", "prebuilt warmup")]


def summarize(rows) -> str:
    """One line per operation: the three times and warm first − steady."""
    def seconds(case):
        found = [r for r in rows if r.get("bench") == NAME and r.get("case") == case and r.get("status") == "ok"]
        return f"{found[0]['warmup_s']:.1f} s" if found else "not run"

    head = (f"`gpusparse.warmup(dtypes=['float64'])`: {seconds('warmup')}; with `portable=` (the prebuilt "
            f"cache): {seconds('prebuilt warmup')}.\n\n")
    return head + details(rows)


def details(rows) -> str:
    """A Markdown table with every operation."""
    return _report.details_table(_table_rows(rows), [
        ("operation", lambda r: r["case"]), ("entries", lambda r: f"{r['entries']:,}"),
        ("first call, empty cache", opt("first_empty_s", ms)),
        ("kernels compiled", opt("compiles_empty", "{:d}".format)),
        ("compiling", opt("compile_empty_s", ms)),
        ("slowest compilations", lambda r: r.get("slowest_compiles", "")),
        ("pydata first call, empty cache", lambda r: ms(r["pydata_first_empty_s"]) if "pydata_first_empty_s" in r
         else str(r.get("pydata_error", "")).replace("|", "/")[:60]),
        ("first call, warm cache", opt("first_warm_s", ms)),
        ("first call, prebuilt cache", opt("first_prebuilt_s", ms)),
        ("kernels compiled, prebuilt", opt("compiles_prebuilt", "{:d}".format)),
        ("steady state", opt("steady_s", ms)),
        ("pydata steady state", opt("pydata_steady_s", ms)),
        ("warm first − steady", opt("warm_minus_steady_s", ms)),
        ("load", opt("load_1min", "{:.1f}".format)),
        ("note", lambda r: str(r.get("error", "")).replace("|", "/")),
    ])
