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

Run it once after installing, and when building a container image
(``python -m gpusparse warmup``). Where the package directory is not
writable (a system or read-only install), Numba keeps the cache in a
per-user directory (``~/.cache/numba`` on Linux, see :func:`cache_dir`);
``NUMBA_CACHE_DIR`` overrides both.
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np

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


def warmup(dtypes=None, progress=True) -> dict:
    """Compile gpusparse's CPU kernels for ``dtypes`` into Numba's on-disk cache.

    Every public operation family (construction and conversion, elementwise
    operations, reductions, products, indexing, manipulation) runs on small
    CPU arrays of each dtype, once below and once above the size where the
    kernels become multi-threaded, so that a later process loads the kernels
    from the cache instead of compiling them. Calls that a dtype does not
    support are skipped. Run it after installing gpusparse and when
    building container images; a second run only loads the cache.

    Parameters
    ----------
    dtypes : sequence of dtype-like, optional
        Value dtypes to compile for; default :data:`DTYPES` (float64,
        float32, int64, int32, bool, complex128). Indices are compiled as
        gpusparse uses them: int64 coordinates, int32 and int64 compressed
        indices.
    progress : bool, default True
        Show a progress bar on stderr (tqdm when it is installed, else a
        line per step).

    Returns
    -------
    dict
        ``seconds`` (wall time), ``steps`` (family, dtype and size
        triples run), ``calls`` (operations run), ``skipped`` (a line per
        call that the dtype does not support: family and error) and
        ``cache_dir`` (see :func:`cache_dir`).

    Raises
    ------
    TypeError
        If ``dtypes`` is not a sequence of dtypes.

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
    """
    import gpusparse as gs

    if dtypes is None:
        dtypes = DTYPES
    elif isinstance(dtypes, (str, np.dtype, type)):
        dtypes = (dtypes,)
    try:
        dtypes = [np.dtype(d) for d in dtypes]
    except TypeError as exc:
        raise TypeError(f"dtypes must be a sequence of dtypes, got {dtypes!r}: {exc}") from None
    start = time.perf_counter()
    sizes = (_SMALL, _LARGE)
    families = 6
    advance, close = _reporter(len(dtypes) * len(sizes) * families, progress)
    calls = 0
    skipped = []
    try:
        with gs.device("cpu"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for dtype in dtypes:
                for n in sizes:
                    for family, fns in _families(gs, dtype, n):
                        for fn in fns:
                            try:
                                fn()
                                calls += 1
                            except (TypeError, ValueError, NotImplementedError) as exc:
                                # an operation this dtype does not support
                                skipped.append(f"{dtype.name} {family}: {type(exc).__name__}: {exc}")
                        advance(f"{dtype.name} {family} ({n} entries)")
    finally:
        close()
    return {"seconds": time.perf_counter() - start, "steps": len(dtypes) * len(sizes) * families,
            "calls": calls, "skipped": skipped, "cache_dir": cache_dir()}
