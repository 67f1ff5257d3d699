"""Host-specific against portable (``NUMBA_CPU_NAME=generic``) CPU kernels: steady-state times and compile times.

A kernel cache compiled for Numba's ``generic`` x86-64 CPU (no feature
beyond the baseline: no AVX, no FMA) loads on any x86-64 machine, so it
could be built once and shipped; one compiled for the host uses every
feature the host has. This script measures what the portable code costs.
It runs :func:`child` in fresh processes, alternately with the host's CPU
name and with ``generic`` (``rounds`` processes each), each with its own
empty Numba cache directory, and prints a Markdown table: per operation
the median of the processes' medians for each variant, their ratio
(generic / host: above 1, the portable code is slower), and each
variant's first-call seconds summed over the operations (compilation
included).

Usage, from the repository root on a quiet machine::

    python -m benchmarks.ab_cpu_name [--size 20] [--rounds 2]

Operations (float64, ``2**size`` entries, 16 per row of a square matrix):
coalesce of shuffled coordinates with duplicates, ``x + y``, ``x * y`` of
coalesced COO arrays, ``sum(axis=0)`` and ``max(axis=1)`` of the CSR,
SpMV, SpMM with 8 columns, SpGEMM ``A @ A`` of a quarter-size matrix, CSR
to CSC, 2**size / 16 random rows of the CSR, and ``x.T.coalesce()``.

Examples
--------
>>> sorted(OPERATIONS)[:3]
['add', 'coalesce', 'index_select']
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

OPERATIONS = ("coalesce", "add", "multiply", "sum(axis=0)", "max(axis=1)", "spmv", "spmm8", "spgemm", "tocsc",
              "index_select", "transpose")


def _inputs(gs, np, k):
    rng = np.random.default_rng(0)
    side = max(k // 16, 16)

    def coo(n):
        return gs.COO(np.stack([rng.integers(0, side, n), rng.integers(0, side, n)]), rng.random(n), (side, side))

    shuffled = np.stack([rng.integers(0, side, k), rng.integers(0, side, k)])
    shuffled[:, k // 2:] = shuffled[:, : k - k // 2]
    values = rng.random(k)
    x, y = coo(k).coalesce(), coo(k).coalesce()
    a = x.tocsr()
    small = coo(k // 4).coalesce().tocsr()
    rows = rng.integers(0, side, max(k // 16, 1))
    vec, mat = rng.random(side), rng.random((side, 8))
    return {
        "coalesce": lambda: gs.COO(shuffled, values, (side, side), check=False).coalesce(),
        "add": lambda: x + y,
        "multiply": lambda: x * y,
        "sum(axis=0)": lambda: a.sum(axis=0),
        "max(axis=1)": lambda: a.max(axis=1),
        "spmv": lambda: a @ vec,
        "spmm8": lambda: a @ mat,
        "spgemm": lambda: small @ small,
        "tocsc": lambda: a.tocsc(),
        "index_select": lambda: gs.index_select(a, 0, rows),
        "transpose": lambda: x.T.coalesce(),
    }


def child(k: int, repeats: int = 15) -> dict:
    """``{op: {"first": seconds, "median": seconds}}`` in this process (its Numba settings as the parent set them)."""
    import numpy as np

    import gpusparse as gs
    out = {}
    for name, fn in _inputs(gs, np, k).items():
        start = time.perf_counter()
        fn()
        first = time.perf_counter() - start
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        out[name] = {"first": first, "median": statistics.median(times)}
    return out


def _run_child(k, cpu_name, cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, PYTHONPATH=os.getcwd(),
               GPUSPARSE_PREBUILT_CACHE=os.path.join(cache_dir, "no-prebuilt-cache"))  # each variant compiles
    env.pop("NUMBA_CPU_FEATURES", None)
    if cpu_name:
        env["NUMBA_CPU_NAME"] = cpu_name
    else:
        env.pop("NUMBA_CPU_NAME", None)
    code = f"import json, benchmarks.ab_cpu_name as m; print(json.dumps(m.child({k})))"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=20, help="log2 of the entries (default 20)")
    parser.add_argument("--rounds", type=int, default=2, help="processes per variant, alternating (default 2)")
    args = parser.parse_args(argv)
    k = 1 << args.size
    variants = {"host": None, "generic": "generic"}
    results = {v: [] for v in variants}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for v, cpu in (variants.items() if r % 2 == 0 else reversed(variants.items())):
                results[v].append(_run_child(k, cpu, os.path.join(tmp, f"{v}-{r}")))
    print(f"| operation (2**{args.size} entries) | host | generic | generic / host |")
    print("|---|---|---|---|")
    ratios = []
    for op in OPERATIONS:
        host = statistics.median(run[op]["median"] for run in results["host"])
        generic = statistics.median(run[op]["median"] for run in results["generic"])
        ratios.append(generic / host)
        print(f"| {op} | {host * 1e3:.3g} ms | {generic * 1e3:.3g} ms | {generic / host:.2f} |")
    first = {v: statistics.median(sum(run[op]["first"] for op in OPERATIONS) for run in results[v])
             for v in variants}
    print(f"\nGeometric mean of generic / host: {statistics.geometric_mean(ratios):.3f}. First calls summed "
          f"(empty cache, compilation included): host {first['host']:.1f} s, generic {first['generic']:.1f} s. "
          f"{args.rounds} processes per variant, alternating.")


if __name__ == "__main__":
    main()
