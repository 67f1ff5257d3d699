"""A tour of gpusparse on a Graph500 R-MAT graph, timed against SciPy.

Run it with ``python -m gpusparse.demo`` (``--help`` for the options). On
the default device (a GPU when CuPy sees one, else the CPU; see
``GPUSPARSE_DEVICE``) it

1. generates an R-MAT graph with ``2**scale`` vertices and
   ``edge_factor * 2**scale`` edges, duplicates and self loops included
   (Graph500's generator with A, B, C = 0.57, 0.19, 0.19), with float32
   weights;
2. wraps the edge list in a :class:`gpusparse.COO` (validating the
   coordinates), coalesces it (sorts and sums duplicate edges) and converts it
   to :class:`gpusparse.CSR`;
3. hands the CSR to torch and back when torch is installed, showing whether
   the exchange copied the data;
4. does the same work with ``scipy.sparse`` on the CPU, checks that both
   give the same matrix, and prints both timings side by side.

A small graph is run through every step first so that Numba's compilation
(or NVRTC's on a GPU) is reported on its own line, and one untimed pass over
the full graph compiles the kernels that only large inputs take; the table
shows the pass after that.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np

import gpusparse as gs

#: Graph500's R-MAT quadrant probabilities (D = 1 - A - B - C = 0.05).
RMAT_ABC = (0.57, 0.19, 0.19)


def rmat_edges(scale, edge_factor, xp, seed=0, abc=RMAT_ABC):
    """Graph500's R-MAT edge list: ``(coords, weights)`` with ``edge_factor * 2**scale`` edges.

    Each of the ``scale`` bits of an edge's endpoints picks one quadrant of
    the adjacency matrix with probabilities A, B, C, D = 1 - A - B - C (one
    uniform draw per bit; Graph500's reference draws the row bit and then
    the column bit, which gives the same distribution); vertex labels are
    then permuted so that the heavy vertices are spread out. Duplicate edges
    and self loops are kept, as in the Graph500 generator. ``xp`` is
    ``numpy`` or ``cupy``; everything runs there, vectorised over the edges.
    ``coords`` is ``(2, n_edges)`` int64 (sources, then targets) and
    ``weights`` is float32 in [0, 1).

    Examples
    --------
    >>> import numpy as np
    >>> coords, w = rmat_edges(4, 2, np, seed=1)
    >>> coords.shape, coords.dtype, w.dtype, bool(coords.max() < 16)
    ((2, 32), dtype('int64'), dtype('float32'), True)
    """
    if not 1 <= scale <= 31:
        raise ValueError(f"scale must be in [1, 31], got {scale}")
    a, b, c = (np.float32(p) for p in abc)
    n_edges = edge_factor << scale
    rng = xp.random.default_rng(seed)
    rows = xp.zeros(n_edges, dtype=np.uint32)  # 32-bit while building: half the traffic
    cols = xp.zeros(n_edges, dtype=np.uint32)
    for _ in range(scale):  # one uniform draw picks the quadrant A, B, C or D
        u = rng.random(n_edges, dtype=np.float32)
        row_bit = u >= a + b  # C or D
        col_bit = (u >= a) ^ row_bit ^ (u >= a + b + c)  # B or D
        rows <<= np.uint32(1)
        rows |= row_bit
        cols <<= np.uint32(1)
        cols |= col_bit
    labels = xp.argsort(rng.random(1 << scale)).astype(np.int64)  # a random relabelling
    coords = xp.empty((2, n_edges), dtype=np.int64)
    xp.take(labels, rows, out=coords[0])
    xp.take(labels, cols, out=coords[1])
    weights = rng.random(n_edges, dtype=np.float32)
    return coords, weights


# ---------------------------------------------------------------------------
# timing helpers
# ---------------------------------------------------------------------------

def _synchronize(dev) -> None:
    if dev.is_cuda:
        import cupy
        cupy.cuda.Device(dev.index).synchronize()


def _timed(dev, func, *args):
    """``(result, seconds)`` of ``func(*args)``, waiting for the device to finish."""
    _synchronize(dev)
    start = time.perf_counter()
    out = func(*args)
    _synchronize(dev)
    return out, time.perf_counter() - start


def _pointer(arr) -> int:
    """Address of the first element of a NumPy, CuPy or torch array."""
    if hasattr(arr, "data_ptr"):
        return int(arr.data_ptr())
    if isinstance(arr, np.ndarray):
        return int(arr.__array_interface__["data"][0])
    return int(arr.data.ptr)


def _host(arr) -> np.ndarray:
    return arr.get() if hasattr(arr, "get") and not isinstance(arr, np.ndarray) else np.asarray(arr)


# ---------------------------------------------------------------------------
# the two pipelines
# ---------------------------------------------------------------------------

def gpusparse_pipeline(dev, coords, weights, n):
    """COO (validated) -> coalesce -> CSR on ``dev``; returns ``(csr, timings)``."""
    coo, t_coo = _timed(dev, lambda: gs.COO(coords, weights, shape=(n, n), device=dev))
    canon, t_coalesce = _timed(dev, coo.coalesce)
    csr, t_csr = _timed(dev, canon.tocsr)
    timings = [
        ("COO from edge list (validate)", t_coo),
        ("coalesce (sort + sum duplicates)", t_coalesce),
        ("COO -> CSR", t_csr),
    ]
    return csr, timings


def scipy_pipeline(coords, weights, n):
    """The same work with ``scipy.sparse`` on the CPU; returns ``(csr, timings)``."""
    import scipy.sparse as sps

    coords, weights = _host(coords), _host(weights)
    rows, cols = coords[0], coords[1]
    coo, t_coo = _timed(gs.Device("cpu"), lambda: sps.coo_array((weights, (rows, cols)), shape=(n, n)))

    def coalesce():
        coo.sum_duplicates()  # sorts row-major and sums, in place
        return coo

    canon, t_coalesce = _timed(gs.Device("cpu"), coalesce)
    csr, t_csr = _timed(gs.Device("cpu"), canon.tocsr)
    timings = [
        ("COO from edge list (validate)", t_coo),
        ("coalesce (sort + sum duplicates)", t_coalesce),
        ("COO -> CSR", t_csr),
    ]
    return csr, timings


def torch_round_trip(dev, csr):
    """``(seconds to torch, seconds back, zero-copy?)`` or None without torch or the converters."""
    to_torch = getattr(gs, "to_torch", None)
    from_torch = getattr(gs, "from_torch", None)
    if to_torch is None or from_torch is None:
        return None
    try:
        import torch  # noqa: F401
    except ImportError:
        return None
    with warnings.catch_warnings():  # torch: "Sparse CSR tensor support is in beta state"
        warnings.filterwarnings("ignore", message=".*[Ss]parse CSR tensor support", category=UserWarning)
        tensor, t_to = _timed(dev, to_torch, csr)
        back, t_from = _timed(dev, from_torch, tensor)
    zero_copy = (
        _pointer(tensor.values()) == _pointer(csr.data)
        and _pointer(back.data) == _pointer(csr.data)
    )
    return t_to, t_from, zero_copy


def _array_module(dev):
    if dev.is_cuda:
        import cupy
        return cupy
    return np


def _same_matrix(csr, ref) -> bool:
    """True if a gpusparse CSR and a SciPy CSR hold the same canonical matrix."""
    ref.sort_indices()
    return (
        np.array_equal(_host(csr.indptr), ref.indptr)
        and np.array_equal(_host(csr.indices), ref.indices)
        and np.allclose(_host(csr.data), ref.data, rtol=1e-5, atol=1e-6)
    )


# ---------------------------------------------------------------------------
# output
# ---------------------------------------------------------------------------

def _row(step, ours, theirs) -> str:
    ours_s = "-" if ours is None else f"{ours * 1e3:10.1f}"
    theirs_s = "-" if theirs is None else f"{theirs * 1e3:10.1f}"
    ratio = "-" if ours is None or theirs is None or ours == 0 else f"{theirs / ours:7.2f}x"
    return f"| {step:<34} | {ours_s:>14} | {theirs_s:>10} | {ratio:>12} |"


def _header() -> str:
    return (
        f"| {'step':<34} | {'gpusparse ms':>14} | {'SciPy ms':>10} | {'speed-up':>12} |\n"
        f"|{'-' * 36}|{'-' * 15}:|{'-' * 11}:|{'-' * 13}:|"
    )


def run(scale=20, edge_factor=16, seed=0, warmup_scale=10, out=None) -> bool:
    """Run the demo and print its report; returns True if both libraries agree."""
    out = out or sys.stdout

    def say(*parts):
        print(*parts, file=out, flush=True)

    dev = gs.default_device()
    xp = _array_module(dev)
    threads = ""
    if not dev.is_cuda:
        import numba
        threads = f", {numba.get_num_threads()} Numba threads"
    say(f"gpusparse {gs.__version__} demo on device {dev}{threads}")

    start = time.perf_counter()
    w_coords, w_weights = rmat_edges(min(warmup_scale, scale), edge_factor, xp, seed=seed + 1)
    w_csr, _ = gpusparse_pipeline(dev, w_coords, w_weights, 1 << min(warmup_scale, scale))
    torch_round_trip(dev, w_csr)
    _synchronize(dev)
    t_jit = time.perf_counter() - start

    n = 1 << scale
    (coords, weights), t_gen = _timed(dev, rmat_edges, scale, edge_factor, xp, seed)
    say(
        f"R-MAT graph: scale {scale} ({n:,} vertices), edge factor {edge_factor} "
        f"({coords.shape[1]:,} edges incl. duplicates and self loops), float32 weights; "
        f"generated on {dev} in {t_gen:.2f} s"
    )
    # Kernels taken only by large inputs (parallel paths, wider sort keys)
    # compile on their first call: one untimed pass keeps that out of the table.
    start = time.perf_counter()
    first, _ = gpusparse_pipeline(dev, coords, weights, n)
    torch_round_trip(dev, first)
    del first
    _synchronize(dev)
    say(f"warm-up: {t_jit:.2f} s on a small graph (JIT compilation), then "
        f"{time.perf_counter() - start:.2f} s for an untimed first pass over the full graph")

    csr, ours = gpusparse_pipeline(dev, coords, weights, n)
    ref, theirs = scipy_pipeline(coords, weights, n)
    same = _same_matrix(csr, ref)
    say(f"coalesced: {csr.nnz:,} distinct edges ({coords.shape[1] - csr.nnz:,} duplicates summed); "
        f"CSR index dtype {csr.index_dtype}")
    say("")
    say(_header())
    for (step, t_ours), (_, t_theirs) in zip(ours, theirs, strict=True):
        say(_row(step, t_ours, t_theirs))
    say(_row("total", sum(t for _, t in ours), sum(t for _, t in theirs)))
    trip = torch_round_trip(dev, csr)
    if trip is None:
        say(_row("torch round trip (not available)", None, None))
    else:
        t_to, t_from, zero_copy = trip
        say(_row("to_torch (CSR tensor)", t_to, None))
        say(_row("from_torch", t_from, None))
    say("")
    say("speed-up = SciPy time / gpusparse time (above 1: gpusparse is faster)")
    if trip is not None:
        say(f"torch round trip zero-copy: {'yes' if trip[2] else 'no'}")
    say(f"same matrix as SciPy: {'yes' if same else 'NO'}")
    return same


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gpusparse.demo",
        description="Build a Graph500 R-MAT graph as COO, coalesce it, convert it to CSR "
        "and compare with SciPy. Runs on the default device (GPUSPARSE_DEVICE).",
    )
    parser.add_argument("--scale", type=int, default=20,
                        help="log2 of the number of vertices (default 20)")
    parser.add_argument("--edge-factor", type=int, default=16,
                        help="edges per vertex before coalescing (default 16)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--device", default=None,
                        help="'cpu', 'cuda' or 'cuda:N' (default: the default device)")
    args = parser.parse_args(argv)
    if not 1 <= args.scale <= 30:
        parser.error("--scale must be in [1, 30]")
    if args.edge_factor < 1:
        parser.error("--edge-factor must be at least 1")
    if args.device is not None:
        with gs.device(args.device):
            ok = run(args.scale, args.edge_factor, args.seed)
    else:
        ok = run(args.scale, args.edge_factor, args.seed)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
