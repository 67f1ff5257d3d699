"""One report from a GPU machine: tests, memory checker and benchmarks.

Usage, from the repository root, with the system Python (no virtual
environment, no network needed)::

    PYTHONPATH=. python3 -m benchmarks.gpu_report [--out benchmarks/results]
        [--budget 1140] [--stages tests,sanitizer,bench-cuda,bench-cpu]

Records the GPU (``nvidia-smi``, else CuPy), the date, the git commit (or
``GPUSPARSE_COMMIT`` where there is no ``.git``) and library versions, then
runs four stages, each in its own process with its own timeout, so that a
failure or a hang in one is recorded and the next still runs:

``tests``
    ``python3 -m pytest -q -p no:cacheprovider --junitxml=... tests`` with
    CUDA visible; pass/fail/skip/error counts, the failing tests' names and
    the most common skip reasons come from the JUnit XML.
``sanitizer``
    ``compute-sanitizer --tool memcheck python3 -m pytest tests/kernels -q -x``
    with CuPy's memory pool off (``benchmarks._sanitizer_plugin``) so that
    memcheck sees each array's bounds; its ``ERROR SUMMARY`` is recorded.
    Skipped when ``compute-sanitizer`` or ``tests/kernels`` is missing.
``bench-cuda``
    ``python3 -m benchmarks.run --device cuda`` at full size; its JSON and
    Markdown go to ``--out`` as ``<date>-cuda-<gpu>.{json,md}``.
``bench-cpu``
    ``python3 -m benchmarks.run --device cpu --quick`` (a smoke test of the
    CPU path on this machine).

The report is ``<out>/<YYYY-MM-DD>-<gpu-slug>.json`` and ``.md``, rewritten
after every stage. Stage timeouts share ``--budget`` seconds (default 19
minutes) so the whole run ends in time. Where one command may not run that
long, split the run: ``--stages tests,sanitizer`` then
``--stages bench-cuda,bench-cpu``; a later run of the same commit on the same
day keeps the stages it did not repeat. If ``$OUT`` is set, the report, the
benchmark files, the JUnit XML and every stage's full log are copied there
after every stage. Progress is printed as it happens.

Examples
--------
>>> parse_sanitizer("========= ERROR SUMMARY: 0 errors")["errors"]
0
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET

from benchmarks import run as bench_run

__all__ = ["gpu_identity", "main", "parse_junit", "parse_sanitizer", "run_stage"]

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAGES = ("tests", "sanitizer", "bench-cuda", "bench-cpu")
#: (most seconds a stage may take, least it is guaranteed when earlier stages overrun)
LIMITS = {"tests": (480, 120), "sanitizer": (300, 60), "bench-cuda": (420, 180), "bench-cpu": (120, 45)}
TAIL_CHARS = 6000
_LOGS = None  # this run's temporary log folder, hidden from the report


def say(message: str) -> None:
    print(f"[gpu_report {time.strftime('%H:%M:%S')}] {message}", flush=True)


# --------------------------------------------------------------------------
# running one stage
# --------------------------------------------------------------------------

def run_stage(name: str, cmd: list[str], timeout: float, log_path: str, env=None) -> dict:
    """Run ``cmd`` in its own process group with a timeout, echoing its output.

    Returns ``rc`` (None if it could not start), ``seconds``, ``timed_out``,
    ``tail`` (the last characters of its output) and ``log`` (the log file).
    """
    say(f"{name}: {' '.join(cmd)} (timeout {timeout:.0f} s)")
    start = time.monotonic()
    result = {"command": " ".join(bench_run._short_path(_public(c)) for c in cmd),
              "timeout_s": round(timeout),
              "timed_out": False, "log": os.path.basename(log_path)}
    tail = collections.deque(maxlen=4000)
    try:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace", bufsize=1, start_new_session=True)
    except OSError as exc:
        result.update(rc=None, seconds=0.0, tail=f"could not start: {exc}")
        say(f"{name}: could not start ({exc})")
        return result

    with open(log_path, "w") as log:
        def pump():
            for line in proc.stdout:
                log.write(line)
                tail.append(line)
                print(f"  {name}| {line}", end="", flush=True)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            result["timed_out"] = True
            say(f"{name}: timed out after {timeout:.0f} s; stopping it")
            _stop(proc)
        reader.join(timeout=30)
    result["rc"] = proc.returncode
    result["seconds"] = round(time.monotonic() - start, 1)
    result["tail"] = _public("".join(tail)[-TAIL_CHARS:])
    say(f"{name}: rc={proc.returncode} in {result['seconds']} s")
    return result


def _stop(proc) -> None:
    """SIGTERM the stage's process group, SIGKILL it if it lingers."""
    for sig, grace in ((signal.SIGTERM, 15), (signal.SIGKILL, 15)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


_ROOTS = r"(?:root|home|tmp|usr|opt|work|mnt|var|srv|scratch)"
_SITE = re.compile(r"(?:\.\./)*/?" + _ROOTS + r"/[^\s:'\"]*?/(?:site|dist)-packages/")
_ABS = re.compile(r"(?<![\w.])/" + _ROOTS + r"/[^\s:'\"]*/([^\s:'\"/]+)")


def _public(text: str) -> str:
    """``text`` without this machine's absolute paths.

    The repository root becomes relative, the interpreter ``python3``, this
    run's log folder ``<logs>``, installed packages ``<site-packages>/`` and
    any other absolute path ``<path>/name``.

    Examples
    --------
    >>> _public("at /usr/lib/python3/dist-packages/cupy/x.py:3 and /tmp/a/b.log")
    'at <site-packages>/cupy/x.py:3 and <path>/b.log'
    """
    if _LOGS:
        text = text.replace(_LOGS, "<logs>")
    text = text.replace(REPO + os.sep, "").replace(REPO, ".")
    if sys.executable:
        text = re.sub(re.escape(sys.executable) + r"\b", "python3", text)
    text = _SITE.sub("<site-packages>/", text)
    return _ABS.sub(r"<path>/\1", text)


# --------------------------------------------------------------------------
# parsing
# --------------------------------------------------------------------------

def parse_junit(path: str) -> dict | None:
    """Counts, failing test names and top skip reasons from a pytest JUnit XML file."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    counts = collections.Counter()
    for suite in suites:
        for key in ("tests", "failures", "errors", "skipped"):
            counts[key] += int(suite.get(key, 0) or 0)
    failures, skips = [], collections.Counter()
    for case in root.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        for child in case:
            if child.tag in ("failure", "error"):
                message = (child.get("message") or child.text or "").strip().splitlines()
                failures.append({"test": name, "kind": child.tag,
                                 "message": _public(message[0] if message else "")[:300]})
            elif child.tag == "skipped":
                skips[_public((child.get("message") or "").strip())[:200]] += 1
    passed = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    return {"tests": counts["tests"], "passed": passed, "failed": counts["failures"],
            "errors": counts["errors"], "skipped": counts["skipped"], "failures": failures[:200],
            "n_failures_listed": min(len(failures), 200),
            "skip_reasons": [{"reason": r, "count": n} for r, n in skips.most_common(15)]}


def parse_pytest_summary(text: str) -> dict:
    """Counts from pytest's last summary line (used when there is no JUnit file).

    Examples
    --------
    >>> parse_pytest_summary("== 3 failed, 10 passed, 2 skipped in 1.0s ==")["failed"]
    3
    """
    counts = {}
    for line in reversed(text.splitlines()):
        found = re.findall(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected)", line)
        if found:
            for n, what in found:
                counts["errors" if what.startswith("error") else what] = int(n)
            break
    return counts


def parse_sanitizer(text: str) -> dict:
    """The ``ERROR SUMMARY`` of compute-sanitizer output and its first error lines."""
    summaries = [int(n) for n in re.findall(r"ERROR SUMMARY:\s*(\d+) error", text)]
    reports = [_public(line.strip()) for line in text.splitlines()
               if line.startswith("=========") and "ERROR SUMMARY" not in line
               and not line.strip("= \n").startswith("COMPUTE-SANITIZER")]
    return {"errors": sum(summaries) if summaries else None,
            "summary": (f"ERROR SUMMARY: {sum(summaries)} errors" if summaries
                        else "no ERROR SUMMARY line found"),
            "first_reports": reports[:40]}


# --------------------------------------------------------------------------
# the machine
# --------------------------------------------------------------------------

def gpu_identity() -> dict:
    """GPU name, memory and driver from ``nvidia-smi``, else from CuPy."""
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=name,memory.total,driver_version",
                                  "--format=csv,noheader"], check=False, capture_output=True, text=True,
                                 timeout=30).stdout.strip().splitlines()
            if out:
                parts = [p.strip() for p in out[0].split(",")]
                return {"name": parts[0], "memory": parts[1] if len(parts) > 1 else None,
                        "driver": parts[2] if len(parts) > 2 else None, "count": len(out),
                        "source": "nvidia-smi"}
        except (OSError, subprocess.SubprocessError):
            pass
    try:
        info = bench_run._gpu_info()
        return {"name": info["gpu_name"], "memory": f"{info['gpu_memory_gib']} GiB",
                "driver": str(info["cuda_driver"]), "count": info["gpu_count"], "source": "cupy"}
    except Exception as exc:  # noqa: BLE001 (no usable GPU, recorded)
        return {"name": None, "error": f"{type(exc).__name__}: {exc}", "source": None}


def _show_config() -> str:
    try:
        import io

        import gpusparse
        buf = io.StringIO()
        gpusparse.show_config(file=buf)
        return buf.getvalue()
    except Exception as exc:  # noqa: BLE001 (recorded in the report)
        return f"gpusparse.show_config failed: {type(exc).__name__}: {exc}"


def _sanitizer_path() -> str | None:
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and os.path.exists(os.path.join(root, "bin", "compute-sanitizer")):
            return os.path.join(root, "bin", "compute-sanitizer")
    return None


# --------------------------------------------------------------------------
# the report
# --------------------------------------------------------------------------

def _read_json(path: str) -> dict | None:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _read_text(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _summary_block(md_path: str) -> str:
    try:
        with open(md_path) as f:
            text = f.read()
    except OSError:
        return ""
    start, end = text.find(bench_run.SUMMARY_START), text.find(bench_run.SUMMARY_END)
    return text[start + len(bench_run.SUMMARY_START):end].strip() if 0 <= start < end else ""


def _bench_overview(doc: dict | None) -> dict:
    if not doc:
        return {"rows": 0}
    rows = [r for rs in doc.get("results", {}).values() for r in rs]
    status = collections.Counter(r.get("status") for r in rows)
    bad = [f"{r.get('bench')} {r.get('case')} {r.get('impl')}: {r.get('status')} {r.get('error', '')}"[:300]
           for r in rows if r.get("status") in ("error", "mismatch")]
    return {"rows": len(rows), "status": dict(status), "problems": bad[:50]}


def markdown(report: dict) -> str:
    gpu = report["gpu"]
    git = report["git"]
    commit = (git.get("commit") or "unknown")[:12]
    if git.get("dirty"):
        commit += " (with uncommitted changes)"
    lines = [f"# GPU report: {gpu.get('name')}, {report['date']}", "",
             (f"- GPU: {gpu.get('name')} ({gpu.get('memory')}, driver {gpu.get('driver')}, "
              f"{gpu.get('count')} visible; from {gpu.get('source')})"),
             f"- Commit: {commit} (from {git.get('source')})",
             "- Versions: " + ", ".join(f"{k} {v}" for k, v in report["versions"].items() if v),
             f"- Command: `{report['command']}`; total {report.get('total_s', '?')} s", "",
             "| stage | status | seconds | timeout | rc |", "|---|---|---|---|---|"]
    for name in STAGES:
        st = report["stages"].get(name)
        if st:
            lines.append(f"| {name} | {st.get('status')} | {st.get('seconds', '')} | "
                         f"{st.get('timeout_s', '')} | {st.get('rc', '')} |")
    lines += ["", "```", report.get("show_config", "").rstrip(), "```", ""]

    t = report["stages"].get("tests")
    if t:
        lines += ["## Tests", ""]
        c = t.get("counts") or {}
        lines.append(", ".join(f"{k} {c[k]}" for k in ("tests", "passed", "failed", "errors", "skipped")
                               if k in c) or f"no counts ({t.get('status')})")
        failures = c.get("failures") or []
        if failures:
            by_message = collections.Counter(f"{f['kind']}: {f['message']}" for f in failures)
            lines += ["", "Failures and errors by message:"]
            lines += [f"- {n} × {m}" for m, n in by_message.most_common(15)]
            lines += ["", "Failing tests (first 40):"]
            lines += [f"- `{f['test']}`" for f in failures[:40]]
        if c.get("skip_reasons"):
            lines += ["", "Skip reasons:"]
            lines += [f"- {s['count']} × {s['reason']}" for s in c["skip_reasons"]]
        lines.append("")
    s = report["stages"].get("sanitizer")
    if s:
        lines += ["## compute-sanitizer memcheck (tests/kernels)", "",
                  s.get("summary") or s.get("status", "")]
        lines += [f"    {r}" for r in s.get("first_reports", [])[:20]]
        lines.append("")
    titles = (("bench-cuda", "Benchmarks on the GPU"), ("bench-cpu", "CPU benchmarks (quick sizes)"))
    for name, title in titles:
        b = report["stages"].get(name)
        if not b:
            continue
        overview = b.get("overview", {})
        files = ", ".join(b.get("files", [])) or "none"
        lines += [f"## {title}", "",
                  f"Files: {files}; rows {overview.get('rows', 0)} {overview.get('status', '')}", ""]
        lines += [f"- {p}" for p in overview.get("problems", [])]
        if b.get("summary_md"):
            lines += ["", b["summary_md"]]
        lines.append("")
    return "\n".join(lines)


def _save(report: dict, stem: str) -> None:
    texts = ((".json", json.dumps(report, indent=1, default=str) + "\n"), (".md", markdown(report)))
    for suffix, text in texts:
        tmp = stem + suffix + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, stem + suffix)


def _stage_status(res: dict) -> str:
    if res.get("rc") is None:
        return "not started"
    if res.get("timed_out"):
        return "timed out"
    return "ok" if res["rc"] == 0 else f"exit {res['rc']}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m benchmarks.gpu_report", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=os.path.join("benchmarks", "results"))
    p.add_argument("--budget", type=float, default=1140, help="seconds for all stages together")
    p.add_argument("--stages", default=",".join(STAGES), help="comma-separated subset of " + ",".join(STAGES))
    p.add_argument("--target-time", type=float, default=1.0, help="passed to the CUDA benchmark run")
    args = p.parse_args(argv)
    stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        p.error(f"--stages: unknown {unknown}; choose from {STAGES}")

    began = time.monotonic()
    deadline = began + args.budget
    out_dir = os.path.join(REPO, args.out) if not os.path.isabs(args.out) else args.out
    os.makedirs(out_dir, exist_ok=True)
    remote_out = os.environ.get("OUT")
    global _LOGS
    logs = _LOGS = tempfile.mkdtemp(prefix="gpusparse-report-")
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    gpu = gpu_identity()
    gpu_slug = bench_run.slug(gpu.get("name") or "no-gpu")
    stem = os.path.join(out_dir, f"{date}-{gpu_slug}")
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    py = sys.executable or "python3"
    report = {
        "schema": 1, "date": date,
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": "python3 -m benchmarks.gpu_report " + " ".join(
            bench_run._short_path(a) for a in (argv if argv is not None else sys.argv[1:])),
        "gpu": gpu, "git": bench_run.git_info(REPO), "versions": bench_run.versions(),
        "machine": {k: v for k, v in bench_run.machine_info("cpu").items() if k != "kind"},
        "show_config": _show_config(),
        "env": {k: os.environ[k] for k in ("CUDA_VISIBLE_DEVICES", "GPUSPARSE_DEVICE", "GPUSPARSE_COMMIT")
                if k in os.environ},
        "stages": {},
    }
    earlier = _read_json(stem + ".json")
    if earlier and earlier.get("git", {}).get("commit") == report["git"].get("commit"):
        # A run split over several calls (--stages) keeps the other stages' results.
        report["stages"] = {k: v for k, v in earlier.get("stages", {}).items() if k not in stages}
    say(f"GPU {gpu.get('name')} ({gpu.get('source')}); commit {report['git'].get('commit')}; "
        f"report -> {stem}.md")
    copies = []

    def publish():
        _save(report, stem)
        if remote_out:
            _copy_out([stem + ".json", stem + ".md"] + copies, remote_out)

    publish()

    def timeout_for(name):
        later = [s for s in stages[stages.index(name) + 1:]]
        reserve = sum(LIMITS[s][1] for s in later)
        return max(30.0, min(LIMITS[name][0], deadline - time.monotonic() - reserve))

    for name in stages:
        log_path = os.path.join(logs, f"{name}.log")
        res = {}
        try:
            if name == "tests":
                junit = os.path.join(logs, "junit.xml")
                res = run_stage(name, [py, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                       f"--junitxml={junit}", "tests"], timeout_for(name), log_path, env)
                res["counts"] = parse_junit(junit) or parse_pytest_summary(res.get("tail", ""))
                copies += [junit]
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
                                    timeout_for(name), log_path, env)
                    res.update(parse_sanitizer(_read_text(log_path) or res.get("tail", "")))
                    if res.get("errors"):
                        res["status"] = f"{res['errors']} memcheck errors"
            else:
                cuda = name == "bench-cuda"
                bench_out = out_dir if cuda else logs
                bench_stem = f"{date}-cuda-{gpu_slug}" if cuda else f"{date}-{gpu_slug}-host-cpu-quick"
                cmd = [py, "-m", "benchmarks.run", "--out", bench_out, "--name", bench_stem]
                cmd += ["--device", "cuda", "--target-time", str(args.target_time)] if cuda \
                    else ["--device", "cpu", "--quick"]
                res = run_stage(name, cmd, timeout_for(name), log_path, env)
                base = os.path.join(bench_out, bench_stem)
                doc = _read_json(base + ".json")
                res["files"] = [os.path.basename(base + s) for s in (".json", ".md")
                                if os.path.exists(base + s)]
                res["overview"] = _bench_overview(doc)
                res["summary_md"] = _summary_block(base + ".md")
                if doc and not cuda:
                    res["results"] = doc.get("results")
                copies += [base + ".json", base + ".md"]
        except Exception as exc:  # noqa: BLE001 (a stage's failure is recorded, never fatal)
            res.setdefault("error", f"{type(exc).__name__}: {exc}")
            say(f"{name}: failed in the report itself: {res['error']}")
        res.setdefault("status", _stage_status(res) if "rc" in res else "error")
        copies.append(log_path)
        report["stages"][name] = res
        report["total_s"] = round(time.monotonic() - began, 1)
        publish()

    report["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    report["total_s"] = round(time.monotonic() - began, 1)
    publish()
    say(f"wrote {stem}.json and {stem}.md in {report['total_s']} s"
        + ("; copied them, the benchmark files and the logs to $OUT" if remote_out else ""))
    return 0


def _copy_out(paths, folder: str) -> None:
    """Copy the files that exist to ``folder`` (a remote runner fetches ``$OUT``)."""
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        say(f"cannot create $OUT: {exc}")
        return
    for path in paths:
        if path and os.path.exists(path):
            try:
                shutil.copy2(path, os.path.join(folder, os.path.basename(path)))
            except OSError as exc:
                say(f"could not copy {os.path.basename(path)} to $OUT: {exc}")


if __name__ == "__main__":
    sys.exit(main())
