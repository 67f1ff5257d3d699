"""gpusparse arrays between processes: pickle protocol 5 and dask.distributed's serializer families."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

pytest.importorskip("distributed")
from distributed.protocol import deserialize, serialize  # noqa: E402

import gpusparse as gs  # noqa: E402
from _helpers import assert_same_components, cuda_devices  # noqa: E402
from gpusparse._device import cuda_status  # noqa: E402


def _arrays(device):
    x = gs.random((6, 5), density=0.4, device=device, seed=2)
    dup = gs.COO([[0, 3, 0], [1, 2, 1]], [1.0, 2.0, 3.0], shape=(4, 3), device=device)  # uncoalesced
    nan_fill = gs.COO(x.coords, x.data.astype(np.float32), x.shape, fill_value=np.nan, device=device)
    hybrid = gs.COO(x.coords[:1], np.arange(x.nnz * 5, dtype=np.int32).reshape(x.nnz, 5), shape=(6, 5),
                    device=device, check=False).coalesce()
    return [x, dup, nan_fill, hybrid, x.tocsr(), x.tocsc(), (x > 0.5).tocsr(),
            gs.zeros((0, 4), format="csr", device=device), gs.full((3,), 2 + 1j, device=device)]


def _assert_same(y, x):
    assert type(y) is type(x)
    assert y.device == x.device
    assert_same_components(y, x)


@pytest.mark.parametrize("protocol", [4, 5])
def test_pickle_cpu(protocol):
    for x in _arrays("cpu"):
        buffers = []
        payload = pickle.dumps(x, protocol=protocol, buffer_callback=buffers.append if protocol == 5 else None)
        y = pickle.loads(payload, buffers=buffers)
        _assert_same(y, x)
        if protocol == 5 and x.nnz:  # the components travel out of band, not inside the payload
            assert len(buffers) == (2 if x.format == "coo" else 3)
            assert sum(b.raw().nbytes for b in buffers) == x.nbytes
            assert len(payload) < 1000


def test_dask_family_cpu_zero_copy():
    for x in _arrays("cpu"):
        header, frames = serialize(x, serializers=("dask",))
        assert header["serializer"] == "dask"
        y = deserialize(header, frames)
        _assert_same(y, x)
        if x.nnz:
            data = np.asarray(x._data)
            assert any(np.shares_memory(np.frombuffer(f, dtype=np.uint8), data.view(np.uint8).ravel())
                       for f in frames if memoryview(f).nbytes), "the data frame is a copy"
        if x.format == "coo":
            assert (y.sorted, y.unique) == (x.sorted, x.unique)
        y.data  # noqa: B018 -- components usable
        assert (y + 1).shape == x.shape


def test_cuda_family_refuses_cpu_arrays():
    x = gs.random((4, 4), density=0.5, device="cpu")
    header, frames = serialize(x, serializers=("cuda", "dask"))
    assert header["serializer"] == "dask"  # the cuda family refused, Dask moved on
    _assert_same(deserialize(header, frames), x)
    with pytest.raises(NotImplementedError, match="CUDA device"):
        from gpusparse.dask._serialize import cuda_dumps
        cuda_dumps(x)


@pytest.mark.gpu
@pytest.mark.parametrize("family", ["cuda", "dask"])
def test_families_on_a_gpu(family):
    """On a GPU: the ``cuda`` family keeps device frames; ``dask`` goes through host frames."""
    from gpusparse._kernels import cuda_emulation
    if cuda_emulation.enabled():
        pytest.skip("Dask's CuPy serializers need real CuPy arrays, not the emulated device's")
    devices = cuda_devices()
    if not devices:
        pytest.skip(f"no CUDA device: {cuda_status().reason}")
    for x in _arrays(devices[0]):
        header, frames = serialize(x, serializers=(family,))
        assert header["serializer"] == family
        if family == "cuda" and x.nnz:  # device frames, no host copy
            assert any(hasattr(f, "__cuda_array_interface__") for f in frames)
        _assert_same(deserialize(header, frames), x)
