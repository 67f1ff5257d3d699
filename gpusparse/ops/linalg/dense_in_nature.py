"""Running a dense routine of the device's array library on sparse operands.

The array API standard's ``fft`` extension and the decompositions and
solvers of its ``linalg`` extension (``inv``, ``solve``, ``qr``, ``svd``,
``eigh``, ...) produce dense results from any non-trivial input: an inverse
or a Fourier transform of a sparse array stores every element. gpusparse
offers them so that array API code runs unchanged, as it offers ``sort``
and ``cumulative_sum``: :func:`dense_call` densifies the operands on their
own device (NumPy on the CPU, CuPy on a GPU: no host round trip), runs the
device library's routine, and returns sparse arrays with fill value 0 that
store every non-zero element. They take the memory of the dense arrays
(an estimate of three dense copies that cannot fit raises ``MemoryError``
before anything is densified); for
large sparse systems use the iterative solvers of
:func:`gpusparse.linalg.aslinearoperator`, :func:`gpusparse.linalg.lobpcg`
or :func:`gpusparse.linalg.svd_lowrank` instead.
"""

from __future__ import annotations

import gpusparse._memory as _memory
from gpusparse._backend import backend_of

__all__ = ["dense_call"]

#: The peak of a dense routine, in copies of its densified operands: the
#: operands, the results (an inverse, the factors of a decomposition) and
#: the library's workspace.
_WORKING_COPIES = 3


def _is_sparse(x) -> bool:
    from gpusparse.containers import SparseArray
    return isinstance(x, SparseArray)


def _as_sparse(result, be):
    from gpusparse.ops.creation import fromdense_on
    if isinstance(result, tuple):
        return tuple(_as_sparse(r, be) for r in result)
    return fromdense_on(be.xp.asarray(result), be, fill_value=0)


def dense_call(name, arrays, compute, result_type=None):
    """``compute(xp, *dense)`` on the densified ``arrays``; array results come back sparse.

    ``arrays`` are gpusparse arrays on one device (``TypeError`` naming the
    argument otherwise); ``compute`` gets that device's array module and
    the dense arrays, and returns an array or a tuple of arrays, gathered
    into ``result_type`` (a named tuple) when given.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.asarray(np.array([[2.0, 0.0], [0.0, 4.0]]), device="cpu")
    >>> dense_call("inv", (x,), lambda xp, a: xp.linalg.inv(a)).todense()
    array([[0.5 , 0.  ],
           [0.  , 0.25]])
    """
    from gpusparse.ops import convert
    names = ("x",) if len(arrays) == 1 else tuple(f"x{i + 1}" for i in range(len(arrays)))
    for argument, a in zip(names, arrays):
        if not _is_sparse(a):
            raise TypeError(f"{name}: {argument} must be a gpusparse array, got {type(a).__name__}")
    be = backend_of(*arrays, what=names)
    dev, xp = be.device, be.xp
    dense = sum(_memory.nbytes(a.shape, a.dtype) for a in arrays)
    shapes = ", ".join(f"{argument} {a.shape} {a.dtype.name}" for argument, a in zip(names, arrays))
    _memory.require(_WORKING_COPIES * dense, dev,
                    f"densifying {shapes} ({_memory.describe(dense)}) with the routine's results and workspace",
                    name)
    with be.scope(), _memory.operation(name):
        out = compute(xp, *(convert.to_dense(a, be=be) for a in arrays))
        out = _as_sparse(tuple(out) if isinstance(out, tuple) else out, be)
    return result_type(*out) if result_type is not None else out
