"""How gpusparse arrays travel between dask.distributed processes: component by component.

A sparse array is metadata (format, shape, fill value, flags) plus two or
three component arrays. :func:`register` teaches ``distributed.protocol``
two serializer families for :class:`gpusparse.SparseArray`; both put the
metadata in the (msgpack) header and hand each component to Dask's own
serializer of that family, so no byte is copied or pickled by gpusparse:

* ``"dask"`` (TCP comms, spilling to host memory): NumPy components become
  zero-copy frames; CuPy components go through Dask's CuPy serializer,
  which copies them to host frames, and come back as CuPy arrays;
* ``"cuda"`` (UCX comms with dask-cuda): CuPy components stay device
  frames (Dask's ``cuda_serialize`` for CuPy); a CPU array is refused
  (``NotImplementedError``), so Dask falls back to the next family.

Plain ``pickle`` needs no registration: with protocol 5 the NumPy
components of a CPU array travel as out-of-band buffers by themselves.
Deserialised arrays are rebuilt without validation (they were valid when
sent), on the device their components arrive on.
"""

from __future__ import annotations

import numpy as np

__all__ = ["register"]

_done = False


def _components(x) -> tuple:
    """The component arrays themselves (the public accessors hand out read-only views)."""
    if x.format == "coo":
        return (x._coords, x._data)
    return (x._indptr, x._indices, x._data)


def _dumps(x, serializers):
    from distributed.protocol.serialize import serialize_and_split
    headers, frames, counts = [], [], []
    for component in _components(x):
        header, parts = serialize_and_split(component, serializers=serializers, on_error="raise")
        headers.append(header)
        frames.extend(parts)
        counts.append(len(parts))
    fill = np.asarray(x.fill_value)
    header = {
        "format": x.format,
        "shape": list(x.shape),
        "fill": [fill.dtype.str, fill.tobytes()],
        "flags": [bool(getattr(x, "sorted", True)), bool(getattr(x, "unique", True))],
        "components": headers,
        "counts": counts,
    }
    return header, frames


def _loads(header, frames):
    from distributed.protocol.serialize import merge_and_deserialize
    from gpusparse._device import array_device
    from gpusparse.containers import COO, CSC, CSR
    arrays, start = [], 0
    for sub, count in zip(header["components"], header["counts"]):
        arrays.append(merge_and_deserialize(sub, frames[start:start + count]))
        start += count
    dtype, raw = header["fill"]
    fill = np.frombuffer(raw, dtype=np.dtype(dtype))[0]
    shape = tuple(header["shape"])
    device = array_device(arrays[-1])
    if header["format"] == "coo":
        sorted_, unique = header["flags"]
        return COO._from_parts(*arrays, shape, fill, device, sorted=sorted_, unique=unique)
    cls = CSR if header["format"] == "csr" else CSC
    return cls._from_parts(*arrays, shape, fill, device)


def dask_dumps(x):
    """The ``"dask"`` family: host frames (NumPy zero-copy; CuPy copied to the host)."""
    return _dumps(x, ("dask", "pickle"))


def cuda_dumps(x):
    """The ``"cuda"`` family: CuPy components as device frames.

    A CPU array raises ``NotImplementedError``, Dask's signal to try the next family.
    """
    if not x.device.is_cuda:
        raise NotImplementedError(f"the cuda serializer takes arrays on a CUDA device, not on {x.device}")
    return _dumps(x, ("cuda",))


def register() -> None:
    """Register both serializer families for :class:`gpusparse.SparseArray` (idempotent)."""
    global _done
    if _done:
        return
    from distributed.protocol.cuda import cuda_deserialize, cuda_serialize
    from distributed.protocol.serialize import dask_deserialize, dask_serialize

    from gpusparse.containers import SparseArray
    dask_serialize.register(SparseArray, dask_dumps)
    dask_deserialize.register(SparseArray, _loads)
    cuda_serialize.register(SparseArray, cuda_dumps)
    cuda_deserialize.register(SparseArray, _loads)
    _done = True
