"""CUDA streams: gpusparse launches on the caller's current stream, CuPy's or torch's.

Three kinds of test, and what each proves:

* On the emulated CUDA device (``GPUSPARSE_CUDA_EMULATION=1``), the
  emulated ``cupy.cuda`` has a current stream (``Stream`` and
  ``ExternalStream`` are context managers, as CuPy's are) and every launch
  and allocation is tagged with the stream current when it was made (or
  the stream a kernel launch names). The tests run a coalesce, an
  elementwise operation and products inside ``with stream:`` and check
  every tag: nothing launches on the null stream behind the caller's back
  and no launch names a stream of its own. Work runs at once on the
  emulated device, so these tests prove which stream each launch asks
  for, not the ordering a GPU then enforces.
* torch here is a CPU build, so torch's CUDA streams are **mocked**:
  ``torch.cuda.is_initialized``, ``current_device`` and ``current_stream``
  are patched to report a made-up stream handle. With that, the
  torch-stream scope of the interop and of the autograd operators is
  checked to make that handle CuPy's current stream (and to join it with
  CuPy's where asked). For the autograd forward and backward, torch's CPU
  tensors are also **moved to the emulated device by a patched**
  ``gpusparse._components.to_array`` (and back by a patched ``to_tensor``),
  so that the operators' launches really happen on the emulated device and
  their tags can be read. Everything else there is unpatched.
* On a machine where ``torch.cuda`` is available, a producer on a
  non-default torch stream (a slow kernel, then the write) is followed by
  gpusparse reading the data: without the stream handling the read would
  race the write. Those tests are skipped everywhere else.
"""

from __future__ import annotations

import re
import types
from pathlib import Path

import numpy as np
import pytest

import gpusparse as gs
from gpusparse._kernels import cuda_emulation

torch = pytest.importorskip("torch")

from gpusparse.ops.interop import _torch as interop_torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: The handle the mocked torch stream reports (any value CuPy would never make).
TORCH_STREAM = 0x7A11

emulated = pytest.mark.skipif(not cuda_emulation.enabled(),
                              reason="launch tags need the emulated CUDA device (GPUSPARSE_CUDA_EMULATION=1)")
real_torch_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs torch with a CUDA device")
# The int64-index sparse-sparse product of the workload says it has no cuSPARSE before CUDA 13.
pytestmark = pytest.mark.filterwarnings("ignore:sparse @ sparse with int64 indices")


@pytest.fixture
def ecupy():
    from gpusparse._kernels.cuda_emulation._array import cupy
    return cupy


@pytest.fixture
def counting():
    from gpusparse._kernels.cuda_emulation import _counting
    return _counting.counting


@pytest.fixture
def mocked_torch_stream(monkeypatch):
    """torch reports CUDA initialised, device 0, and ``TORCH_STREAM`` as its current stream (all mocked)."""
    asked = []

    def current_stream(device=None):
        asked.append(device)
        return types.SimpleNamespace(cuda_stream=TORCH_STREAM, device_index=0)

    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "current_stream", current_stream)
    return asked


def _operands():
    """An uncoalesced COO, a second COO, a CSR and a dense matrix, all on ``cuda:0``."""
    rng = np.random.default_rng(7)
    coords = rng.integers(0, 6, size=(2, 30))
    x = gs.COO(coords, rng.standard_normal(30), shape=(6, 6), device="cuda:0")
    y = gs.COO(rng.integers(0, 6, size=(2, 12)), rng.standard_normal(12), shape=(6, 6),
               device="cuda:0").coalesce()
    from gpusparse._device import cuda_module
    dense = cuda_module().asarray(rng.standard_normal((6, 3)))
    return x, y, y.asformat("csr"), dense


def _workload(x, y, csr, dense):
    """A coalesce, an elementwise operation, a sparse-dense and a sparse-sparse product."""
    c = x.coalesce()
    s = c * 2.0 + y
    p = csr @ dense
    q = csr @ csr
    return c, s, p, q


def _all_on(counter, handle):
    assert counter.raw_launches > 0, "no kernel of cuda_kernels/ ran: the test proves nothing"
    assert dict(counter.launch_streams) == {handle: counter.launches}, counter.launch_streams
    assert set(counter.alloc_streams) <= {handle}, counter.alloc_streams


# --------------------------------------------------------------------------
# The emulated streams themselves
# --------------------------------------------------------------------------

@pytest.mark.gpu
@emulated
def test_emulated_current_stream_nests_and_tags_launches(ecupy, counting):
    null = ecupy.cuda.get_current_stream()
    assert null.ptr == 0 and null == ecupy.cuda.Stream.null
    s = ecupy.cuda.Stream(non_blocking=True)
    ext = ecupy.cuda.ExternalStream(TORCH_STREAM, 0)
    x = ecupy.arange(4)
    with counting() as c:
        with s:
            assert ecupy.cuda.get_current_stream() is s
            y = x + 1
            with ext:
                assert ecupy.cuda.get_current_stream() is ext
                z = y * 2
            w = z - 1
        v = w + 0
    assert ecupy.cuda.get_current_stream().ptr == 0
    assert c.launch_streams == {s.ptr: 2, TORCH_STREAM: 1, 0: 1}
    assert c.alloc_streams == {s.ptr: 2, TORCH_STREAM: 1, 0: 1}
    s.wait_event(ext.record())
    assert s.waited == [TORCH_STREAM]
    del v


@pytest.mark.gpu
@emulated
def test_a_launch_naming_a_stream_is_tagged_with_it(ecupy, counting):
    # What EmulatedKernel reports for ``kernel(grid, block, args, stream=s)``: s, not the current stream.
    from gpusparse._kernels.cuda_emulation import _counting
    with counting() as c:
        _counting.launch("k", 0, stream=0)
        _counting.launch("k", 0)
        with ecupy.cuda.ExternalStream(TORCH_STREAM):
            _counting.launch("k", 0)
    assert c.launch_streams == {0: 2, TORCH_STREAM: 1}


# --------------------------------------------------------------------------
# CuPy's current stream
# --------------------------------------------------------------------------

@pytest.mark.gpu
@emulated
def test_operations_launch_on_cupys_current_stream(ecupy, counting):
    operands = _operands()
    stream = ecupy.cuda.Stream(non_blocking=True)
    with stream, counting() as c:
        results = _workload(*operands)
    _all_on(c, stream.ptr)
    with counting() as c0:  # and on the null stream outside any block
        again = _workload(*operands)
    _all_on(c0, 0)
    for mine, ref in zip(results, again):
        np.testing.assert_allclose(_host(mine), _host(ref))


def _host(a):
    if isinstance(a, gs.SparseArray):
        a = a.todense()
    return a.get()


@pytest.mark.gpu
@emulated
def test_cupy_stream_used_by_use_is_current_too(ecupy, counting):
    x, *_ = _operands()
    stream = ecupy.cuda.Stream()
    stream.use()
    try:
        with counting() as c:
            x.coalesce()
    finally:
        ecupy.cuda.Stream.null.use()
    _all_on(c, stream.ptr)


# --------------------------------------------------------------------------
# torch's current stream (mocked), through torch_stream_scope
# --------------------------------------------------------------------------

def test_no_torch_cuda_no_scope():
    # A CPU build of torch (this one, unpatched): CUDA never initialised, the scope does nothing.
    assert interop_torch.torch_stream(torch.zeros(2)) is None
    with interop_torch.torch_stream_scope(torch.zeros(2), join=True) as stream:
        assert stream is None


@pytest.mark.gpu
@emulated
def test_torch_stream_scope_makes_torchs_stream_current(ecupy, counting, mocked_torch_stream):
    operands = _operands()
    with counting() as c:
        with interop_torch.torch_stream_scope() as stream:
            assert stream.ptr == TORCH_STREAM
            assert ecupy.cuda.get_current_stream() is stream
            _workload(*operands)
    assert ecupy.cuda.get_current_stream().ptr == 0
    _all_on(c, TORCH_STREAM)
    assert stream.waited == []  # no join unless asked: torch's stream is not tied to CuPy's
    assert mocked_torch_stream == [0]


@pytest.mark.gpu
@emulated
def test_torch_stream_scope_join_orders_both_ways(ecupy, mocked_torch_stream):
    outer = ecupy.cuda.Stream(non_blocking=True)
    with outer:
        with interop_torch.torch_stream_scope(join=True) as inner:
            assert inner.waited == [outer.ptr]  # torch's stream waits for CuPy's work before the block
            assert outer.waited == []
        assert outer.waited == [TORCH_STREAM]  # and CuPy's waits for the block's work after it
        assert ecupy.cuda.get_current_stream() is outer


@pytest.mark.gpu
@emulated
def test_torch_stream_scope_is_a_no_op_where_the_streams_are_one(ecupy, monkeypatch, mocked_torch_stream):
    monkeypatch.setattr(torch.cuda, "current_stream",
                        lambda device=None: types.SimpleNamespace(cuda_stream=0))  # torch's default stream
    with interop_torch.torch_stream_scope(join=True) as stream:
        assert stream is ecupy.cuda.Stream.null
    assert stream.waited == []


@pytest.mark.gpu
@emulated
def test_torch_interop_joins_the_torch_stream(ecupy, mocked_torch_stream):
    # from_torch / to_torch of CPU tensors and arrays (torch's CUDA tensors need a GPU): what is checked
    # is that each entry point enters the joined scope around its work.
    t = torch.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse()
    outer = ecupy.cuda.Stream(non_blocking=True)
    with outer:
        x = gs.from_torch(t)
        assert outer.waited == [TORCH_STREAM]
        back = gs.to_torch(x)
        assert outer.waited == [TORCH_STREAM, TORCH_STREAM]
    assert torch.equal(back.to_dense(), t.to_dense())


# --------------------------------------------------------------------------
# The autograd operators, forward and backward, on torch's (mocked) stream
# --------------------------------------------------------------------------

@pytest.fixture
def tensors_on_emulated_device(monkeypatch, ecupy):
    """torch's CPU tensors become emulated device arrays in gpusparse, and results come back (patched)."""
    import gpusparse._components as components
    from gpusparse.autograd import _ops

    original_to_array, original_to_tensor = components.to_array, _ops.to_tensor

    def to_array(obj, argument):
        if isinstance(obj, torch.Tensor):
            return ecupy.asarray(obj.detach().numpy()), True
        return original_to_array(obj, argument)

    def to_tensor(arr, *avoid):
        if isinstance(arr, ecupy.ndarray):
            return torch.from_numpy(arr.get())
        return original_to_tensor(arr, *avoid)

    monkeypatch.setattr(components, "to_array", to_array)
    monkeypatch.setattr(_ops, "to_tensor", to_tensor)


@pytest.mark.gpu
@emulated
@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_autograd_forward_and_backward_launch_on_torchs_stream(
        layout, counting, mocked_torch_stream, tensors_on_emulated_device):
    import gpusparse.autograd as ga
    g = torch.Generator().manual_seed(3)
    dense_a = torch.randn(5, 4, generator=g, dtype=torch.float64) * (torch.rand(5, 4, generator=g) < 0.5)
    a = (dense_a.to_sparse() if layout == "coo" else dense_a.to_sparse_csr()).requires_grad_()
    b = torch.randn(4, 3, generator=g, dtype=torch.float64, requires_grad=True)
    with counting() as forward:
        out = ga.mm(a, b)
    with counting() as backward:
        out.square().sum().backward()
    _all_on(forward, TORCH_STREAM)
    _all_on(backward, TORCH_STREAM)
    torch.testing.assert_close(out, dense_a @ b.detach())
    torch.testing.assert_close(b.grad, dense_a.T @ (2 * out.detach()))


@pytest.mark.gpu
@emulated
def test_autograd_coalesce_launches_on_torchs_stream(counting, mocked_torch_stream, tensors_on_emulated_device):
    import gpusparse.autograd as ga
    indices = torch.tensor([[2, 0, 2, 1], [1, 0, 1, 3]])
    values = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64, requires_grad=True)
    with counting() as c:
        out = ga.coalesce((indices, values, (3, 4)))
        dense = ga.to_dense(out)
        dense.sum().backward()
    _all_on(c, TORCH_STREAM)
    torch.testing.assert_close(values.grad, torch.ones(4, dtype=torch.float64))


# --------------------------------------------------------------------------
# Nothing in the library picks a stream of its own or synchronises the device
# --------------------------------------------------------------------------

def test_library_never_names_a_stream_or_synchronises_the_device():
    # Source check: launches take CuPy's current stream (no ``stream=`` argument), cuSPARSE is bound to
    # it (_cusparse._handle), and no code waits for the whole device where a stream would do.
    banned = re.compile(r"stream\s*=\s*(0|cupy\.cuda\.Stream\.null)\b|Stream\.null|deviceSynchronize|"
                        r"Device\([^)]*\)\.synchronize\(\)|\bcuda\.synchronize\(\)")
    offenders = []
    for path in sorted((ROOT / "gpusparse").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if "cuda_emulation" in rel or rel.endswith("demo.py"):  # the harness; the demo times on purpose
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if banned.search(line) and not line.lstrip().startswith("#"):
                offenders.append(f"{rel}:{number}: {line.strip()}")
    assert offenders == []
    cusparse = (ROOT / "gpusparse/_kernels/cuda/_cusparse.py").read_text(encoding="utf-8")
    assert "setStream(handle, cupy.cuda.get_current_stream().ptr)" in cusparse


# --------------------------------------------------------------------------
# On a GPU: a slow producer on a side stream, then gpusparse reads
# --------------------------------------------------------------------------

def _slow_write(target, source):
    """On torch's current stream: spin for a while, then copy ``source`` into ``target``."""
    torch.cuda._sleep(200_000_000)  # a few tenths of a second of spinning on the stream
    target.copy_(source)


@pytest.mark.gpu
@real_torch_cuda
def test_gpu_autograd_reads_after_a_producer_on_a_side_stream():
    import gpusparse.autograd as ga
    dev = torch.device("cuda")
    indices = torch.tensor([[0, 1, 2], [2, 0, 1]], device=dev)
    values = torch.zeros(3, dtype=torch.float64, device=dev)
    b = torch.ones(3, 2, dtype=torch.float64, device=dev)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        _slow_write(values, torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, device=dev))
        a = torch.sparse_coo_tensor(indices, values, (3, 3), is_coalesced=True)
        out = ga.mm(a, b)
        expected = torch.sparse.mm(a, b)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(out[:, 0], torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, device=dev))


@pytest.mark.gpu
@real_torch_cuda
def test_gpu_autograd_backward_on_the_forward_stream():
    import gpusparse.autograd as ga
    dev = torch.device("cuda")
    a = torch.tensor([[0.0, 2.0], [1.0, 0.0]], dtype=torch.float64, device=dev).to_sparse().requires_grad_()
    b = torch.zeros(2, 3, dtype=torch.float64, device=dev)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        _slow_write(b, torch.ones(2, 3, dtype=torch.float64, device=dev))
        b.requires_grad_()
        grad = torch.zeros(2, 3, dtype=torch.float64, device=dev)
        out = ga.mm(a, b)
        _slow_write(grad, torch.full((2, 3), 2.0, dtype=torch.float64, device=dev))
        out.backward(grad)  # the engine runs the backward on this stream, the forward's
    torch.cuda.synchronize()
    # b.grad = a.T @ grad; a.grad = (grad @ b.T) on a's pattern
    torch.testing.assert_close(b.grad, torch.tensor([[2.0], [4.0]], dtype=torch.float64, device=dev).expand(2, 3))
    torch.testing.assert_close(a.grad.to_dense(), torch.tensor([[0.0, 6.0], [6.0, 0.0]], dtype=torch.float64,
                                                               device=dev))


@pytest.mark.gpu
@real_torch_cuda
def test_gpu_from_torch_then_cupy_reads_after_the_side_stream():
    dev = torch.device("cuda")
    indices = torch.tensor([[0, 1, 2], [2, 0, 1]], device=dev)
    values = torch.zeros(3, dtype=torch.float64, device=dev)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        _slow_write(values, torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, device=dev))
        x = gs.from_torch(torch.sparse_coo_tensor(indices, values, (3, 3), is_coalesced=True), copy=True)
    dense = x.todense()  # on CuPy's stream, outside torch's: from_torch made it wait for the side stream
    expected = np.zeros((3, 3))
    expected[[0, 1, 2], [2, 0, 1]] = [1.0, 2.0, 3.0]
    np.testing.assert_array_equal(dense.get(), expected)
