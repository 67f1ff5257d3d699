"""Run every benchmark module; write JSON and a Markdown table of the results.

Usage, from the repository root::

    python -m benchmarks.run [--device cpu|cuda] [--quick] [--out benchmarks/results]
                             [--only NAME] [--size N] [--target-time S] [--name STEM]

writes ``<out>/<YYYY-MM-DD>-<device-name>.json`` and ``.md`` beside it
(``-quick`` is appended for ``--quick``). The device name is
``cpu-<n>core-<model>`` or ``cuda-<gpu model>``, sanitised for file names.
The JSON holds the machine (CPU model and cores or GPU name and memory, load
average), library versions, the git commit (``GPUSPARSE_COMMIT`` where there
is no ``.git``), the date, the command, and every row. Both files are
rewritten after every row, so an interrupted run keeps what it measured.

Plugin contract
---------------
A benchmark is a module ``benchmarks/bench_<name>.py``; every such module is
found and run in name order (``--only`` filters by name). It defines:

``run(ctx) -> Iterable[dict]`` (required)
    ``ctx`` is a :class:`benchmarks.Context` (``device``, ``quick``,
    ``target_s``, ``log``, ``size``). Yield one row per (case,
    implementation) as soon as it is measured. A row is a flat, JSON-ready
    dict with at least ``bench``, ``case``, ``impl`` and ``status``
    (``"ok"``, ``"skipped"``, ``"error"`` or ``"mismatch"``; a reason in
    ``error``), and when ``status == "ok"`` the keys of
    :class:`benchmarks._timing.Timing` (``median_s``, ``repeats``, ...) plus
    ``first_call_s``. Anything else is free (``entries_per_s``,
    ``gb_s_floor``, ``pct_copy_floor``, ``speedup`` = peer time / gpusparse
    time, ...). Time with :mod:`benchmarks._timing` so every module measures
    alike; :mod:`benchmarks._report` builds such rows (first call, check,
    timing, status) and the Markdown tables.
``summarize(rows) -> str`` (optional)
    A Markdown summary; it goes between ``<!-- summary:start -->`` and
    ``<!-- summary:end -->``, which ``tools/update_readme_bench.py`` copies
    into docs/benchmarks.md.
``details(rows) -> str`` (optional)
    A Markdown table of every row; a generic one otherwise.
``NAME`` (optional)
    The section title; the module name without ``bench_`` otherwise.
``DEVICES`` (optional)
    The devices the module supports, ``("cpu", "cuda")`` otherwise.

An exception escaping ``run`` becomes an ``error`` row and the next module
runs.

Examples
--------
>>> device_name({"kind": "cpu", "cpu_count": 2, "cpu_model": "Intel(R) Xeon(R) Processor"})
'cpu-2core-intel-xeon-processor'
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib
import importlib.metadata
import json
import os
import pkgutil
import platform
import re
import subprocess
import sys
import traceback

import benchmarks
from benchmarks import Context

__all__ = ["device_name", "discover", "git_info", "machine_info", "main", "markdown", "slug", "versions"]

SUMMARY_START = "<!-- summary:start -->"
SUMMARY_END = "<!-- summary:end -->"
_PACKAGES = ("gpusparse", "numpy", "scipy", "numba", "sparse", "torch", "cupy", "jax")
_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def log(message: str) -> None:
    print(message, flush=True)


# --------------------------------------------------------------------------
# where and with what we run
# --------------------------------------------------------------------------

def slug(text: str, limit: int = 48) -> str:
    """Lower-case ``text`` with runs of other characters turned into ``-``.

    Examples
    --------
    >>> slug("NVIDIA H100 80GB HBM3")
    'nvidia-h100-80gb-hbm3'
    """
    text = re.sub(r"\((r|tm|c)\)|\bcpu\b|@.*$", " ", text.lower())
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-")[:limit].strip("-") or "unknown"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _gpu_info() -> dict:
    import cupy
    dev = cupy.cuda.Device()
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return {
        "gpu_name": name,
        "gpu_index": int(dev.id),
        "gpu_memory_gib": round(props["totalGlobalMem"] / 2**30, 1),
        "compute_capability": f"{props['major']}.{props['minor']}",
        "gpu_count": int(cupy.cuda.runtime.getDeviceCount()),
        "cuda_driver": int(cupy.cuda.runtime.driverGetVersion()),
        "cuda_runtime": int(cupy.cuda.runtime.runtimeGetVersion()),
    }


def machine_info(device: str) -> dict:
    """CPU model and cores, load average, and on CUDA the GPU's name and memory."""
    info = {
        "kind": "cuda" if device.startswith("cuda") else "cpu",
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    try:
        info["load_avg"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    with contextlib.suppress(Exception):  # no Numba, or no thread pool
        import numba
        info["numba_threads"] = numba.get_num_threads()
    if info["kind"] == "cuda":
        info.update(_gpu_info())
    return info


def device_name(machine: dict) -> str:
    """``cpu-<n>core-<model>`` or ``cuda-<gpu model>``, safe in file names."""
    if machine["kind"] == "cuda":
        return "cuda-" + slug(machine.get("gpu_name", "gpu"))
    return f"cpu-{machine.get('cpu_count') or 0}core-" + slug(machine.get("cpu_model", ""))


def versions() -> dict:
    """Installed versions of gpusparse and its peers (``None`` where absent)."""
    out = {}
    for name in _PACKAGES:
        if name == "gpusparse":
            try:
                import gpusparse
                out[name] = gpusparse.__version__
            except Exception as exc:  # noqa: BLE001 (reported as the version)
                out[name] = f"import failed: {type(exc).__name__}"
            continue
        candidates = [name]
        if name == "cupy":
            candidates = ["cupy", "cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x"]
        out[name] = None
        for dist in candidates:
            try:
                out[name] = importlib.metadata.version(dist)
                break
            except importlib.metadata.PackageNotFoundError:
                continue
    return out


def git_info(repo: str = _REPO) -> dict:
    """The commit and whether tracked files differ from it; ``GPUSPARSE_COMMIT`` without ``.git``."""
    if os.path.exists(os.path.join(repo, ".git")):
        try:
            commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True,
                                    text=True, timeout=20, check=True).stdout.strip()
            changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                     cwd=repo, check=False, capture_output=True, text=True,
                                     timeout=20).stdout
            return {"commit": commit, "dirty": bool(changed.strip()), "source": "git"}
        except (OSError, subprocess.SubprocessError):
            pass
    env = os.environ.get("GPUSPARSE_COMMIT")
    if env:
        return {"commit": env, "dirty": None, "source": "GPUSPARSE_COMMIT"}
    return {"commit": None, "dirty": None, "source": "unknown"}


# --------------------------------------------------------------------------
# modules
# --------------------------------------------------------------------------

def discover(only: list[str] | None = None) -> list:
    """The ``bench_*`` modules of this package, imported, in name order."""
    names = sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name.startswith("bench_"))
    if only:
        names = [n for n in names if any(o in n for o in only)]
    return [importlib.import_module(f"benchmarks.{n}") for n in names]


def _title(module) -> str:
    return getattr(module, "NAME", module.__name__.rsplit(".", 1)[-1].removeprefix("bench_"))


def _generic_details(rows) -> str:
    head = ["case", "impl", "status", "median ms", "first call ms", "repeats", "note"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        med = f"{r['median_s'] * 1e3:.3g}" if "median_s" in r else ""
        first = f"{r['first_call_s'] * 1e3:.3g}" if "first_call_s" in r else ""
        lines.append(f"| {r.get('case', '')} | {r.get('impl', '')} | {r.get('status', '')} | {med} | "
                     f"{first} | {r.get('repeats', '')} | {str(r.get('error', '')).replace('|', '/')} |")
    return "\n".join(lines)


def _module_markdown(module, rows, attr) -> str:
    fn = getattr(module, attr, None)
    try:
        if fn is not None:
            return fn(rows)
    except Exception as exc:  # noqa: BLE001 (a broken table falls back to the generic one)
        return f"({attr} failed: {type(exc).__name__}: {exc})\n\n" + _generic_details(rows)
    return _generic_details(rows) if attr == "details" else ""


def markdown(doc: dict, modules: dict) -> str:
    """The Markdown report of a results document."""
    m = doc["machine"]
    where = (f"{m.get('gpu_name')} ({m.get('gpu_memory_gib')} GiB), host {m.get('cpu_model')}"
             if m["kind"] == "cuda" else f"{m.get('cpu_model')}, {m.get('cpu_count')} cores")
    git = doc["git"]
    commit = (git["commit"] or "unknown")[:12] + (" (with uncommitted changes)" if git.get("dirty") else "")
    vers = ", ".join(f"{k} {v}" for k, v in doc["versions"].items() if v)
    quick = " (quick sizes: a smoke test, not a measurement)" if doc["quick"] else ""
    caption = f"Measured on {where}, {doc['date']}, commit {commit}, with `{doc['command']}`{quick}."
    lines = [f"# gpusparse benchmarks: {doc['device_name']}, {doc['date']}", "",
             f"- Command: `{doc['command']}`",
             (f"- Machine: {where}; load average at start {m.get('load_avg')}, "
              f"at end {doc.get('load_avg_end')}"),
             f"- Versions: {vers}", f"- Commit: {commit}", "", SUMMARY_START, caption, ""]
    for name, rows in doc["results"].items():
        module = modules.get(name)
        summary = _module_markdown(module, rows, "summarize") if module else ""
        if summary:
            lines += [f"### {name}", "", summary, ""]
    lines += [SUMMARY_END, "", "## Every row", ""]
    for name, rows in doc["results"].items():
        module = modules.get(name)
        lines += [f"### {name}", "", _module_markdown(module, rows, "details") if module
                  else _generic_details(rows), ""]
    return "\n".join(lines)


def _write(path: str, text: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def save(doc: dict, modules: dict, stem: str) -> tuple[str, str]:
    """Write ``stem.json`` and ``stem.md``; returns both paths."""
    _write(stem + ".json", json.dumps(doc, indent=1, default=str) + "\n")
    _write(stem + ".md", markdown(doc, modules))
    return stem + ".json", stem + ".md"


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu", help="cpu or cuda (cuda:N picks a GPU)")
    p.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test")
    p.add_argument("--out", default=os.path.join("benchmarks", "results"), help="output folder")
    p.add_argument("--only", action="append", help="run only modules whose name contains this")
    p.add_argument("--size", type=int, help="override each module's problem size")
    p.add_argument("--target-time", type=float, help="seconds of timed repeats per measurement "
                   "(default 1.5, 0.05 with --quick)")
    p.add_argument("--name", help="file stem instead of <date>-<device-name>")
    return p


def _short_path(path: str) -> str:
    if not os.path.isabs(path):
        return path
    rel = os.path.relpath(path, _REPO)
    return rel if not rel.startswith("..") else "<...>/" + os.path.basename(path.rstrip("/"))


def _command(argv) -> str:
    """The command line as typed, with absolute paths made relative or shortened.

    Examples
    --------
    >>> _command(["--quick", "--out=/somewhere/else"])
    'python -m benchmarks.run --quick --out=<...>/else'
    """
    parts = []
    for arg in argv:
        if arg.startswith("--") and "=" in arg:
            key, value = arg.split("=", 1)
            parts.append(f"{key}={_short_path(value)}")
        else:
            parts.append(_short_path(arg))
    return " ".join(["python -m benchmarks.run"] + parts)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser().parse_args(argv)
    device = args.device.strip().lower()
    if device == "gpu":
        device = "cuda"
    if device.startswith("cuda"):
        try:
            from benchmarks import _emulation
            _emulation.install()  # the emulated CUDA device, where GPUSPARSE_CUDA_EMULATION asks for it
            import cupy
            if cupy.cuda.runtime.getDeviceCount() == 0:
                raise RuntimeError("no CUDA device")
            if ":" in device:
                cupy.cuda.Device(int(device.split(":", 1)[1])).use()
        except Exception as exc:  # noqa: BLE001 (any CuPy failure means no usable GPU)
            log(f"benchmarks: CUDA is not usable here ({type(exc).__name__}: {exc})")
            return 2
    elif device != "cpu":
        log(f"benchmarks: --device must be cpu or cuda[:N], got {args.device!r}")
        return 2
    target = args.target_time if args.target_time else (0.05 if args.quick else 1.5)
    ctx = Context(device=device, quick=args.quick, target_s=target, log=log, size=args.size)
    machine = machine_info(device)
    name = device_name(machine)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    stem = os.path.join(args.out, args.name or f"{date}-{name}{'-quick' if args.quick else ''}")
    os.makedirs(args.out, exist_ok=True)
    doc = {
        "schema": 1, "date": date,
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": _command(argv), "device": device, "device_name": name, "quick": args.quick,
        "target_s": target, "machine": machine, "versions": versions(), "git": git_info(),
        "results": {},
    }
    log(f"benchmarks on {name} ({device}{', quick' if args.quick else ''}) -> {stem}.json/.md")
    modules = {}
    for module in discover(args.only):
        title = _title(module)
        if device.split(":")[0] not in getattr(module, "DEVICES", ("cpu", "cuda")):
            continue
        modules[title] = module
        rows = doc["results"].setdefault(title, [])
        try:
            for row in module.run(ctx):
                rows.append(row)
                save(doc, modules, stem)
        except Exception as exc:  # noqa: BLE001 (an error row, and the next module runs)
            log(traceback.format_exc())
            rows.append({"bench": title, "case": "-", "impl": "-", "status": "error",
                         "error": f"{type(exc).__name__}: {exc}"})
    doc["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    try:
        doc["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    with contextlib.suppress(Exception):  # no parallel Numba function ran, or Numba is absent
        import numba
        machine["numba_threading_layer"] = numba.threading_layer()
    paths = save(doc, modules, stem)
    log(f"wrote {paths[0]} and {paths[1]}")
    bad = [r for rows in doc["results"].values() for r in rows if r.get("status") in ("error", "mismatch")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
