"""Compile the CPU kernels into Numba's on-disk cache ahead of the first real call.

gpusparse's CPU kernels are compiled by Numba the first time they see a
combination of argument types (value dtype, index dtype, array layout), and
the result is cached on disk (see :mod:`gpusparse._kernels._numba`). A new
process then loads the kernels instead of compiling them: about a second
for everything against ten seconds and more per operation family.

:func:`warmup` fills that cache by running every public operation family on
small arrays, for each common dtype, at two sizes: a tiny one (the serial
kernels every small input takes) and one past the size where the kernels
switch to their multi-threaded variants. Running the operations themselves,
rather than compiling a list of signatures, compiles exactly the
specialisations that user calls reach -- including the read-only and
non-contiguous views the operations pass to the kernels -- and nothing
else; a signature list would have to be kept in step with every kernel and
every call site by hand.

The operation families of each dtype are compiled in worker processes,
as many at a time as there are usable cores (``--jobs``); the processes
share Numba's cache, taking turns at its index files (see
:func:`_init_worker`).

Run it once after installing, and when building a container image
(``python -m gpusparse warmup``). Where the package directory is not
writable (a system or read-only install), Numba keeps the cache in a
per-user directory (``~/.cache/numba`` on Linux, see :func:`cache_dir`);
``NUMBA_CACHE_DIR`` overrides both. ``portable=`` (``--portable``) builds
the prebuilt cache of :mod:`gpusparse._kernels._cache` instead: the same
kernels compiled for Numba's generic CPU, which every machine of the
architecture loads (the build step of wheels, images and shared installs).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import warnings

import numpy as np

from gpusparse._kernels._cache import BUILDING_ENV, GENERIC_CPU, PREBUILT_ENV, caching_enabled, prebuilt_dir

__all__ = ["DTYPES", "cache_dir", "warmup"]

#: Value dtypes compiled by default.
DTYPES = ("float64", "float32", "int64", "int32", "bool", "complex128")

#: Entries of the larger inputs: past ``PARALLEL_MIN`` (32768) of the kernels
#: in entries and in rows.
_LARGE = 1 << 17
_SMALL = 64
#: Largest side of the arrays the warmup densifies: 512 x 512 complex128 is 4 MiB.
_DENSE_SIDE = 512
_SEED = 20240601


def cache_dir() -> "str | None":
    """The directory where this process caches the compiled CPU kernels, or None without a cache.

    Numba's choice, asked of one of the kernels: ``NUMBA_CACHE_DIR`` where
    set; otherwise the package's own ``__pycache__`` directories where they
    are writable, else a per-user directory (``~/.cache/numba/...`` on
    Linux). None where caching is off (``GPUSPARSE_NUMBA_CACHE=0``) or no
    location is writable.

    Examples
    --------
    >>> isinstance(cache_dir(), (str, type(None)))
    True
    """
    from gpusparse._kernels.cpu._common import row_range
    path = row_range._cache.cache_path
    return path or None


def _values(rng, n, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(n) < 0.7
    if dtype.kind == "c":
        return (rng.random(n) + 0.5 + 1j * rng.random(n)).astype(dtype)
    if dtype.kind in "iu":
        return rng.integers(1, 5, n).astype(dtype)
    return (rng.random(n) + 0.5).astype(dtype)


def _coo(gs, rng, shape, n, dtype, *, duplicates=True):
    coords = np.stack([rng.integers(0, s, n) for s in shape])
    if duplicates:
        coords[:, n // 2:] = coords[:, : n - n // 2]
    return gs.COO(coords, _values(rng, n, dtype), shape, check=False)


def _families(gs, dtype, n):
    """``[(family, [callables])]`` for one dtype and input size."""
    rng = np.random.default_rng([_SEED, n])
    # 4 entries per row: at the larger size more than PARALLEL_MIN rows, and
    # keys of more than 22 bits (coalesce's bucket sort, not its LSD passes).
    side = max(16, n // 4)
    shape = (side, side)
    shape3 = (side // 4, 8, side // 2)
    a = _coo(gs, rng, shape, n, dtype)
    b = _coo(gs, rng, shape, n, dtype)
    a3 = _coo(gs, rng, shape3, n, dtype)
    # Densified arrays keep every entry count (and so the multi-threaded
    # kernels) but not the (side, side) shape, whose dense array would take
    # 8 GiB (float64) at the larger size: the kernels depend on the entries,
    # not on the dense size.
    d = _coo(gs, rng, (min(side, _DENSE_SIDE),) * 2, n, dtype)
    dt = np.dtype(dtype)
    numeric = dt.kind != "b"
    floating = dt.kind in "fc"
    state = {}

    def canonical():
        state["x"] = x = a.coalesce()
        state["y"] = b.coalesce()
        state["x3"] = a3.coalesce()
        state["csr"] = x.tocsr()
        state["csc"] = x.tocsc()
        return x

    def x():
        return state["x"]

    def csr():
        return state["csr"]

    def csr64():
        m = csr()
        return gs.CSR(m.indptr.astype(np.int64), m.indices.astype(np.int64), m.data, shape=m.shape, check=False)

    rows = rng.integers(0, side, max(4, n // 16))
    vec = _values(rng, side, dtype)
    mat = _values(rng, side * 8, dtype).reshape(side, 8)
    steps = [
        ("construct", [
            canonical,
            lambda: gs.COO(x().coords, x().data, shape, check=False).coalesce(),  # sorted input
            lambda: _coo(gs, rng, (1 << 20, 1 << 20), n, dtype).coalesce(),  # 40-bit keys
            lambda: a3.T.coalesce(),
            lambda: csr().tocoo(), lambda: state["csc"].tocsr(), lambda: x().tocsc(),
            lambda: d.coalesce().todense(), lambda: d.tocsr().todense(), lambda: gs.fromdense(csr()[:8].todense()),
            lambda: gs.COO(a.coords, a.data, shape).check(),
        ]),
        ("elementwise", [
            lambda: x() + state["y"], lambda: x() * state["y"], lambda: a + b, lambda: a * b,
            lambda: csr() + state["y"].tocsr(), lambda: csr() * state["y"].tocsr(),
            lambda: gs.maximum(x(), state["y"]), lambda: x() - state["y"] if numeric else x() ^ state["y"],
            lambda: x() * (2 if dt.kind != "b" else True), lambda: abs(x()), lambda: gs.where(x(), x(), state["y"]),
        ]),
        ("reductions", [
            *[(lambda arr=arr, ax=ax, op=op: getattr(gs, op)(arr(), axis=ax))
              for arr in (x, csr, lambda: a) for ax in (0, 1, None)
              for op in ("sum", "max", "min", "prod", "any", "all", "argmax", "argmin")],
            *[(lambda ax=ax, op=op: getattr(gs, op)(state["x3"], axis=ax))
              for ax in (0, 2, (1, 2), (0, 1)) for op in ("sum", "max", "min", "prod", "any", "all")],
            *([lambda: gs.mean(x(), axis=0), lambda: gs.mean(csr(), axis=1)] if numeric else []),
        ]),
        ("products", [
            lambda: csr() @ vec, lambda: csr() @ mat, lambda: csr() @ csr(), lambda: x() @ vec,
            lambda: x() @ mat, lambda: csr64() @ vec, lambda: csr64() @ mat, lambda: csr64() @ csr64(),
            lambda: state["csc"] @ vec, lambda: x() @ x(), lambda: vec @ csr(),
            lambda: gs.sampled_addmm(csr(), mat, mat.T.copy()),
        ]),
        ("indexing", [
            lambda: x()[side // 4: 3 * side // 4, side // 8: 7 * side // 8],
            lambda: csr()[side // 4: 3 * side // 4, side // 8: 7 * side // 8],
            lambda: gs.index_select(x(), 0, rows), lambda: gs.index_select(x(), 1, rows),
            lambda: gs.index_select(csr(), 0, rows), lambda: gs.index_select(state["csc"], 1, rows),
            lambda: x()[3], lambda: csr()[3], lambda: x()[rows], lambda: gs.nonzero(x()),
        ]),
        ("manipulation", [
            lambda: x().T.coalesce(), lambda: csr().T.tocsr(), lambda: csr().tocsc(),
            lambda: x().reshape((side // 16, side * 16)), lambda: x().reshape((side // 16, side * 16)).coalesce(),
            lambda: gs.concatenate([x(), state["y"]], axis=0), lambda: gs.concatenate([x(), state["y"]], axis=1),
            lambda: gs.vstack([csr(), csr()]), lambda: gs.hstack([csr(), csr()]),
            lambda: gs.tril(x()), lambda: gs.triu(csr()), lambda: gs.diagonal(x()),
            *([lambda: gs.softmax(x(), axis=1), lambda: gs.softmax(x(), axis=0)] if floating else []),
        ]),
    ]
    return steps


#: The operation families of :func:`_families`, in the order they are listed there.
FAMILIES = ("construct", "elementwise", "reductions", "products", "indexing", "manipulation")
_SIZES = (_SMALL, _LARGE)
#: A warmup process is replaced once a task leaves it holding more than this: it keeps every kernel
#: it compiled in memory (a process that compiles all six default dtypes grows past 1.3 GiB), and
#: one task adds less than 0.45 GiB (a whole dtype, compiled into an empty cache).
_RECYCLE_BYTES = 512 << 20


def _reporter(total, progress):
    """``(advance(label), close())`` for a progress bar on stderr: tqdm if importable, else lines."""
    if not progress:
        return (lambda label: None), (lambda: None)
    try:
        from tqdm.auto import tqdm
    except ImportError:
        done = [0]

        def advance(label):
            done[0] += 1
            print(f"gpusparse warmup [{done[0]}/{total}] {label}", file=sys.stderr, flush=True)

        return advance, (lambda: None)
    bar = tqdm(total=total, desc="gpusparse warmup", unit="step", file=sys.stderr)

    def advance(label):
        bar.set_postfix_str(label, refresh=False)
        bar.update(1)

    return advance, bar.close


def _rss() -> int:
    """This process's resident memory now in bytes (its peak where /proc is missing)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return _peak_rss()


def _peak_rss() -> int:
    """This process's peak resident memory in bytes (0 where unknown)."""
    try:
        import resource
    except ImportError:  # Windows
        return 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def _run_task(dtype_name, family):
    """Run one operation family for one dtype at both sizes; the task of one warmup process.

    The other families read the canonical arrays that ``construct`` builds
    first: they build them too (loading ``construct``'s kernels from the
    cache, as :func:`_schedule` runs them after it), without counting them.
    """
    import gpusparse as gs

    dtype = np.dtype(dtype_name)
    start, cpu = time.perf_counter(), time.process_time()
    calls = 0
    skipped = []
    with gs.device("cpu"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in _SIZES:
            steps = dict(_families(gs, dtype, n))
            fns = steps[family]
            if family != "construct":
                fns = [steps["construct"][0], *fns]
            for i, fn in enumerate(fns):
                try:
                    fn()
                    if family == "construct" or i > 0:
                        calls += 1
                except (TypeError, ValueError, NotImplementedError) as exc:
                    # an operation this dtype does not support
                    skipped.append(f"{dtype.name} {family}: {type(exc).__name__}: {exc}")
    return {"calls": calls, "skipped": skipped, "seconds": time.perf_counter() - start,
            "cpu_seconds": time.process_time() - cpu, "pid": os.getpid(), "peak_rss": _peak_rss(), "rss": _rss()}


def _schedule(dtypes, families=FAMILIES):
    """``(tasks, needs)``: the ``(dtype, family)`` tasks in the order to start them, and what each waits for.

    ``construct`` of the first dtype runs alone first: it compiles the
    dtype-independent index kernels (sorting, compressing, searching) that
    every other task calls, so that they are compiled once rather than by
    each process at the same time. The other dtypes' ``construct`` tasks
    follow, then the other families dtype by dtype; a family waits for
    its dtype's ``construct``, whose canonical arrays it reads.

    >>> tasks, needs = _schedule(["float64", "int32"])
    >>> tasks[:3]
    [('float64', 'construct'), ('int32', 'construct'), ('float64', 'elementwise')]
    >>> needs[("int32", "construct")], needs[("int32", "products")]
    (('float64', 'construct'), ('int32', 'construct'))
    >>> _schedule(["float32"], families=("products",))
    ([('float32', 'products')], {('float32', 'products'): None})
    """
    first = dtypes[0]
    tasks = [(d, "construct") for d in dtypes] + [(d, f) for d in dtypes for f in FAMILIES[1:]]
    tasks = [(d, f) for d, f in tasks if f in families]
    scheduled = set(tasks)

    def need(d, f):
        wanted = None if (d, f) == (first, "construct") else (first if f == "construct" else d, "construct")
        return wanted if wanted in scheduled else None

    return tasks, {(d, f): need(d, f) for d, f in tasks}


def _cache_lock_supported() -> bool:
    from numba.core import caching
    cls = getattr(caching, "IndexDataCacheFile", None)
    return cls is not None and callable(getattr(cls, "save", None)) and callable(getattr(cls, "load", None))


def _init_worker(lock):
    """Serialise this process's reads and writes of Numba's cache index with the other warmup processes.

    Numba writes each cache file atomically (a temporary file, then
    ``os.replace``), but adding a specialisation to a kernel's index is a
    read-modify-write of one ``.nbi`` file per kernel, and the new data file
    takes the first number the index it read leaves free: two processes
    adding different specialisations of one kernel at the same time would
    lose one index entry, or pair one's entry with the other's data file.
    Holding ``lock`` around :meth:`IndexDataCacheFile.save` (and ``load``,
    which reads the index, then the data file the index names) makes each
    of them one step for the other warmup processes. Compiling, the slow
    part, runs outside the lock.
    """
    if not _cache_lock_supported():  # then the warmup runs one process
        return
    from numba.core import caching

    cls = caching.IndexDataCacheFile
    save, load = cls.save, cls.load

    def locked_save(self, key, data):
        with lock:
            return save(self, key, data)

    def locked_load(self, key):
        with lock:
            return load(self, key)

    cls.save, cls.load = locked_save, locked_load


def _portable_environment(portable) -> dict:
    """The worker processes' environment for building the prebuilt cache into ``portable`` (True: the default place)."""
    if not caching_enabled():
        raise ValueError("warmup(portable=...) builds a kernel cache, but caching is off (GPUSPARSE_NUMBA_CACHE=0)")
    if portable is True:
        directory = prebuilt_dir()
    elif isinstance(portable, (str, os.PathLike)) and os.fspath(portable):
        directory = os.path.abspath(os.fspath(portable))
    else:
        raise TypeError(f"portable must be True, False or a directory, got {portable!r}")
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise PermissionError(f"portable: cannot create the prebuilt cache directory {directory}: {exc}") from None
    if not os.access(directory, os.W_OK):
        raise PermissionError(f"portable: the prebuilt cache directory {directory} is not writable")
    return {PREBUILT_ENV: directory, BUILDING_ENV: "1", "NUMBA_CPU_NAME": GENERIC_CPU, "NUMBA_CPU_FEATURES": ""}


@contextlib.contextmanager
def _environment(updates):
    """Set ``updates`` in ``os.environ`` (which spawned worker processes inherit) while the block runs."""
    saved = {name: os.environ.get(name) for name in updates}
    os.environ.update(updates)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _default_jobs() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _run_parallel(tasks, needs, jobs, on_done):
    """Run ``tasks`` in ``jobs`` spawned processes, each when its need is done; ``on_done(task, result)``.

    Each process is a one-worker pool, given one task at a time (so that
    the order of ``tasks`` holds), and replaced once a task leaves it
    holding more than :data:`_RECYCLE_BYTES`: a process keeps every kernel
    it compiled in memory.
    """
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    ctx = multiprocessing.get_context("spawn")
    lock = ctx.Lock()

    def start():
        return ProcessPoolExecutor(max_workers=1, mp_context=ctx, initializer=_init_worker, initargs=(lock,))

    idle = [start() for _ in range(jobs)]
    done = set()
    waiting = list(tasks)
    running = {}
    try:
        while waiting or running:
            for task in [t for t in waiting if needs[t] is None or needs[t] in done]:
                if not idle:
                    break
                waiting.remove(task)
                pool = idle.pop()
                running[pool.submit(_run_task, *task)] = (task, pool)
            if not running:
                raise RuntimeError(f"warmup tasks wait for tasks that never run: {waiting}")
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                task, pool = running.pop(future)
                try:
                    result = future.result()
                except BrokenProcessPool as exc:
                    raise RuntimeError(f"a warmup process died running {task[0]} {task[1]} (out of memory? "
                                       f"try fewer jobs): {exc}") from exc
                finally:
                    idle.append(pool)
                if result["rss"] > _RECYCLE_BYTES and (waiting or running):
                    idle.remove(pool)
                    pool.shutdown(wait=False)
                    idle.append(start())
                done.add(task)
                on_done(task, result)
    finally:
        for pool in idle + [pool for _, pool in running.values()]:
            pool.shutdown(wait=True, cancel_futures=True)


def warmup(dtypes=None, progress=True, jobs=None, portable=False, families=None) -> dict:
    """Compile gpusparse's CPU kernels for ``dtypes`` into Numba's on-disk cache.

    Every public operation family (construction and conversion, elementwise
    operations, reductions, products, indexing, manipulation) runs on small
    CPU arrays of each dtype, once below and once above the size where the
    kernels become multi-threaded, so that a later process loads the kernels
    from the cache instead of compiling them. Calls that a dtype does not
    support are skipped. Run it after installing gpusparse and when
    building container images; a second run only loads the cache.

    The (dtype, family) tasks run in ``jobs`` worker processes (started
    with ``spawn``), each task when the ones it needs have filled the
    cache: the first dtype's construction first, alone, as it compiles the
    dtype-independent index kernels that every task calls; then each
    dtype's construction, which the other families of the dtype need. The
    processes take turns to read and write Numba's cache index, so that no
    specialisation is lost (see :func:`_init_worker`). A process that
    has come to hold more than 0.5 GiB of compiled kernels is replaced
    after its task, so that each stays under 1 GiB. Without a cache to
    fill (``GPUSPARSE_NUMBA_CACHE=0``) the tasks run in this process
    instead, compiling the kernels for it alone.

    Parameters
    ----------
    dtypes : sequence of dtype-like, optional
        Value dtypes to compile for; default :data:`DTYPES` (float64,
        float32, int64, int32, bool, complex128). Indices are compiled as
        gpusparse uses them: int64 coordinates, int32 and int64 compressed
        indices.
    progress : bool, default True
        Show a progress bar on stderr (tqdm when it is installed, else a
        line per task), advanced as the tasks finish.
    jobs : int, optional
        Worker processes; default the cores this process may run on
        (``os.sched_getaffinity``). Each holds less than 1 GiB.
    families : sequence of str, optional
        The operation families to compile, of :data:`FAMILIES`
        (``construct``, ``elementwise``, ``reductions``, ``products``,
        ``indexing``, ``manipulation``); default all. ``construct`` alone
        covers building, coalescing and converting arrays.
    portable : bool or str, default False
        Build the prebuilt cache instead (:mod:`gpusparse._kernels._cache`):
        compile for Numba's ``generic`` CPU of this architecture into the
        package's ``_kernels/_prebuilt`` directory, or into the directory
        given here (``GPUSPARSE_PREBUILT_CACHE`` tells processes to read it
        there). Any machine of the same architecture, Python and Numba then
        loads these kernels instead of compiling them: the build step of a
        wheel, a container image or a shared installation.

    Returns
    -------
    dict
        ``seconds`` (wall time), ``steps`` (family, dtype and size
        triples run), ``calls`` (operations run), ``skipped`` (a line per
        call that the dtype does not support: family and error),
        ``cache_dir`` (see :func:`cache_dir`), ``jobs`` (processes at a time),
        ``cpu_seconds`` (CPU time of the tasks, all processes together)
        ``peak_rss`` (peak resident bytes of each process that ran
        tasks, largest first, 0 where unknown) and ``tasks`` (per
        ``(dtype, family)`` task in the order started: ``dtype``,
        ``family``, ``seconds`` and ``cpu_seconds``).

    Raises
    ------
    TypeError
        If ``dtypes`` is not a sequence of dtypes, or ``jobs`` not a
        positive integer.
    RuntimeError
        If a worker process dies (for instance killed for memory).
    ValueError
        If ``portable`` is asked for while caching is off
        (``GPUSPARSE_NUMBA_CACHE=0``).
    PermissionError
        If the prebuilt cache's directory cannot be written.

    Examples
    --------
    >>> import gpusparse as gs
    >>> summary = gs.warmup(dtypes=["float64"], progress=False)  # doctest: +SKIP
    >>> summary["steps"], summary["skipped"]  # doctest: +SKIP
    (12, [])
    >>> gs.warmup(dtypes=["float65"])
    Traceback (most recent call last):
    ...
    TypeError: dtypes must be a sequence of dtypes, got ['float65']: data type 'float65' not understood
    >>> gs.warmup(jobs=0)
    Traceback (most recent call last):
    ...
    TypeError: jobs must be a positive integer, got 0
    """
    if dtypes is None:
        dtypes = DTYPES
    elif isinstance(dtypes, (str, np.dtype, type)):
        dtypes = (dtypes,)
    try:
        dtypes = [np.dtype(d) for d in dtypes]
    except TypeError as exc:
        raise TypeError(f"dtypes must be a sequence of dtypes, got {dtypes!r}: {exc}") from None
    if jobs is None:
        jobs = _default_jobs()
    elif isinstance(jobs, bool) or not isinstance(jobs, (int, np.integer)) or jobs < 1:
        raise TypeError(f"jobs must be a positive integer, got {jobs!r}")
    if families is None:
        families = FAMILIES
    elif isinstance(families, str) or not all(isinstance(f, str) and f in FAMILIES for f in families):
        raise TypeError(f"families must be a sequence of {FAMILIES}, got {families!r}")
    families = tuple(dict.fromkeys(families))
    if not families:
        raise TypeError(f"families must name at least one of {FAMILIES}")
    dtypes = list(dict.fromkeys(dtypes))  # each once
    start = time.perf_counter()
    tasks, needs = _schedule([d.name for d in dtypes], families)
    environment = _portable_environment(portable) if portable is not False else {}
    where = environment.get(PREBUILT_ENV) or cache_dir()
    jobs = int(min(jobs, len(tasks))) if _cache_lock_supported() else 1
    advance, close = _reporter(len(tasks), progress)
    results = {}

    def on_done(task, result):
        results[task] = result
        advance(f"{task[0]} {task[1]}")

    try:
        if where is not None:
            with _environment(environment):
                _run_parallel(tasks, needs, jobs, on_done)
        else:  # without a cache, worker processes would compile for nothing: compile for this one
            for task in tasks:
                on_done(task, _run_task(*task))
    finally:
        close()
    done = [results[t] for t in tasks if t in results]
    peaks = {}
    for r in done:
        peaks[r["pid"]] = max(peaks.get(r["pid"], 0), r["peak_rss"])
    return {"seconds": time.perf_counter() - start, "steps": len(dtypes) * len(_SIZES) * len(families),
            "calls": sum(r["calls"] for r in done), "skipped": [s for r in done for s in r["skipped"]],
            "cache_dir": where, "jobs": jobs, "cpu_seconds": sum(r["cpu_seconds"] for r in done),
            "peak_rss": sorted(peaks.values(), reverse=True),
            "tasks": [{"dtype": t[0], "family": t[1], "seconds": results[t]["seconds"],
                       "cpu_seconds": results[t]["cpu_seconds"]} for t in tasks if t in results]}
