"""The GPU report's machinery: the benchmark plan's shares, the outcome log's kinds, the test stage.

A throwaway test file with a planted failure, hang and crash runs through
the report's own test stage (:func:`benchmarks.gpu_report.run_tests`): the
outcome log must tell each apart -- ``failed`` with its assertion,
``timeout`` with the stack of the stuck test, ``crashed`` with the signal --
and the tests after them must still run. No GPU is needed.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap

from benchmarks import _outcome_log_plugin as plugin
from benchmarks import gpu_report

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_shares_of_the_plan_fill_the_budget():
    modules = ",".join(m for m, _, _ in gpu_report.BENCH_CUDA_PLAN)
    for budget in (30, gpu_report.NOMINAL_BENCH_S, 400):
        plan = gpu_report.bench_cuda_plan(modules, False, budget)
        assert [m for m, _, _ in plan] == modules.split(",")
        shares = [share for _, _, share in plan]
        assert all(share > 0 for share in shares)
        assert sum(shares) <= budget + 0.1 * len(shares)  # rounding to tenths
        assert sum(shares) >= budget - 0.1 * len(shares)
    # an unknown module still gets a positive share
    assert gpu_report.bench_cuda_plan("linalg,nosuch", False, 100)[1][2] > 0


def test_the_default_plan_fits_one_command():
    """Tests and benchmarks within the default budget, each benchmark module with a useful share."""
    tests_max, _ = gpu_report.LIMITS["tests"]
    stops = gpu_report.INTERRUPT_S["tests"] + gpu_report.STOP_S
    bench = gpu_report.DEFAULT_BUDGET - tests_max - stops
    assert bench >= gpu_report.LIMITS["bench-cuda"][1]
    modules = ",".join(m for m, _, _ in gpu_report.BENCH_CUDA_PLAN)
    for module, size, share in gpu_report.bench_cuda_plan(modules, False, bench):
        assert share - gpu_report.BENCH_STOP_S >= 8, module
        assert size, module
    names = {m for m, _, _ in gpu_report.BENCH_CUDA_PLAN}
    assert {"linalg", "coalesce", "elementwise", "reductions", "indexing", "manipulation", "autograd",
            "io", "dask"} <= names


def test_the_readme_lists_the_plan():
    """benchmarks/README.md's table of the CUDA benchmark modules is BENCH_CUDA_PLAN, in its order."""
    with open(os.path.join(REPO, "benchmarks", "README.md")) as f:
        text = f.read()
    rows = [tuple(cell.strip(" `") for cell in line.strip().strip("|").split("|"))
            for line in text.splitlines() if line.strip().startswith("|")]
    names = {m for m, _, _ in gpu_report.BENCH_CUDA_PLAN}
    listed = [(m, int(size), int(share)) for m, size, share in rows if m in names]
    assert listed == list(gpu_report.BENCH_CUDA_PLAN)


def test_worker_env_caps_threads_and_jax():
    env = gpu_report.worker_env({"XLA_PYTHON_CLIENT_PREALLOCATE": "true"}, workers=16, cores=16, test_timeout=60)
    assert env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert all(env[v] == "1" for v in gpu_report.THREAD_VARS)
    assert gpu_report.worker_env({}, workers=4, cores=16, test_timeout=0)["NUMBA_NUM_THREADS"] == "4"


def test_the_stage_selects_the_cuda_tests():
    cmd = gpu_report.pytest_command("python3", "j.xml", workers=1, markers="gpu and not slow", test_timeout=60)
    assert cmd[len(cmd) - 1 - cmd[::-1].index("-m") + 1] == "gpu and not slow"
    assert cmd[-1] == "tests" and "benchmarks._outcome_log_plugin" in cmd


PLANTED = textwrap.dedent('''
    import os
    import signal
    import time


    def test_first_passes():
        pass


    def test_planted_failure():
        assert 1 + 1 == 3, "planted"


    def test_planted_hang():
        time.sleep(600)


    def test_planted_crash():
        os.kill(os.getpid(), signal.SIGSEGV)


    def test_last_passes():
        pass
''')


def test_planted_hang_and_crash_are_named(tmp_path):
    """The tests stage on a planted file: every outcome, with its kind and the evidence."""
    (tmp_path / "test_planted.py").write_text(PLANTED)
    (tmp_path / "conftest.py").write_text("")
    outcomes, junit = str(tmp_path / "outcomes.jsonl"), str(tmp_path / "junit.xml")
    env = gpu_report.worker_env(dict(os.environ), workers=1, cores=1, test_timeout=3)
    env["GPUSPARSE_OUTCOME_LOG"] = outcomes
    env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd = gpu_report.pytest_command(sys.executable, junit, workers=1, markers="", test_timeout=3,
                                    paths=[str(tmp_path / "test_planted.py")])
    cmd += ["--rootdir", str(tmp_path), "-p", "no:randomly"]
    res = gpu_report.run_tests(cmd, 120, str(tmp_path / "tests.log"), env, outcomes)
    assert not res["timed_out"]
    assert len(res["runs"]) >= 2  # the crash, and the hang without pytest-timeout, ended a pytest

    counts = gpu_report.summarize_tests(junit, outcomes)
    assert counts["collected"] == 5 and counts["not_run"] == []
    by_test = {f["test"].rsplit("::", 1)[-1]: f for f in counts["failures"]}
    assert set(by_test) == {"test_planted_failure", "test_planted_hang", "test_planted_crash"}
    assert by_test["test_planted_failure"]["kind"] == "failed"
    assert "planted" in by_test["test_planted_failure"]["message"]
    hang = by_test["test_planted_hang"]
    assert hang["kind"] == "timeout", hang
    assert "test_planted.py" in hang["detail"] and "in test_planted_hang" in hang["detail"]
    crash = by_test["test_planted_crash"]
    assert crash["kind"] == "crashed", crash
    assert "Segmentation fault" in crash["message"] and "in test_planted_crash" in crash["detail"]
    assert counts["passed"] == 2 and counts["kinds"] == {"failed": 1, "timeout": 1, "crashed": 1}

    records = [json.loads(line) for line in open(outcomes)]
    assert any(r.get("nodeid", "").endswith("test_last_passes") and r["outcome"] == "passed" for r in records)
    text = gpu_report.markdown({"gpu": {}, "git": {}, "versions": {}, "date": "d", "command": "c",
                                "stages": {"tests": {"status": "exit 1", "counts": counts}}})
    assert "(timeout)" in text and "(crashed)" in text


def test_explain_tells_deaths_apart():
    kind, text = plugin.explain("test t.py::x\nTimeout (0:00:09)!\nThread 0x1 (most recent call first):\n"
                                "  File \"t.py\", line 3 in x\n")
    assert kind == "timeout" and "still running after 9 s" in text and "line 3 in x" in text
    kind, text = plugin.explain("test t.py::x\nFatal Python error: Aborted\n\nCurrent thread 0x1:\n")
    assert kind == "crashed" and "Aborted" in text
    assert "SIGKILL" in plugin.explain("test t.py::x\n", -9)[1]
    assert plugin.explain("test t.py::x\n", 1)[0] == "crashed"


def test_postmortem_names_the_dead_process_test(tmp_path):
    log = str(tmp_path / "o.jsonl")
    os.makedirs(plugin.stacks_dir(log))
    with open(plugin.stack_file(log, "gw1"), "w") as f:
        f.write("test t.py::done\n")
    with open(plugin.stack_file(log, "gw2"), "w") as f:
        f.write("test t.py::dead\nFatal Python error: Bus error\n")
    with open(log, "w") as f:
        f.write(json.dumps({"nodeid": "t.py::done", "outcome": "passed", "when": "call"}) + "\n")
    records = plugin.postmortem(log)
    assert [(r["nodeid"], r["kind"]) for r in records] == [("t.py::dead", "crashed")]
    assert plugin.postmortem(log) == []  # recorded once
    parsed = gpu_report.parse_outcome_log(log)
    assert parsed["failures"][0]["kind"] == "crashed" and "Bus error" in parsed["failures"][0]["message"]
