"""Shared fixtures: the ``device`` every test runs on, a seeded ``rng``, Hypothesis profiles.

Devices
-------
The ``device`` fixture runs a test on the CPU and on every CUDA device CuPy
can see. ``cuda:0`` is always part of the parametrisation, so a machine with
a GPU runs the CUDA tests without any flag; without one they are skipped
with the reason :func:`gpusparse._device.cuda_status` gives.

``GPUSPARSE_TEST_DEVICES`` restricts the devices: a comma-separated list
such as ``cpu``, ``cuda`` (every CUDA device) or ``cpu,cuda:1``.

A poisoned CUDA context
-----------------------
A kernel that makes an illegal memory access (or hits another *sticky*
error) leaves the process's CUDA context unusable: every later CUDA call in
that process fails with the same error. So after each CUDA test (marker
``gpu``) the device is synchronised; an error there fails the test in its
teardown, naming the CUDA error. When the error is sticky (a second
synchronisation fails too), the context is marked poisoned: under
pytest-xdist (``PYTEST_XDIST_WORKER`` set) the worker process then exits
once the test's reports are sent, and xdist starts a fresh worker with a
clean context (it also reports the test once more, as "worker crashed");
without xdist every later CUDA test on that device fails at once with
"CUDA context poisoned by <nodeid>: <error>" instead of failing in confusing
ways. Without a real GPU (no CuPy, no device, or the emulated device) none
of this is defined.

On a real GPU, CUDA tests also draw no float32 subnormal numbers for
arithmetic: CuPy compiles every kernel with ``-ftz=true``, so the GPU
flushes them where NumPy keeps them (``tests/strategies.py``).

Hypothesis
----------
Profiles: ``dev`` (the default: 30 examples, no deadline, since Numba
compiles a kernel on its first call per dtype), ``ci`` (10 derandomised
examples), ``thorough`` (300 examples) and ``fuzz`` (the long budget of
``make fuzz``: 500 examples, stateful runs of up to 100 steps). Choose one
with ``GPUSPARSE_HYPOTHESIS_PROFILE=ci`` or pytest's ``--hypothesis-profile``.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from gpusparse._device import Device, cuda_status
from gpusparse._kernels import cuda_emulation

_SLOW_CHECKS = [HealthCheck.too_slow, HealthCheck.data_too_large]

settings.register_profile("dev", deadline=None, max_examples=30, suppress_health_check=_SLOW_CHECKS)
settings.register_profile(
    "ci", deadline=None, max_examples=10, derandomize=True, suppress_health_check=_SLOW_CHECKS
)
settings.register_profile("thorough", deadline=None, max_examples=300, suppress_health_check=_SLOW_CHECKS)
settings.register_profile(
    "fuzz", deadline=None, max_examples=500, stateful_step_count=100, suppress_health_check=_SLOW_CHECKS
)
settings.load_profile(os.environ.get("GPUSPARSE_HYPOTHESIS_PROFILE", "dev"))


def _wanted(name: str) -> bool:
    spec = os.environ.get("GPUSPARSE_TEST_DEVICES", "").strip()
    if not spec:
        return True
    wanted = {part.strip().lower() for part in spec.split(",") if part.strip()}
    return name in wanted or (name.startswith("cuda:") and "cuda" in wanted)


def _device_params() -> list:
    """``cpu``, ``cuda:0`` (always listed, skipped without a GPU) and any further GPUs.

    CUDA parameters carry the ``gpu`` marker, so ``-m "not gpu"`` deselects them.
    """
    count = cuda_status().device_count
    names = ["cpu"] + [f"cuda:{i}" for i in range(max(count, 1))]
    return [
        pytest.param(name, id=name, marks=[pytest.mark.gpu] if name != "cpu" else [])
        for name in names if _wanted(name)
    ]


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device; skipped with the reason where none is usable")
    config.addinivalue_line("markers", "slow: takes more than a few seconds (deselect with -m 'not slow')")


@pytest.fixture(scope="session", params=_device_params())
def device(request) -> Device:
    """Every device a test should run on, as a :class:`gpusparse.Device`."""
    dev = Device.parse(request.param)
    if dev.is_cuda:
        status = cuda_status()
        if status.device_count == 0:
            pytest.skip(f"no CUDA device: {status.reason}")
    return dev


@pytest.fixture
def rng() -> np.random.Generator:
    """A NumPy generator seeded per test, so failures reproduce."""
    return np.random.default_rng(20240601)


# --------------------------------------------------------------------------
# A poisoned CUDA context (see the module docstring)
# --------------------------------------------------------------------------

_POISONED: dict = {}  # CUDA device index -> "CUDA context poisoned by <nodeid>: <error>"


def _sync_error(index: int) -> "str | None":
    """The error that synchronising CUDA device ``index`` reports, if any."""
    import cupy

    try:
        cupy.cuda.Device(index).synchronize()
    except cupy.cuda.runtime.CUDARuntimeError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


if cuda_status().device_count > 0 and not cuda_emulation.enabled():

    @pytest.fixture(autouse=True)
    def _cuda_context_guard(request):
        """Fail a CUDA test that leaves a CUDA error behind; refuse to run on a poisoned context."""
        if request.node.get_closest_marker("gpu") is None:
            yield
            return
        callspec = getattr(request.node, "callspec", None)
        param = callspec.params.get("device") if callspec else None
        index = Device.parse(param).index if isinstance(param, str) and param.startswith("cuda") else 0
        if index in _POISONED:
            pytest.fail(_POISONED[index], pytrace=False)
        yield
        error = _sync_error(index)
        if error is None:
            return
        if _sync_error(index) is not None:  # sticky: the context is lost for this process
            _POISONED[index] = f"CUDA context poisoned by {request.node.nodeid}: {error}"
            pytest.fail(_POISONED[index], pytrace=False)
        pytest.fail(f"CUDA error after the test: {error}", pytrace=False)

    @pytest.fixture(autouse=True)
    def _float32_subnormals(request):
        """CUDA tests draw no float32 subnormals for arithmetic (``strategies.FLUSHES_FLOAT32_SUBNORMALS``).

        CuPy compiles its kernels with ``-ftz=true``: a GPU flushes them, by
        design, where NumPy keeps them.
        """
        import strategies

        strategies.FLUSHES_FLOAT32_SUBNORMALS = request.node.get_closest_marker("gpu") is not None
        yield
        strategies.FLUSHES_FLOAT32_SUBNORMALS = False

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        """Under pytest-xdist, end a worker whose context is poisoned once the test is reported."""
        result = yield
        if _POISONED and os.environ.get("PYTEST_XDIST_WORKER"):
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1)
        return result
