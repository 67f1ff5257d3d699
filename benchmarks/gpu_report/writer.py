"""The report itself: the machine it ran on, the stages' outcomes and figures, as Markdown and JSON.

:func:`gpu_identity` and :func:`_show_config` describe the machine;
:func:`markdown` writes the report's text from its dictionary (the GPU,
the commit, the versions, a table of the stages, the tests grouped by
failure message, memcheck's summary, the benchmark modules and their
summary tables), :func:`_save` writes ``<stem>.json`` and ``<stem>.md``
atomically, and :func:`check_complete` lists what a report lacks.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess

from benchmarks import run as bench_run

from .plan import STAGES
from .publish import _read_json


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


def _tests_markdown(t: dict) -> list[str]:
    c = t.get("counts") or {}
    lines = ["## Tests", ""]
    reported = (f"{c.get('reported', '?')} of {c.get('collected') or '?'} collected tests had reported"
                if "reported" in c else "no outcome log")
    if t.get("status") == "running":
        lines += [f"Still running after {t.get('seconds', '?')} s: {reported}.", ""]
    elif t.get("timed_out"):
        lines += [f"**The stage timed out after {t.get('seconds')} s**: {reported} by then; "
                  f"the rest did not run or did not finish.", ""]
    keys = ("tests", "passed", "failed", "errors", "skipped", "xfailed", "xpassed")
    counted = ", ".join(f"{k} {c[k]}" for k in keys if k in c)
    lines.append(f"{counted} (from the {c.get('source')})" if counted else f"no counts ({t.get('status')})")
    if t.get("command"):
        lines += ["", f"Command: `{t['command']}`" + "".join(f", {k}={v}" for k, v in t.get("env", {}).items())]
    failures = c.get("failures") or []
    if failures:
        groups: dict = {}
        for f in failures:
            groups.setdefault(f.get("message") or "(no message)", []).append(f)
        listed = f", the first {len(failures)} listed" if c.get("n_failures", 0) > len(failures) else ""
        lines += ["", f"Failures and errors by message ({c.get('n_failures', len(failures))} tests{listed}, "
                  f"{len(groups)} messages):"]
        for message, group in sorted(groups.items(), key=lambda kv: -len(kv[1]))[:30]:
            more = f" and {len(group) - 1} more" if len(group) > 1 else ""
            lines.append(f"- {len(group)} × {message.replace('|', '/')}: `{group[0]['test']}`{more}")
        if c.get("kinds"):
            lines += ["", "By kind: " + ", ".join(f"{k} {n}" for k, n in sorted(c["kinds"].items()))]
        lines += ["", "Failing tests (first 100):"]
        for f in failures[:100]:
            how = f.get("kind", "failed") + (f" in {f['when']}" if f.get("when") not in (None, "call", "???") else "")
            lines.append(f"- `{f['test']}` ({how}): {(f.get('message') or '').replace('|', '/')}")
        deaths = [f for f in failures if f.get("kind") in ("timeout", "crashed")][:20]
        if deaths:
            lines += ["", "Stacks of the tests that timed out or crashed (first 20):"]
            for f in deaths:
                lines += ["", f"`{f['test']}` ({f['kind']}):", "", "```", (f.get("detail") or "")[-3000:], "```"]
    if c.get("not_run"):
        lines += ["", f"Collected but without an outcome ({len(c['not_run'])}; the stage ended first):"]
        lines += [f"- `{t}`" for t in c["not_run"][:50]]
    if c.get("slowest"):
        lines += ["", "Slowest tests:"]
        lines += [f"- {s['seconds']:.1f} s `{s['test']}`" for s in c["slowest"]]
    if c.get("skip_reasons"):
        lines += ["", "Skip reasons:"]
        lines += [f"- {s['count']} × {s['reason']}" for s in c["skip_reasons"]]
    return lines + [""]


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

    profile = report["stages"].get("host-profile")
    if profile:
        lines += ["## Host overhead (`benchmarks.host_profile`)", "",
                  "First calls on the fresh machine's empty kernel cache, small operations timed against "
                  "their peers, and gpusparse's Python time by function.", "",
                  (profile.get("text_md") or f"no report ({profile.get('status')})").replace("# Host", "### Host"),
                  ""]
    if report["stages"].get("tests"):
        lines += _tests_markdown(report["stages"]["tests"])
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
        if b.get("parts"):
            lines += ["| module | size | status | rows | seconds | timeout |", "|---|---|---|---|---|---|"]
            lines += [f"| {p['module']} | {p.get('size') or 'full'} | {p['status']} | {p.get('rows', '')} | "
                      f"{p.get('seconds', '')} | {p.get('timeout_s', '')} |" for p in b["parts"]]
            lines.append("")
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


def check_complete(report: dict, stem: str, plan, *, failures_count: bool) -> list[str]:
    """What the report lacks: a stage not run, a test without an outcome, a module without rows, ...

    ``failures_count``: failing tests and benchmark rows in error count as
    problems too (``--emulate``, where the CUDA path must pass).
    """
    problems = []
    for suffix in (".json", ".md"):
        if not os.path.exists(stem + suffix):
            problems.append(f"report file {os.path.basename(stem + suffix)} missing")
    stages = report.get("stages", {})
    t = stages.get("tests")
    if t is not None:
        c = t.get("counts") or {}
        if not c.get("collected"):
            problems.append(f"tests: nothing collected ({t.get('status')})")
        if c.get("not_run"):
            problems.append(f"tests: {len(c['not_run'])} tests without an outcome, e.g. {c['not_run'][0]}")
        if failures_count and c.get("n_failures"):
            f = c["failures"][0]
            problems.append(f"tests: {c['n_failures']} failing, e.g. {f['test']} ({f['kind']}): {f['message']}")
    profile = stages.get("host-profile")
    if profile is not None:
        broken = [line for line in (profile.get("text_md") or "").splitlines() if line.startswith("error:")]
        if not profile.get("text_md"):
            problems.append(f"host-profile: no report ({profile.get('status')})")
        elif broken:
            problems.append(f"host-profile: {len(broken)} operations failed, e.g. {broken[0]}")
    b = stages.get("bench-cuda")
    if b is not None:
        parts = {p["module"]: p for p in b.get("parts", [])}
        for module, _, _ in plan:
            p = parts.get(module)
            if p is None or not p.get("rows"):
                problems.append(f"bench-cuda {module}: no rows ({p.get('status') if p else 'not run'})")
                continue
            if p.get("timed_out"):
                problems.append(f"bench-cuda {module}: stopped at its time limit after {p.get('rows')} rows")
        doc = _read_json(os.path.join(os.path.dirname(stem), b.get("files", [""])[0])) if b.get("files") else None
        for rows in (doc or {}).get("results", {}).values():
            for r in rows:
                if r.get("status") == "skipped" and not r.get("error"):
                    problems.append(f"bench-cuda {r.get('bench')} {r.get('case')} {r.get('impl')}: skipped "
                                    "without a reason")
                if failures_count and r.get("status") in ("error", "mismatch"):
                    problems.append(f"bench-cuda {r.get('bench')} {r.get('case')} {r.get('impl')}: "
                                    f"{r.get('status')} {str(r.get('error', ''))[:200]}")
    for name, st in stages.items():
        if st.get("status") in ("not started", "error", "running"):
            problems.append(f"stage {name}: {st.get('status')} {st.get('error', '')}".rstrip())
    return problems
