"""SuiteSparse:GraphBLAS (``python-graphblas``) as a CPU peer, and the thread count of every peer.

Every CPU peer that can run threads is held to gpusparse's: Numba's thread
count (:func:`threads`). :func:`module` imports ``graphblas`` (or raises
:class:`benchmarks._report.Skip`, which becomes a "skipped" row) and sets
``gb.ss.config["nthreads"]``; :func:`hold_torch` does the same for torch.
MKL is set in :mod:`benchmarks.bench_linalg`.

Operands are converted from SciPy or coordinates outside the timed region
(GraphBLAS 9 stores 64-bit indices, so the conversion copies); the timed
calls are the GraphBLAS operations with ``.new()`` and a ``wait()`` so no
work stays pending. :class:`Result` gives a GraphBLAS result the
``shape`` / ``tocoo()`` that the checks of the benchmark modules read.

Examples
--------
>>> import scipy.sparse as sp
>>> try:
...     gb = module()
... except Exception:
...     gb = None
>>> if gb is not None:
...     a = from_csr(sp.identity(3, format="csr"))
...     assert to_csr(a.mxm(a, gb.semiring.plus_times).new()).nnz == 3
"""

from __future__ import annotations

import os

import numpy as np

from benchmarks._report import Skip

__all__ = ["Result", "dense", "from_coo", "from_csr", "hold_torch", "module", "threads", "to_csr", "to_numpy",
           "wait"]


def threads() -> int:
    """The number of threads gpusparse's CPU kernels use (Numba's)."""
    try:
        import numba
        return numba.get_num_threads()
    except Exception:  # noqa: BLE001 (no Numba, or no thread pool)
        return os.cpu_count() or 1


def hold_torch(torch):
    """Set torch's intra-op thread count to :func:`threads` (CPU); return ``torch``."""
    if torch.get_num_threads() != threads():
        torch.set_num_threads(threads())
    return torch


def module():
    """``graphblas`` with ``nthreads`` = :func:`threads`, or :class:`Skip` when it is not installed."""
    try:
        import graphblas as gb
    except ImportError:
        raise Skip("python-graphblas not installed") from None
    except Exception as exc:  # noqa: BLE001 (the SuiteSparse library fails to load)
        raise Skip(f"python-graphblas does not load ({type(exc).__name__}: {str(exc)[:80]})") from None
    try:
        gb.ss.config["nthreads"] = threads()  # the first use picks the SuiteSparse backend
    except Exception as exc:  # noqa: BLE001 (another backend, or the library does not load)
        raise Skip(f"SuiteSparse:GraphBLAS unavailable ({type(exc).__name__}: {str(exc)[:80]})") from None
    return gb


def from_csr(m):
    """A GraphBLAS matrix (by rows) from a SciPy CSR/CSC/COO matrix or array (a copy)."""
    gb = module()
    return gb.io.from_scipy_sparse(m)


def from_coo(rows, cols, values, shape):
    """A GraphBLAS matrix built from 2-D coordinates (no duplicates expected)."""
    gb = module()
    return gb.Matrix.from_coo(np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64),
                              np.asarray(values), nrows=shape[0], ncols=shape[1])


def dense(x):
    """A full GraphBLAS vector (1-D ``x``) or row-major full matrix (2-D ``x``), copied."""
    gb = module()
    x = np.ascontiguousarray(x)
    if x.ndim == 1:
        return gb.Vector.ss.import_full(x)
    return gb.Matrix.ss.import_fullr(x)


def wait(obj):
    """``obj`` after finishing any pending work (SuiteSparse may defer it)."""
    obj.wait()
    return obj


def to_csr(m):
    """A GraphBLAS matrix as a SciPy CSR matrix (for checks, untimed)."""
    gb = module()
    return gb.io.to_scipy_sparse(m, format="csr")


def to_numpy(obj):
    """A GraphBLAS vector, matrix or scalar as a dense NumPy array (0 where nothing is stored)."""
    if hasattr(obj, "nvals") and hasattr(obj, "to_dense"):
        return np.asarray(obj.to_dense(fill_value=0))
    return np.asarray(obj.value if hasattr(obj, "value") else obj)


class Result:
    """A GraphBLAS result seen as a SciPy-like sparse matrix (``shape``, ``tocoo()``, ``tocsr()``).

    ``obj`` is a GraphBLAS matrix or the ``dict`` of ``Matrix.ss.export("csr"
    or "csc")`` (then ``shape`` is needed).
    """

    def __init__(self, obj, shape=None):
        self.obj = obj
        self._shape = tuple(shape) if shape is not None else tuple(obj.shape)

    @property
    def shape(self):
        return self._shape

    def tocsr(self):
        if isinstance(self.obj, dict):
            import scipy.sparse as sp
            e = self.obj
            make = sp.csr_matrix if e["format"] == "csr" else sp.csc_matrix
            return make((e["values"], e.get("col_indices", e.get("row_indices")), e["indptr"]),
                        shape=self._shape).tocsr()
        return to_csr(self.obj)

    def tocoo(self):
        return self.tocsr().tocoo()
