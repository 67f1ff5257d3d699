"""Running the stages: each command in its own process group, with a timeout, its output logged and echoed.

:func:`run_stage` runs one command and stops it at its timeout (SIGINT,
so that pytest still writes its summary, then SIGTERM and SIGKILL);
:func:`run_tests` is the tests stage, resuming pytest with the tests not
yet reported each time its process dies; :func:`run_bench_cuda` is the
``bench-cuda`` stage, one ``benchmarks.run`` process per module in the
plan's time shares, its rows merged into one results file after every
module. The callbacks ``tick`` and ``on_module`` let the caller rewrite the
report (and copy it to ``$OUT``) while a stage runs.
"""

from __future__ import annotations

import collections
import importlib
import os
import shlex
import signal
import subprocess
import threading
import time

from benchmarks import run as bench_run

from .plan import BENCH_STOP_S, INTERRUPT_S, REPO, STOP_S, TAIL_CHARS, TICK_S
from .publish import _public, _read_json, say


def run_stage(name: str, cmd: list[str], timeout: float, log_path: str, env=None, *,
              interrupt_s: float = 5, tick=None, label: str | None = None, stop_s: float | None = None) -> dict:
    """Run ``cmd`` in its own process group with a timeout, echoing its output.

    At the timeout the group gets SIGINT, and ``interrupt_s`` seconds later
    SIGTERM, then SIGKILL (:func:`_stop`). ``tick()``, if given, is called
    every :data:`TICK_S` seconds while the command runs. The output is
    appended to ``log_path`` under a header line; ``label`` prefixes the
    echoed lines (``name`` by default).

    Returns ``rc`` (None if it could not start), ``seconds``, ``timed_out``,
    ``tail`` (the last characters of its output) and ``log`` (the log file).
    """
    label = label or name
    say(f"{label}: {' '.join(cmd)} (timeout {timeout:.0f} s)")
    start = time.monotonic()
    result = {"command": " ".join(shlex.quote(bench_run._short_path(_public(c))) for c in cmd),
              "timeout_s": round(timeout),
              "timed_out": False, "log": os.path.basename(log_path)}
    tail = collections.deque(maxlen=4000)
    try:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace", bufsize=1, start_new_session=True)
    except OSError as exc:
        result.update(rc=None, seconds=0.0, tail=f"could not start: {exc}")
        say(f"{label}: could not start ({exc})")
        return result

    with open(log_path, "a") as log:
        log.write(f"$ {result['command']}\n")

        def pump():
            for line in proc.stdout:
                log.write(line)
                tail.append(line)
                print(f"  {label}| {line}", end="", flush=True)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        deadline = start + timeout
        while True:
            try:
                proc.wait(timeout=max(0.0, min(TICK_S, deadline - time.monotonic())))
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() >= deadline:
                    result["timed_out"] = True
                    say(f"{label}: timed out after {timeout:.0f} s; stopping it")
                    _stop(proc, interrupt_s, STOP_S if stop_s is None else stop_s)
                    break
                if tick is not None:
                    tick()
        reader.join(timeout=5)
    result["rc"] = proc.returncode
    result["seconds"] = round(time.monotonic() - start, 1)
    result["tail"] = _public("".join(tail)[-TAIL_CHARS:])
    say(f"{label}: rc={proc.returncode} in {result['seconds']} s")
    return result


def _stop(proc, interrupt_s: float, stop_s: float = STOP_S) -> None:
    """SIGINT the stage's process group (pytest then writes its summary), then SIGTERM, then SIGKILL."""
    steps = ((signal.SIGINT, interrupt_s), (signal.SIGTERM, stop_s / 2), (signal.SIGKILL, stop_s / 2))
    for sig, grace in steps:
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def _stage_status(res: dict) -> str:
    if res.get("rc") is None:
        return "not started"
    if res.get("timed_out"):
        return "timed out"
    return "ok" if res["rc"] == 0 else f"exit {res['rc']}"


def run_tests(cmd, timeout: float, log_path: str, env: dict, outcomes: str, tick=None) -> dict:
    """The tests stage: pytest, resumed with the tests not yet reported each time its process dies.

    A pytest process that dies (a crash, or the outcome plugin's own timeout
    without pytest-xdist and pytest-timeout) leaves the test it ran in its
    stack file: :func:`benchmarks._outcome_log_plugin.postmortem` records it
    as ``crashed`` or ``timeout``, and pytest starts again on the rest
    (``GPUSPARSE_OUTCOME_RESUME``) while time is left.
    """
    from benchmarks import _outcome_log_plugin as plugin

    deadline = time.monotonic() + timeout
    runs, res = [], {}
    while True:
        left = deadline - time.monotonic()
        if runs and left < 10:
            break
        run_env = dict(env, GPUSPARSE_OUTCOME_RESUME="1") if runs else env
        res = run_stage("tests", cmd, left, log_path, run_env, interrupt_s=INTERRUPT_S["tests"], tick=tick,
                        label="tests" if not runs else f"tests (resumed {len(runs)})")
        runs.append({k: res.get(k) for k in ("rc", "seconds", "timed_out")})
        if res.get("rc") is None or res.get("timed_out"):
            break
        dead = plugin.postmortem(outcomes, res["rc"])
        for record in dead:
            say(f"tests: {record['kind']} in {record['nodeid']}: {record['message'].splitlines()[0]}")
        if not dead:
            break
    res = dict(res, seconds=round(sum(r["seconds"] or 0 for r in runs), 1), timeout_s=round(timeout),
               timed_out=any(r["timed_out"] for r in runs), runs=runs)
    return res


def _bench_part_status(res: dict) -> str:
    if res.get("rc") == 1 and not res.get("timed_out"):
        return "ok, with error rows"
    if res.get("rc") == 2 and not res.get("timed_out"):
        return "CUDA not usable"
    return _stage_status(res)


def run_bench_cuda(plan, timeout: float, logs: str, log_path: str, env, py: str, target_time: float,
                   out_stem: str, *, quick: bool = False, on_module=None) -> dict:
    """Run ``benchmarks.run --device cuda`` once per module of ``plan``, most important first.

    The modules' shares (``share_s`` of :func:`bench_cuda_plan`) are scaled
    to ``timeout``; a module may use its share plus what the earlier ones
    left unused, so a module that overruns costs only its own rows and every
    later one keeps its share. Each limit includes the time to stop the
    module (SIGINT, SIGTERM, SIGKILL: :data:`BENCH_STOP_S`), so the stage
    ends within ``timeout``. Rows are saved by the module as they are
    measured; the rows of all modules are merged into ``out_stem.json`` and
    ``.md`` after each module, and ``on_module()`` is called then.
    """
    start = time.monotonic()
    deadline = start + timeout
    total = sum(share for _, _, share in plan) or 1
    parts, docs, modules = [], {}, {}
    spare = 0.0
    for module, size, share in plan:
        began = time.monotonic()
        allowed = min(share * timeout / total + spare, deadline - began)
        limit = allowed - BENCH_STOP_S
        if any(p["status"] == "CUDA not usable" for p in parts):
            parts.append({"module": module, "size": size, "status": "not run (CUDA not usable)", "rows": 0})
            continue
        if limit < 2:
            parts.append({"module": module, "size": size, "status": "not run (no time left)", "rows": 0})
            spare = max(0.0, allowed)
            continue
        name = f"bench-cuda-{module}"
        cmd = [py, "-m", "benchmarks.run", "--device", "cuda", "--out", logs, "--name", name,
               "--only", f"bench_{module}", "--target-time", f"{target_time:g}"]
        cmd += ["--size", str(size)] if size else []
        cmd += ["--quick"] if quick else []
        res = run_stage("bench-cuda", cmd, limit, log_path, env, interrupt_s=1, stop_s=2,
                        label=f"bench-cuda {module}")
        spare = max(0.0, allowed - (time.monotonic() - began))
        doc = _read_json(os.path.join(logs, name + ".json"))
        rows = [r for v in (doc or {}).get("results", {}).values() for r in v]
        status = collections.Counter(r.get("status") for r in rows)
        parts.append({"module": module, "size": size, "rows": len(rows), "row_status": dict(status),
                      "status": _bench_part_status(res), "share_s": round(allowed, 1),
                      **{k: res.get(k) for k in ("command", "seconds", "timeout_s", "timed_out", "rc")}})
        if doc:
            docs[module] = doc
            try:
                mod = importlib.import_module(f"benchmarks.bench_{module}")
                modules[bench_run._title(mod)] = mod
            except Exception:  # noqa: BLE001 (the generic tables will do)
                pass
            merged = _merge_bench(docs, plan, target_time)
            bench_run.save(merged, modules, out_stem)
        if on_module is not None:
            on_module(parts)
    bad = [f"{p['module']}: {p['status']}" for p in parts if p["status"] != "ok"]
    return {"parts": parts, "status": "ok" if not bad else "; ".join(bad),
            "seconds": round(time.monotonic() - start, 1), "timeout_s": round(timeout),
            "rc": max((p["rc"] for p in parts if p.get("rc") is not None), default=None),
            "timed_out": any(p.get("timed_out") for p in parts), "log": os.path.basename(log_path)}


def _merge_bench(docs: dict, plan, target_time: float) -> dict:
    """One results document from the per-module ones (in plan order), as ``benchmarks.run`` writes it."""
    first, last = next(iter(docs.values())), list(docs.values())[-1]
    doc = {k: first[k] for k in ("schema", "date", "started", "device", "device_name", "quick", "target_s",
                                 "machine", "versions", "git") if k in first}
    runs = "; ".join(f"--only bench_{m}" + (f" --size {sz}" if sz else "") for m, sz, _ in plan if m in docs)
    doc["command"] = (f"python -m benchmarks.run --device cuda --target-time {target_time:g}, "
                      f"one process per module: {runs}")
    doc["results"] = {}
    for d in docs.values():
        doc["results"].update(d.get("results", {}))
    for key in ("finished", "load_avg_end"):
        if key in last:
            doc[key] = last[key]
    return doc
