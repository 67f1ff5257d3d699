"""One run of the GPU report: its header, the chosen stages in order within the budget, the report after each.

:func:`run_report` records the machine (the GPU, the commit, the versions,
``gpusparse.show_config()``), keeps the stages of an earlier run of the
same commit on the same day that this one does not repeat, then runs the
stages in order. Each stage's timeout is what the budget leaves once the
later stages' guaranteed minimums and stopping times are set aside
(:data:`~benchmarks.gpu_report.plan.LIMITS`); a stage that fails in the
report's own code is recorded and the next one still runs. The report is
rewritten, and copied to ``$OUT`` where that is set, at the start, every
:data:`~benchmarks.gpu_report.plan.TICK_S` seconds while the tests run,
after every benchmark module and after every stage.
"""

from __future__ import annotations

import datetime
import os
import sys
import tempfile
import time

from benchmarks import run as bench_run

from .commands import _have, _sanitizer_path, clean_env, pytest_command, worker_env
from .outcomes import parse_sanitizer, summarize_tests
from .plan import EMULATE_SIZE, INTERRUPT_S, REPO, STOP_S, bench_cuda_plan
from .publish import _copy_out, _join_logs, _read_json, _read_text, say, set_logs
from .stages import _stage_status, run_bench_cuda, run_stage, run_tests
from .writer import _bench_overview, _save, _show_config, _summary_block, check_complete, gpu_identity


def run_report(args, argv, *, stages: list[str], budget: float, target_time: float, test_paths: list[str],
               limits: dict) -> int:
    """Run ``stages`` within ``budget`` seconds with the options ``args`` (parsed from ``argv``); the exit status.

    ``limits`` are the stages' (most, least) seconds, ``target_time`` the
    CUDA benchmarks' repeat time and ``test_paths`` the tests stage's paths,
    as :func:`benchmarks.gpu_report.cli.main` resolved them. The exit status
    is 0, or with ``--emulate`` 1 unless the report is complete.
    """
    began = time.monotonic()
    deadline = began + budget
    out_arg = args.out or (tempfile.mkdtemp(prefix="gpusparse-emulated-report-") if args.emulate
                           else os.path.join("benchmarks", "results"))
    out_dir = os.path.join(REPO, out_arg) if not os.path.isabs(out_arg) else out_arg
    os.makedirs(out_dir, exist_ok=True)
    remote_out = os.environ.get("OUT")
    logs = tempfile.mkdtemp(prefix="gpusparse-report-")
    set_logs(logs)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    gpu = gpu_identity()
    gpu_slug = bench_run.slug(gpu.get("name") or "no-gpu")
    stem = os.path.join(out_dir, f"{date}-{gpu_slug}")
    env = clean_env(os.environ)
    env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    py = sys.executable or "python3"
    report = {
        "schema": 1, "date": date,
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": "python3 -m benchmarks.gpu_report " + " ".join(
            bench_run._short_path(a) for a in (argv if argv is not None else sys.argv[1:])),
        "emulated": bool(args.emulate),
        "gpu": gpu, "git": bench_run.git_info(REPO), "versions": bench_run.versions(),
        "machine": {k: v for k, v in bench_run.machine_info("cpu").items() if k != "kind"},
        "show_config": _show_config(),
        "env": {k: os.environ[k] for k in ("CUDA_VISIBLE_DEVICES", "GPUSPARSE_DEVICE", "GPUSPARSE_COMMIT",
                                           "GPUSPARSE_CUDA_EMULATION") if k in os.environ},
        "stages": {},
    }
    earlier = _read_json(stem + ".json")
    if earlier and earlier.get("git", {}).get("commit") == report["git"].get("commit"):
        # A run split over several calls (--stages) keeps the other stages' results.
        report["stages"] = {k: v for k, v in earlier.get("stages", {}).items() if k not in stages}
    say(f"GPU {gpu.get('name')} ({gpu.get('source')}); commit {report['git'].get('commit')}; "
        f"report -> {stem}.md; logs in {logs}")
    copies = []  # files for $OUT besides the report, most useful first

    def publish():
        _save(report, stem)
        if remote_out:
            joined = _join_logs(logs, os.path.join(logs, "stage-logs.txt"))
            _copy_out([stem + ".json", stem + ".md"] + copies + [joined], remote_out)

    publish()

    def stop_s(name):  # bench-cuda keeps its modules' stopping time within its own timeout
        return 0 if name == "bench-cuda" else INTERRUPT_S.get(name, 5) + STOP_S

    def timeout_for(name):
        reserve = sum(limits[s][1] + stop_s(s) for s in stages[stages.index(name) + 1:])
        return max(20.0, min(limits[name][0], deadline - time.monotonic() - reserve - stop_s(name)))

    plan = bench_cuda_plan(args.bench_modules, args.full_size, size=EMULATE_SIZE if args.emulate else None)
    for name in stages:
        log_path = os.path.join(logs, f"{name}.log")
        res = {}
        try:
            if name == "host-profile":
                profile_path = os.path.join(logs, "host-profile.md")
                cmd = [py, "-m", "benchmarks.host_profile", "--device", "cuda", "--out", profile_path]
                cmd += ["--calls", "3", "--top", "4", "--rows", "256"] if args.emulate else []
                res = run_stage(name, cmd, timeout_for(name), log_path, env)
                res["text_md"] = _read_text(profile_path) or ""
            elif name == "tests":
                junit, outcomes = os.path.join(logs, "junit.xml"), os.path.join(logs, "outcomes.jsonl")
                workers = args.workers if _have("xdist") else 1
                stage_env = worker_env(env, workers=workers, cores=os.cpu_count() or 1,
                                     test_timeout=args.test_timeout)
                stage_env["GPUSPARSE_OUTCOME_LOG"] = outcomes
                stage_env.setdefault("GPUSPARSE_HYPOTHESIS_PROFILE", "ci")
                if args.test_devices.strip().lower() == "all":
                    stage_env.pop("GPUSPARSE_TEST_DEVICES", None)
                else:
                    stage_env["GPUSPARSE_TEST_DEVICES"] = args.test_devices
                cmd = pytest_command(py, junit, workers=workers, markers=args.test_markers,
                                     test_timeout=args.test_timeout, paths=test_paths)
                copies += [outcomes, junit]
                shown = {k: stage_env[k] for k in ("GPUSPARSE_TEST_DEVICES", "GPUSPARSE_HYPOTHESIS_PROFILE",
                                                   "NUMBA_NUM_THREADS", "OMP_NUM_THREADS",
                                                   "XLA_PYTHON_CLIENT_PREALLOCATE", "GPUSPARSE_TEST_TIMEOUT",
                                                   "GPUSPARSE_CUDA_EMULATION") if k in stage_env}
                started = time.monotonic()

                def tick():
                    report["stages"]["tests"] = {"status": "running", "env": shown,
                                                 "seconds": round(time.monotonic() - started),
                                                 "counts": summarize_tests(junit, outcomes)}
                    report["total_s"] = round(time.monotonic() - began, 1)
                    publish()

                res = run_tests(cmd, timeout_for(name), log_path, stage_env, outcomes, tick=tick)
                res["env"] = shown
                res["counts"] = summarize_tests(junit, outcomes, res.get("tail", ""))
            elif name == "sanitizer":
                tool = _sanitizer_path()
                if tool is None:
                    res = {"status": "skipped", "summary": "compute-sanitizer not found"}
                elif not os.path.isdir(os.path.join(REPO, "tests", "kernels")):
                    res = {"status": "skipped", "summary": "tests/kernels not found"}
                else:
                    res = run_stage(name, [tool, "--tool", "memcheck", py, "-m", "pytest", "tests/kernels",
                                           "-q", "-x", "-p", "no:cacheprovider",
                                           "-p", "benchmarks._sanitizer_plugin"],
                                    timeout_for(name), log_path, env, interrupt_s=INTERRUPT_S["sanitizer"])
                    res.update(parse_sanitizer(_read_text(log_path) or res.get("tail", "")))
                    if res.get("errors"):
                        res["status"] = f"{res['errors']} memcheck errors"
            elif name == "bench-cuda":
                bench_stem = os.path.join(out_dir, f"{date}-cuda-{gpu_slug}")
                copies += [bench_stem + ".json", bench_stem + ".md"]
                bench_env = dict(env, GPUSPARSE_BENCH_MIN_REPEATS="1") if args.emulate else env

                def on_module(parts):
                    report["stages"]["bench-cuda"] = {"status": "running", "parts": list(parts)}
                    report["total_s"] = round(time.monotonic() - began, 1)
                    publish()

                res = run_bench_cuda(plan, timeout_for(name), logs, log_path, bench_env, py, target_time,
                                     bench_stem, quick=args.emulate, on_module=on_module)
                res["files"] = [os.path.basename(bench_stem + s) for s in (".json", ".md")
                                if os.path.exists(bench_stem + s)]
                res["overview"] = _bench_overview(_read_json(bench_stem + ".json") if res["files"] else None)
                res["summary_md"] = _summary_block(bench_stem + ".md")
            else:
                bench_stem = f"{date}-{gpu_slug}-host-cpu-quick"
                cmd = [py, "-m", "benchmarks.run", "--out", logs, "--name", bench_stem,
                       "--device", "cpu", "--quick"]
                res = run_stage(name, cmd, timeout_for(name), log_path, env)
                doc = _read_json(os.path.join(logs, bench_stem + ".json"))
                res["overview"] = _bench_overview(doc)
                res["summary_md"] = _summary_block(os.path.join(logs, bench_stem + ".md"))
                if doc:
                    res["results"] = doc.get("results")  # in the report; the files stay in the log folder
        except Exception as exc:  # noqa: BLE001 (a stage's failure is recorded, never fatal)
            res.setdefault("error", f"{type(exc).__name__}: {exc}")
            say(f"{name}: failed in the report itself: {res['error']}")
        res.setdefault("status", _stage_status(res) if "rc" in res else "error")
        report["stages"][name] = res
        report["total_s"] = round(time.monotonic() - began, 1)
        publish()

    report["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    report["total_s"] = round(time.monotonic() - began, 1)
    problems = check_complete(report, stem, plan if "bench-cuda" in stages else [], failures_count=args.emulate)
    report["incomplete"] = problems
    publish()
    say(f"wrote {stem}.json and {stem}.md in {report['total_s']} s"
        + ("; copied them, the test and benchmark files and the logs to $OUT" if remote_out else ""))
    for problem in problems:
        say(f"incomplete: {problem}")
    if args.emulate:
        say("emulated run " + ("complete" if not problems else f"INCOMPLETE ({len(problems)} problems)"))
        return 1 if problems else 0
    return 0
