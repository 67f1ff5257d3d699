"""Count the Numba specialisations each CPU operation compiles, and time them.

For each operation this starts a fresh Python process whose
``NUMBA_CACHE_DIR`` is a new, empty directory, builds its inputs without
running any gpusparse kernel (canonical COO and CSR arrays are assembled
with NumPy), runs the operation once per value dtype (the default warmup
dtypes) at two sizes (64 entries, the serial kernels, and 2**17, past the
size where the kernels go multi-threaded), then counts the specialisations
held by the dispatchers of gpusparse's kernel modules (``.signatures``).
The compile events Numba reports (``numba:compile``) give each kernel's
compile time, exclusive of the kernels compiled inside it.

Usage::

    python tools/count_specialisations.py                 # every operation
    python tools/count_specialisations.py add spmv        # some of them
    python tools/count_specialisations.py --kernels 20    # and the 20 slowest kernels to compile
    python tools/count_specialisations.py --json out.json # the raw figures
    python tools/count_specialisations.py --dtypes float64 --sizes 64

Each child compiles from nothing, so a full run takes minutes; the compile
times depend on the machine's load, which the table records.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: Value dtypes of :data:`gpusparse._warmup.DTYPES`.
DTYPES = ("float64", "float32", "int64", "int32", "bool", "complex128")
SIZES = (64, 1 << 17)

#: op -> expression over the inputs the child builds (see ``_CHILD``).
OPS = {
    "coalesce": "gs.COO(raw_coords, raw_data, shape, check=False).coalesce()",
    "add": "x + y",
    "multiply": "x * y",
    "sum(axis=0)": "gs.sum(x, axis=0)",
    "max(axis=1)": "gs.max(a, axis=1)",
    "spmv": "a @ vec",
    "spmm": "a @ mat",
    "spgemm": "a @ a",
    "index(int)": "a[rows]",
    "index(slice)": "x[side // 4: 3 * side // 4, side // 8: 7 * side // 8]",
    "transpose": "x.T.coalesce()",
    "tocsr": "x.tocsr()",
}

_CHILD = r"""
import json, sys, time, warnings
sys.path.insert(0, {repo!r})
import numpy as np
import numba
from numba.core import event
from numba.core.dispatcher import Dispatcher
import gpusparse as gs
from gpusparse.containers.coo import COO
from gpusparse.ops import _validate
from gpusparse._warmup import _values as values  # the warmup's operand values, so both compile alike

def canonical(rng, side, n, dtype):
    keys = np.unique(rng.integers(0, side * side, n))
    coords = np.stack(np.divmod(keys, side)).astype(np.int64)
    return COO._from_parts(*_validate.coo_components(coords, values(rng, keys.size, dtype), (side, side),
                                                     None, None, False), sorted=True, unique=True)

def to_csr(x, index_dtype):
    rows, cols = x.coords
    indptr = np.searchsorted(rows, np.arange(x.shape[0] + 1)).astype(index_dtype)
    return gs.CSR(indptr, cols.astype(index_dtype), x.data, shape=x.shape, check=False)

def dispatchers():
    found = {{}}
    for name, mod in list(sys.modules.items()):
        if not name.startswith("gpusparse.") or mod is None:
            continue
        for attr, obj in list(vars(mod).items()):
            disp = getattr(obj, "dispatcher", obj)
            if isinstance(disp, Dispatcher):
                found[id(disp)] = (name.rsplit(".", 1)[-1] + "." + disp.py_func.__name__, disp)
    return dict(found.values())

inputs = []
for dtype in {dtypes!r}:
    for n in {sizes!r}:
        rng = np.random.default_rng([20240601, n])
        side = max(16, n // 4)
        shape = (side, side)
        raw_coords = rng.integers(0, side, (2, n))
        raw_coords[:, n // 2:] = raw_coords[:, : n - n // 2]
        raw_data = values(rng, n, dtype)
        x = canonical(rng, side, n, dtype)
        y = canonical(rng, side, n, dtype)
        a = to_csr(x, np.int32)
        vec = values(rng, side, dtype)
        mat = values(rng, side * 8, dtype).reshape(side, 8)
        rows = rng.integers(0, side, max(4, n // 16))
        inputs.append((dtype, n, dict(gs=gs, raw_coords=raw_coords, raw_data=raw_data, shape=shape, side=side,
                                      x=x, y=y, a=a, vec=vec, mat=mat, rows=rows)))
before = {{k: len(d.signatures) for k, d in dispatchers().items()}}
assert not any(before.values()), before
stack, times, errors = [], {{}}, []
def on_event(ev):
    if ev.is_start:
        stack.append([time.perf_counter(), 0.0])
    else:
        t0, children = stack.pop()
        total = time.perf_counter() - t0
        if stack:
            stack[-1][1] += total
        disp = ev.data["dispatcher"]
        mod = disp.py_func.__module__ or "?"
        key = (mod.rsplit(".", 1)[-1] if mod.startswith("gpusparse.") else mod) + "." + disp.py_func.__name__
        rec = times.setdefault(key, [0, 0.0, 0.0])
        rec[0] += 1
        rec[1] += total - children
        rec[2] += total
class _L(event.Listener):
    def on_start(self, ev): on_event(ev)
    def on_end(self, ev): on_event(ev)
event.register("numba:compile", _L())
t0 = time.perf_counter()
with gs.device("cpu"), warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for dtype, n, env in inputs:
        try:
            eval({call!r}, env)
        except (TypeError, ValueError, NotImplementedError) as exc:
            errors.append(f"{{dtype}} {{n}}: {{type(exc).__name__}}: {{exc}}")
wall = time.perf_counter() - t0
counts = {{k: len(d.signatures) for k, d in dispatchers().items() if d.signatures}}
sigs = {{k: [str(s) for s in d.signatures] for k, d in dispatchers().items() if d.signatures}}
print(json.dumps(dict(wall_s=wall, counts=counts, times=times, errors=errors, signatures=sigs)))
"""


def run_op(op, dtypes, sizes, timeout=3600):
    """The child's figures for ``op``: wall_s, counts (kernel -> specialisations), times, errors, signatures."""
    code = _CHILD.format(repo=REPO, dtypes=list(dtypes), sizes=list(sizes), call=OPS[op])
    cache = tempfile.mkdtemp(prefix="gpusparse-count-")
    try:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, GPUSPARSE_DEVICE="cpu",
                   GPUSPARSE_PREBUILT_CACHE=os.path.join(cache, "no-prebuilt-cache"))  # compile everything
        env.pop("GPUSPARSE_NUMBA_CACHE", None)
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                              timeout=timeout, cwd=REPO)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip()[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _load():
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ops", nargs="*", help=f"operations (default all): {', '.join(OPS)}")
    parser.add_argument("--dtypes", nargs="+", default=list(DTYPES))
    parser.add_argument("--sizes", nargs="+", type=int, default=list(SIZES))
    parser.add_argument("--kernels", type=int, default=0, metavar="N",
                        help="also list the N kernels slowest to compile, over all the operations run")
    parser.add_argument("--json", metavar="PATH", help="write the raw figures here")
    args = parser.parse_args(argv)
    ops = args.ops or list(OPS)
    unknown = [op for op in ops if op not in OPS]
    if unknown:
        parser.error(f"unknown operations {unknown}; choose from {list(OPS)}")
    results = {}
    print(f"| operation | specialisations | kernels | compile s | wall s | load |")
    print(f"|---|---:|---:|---:|---:|---:|")
    for op in ops:
        res = run_op(op, args.dtypes, args.sizes)
        res["load_1min"] = _load()
        results[op] = res
        compile_s = sum(t[1] for t in res["times"].values())
        print(f"| {op} | {sum(res['counts'].values())} | {len(res['counts'])} | {compile_s:.1f} | "
              f"{res['wall_s']:.1f} | {res['load_1min']:.1f} |", flush=True)
        for err in res["errors"]:
            print(f"  skipped: {err}", file=sys.stderr)
    if args.kernels:
        # A kernel compiled by several operations: its slowest set of compiles.
        worst = {}
        for res in results.values():
            for key, (n, excl, incl) in res["times"].items():
                if key not in worst or excl > worst[key][1]:
                    worst[key] = (n, excl, incl)
        print()
        print("| kernel | compiles | seconds (own) | seconds / compile | seconds (with callees) |")
        print("|---|---:|---:|---:|---:|")
        for key, (n, excl, incl) in sorted(worst.items(), key=lambda kv: -kv[1][1])[: args.kernels]:
            print(f"| {key} | {n} | {excl:.2f} | {excl / n:.2f} | {incl:.2f} |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
