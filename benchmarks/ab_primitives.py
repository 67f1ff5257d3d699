"""Time a few CPU primitives on fixed inputs, from whichever source tree is the working directory.

A/B comparisons of kernel changes on one machine: run it alternately from
two checkouts (``python -m benchmarks.ab_primitives`` with each tree as the
working directory puts that tree's ``gpusparse`` first on ``sys.path``)
and compare the medians. Prints one JSON object: kernel -> median seconds
of 15 warm calls.
"""

from __future__ import annotations

import json
import time

import numpy as np
import scipy.sparse as sp

from gpusparse._device import as_device, kernels_for


def _median_time(call, repeats=15) -> float:
    call()  # compile / warm
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main() -> None:
    k = kernels_for(as_device("cpu"))
    rng = np.random.default_rng(0)
    n = 1 << 21
    m4 = n // 4
    matrices = {
        "stencil": sp.diags([1.0] * 5, [-2, -1, 0, 1, 2], shape=(n, n), format="csr"),
        "uniform": sp.csr_matrix((rng.random(16 * m4), (rng.integers(0, m4, 16 * m4), rng.integers(0, m4, 16 * m4))),
                                 shape=(m4, m4)),
    }
    out = {}
    for name, m in matrices.items():
        indptr, indices, data = m.indptr.astype(np.int64), m.indices.astype(np.int64), m.data
        x, y = np.ones(m.shape[1]), np.empty(m.shape[0])
        b, c = np.ones((m.shape[1], 8)), np.empty((m.shape[0], 8))
        out[f"spmv-{name}"] = _median_time(lambda: k.spmv(indptr, indices, data, m.shape, x, y))
        out[f"spmm8-{name}"] = _median_time(lambda: k.spmm(indptr, indices, data, m.shape, b, c))
        out[f"segment_sum-{name}"] = _median_time(lambda: k.segment_reduce(data.reshape(-1, 1), indptr, "sum"))
        out[f"expand-{name}"] = _median_time(lambda: k.expand(indptr, data.size))
    coords = np.stack([rng.integers(0, 4096, 1 << 22), rng.integers(0, 4096, 1 << 22)])
    out["linearize"] = _median_time(lambda: k.linearize(coords, (4096, 4096)))
    rows = np.sort(coords[0])
    out["compress"] = _median_time(lambda: k.compress(rows, 4096, np.int64))
    index, values = rng.integers(0, 1 << 22, 1 << 22), rng.random((1 << 22, 1))
    out["gather"] = _median_time(lambda: k.gather(values, index))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
