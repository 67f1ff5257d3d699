"""Reading and writing files: Matrix Market and ``.npz``, against SciPy and fast_matrix_market.

One random 2-D float64 matrix of ``k`` entries (2**24 by default,
``--size`` to change it, 2**12 with ``--quick``) of shape ``(2**20, 2**20)``,
held as COO for Matrix Market and as CSR for ``.npz``, written to and read
from a temporary directory (the page cache, so these are parse/format and
compression costs, not disk ones).

Cases and implementations (each times the user-level call):

``mm-read``
    ``gpusparse``: ``gs.io.mmread(path)`` (a validated COO); ``scipy``:
    ``scipy.io.mmread(path)`` (a ``coo_array``); ``fmm``:
    ``fast_matrix_market.read_coo(path)`` (the triplet, no container).
``mm-write``
    ``gpusparse``: ``gs.io.mmwrite(path, x, symmetry="general")``;
    ``gpusparse-detect``: the same with ``symmetry=None`` (detection costs a
    CSR and a CSC conversion); ``scipy``: ``scipy.io.mmwrite(path, m)``
    (which looks for a symmetry only on matrices under 100 rows); ``fmm``:
    ``fast_matrix_market.mmwrite(path, m, symmetry="general")``.
``npz-read``, ``npz-write``
    ``gpusparse``: ``gs.load_npz``/``gs.save_npz``; ``scipy``:
    ``scipy.sparse.load_npz``/``save_npz``; ``-raw`` cases with
    ``compressed=False``.

Every read is checked (number of entries, shape) before it is timed, and the
implementations of one case are timed in alternating rounds. Rows carry
entries/s and ``speedup`` (peer time / gpusparse time). With ``--device
cuda`` only the reads run, onto the device: ``mm-read`` and ``npz-read``
(``-raw``) with ``device=`` (the file parsed on the host, the components
copied to the GPU), against SciPy's read followed by a cupyx matrix of the
result (skipped without cupyx) and fast_matrix_market's triplet copied with
CuPy.

Examples
--------
>>> from benchmarks._report import smoke
>>> smoke(run, size=256)
'gpusparse ok in 6 of 6 cases'
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

from benchmarks._report import by_case, ms, need, progress, run_case, table

__all__ = ["run", "summarize"]

NAME = "io"
SIDE = 2**20


def _matrix(k: int):
    import gpusparse as gs
    rng = np.random.default_rng(0)
    coords = rng.integers(0, SIDE, size=(2, k), dtype=np.int64)
    return gs.COO(coords, rng.random(k), shape=(SIDE, SIDE), device="cpu", check=False)


def _mm_read(path, device=None):
    def gpusparse(case, ctx):
        import gpusparse as gs
        return (lambda: gs.io.mmread(path, device=device)), None

    def scipy(case, ctx):
        sio = need("scipy.io", "scipy")
        if device is None:
            return (lambda: sio.mmread(path)), None
        csp = need("cupyx.scipy.sparse", "cupyx")
        return (lambda: csp.coo_matrix(sio.mmread(path))), None

    def fmm(case, ctx):
        f = need("fast_matrix_market")
        if device is None:
            return (lambda: f.read_coo(path)), (lambda out: out[0][0])
        cupy = need("cupy")

        def read():
            (data, (rows, cols)), _ = f.read_coo(path)
            return [cupy.asarray(a) for a in (data, rows, cols)]
        return read, (lambda out: out[0])

    return [("gpusparse", gpusparse, "ours"), ("scipy", scipy, "peer"), ("fmm", fmm, "reference")]


def _mm_write(path, x):
    def gpusparse(case, ctx, symmetry="general"):
        import gpusparse as gs
        return (lambda: gs.io.mmwrite(path, x, symmetry=symmetry)), (lambda out: path)

    def detect(case, ctx):
        return gpusparse(case, ctx, symmetry=None)

    def scipy(case, ctx):
        import gpusparse as gs
        sio = need("scipy.io", "scipy")
        m = gs.to_scipy(x)
        return (lambda: sio.mmwrite(path, m)), (lambda out: path)

    def fmm(case, ctx):
        import gpusparse as gs
        f = need("fast_matrix_market")
        m = gs.to_scipy(x)
        return (lambda: f.mmwrite(path, m, symmetry="general")), (lambda out: path)

    return [("gpusparse", gpusparse, "ours"), ("gpusparse-detect", detect, "ours"),
            ("scipy", scipy, "peer"), ("fmm", fmm, "reference")]


def _npz(path, x, compressed, read, device=None):
    def gpusparse(case, ctx):
        import gpusparse as gs
        if read:
            return (lambda: gs.load_npz(path, device=device)), None
        return (lambda: gs.save_npz(path, x, compressed=compressed)), (lambda out: path)

    def scipy(case, ctx):
        import gpusparse as gs
        sp = need("scipy.sparse", "scipy")
        if read:
            if device is None:
                return (lambda: sp.load_npz(path)), None
            csp = need("cupyx.scipy.sparse", "cupyx")
            return (lambda: csp.csr_matrix(sp.load_npz(path))), None
        m = gs.to_scipy(x)
        return (lambda: sp.save_npz(path, m, compressed=compressed)), (lambda out: path)

    return [("gpusparse", gpusparse, "ours"), ("scipy", scipy, "peer")]


def _check(k):
    def check(case, got, row):
        if isinstance(got, str):
            return None if os.path.getsize(got) > 0 else f"{got} is empty"
        n = got.nnz if hasattr(got, "nnz") else len(got)
        return None if n == k else f"{n} entries, expected {k}"
    return check


def _rates(k):
    def rates(case, row, seconds):
        row["entries_per_s"] = k / seconds
    return rates


def run(ctx):
    """Yield one row per (case, implementation)."""
    import gpusparse as gs
    k = ctx.size or (2**12 if ctx.quick else 2**24)
    x = _matrix(k)
    csr = x.tocsr()
    device = ctx.device if ctx.is_cuda else None
    with tempfile.TemporaryDirectory() as d:
        mtx, out, npz = os.path.join(d, "r.mtx"), os.path.join(d, "w.mtx"), os.path.join(d, "r.npz")
        gs.io.mmwrite(mtx, x, symmetry="general")
        ctx.log(f"io: {k} entries, Matrix Market file of {os.path.getsize(mtx) / 2**20:.1f} MiB"
                + (f", read onto {ctx.device}" if device else ""))
        cases = [("mm-read", _mm_read(mtx, device))]
        if device is None:
            cases.append(("mm-write", _mm_write(out, x)))
        for compressed, suffix in ((True, ""), (False, "-raw")):
            cases.append((f"npz-read{suffix}", _npz(npz, csr, compressed, True, device)))
            if device is None:
                cases.append((f"npz-write{suffix}", _npz(os.path.join(d, "w.npz"), csr, compressed, False)))
        for name, impls in cases:
            if name.startswith("npz-read"):  # the file this case reads
                gs.save_npz(npz, csr, compressed=not name.endswith("-raw"))
            base = {"bench": NAME, "case": name, "entries": k}
            yield from run_case(ctx, name, base, impls, _check(csr.nnz if name.startswith("npz") else k),
                                lambda row: progress(row, case_width=14, impl_width=16, entries=True),
                                _rates(k))


def summarize(rows) -> str:
    """A Markdown table: the median of every implementation per case, and its time over gpusparse's."""
    cases, peers = by_case(rows)
    head = ["case", "entries", "gpusparse"] + peers
    body = []
    for case, impls in cases.items():
        ours = impls.get("gpusparse", {})
        cells = [case, str(ours.get("entries", "")), ms(ours.get("median_s"))]
        for peer in peers:
            row = impls.get(peer)
            if row is None or row.get("status") != "ok":
                cells.append("—" if row is None else row["status"])
            else:
                ratio = row.get("speedup")
                cells.append(ms(row["median_s"]) + (f" ({ratio:.2f}×)" if ratio else ""))
        body.append(cells)
    return table(head, body) + "\n\n(×: the implementation's median over gpusparse's; above 1, gpusparse is faster)"
