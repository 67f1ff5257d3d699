"""Devices: parsing, the default device, availability errors, mixed devices, protocols."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import gpusparse as gs
from gpusparse import Device
from gpusparse import _device
from gpusparse._device import CudaStatus, as_device, cuda_status, default_device, device_of, kernels_for, xp_for

NO_CUDA = cuda_status().device_count == 0
needs_no_cuda = pytest.mark.skipif(not NO_CUDA, reason="a CUDA device is present")


# --------------------------------------------------------------------------
# Device
# --------------------------------------------------------------------------

@pytest.mark.parametrize("spec, kind, index, text", [
    ("cpu", "cpu", 0, "cpu"),
    ("CPU", "cpu", 0, "cpu"),
    (" cpu ", "cpu", 0, "cpu"),
    ("cuda", "cuda", 0, "cuda:0"),
    ("gpu", "cuda", 0, "cuda:0"),
    ("cuda:0", "cuda", 0, "cuda:0"),
    ("CUDA:12", "cuda", 12, "cuda:12"),
])
def test_parse(spec, kind, index, text):
    dev = Device.parse(spec)
    assert (dev.kind, dev.index) == (kind, index)
    assert str(dev) == text and repr(dev) == f"Device('{text}')"
    assert dev.is_cuda == (kind == "cuda")
    assert Device.parse(dev) is dev


def test_equality_and_hashing():
    cuda0 = Device("cuda", 0)
    assert cuda0 == Device.parse("cuda") and cuda0 == "cuda:0" and cuda0 == "cuda" and "cuda" == cuda0
    assert Device("cpu") == "cpu" and Device("cpu") != "cuda"
    assert Device("cuda", 1) != Device("cuda", 0)
    assert Device("cpu") != "not a device"  # comparing with a bad string is just False
    assert Device("cpu") != 3
    assert len({Device("cpu"), Device.parse("cpu"), Device("cuda", 0), Device.parse("cuda:0")}) == 2


@pytest.mark.parametrize("spec", ["tpu", "cuda:", "cuda:-1", "cuda:x", "", "cpu:0", "cuda:1:2", "cuda 0"])
def test_bad_device_strings_raise_value_error(spec):
    with pytest.raises(ValueError, match="device"):
        Device.parse(spec)
    with pytest.raises(ValueError, match="device"):
        as_device(spec)


@pytest.mark.parametrize("spec", [0, 1.5, None, ["cpu"]])
def test_non_string_devices_raise_type_error(spec):
    with pytest.raises(TypeError, match="device"):
        Device.parse(spec)


def test_bad_device_in_a_constructor():
    with pytest.raises(ValueError, match="device"):
        gs.COO([[0]], [1.0], device="tpu")
    with pytest.raises(ValueError, match="device"):
        gs.zeros((2,), device="cuda:x")


# --------------------------------------------------------------------------
# The default device
# --------------------------------------------------------------------------

@pytest.fixture
def no_env(monkeypatch):
    monkeypatch.delenv("GPUSPARSE_DEVICE", raising=False)


def _fake_cuda(monkeypatch, count):
    status = CudaStatus(count, None if count else "simulated: no GPU", "0.0" if count else None)
    monkeypatch.setattr(_device, "cuda_status", lambda: status)


def test_default_is_cuda_when_present(monkeypatch, no_env):
    _fake_cuda(monkeypatch, 2)
    assert default_device() == Device("cuda", 0)
    _fake_cuda(monkeypatch, 0)
    assert default_device() == Device("cpu")


@pytest.mark.parametrize("value", ["", "auto", "AUTO"])
def test_empty_or_auto_environment_means_automatic(monkeypatch, value):
    monkeypatch.setenv("GPUSPARSE_DEVICE", value)
    _fake_cuda(monkeypatch, 1)
    assert default_device() == Device("cuda", 0)
    _fake_cuda(monkeypatch, 0)
    assert default_device() == Device("cpu")


def test_environment_beats_detection(monkeypatch):
    _fake_cuda(monkeypatch, 1)
    monkeypatch.setenv("GPUSPARSE_DEVICE", "cpu")
    assert default_device() == Device("cpu")
    _fake_cuda(monkeypatch, 2)
    monkeypatch.setenv("GPUSPARSE_DEVICE", "cuda:1")
    assert default_device() == Device("cuda", 1)


@pytest.mark.parametrize("value", ["cuda", "cuda:0", "GPU"])
def test_environment_asking_for_cuda_without_a_gpu_says_why(monkeypatch, value):
    _fake_cuda(monkeypatch, 0)
    monkeypatch.setenv("GPUSPARSE_DEVICE", value)
    with pytest.raises(RuntimeError, match=f"GPUSPARSE_DEVICE='{value}'.*simulated: no GPU"):
        default_device()
    with pytest.raises(RuntimeError, match="GPUSPARSE_DEVICE"):
        gs.zeros((2,))
    with pytest.raises(RuntimeError, match="GPUSPARSE_DEVICE"):
        gs.COO([[0]], [1.0])
    with gs.device("cpu"):  # an explicit choice still works
        assert gs.zeros((2,)).device == Device("cpu")
    assert gs.zeros((2,), device="cpu").device == Device("cpu")


def test_environment_asking_for_a_missing_cuda_ordinal(monkeypatch):
    _fake_cuda(monkeypatch, 2)
    monkeypatch.setenv("GPUSPARSE_DEVICE", "cuda:2")
    with pytest.raises(ValueError, match=r"GPUSPARSE_DEVICE='cuda:2'.*2 CUDA device\(s\) found"):
        default_device()


_ENV_PROBE = textwrap.dedent(
    """
    import sys
    {prelude}
    import gpusparse as gs
    try:
        x = gs.zeros((2,))
    except Exception as exc:
        print("ERROR", type(exc).__name__, exc)
    else:
        print("DEVICE", x.device)
    """
)


def _run_with_environment(prelude="", **variables) -> str:
    """Run the probe in a fresh interpreter with ``variables`` set; returns its output."""
    root = str(Path(__file__).resolve().parents[1])
    env = {k: v for k, v in os.environ.items()
           if k not in ("GPUSPARSE_DEVICE", "GPUSPARSE_CUDA_EMULATION", "PYTHONPATH")}
    env.update(variables, PYTHONPATH=root)
    result = subprocess.run([sys.executable, "-c", _ENV_PROBE.format(prelude=prelude)],
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_environment_cuda_without_cupy_in_a_fresh_interpreter():
    # No CuPy (as on a machine without a GPU): a clear error where the default device is resolved.
    out = _run_with_environment(prelude="sys.modules['cupy'] = None", GPUSPARSE_DEVICE="cuda")
    assert "ERROR RuntimeError GPUSPARSE_DEVICE='cuda' asks for cuda:0, but CUDA is not available: " \
           "CuPy is not importable (ModuleNotFoundError" in out, out


def test_environment_cuda_means_the_emulated_device_under_emulation():
    out = _run_with_environment(prelude="sys.modules['cupy'] = None", GPUSPARSE_DEVICE="cuda",
                                GPUSPARSE_CUDA_EMULATION="1")
    assert out.strip() == "DEVICE cuda:0", out


def test_context_beats_environment(monkeypatch):
    _fake_cuda(monkeypatch, 4)
    monkeypatch.setenv("GPUSPARSE_DEVICE", "cuda:3")
    with gs.device("cpu") as dev:
        assert dev == Device("cpu")
        assert default_device() == Device("cpu")
        assert gs.zeros((2,)).device == Device("cpu")
    assert default_device() == Device("cuda", 3)


def test_contexts_nest_and_restore(monkeypatch, no_env):
    _fake_cuda(monkeypatch, 2)
    outer = default_device()
    with gs.device("cpu"):
        with gs.device(Device("cpu")):
            assert default_device() == "cpu"
        assert default_device() == "cpu"
        with pytest.raises(KeyError):
            with gs.device("cpu"):
                raise KeyError("boom")
        assert default_device() == "cpu"
    assert default_device() == outer


def test_bad_environment_value_names_the_variable(monkeypatch):
    monkeypatch.setenv("GPUSPARSE_DEVICE", "tpu")
    with pytest.raises(ValueError, match="GPUSPARSE_DEVICE"):
        default_device()
    with pytest.raises(ValueError, match="GPUSPARSE_DEVICE"):
        gs.zeros((2,))


# --------------------------------------------------------------------------
# CUDA availability
# --------------------------------------------------------------------------

def test_cuda_status_never_raises_and_explains():
    status = cuda_status()
    assert status.device_count >= 0
    if status.device_count == 0:
        assert isinstance(status.reason, str) and status.reason
    else:
        assert status.reason is None


@needs_no_cuda
@pytest.mark.parametrize("spec", ["cuda", "cuda:0", "gpu"])
def test_requesting_cuda_without_a_gpu_says_why(spec):
    reason = cuda_status().reason
    with pytest.raises(RuntimeError, match="not available") as info:
        as_device(spec)
    assert reason in str(info.value)
    with pytest.raises(RuntimeError, match="not available"):
        gs.zeros((2, 2), device=spec)
    with pytest.raises(RuntimeError, match="not available"):
        gs.COO(np.array([[0]]), np.array([1.0]), device=spec)
    with pytest.raises(RuntimeError, match="not available"):
        gs.zeros((2,), device="cpu").to(spec)
    with pytest.raises(RuntimeError, match="not available"):
        with gs.device(spec):
            pass


def test_cuda_ordinal_beyond_the_devices_found(monkeypatch):
    count = max(cuda_status().device_count, 1)
    if cuda_status().device_count == 0:
        _fake_cuda(monkeypatch, 1)
    with pytest.raises(ValueError, match=f"cuda:{count}"):
        as_device(f"cuda:{count}")


# --------------------------------------------------------------------------
# device_of, xp_for, kernels_for
# --------------------------------------------------------------------------

class _OnCuda:
    """Stands in for a container on a CUDA device (no GPU needed)."""

    device = Device("cuda", 0)


def test_device_of_mixed_devices_names_both():
    with pytest.raises(ValueError, match=r"cpu.*cuda:0"):
        device_of(np.zeros(3), _OnCuda())
    with pytest.raises(ValueError, match=r"\bx\b.*cpu.*\by\b.*cuda:0"):
        device_of(np.zeros(3), _OnCuda(), what=("x", "y"))
    with pytest.raises(ValueError, match="cuda:0.*cpu"):
        device_of(None, _OnCuda(), gs.zeros((2,), device="cpu"))


def test_device_of_agreeing_operands(monkeypatch, no_env):
    assert device_of(np.zeros(2), gs.zeros((2,), device="cpu"), None, 3.0) == Device("cpu")
    assert device_of(_OnCuda(), None) == Device("cuda", 0)
    _fake_cuda(monkeypatch, 0)
    assert device_of() == Device("cpu")  # nothing to go by: the default device
    assert device_of(None, 1) == Device("cpu")


def test_xp_and_kernels_for_the_cpu():
    from gpusparse._kernels import cpu
    assert xp_for(Device("cpu")) is np
    assert kernels_for(Device("cpu")) is cpu


# --------------------------------------------------------------------------
# Protocols: no implicit densification, no sparse DLPack
# --------------------------------------------------------------------------

def _examples(device):
    x = gs.COO(np.array([[0, 1], [1, 0]]), np.array([1.0, 2.0]), device=device)
    return [x, x.tocsr(), x.tocsc()]


def test_dlpack_raises_buffer_error_with_a_hint(device):
    for x in _examples(device):
        with pytest.raises(BufferError, match="todense"):
            x.__dlpack__()
        with pytest.raises(BufferError):
            np.from_dlpack(x)
        expected = (2, device.index) if device.is_cuda else (1, 0)
        assert tuple(x.__dlpack_device__()) == expected


def test_array_protocol_refuses_to_densify(device):
    for x in _examples(device):
        with pytest.raises(RuntimeError, match="todense"):
            np.asarray(x)
        with pytest.raises(RuntimeError, match="todense"):
            np.array(x, dtype=np.float64)
