"""Shared fixtures: the ``device`` every test runs on, a seeded ``rng``, Hypothesis profiles.

Devices
-------
The ``device`` fixture runs a test on the CPU and on every CUDA device CuPy
can see. ``cuda:0`` is always part of the parametrisation, so a machine with
a GPU runs the CUDA tests without any flag; without one they are skipped
with the reason :func:`gpusparse._device.cuda_status` gives.

``GPUSPARSE_TEST_DEVICES`` restricts the devices: a comma-separated list
such as ``cpu``, ``cuda`` (every CUDA device) or ``cpu,cuda:1``.

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

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from gpusparse._device import Device, cuda_status

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
