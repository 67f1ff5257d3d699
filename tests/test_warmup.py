"""``gpusparse.warmup`` and ``python -m gpusparse warmup``: the CPU kernels come from the cache afterwards.

The cache is checked in subprocesses, each with its own ``NUMBA_CACHE_DIR``
(or its own home directory, for a read-only install): after a warmup, a
second process runs the benchmarked operations and records every Numba
compilation of a gpusparse kernel (Numba's ``numba:compile`` event, sent
only when a kernel is compiled rather than loaded from the cache); there
must be none. The same probe in a process with an empty cache must record
compilations, so that the test can fail. Nothing here is timed.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import gpusparse as gs
import gpusparse._warmup as warmup_module

ROOT = Path(__file__).resolve().parent.parent

# Runs the benchmarked operations of ``benchmarks/`` (at a size that takes
# the multi-threaded kernels) and prints the gpusparse kernels compiled.
PROBE = textwrap.dedent("""
    import json, sys
    import numpy as np
    from numba.core import event

    compiled = []

    class Listener(event.Listener):
        def on_start(self, ev):
            pass

        def on_end(self, ev):
            func = ev.data["dispatcher"].py_func
            if func.__module__.startswith("gpusparse"):
                compiled.append(f"{func.__module__}.{func.__qualname__}{ev.data['args']}")

    event.register("numba:compile", Listener())
    import gpusparse as gs

    which = sys.argv[1]
    rng = np.random.default_rng(0)
    n, side = 1 << 17, 1 << 13
    coords = rng.integers(0, side, (2, n))
    data = rng.random(n)
    x = gs.COO(coords, data, (side, side), check=False).coalesce()
    if which == "all":
        y = gs.COO(coords[::-1].copy(), data, (side, side), check=False).coalesce()
        a = x.tocsr()
        rows = rng.integers(0, side, 4096)
        vec, mat = rng.random(side), rng.random((side, 8))
        (x + y).coalesce(); x * y; a + y.tocsr()
        for axis in (0, 1, None):
            gs.sum(a, axis=axis); gs.max(a, axis=axis); gs.sum(x, axis=axis)
        a @ vec; a @ mat; a @ a
        gs.sampled_addmm(a, mat, mat.T.copy())
        gs.index_select(a, 0, rows); gs.index_select(x, 0, rows); gs.index_select(x, 1, rows)
        gs.index_select(a.tocsc(), 1, rows)
        a[side // 4: 3 * side // 4, side // 8: 7 * side // 8]
        x[side // 4: 3 * side // 4, side // 8: 7 * side // 8]
        x.T.coalesce(); a.tocsc(); x.reshape((side // 16, side * 16))
        gs.concatenate([x, x], axis=0); gs.concatenate([x, x], axis=1)
        gs.vstack([a, a]); gs.hstack([a, a])
        gs.softmax(x, axis=1); gs.softmax(x, axis=0)
        d = gs.COO(coords % 512, data, (512, 512), check=False).coalesce()
        d.todense(); d.tocsr().todense()
    print(json.dumps(compiled))
""")


def _env(**changes):
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "GPUSPARSE_NUMBA_CACHE")}
    env["GPUSPARSE_DEVICE"] = "cpu"
    env.update(changes)
    if "NUMBA_CACHE_DIR" in env:  # its own cache only: a prebuilt cache of the source tree is not seen
        env.setdefault("GPUSPARSE_PREBUILT_CACHE", os.path.join(env["NUMBA_CACHE_DIR"], "no-prebuilt-cache"))
    return env


def _run(args, env, cwd=None):
    proc = subprocess.run([sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=1800)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


def _probe(env, which="all", cwd=None):
    out = _run(["-c", PROBE, which], env, cwd).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_warmup_rejects_bad_dtypes():
    with pytest.raises(TypeError, match="dtypes"):
        gs.warmup(dtypes=["not a dtype"], progress=False)
    with pytest.raises(TypeError, match="dtypes"):
        gs.warmup(dtypes=[object()], progress=False)


def test_cli_rejects_bad_dtypes_and_keeps_the_bare_command():
    bad = subprocess.run([sys.executable, "-m", "gpusparse", "warmup", "--dtypes", "float64,nope"],
                         env=_env(), capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "--dtypes" in bad.stderr
    bare = _run(["-m", "gpusparse"], _env())
    assert f"gpusparse {gs.__version__}" in bare.stdout


def test_cli_rejects_bad_jobs():
    for jobs in ("0", "-2", "two"):
        bad = subprocess.run([sys.executable, "-m", "gpusparse", "warmup", "--jobs", jobs], env=_env(),
                             capture_output=True, text=True, timeout=300)
        assert bad.returncode == 2 and "--jobs" in bad.stderr, bad.stderr
    for jobs in (0, -1, 1.5, True, "2"):
        with pytest.raises(TypeError, match="jobs"):
            gs.warmup(dtypes=["float64"], progress=False, jobs=jobs)


def test_families_are_checked_and_scheduled_alone():
    for families in (["nope"], "construct", [], [3]):
        with pytest.raises(TypeError, match="families must"):
            gs.warmup(dtypes=["float64"], progress=False, families=families)
    bad = subprocess.run([sys.executable, "-m", "gpusparse", "warmup", "--families", "construct,nope"], env=_env(),
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "--families: families must" in bad.stderr, bad.stderr
    tasks, needs = warmup_module._schedule(["float64", "int32"], families=("construct", "products"))
    assert tasks == [("float64", "construct"), ("int32", "construct"), ("float64", "products"), ("int32", "products")]
    assert needs[("int32", "products")] == ("int32", "construct")
    tasks, needs = warmup_module._schedule(["float64", "int32"], families=("indexing",))
    assert tasks == [("float64", "indexing"), ("int32", "indexing")] and set(needs.values()) == {None}


def test_schedule_runs_each_task_once_after_what_it_needs():
    dtypes = list(warmup_module.DTYPES)
    tasks, needs = warmup_module._schedule(dtypes)
    assert sorted(tasks) == sorted((d, f) for d in dtypes for f in warmup_module.FAMILIES)
    assert tasks[0] == (dtypes[0], "construct") and needs[tasks[0]] is None
    for i, task in enumerate(tasks[1:], 1):
        assert needs[task] in tasks[:i], task
        assert needs[task][1] == "construct"
        assert needs[task][0] == (dtypes[0] if task[1] == "construct" else task[0])


def test_warmup_processes_keep_every_cache_entry(tmp_path):
    # Processes that add specialisations of one kernel to Numba's cache at the same time: each
    # entry must stay in the kernel's index and name its own data file. Without the warmup's lock
    # around the index's read-modify-write, entries are lost or swapped.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from numba.core.caching import IndexDataCacheFile

    index = IndexDataCacheFile(str(tmp_path), "kernel-1.py311", "stamp")
    keys = [f"signature {i}" for i in range(200)]
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(4, mp_context=ctx, initializer=warmup_module._init_worker,
                             initargs=(ctx.Lock(),)) as pool:
        for future in [pool.submit(index.save, key, f"code of {key}") for key in keys]:
            future.result()
    assert {key: index.load(key) for key in keys} == {key: f"code of {key}" for key in keys}


def test_cache_dir_follows_numba_cache_dir(tmp_path):
    out = _run(["-c", "import gpusparse._warmup as w; print(w.cache_dir())"],
               _env(NUMBA_CACHE_DIR=str(tmp_path))).stdout
    assert out.strip().startswith(str(tmp_path))


@pytest.mark.slow
def test_no_compilation_after_warmup(tmp_path):
    env = _env(NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    cold = _probe(_env(NUMBA_CACHE_DIR=str(tmp_path / "empty")), which="coalesce")
    assert cold, "an empty cache must compile the kernels (the probe sees compilations)"
    # two processes at least, so that their sharing of the cache is checked on any machine
    done = _run(["-m", "gpusparse", "warmup", "--dtypes", "float64", "--jobs", "2", "--quiet"], env)
    assert done.stdout == ""
    compiled = _probe(env)
    assert compiled == [], "compiled after a warmup:\n" + "\n".join(compiled)


@pytest.mark.slow
def test_no_compilation_with_a_prebuilt_cache(tmp_path):
    # the prebuilt cache of `warmup --portable`, built in the processes of one cache, is enough for a
    # process whose own cache is empty: every family's kernels load, compiled for the generic CPU
    prebuilt = tmp_path / "prebuilt"
    done = _run(["-m", "gpusparse", "warmup", "--dtypes", "float64", "--jobs", "2", "--quiet",
                 "--portable", str(prebuilt)], _env(NUMBA_CACHE_DIR=str(tmp_path / "builder")))
    assert done.stdout == ""
    assert not list((tmp_path / "builder").rglob("*.nbc")), "the build compiled into its own cache"
    env = _env(NUMBA_CACHE_DIR=str(tmp_path / "user"), GPUSPARSE_PREBUILT_CACHE=str(prebuilt))
    compiled = _probe(env)
    assert compiled == [], "compiled with a prebuilt cache:\n" + "\n".join(compiled)


def _read_only(*dirs):
    """A command prefix under which ``dirs`` cannot be written, and the clean-up; skips where impossible.

    Permission bits do not stop root: as root, each directory is
    bind-mounted read-only in a private mount namespace (``unshare -m``).
    """
    if os.geteuid() != 0:
        paths = [p for d in dirs for p in (d, *d.rglob("*"))]
        for path in paths:
            path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))

        def restore():
            for path in paths:
                path.chmod(path.stat().st_mode | stat.S_IWUSR)

        return [], restore
    unshare = shutil.which("unshare")
    if unshare is None or subprocess.run([unshare, "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("running as root without unshare -m: cannot make a read-only install")
    mounts = [f"mount --bind {q} {q} && mount -o remount,bind,ro {q} {q}" for q in map(shlex.quote, map(str, dirs))]
    return [unshare, "-m", "sh", "-c", " && ".join(mounts) + ' && exec "$@"', "sh"], (lambda: None)


def _read_only_install(tmp_path, home_writable):
    """``(run, site, home, tmp)``: ``run(args)`` runs Python on a read-only copy of the package."""
    site = tmp_path / "site"
    shutil.copytree(ROOT / "gpusparse", site / "gpusparse",
                    ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    env = _env(HOME=str(home), PYTHONPATH=str(site), XDG_CACHE_HOME=str(home / ".cache"), TMPDIR=str(tmp))
    prefix, restore = _read_only(site) if home_writable else _read_only(site, home)

    def run(args):
        proc = subprocess.run([*prefix, sys.executable, *args], env=env, cwd=tmp_path, capture_output=True,
                              text=True, timeout=1800)
        assert proc.returncode == 0, proc.stderr[-4000:]
        return proc.stdout

    return run, site, home, tmp, restore


_WHERE = "import gpusparse, gpusparse._warmup as w; print(gpusparse.__file__); print(w.cache_dir())"


def _compiled(run):
    return json.loads(run(["-c", PROBE, "coalesce"]).strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("home_writable", [True, False], ids=["per-user-cache", "read-only-home"])
def test_read_only_install_keeps_a_cache(tmp_path, home_writable):
    # A copy of the package that cannot be written: with a home directory,
    # Numba's per-user locator holds the cache; without a writable one, a
    # private directory in the temporary directory does. Either way the
    # second process loads what the first compiled.
    run, site, home, tmp, restore = _read_only_install(tmp_path, home_writable)
    expected = home / ".cache" / "numba" if home_writable else tmp / f"gpusparse-numba-{os.getuid()}"
    try:
        where = run(["-c", _WHERE]).split()
        assert where[0].startswith(str(site))
        assert where[1].startswith(str(expected))
        assert _compiled(run), "the first process compiles"
        assert list(expected.rglob("*.nbi")), "no index file in the cache"
        assert not list(site.rglob("*.nbi"))
        assert _compiled(run) == []
    finally:
        restore()


#: Peak resident memory allowed to ``python -m gpusparse warmup`` for one dtype,
#: compiling into an empty cache (it densified 32768 x 32768 arrays: 8.6 GB for
#: float64, 17 GB for complex128).
WARMUP_PEAK_BYTES = 1 << 30

_PEAK = textwrap.dedent("""
    import resource, subprocess, sys
    subprocess.run([sys.executable, "-m", "gpusparse", "warmup", "--dtypes", sys.argv[1], "--quiet"], check=True)
    print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
""")


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_warmup_peak_memory(tmp_path, dtype):
    # the warmup runs in a grandchild, so that RUSAGE_CHILDREN sees it alone
    out = _run(["-c", _PEAK, dtype], _env(NUMBA_CACHE_DIR=str(tmp_path / "cache"))).stdout
    peak = int(out.strip().splitlines()[-1])
    assert peak < WARMUP_PEAK_BYTES, f"the {dtype} warmup peaked at {peak / 2**20:.0f} MiB"
