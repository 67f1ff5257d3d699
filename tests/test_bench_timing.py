"""The benchmarks' timing: alternation of several implementations, what happens when it fails, host profiles."""

from __future__ import annotations

import types

import pytest

from benchmarks import _report, _timing


@pytest.mark.parametrize("n_impls", [1, 2, 3])
def test_time_interleaved_times_every_implementation(n_impls):
    calls = {f"f{i}": 0 for i in range(n_impls)}

    def make(name):
        def fn():
            calls[name] += 1
            return name
        return fn

    timings = _timing.time_interleaved({name: make(name) for name in calls}, "cpu", target_s=0.01, min_rounds=4)
    assert set(timings) == set(calls)
    for name, timing in timings.items():
        assert timing.repeats >= 4 and timing.median_s >= 0
        # warm-up and estimate, the timed calls, and one untimed settling call per round with company
        settle = 4 if n_impls > 1 else 0
        assert calls[name] >= 2 + timing.repeats + settle


def test_time_rows_alternates_and_says_when_it_could_not(monkeypatch):
    ctx = types.SimpleNamespace(device="cpu", target_s=0.01)
    rows = {"a": {}, "b": {}}
    _report.time_rows({"a": lambda: 1, "b": lambda: 2}, rows, ctx)
    assert all("median_s" in row and "timing" not in row for row in rows.values())

    def broken_alternation(*args, **kwargs):
        raise MemoryError("every pool at once")

    monkeypatch.setattr(_report, "time_interleaved", broken_alternation)
    rows = {"a": {}, "b": {}}
    _report.time_rows({"a": lambda: 1, "b": lambda: 2}, rows, ctx)
    assert all("median_s" in row and "alternating failed" in row["timing"] for row in rows.values())


def test_host_profile_reports_every_operation_on_the_cpu(capsys):
    from benchmarks import host_profile

    report = host_profile.main(["--device", "cpu", "--calls", "2", "--top", "2", "--rows", "64"])
    capsys.readouterr()
    for name in host_profile.OPERATIONS:
        assert f"### {name} on cpu" in report
    assert "error:" not in report
    assert report.count("median per call") == len(host_profile.OPERATIONS)
