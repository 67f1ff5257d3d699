"""What leaves the GPU report's process: progress lines, text without this machine's paths, files for ``$OUT``.

Every line of stage output, failure message and command that goes into the
report passes through :func:`_public`, which hides the repository's, the
interpreter's and this run's log folder's absolute paths (the log folder is
set once by :func:`set_logs`). :func:`_copy_out` copies the report's files
to ``$OUT`` (at most :data:`~benchmarks.gpu_report.plan.MAX_OUT_FILES`),
:func:`_join_logs` gathers every stage's log into one file for it, and
:func:`_read_json` and :func:`_read_text` read back what the stages wrote,
``None`` or ``""`` where they wrote nothing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time

from .plan import LOG_KEEP_CHARS, MAX_OUT_FILES, REPO, STAGES

_LOGS = None  # this run's temporary log folder, hidden from the report


def say(message: str) -> None:
    print(f"[gpu_report {time.strftime('%H:%M:%S')}] {message}", flush=True)


def set_logs(path: str | None) -> None:
    """Name this run's log folder, which :func:`_public` then writes as ``<logs>``."""
    global _LOGS
    _LOGS = path


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
    if sys.executable:
        text = re.sub(re.escape(sys.executable) + r"\b", "python3", text)
    text = text.replace(REPO + os.sep, "").replace(REPO, ".")
    text = _SITE.sub("<site-packages>/", text)
    return _ABS.sub(r"<path>/\1", text)


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


def _join_logs(logs: str, path: str) -> str:
    """Every stage's log in one file (each cut to its start and end past :data:`LOG_KEEP_CHARS`)."""
    with open(path, "w") as out:
        for name in STAGES:
            text = _read_text(os.path.join(logs, f"{name}.log"))
            if not text:
                continue
            if len(text) > LOG_KEEP_CHARS:
                head = LOG_KEEP_CHARS // 10
                text = (text[:head] + f"\n[... {len(text) - LOG_KEEP_CHARS} characters left out ...]\n"
                        + text[-(LOG_KEEP_CHARS - head):])
            out.write(f"===== {name}.log =====\n{text}\n")
    return path


def _copy_out(paths, folder: str) -> None:
    """Copy the first :data:`MAX_OUT_FILES` of ``paths`` that exist to ``folder`` (fetched from ``$OUT``)."""
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        say(f"cannot create $OUT: {exc}")
        return
    present = [path for path in dict.fromkeys(paths) if path and os.path.exists(path)]
    for path in present[MAX_OUT_FILES:]:
        say(f"not copied to $OUT (at most {MAX_OUT_FILES} files): {os.path.basename(path)}")
    for path in present[:MAX_OUT_FILES]:
        try:
            shutil.copy2(path, os.path.join(folder, os.path.basename(path)))
        except OSError as exc:
            say(f"could not copy {os.path.basename(path)} to $OUT: {exc}")
