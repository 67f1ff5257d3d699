"""Copy the latest CPU benchmark summary into the documentation's benchmark page.

Usage, from the repository root::

    python tools/update_readme_bench.py [--page docs/benchmarks.md] [--results benchmarks/results]
                                        [--source FILE.md] [--check]

Finds the newest ``benchmarks/results/<YYYY-MM-DD>-cpu-*.md`` written by
``python -m benchmarks.run`` (newest by date, then by the start time in the
JSON beside it; quick runs and runs of only some of the modules are
ignored), or takes ``--source``; takes its
summary (the text between ``<!-- summary:start -->`` and
``<!-- summary:end -->``) and puts it in the page (``docs/benchmarks.md``
unless ``--page`` names another file; ``--readme`` is the older name of the
option) between the markers::

    <!-- bench-table -->
    ...replaced...
    <!-- /bench-table -->

A second ``<!-- bench-table -->`` also works as the closing marker. With only
the opening marker, the table goes right after it and the closing marker is
added. ``--check`` changes nothing and exits with 1 if the page is out of
date. Exits with 2 when the page has no marker or there is no result.

Examples
--------
>>> text = "intro\\n<!-- bench-table -->\\nold\\n<!-- /bench-table -->\\nrest\\n"
>>> print(insert_table(text, "| a |"), end="")
intro
<!-- bench-table -->
| a |
<!-- /bench-table -->
rest
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

START = "<!-- bench-table -->"
ENDS = ("<!-- /bench-table -->", "<!-- bench-table -->", "<!-- end bench-table -->")
SUMMARY_START = "<!-- summary:start -->"
SUMMARY_END = "<!-- summary:end -->"
#: The page that holds the benchmark tables, relative to the repository root.
PAGE = os.path.join("docs", "benchmarks.md")
_RESULT = re.compile(r"^(\d{4}-\d{2}-\d{2})-cpu-.*\.md$")


#: The modules a result must cover to stand for the whole CPU table (a run
#: of one module, such as ``--only linalg``, does not replace it).
CORE_MODULES = ("coalesce", "elementwise", "indexing", "linalg", "manipulation", "reductions")


def _started(md_path: str) -> str:
    """The ``started`` time in the JSON beside a result.

    "" if unknown; "~" marks a result that cannot stand for the table: a
    quick run, or one without every module of :data:`CORE_MODULES`.
    """
    try:
        with open(md_path[: -len(".md")] + ".json") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return ""
    partial = not set(CORE_MODULES) <= set(doc.get("results", {}))
    return "~" if doc.get("quick") or partial else str(doc.get("started", ""))


def latest_cpu_result(results: str) -> str | None:
    """Path of the newest full (not quick) CPU result in ``results``."""
    try:
        names = os.listdir(results)
    except OSError:
        return None
    found = []
    for name in names:
        match = _RESULT.match(name)
        if match and not name.endswith("-quick.md"):
            started = _started(os.path.join(results, name))
            if started != "~":
                found.append((match.group(1), started, name))
    return os.path.join(results, max(found)[2]) if found else None


def summary_of(markdown: str) -> str | None:
    """The text between the summary markers of a results file, or None."""
    start, end = markdown.find(SUMMARY_START), markdown.find(SUMMARY_END)
    if start < 0 or end < start:
        return None
    return markdown[start + len(SUMMARY_START):end].strip()


def insert_table(readme: str, table: str) -> str:
    """``readme`` with ``table`` between the bench-table markers (ValueError without them)."""
    start = readme.find(START)
    if start < 0:
        raise ValueError(f"no {START} marker")
    body = start + len(START)
    ends = [(readme.find(e, body), e) for e in ENDS]
    ends = [(pos, e) for pos, e in ends if pos >= 0]
    if ends:
        pos, marker = min(ends)
        tail = readme[pos:]
    else:
        pos, marker = body, ENDS[0]
        tail = marker + readme[body:]
    return readme[:body] + "\n" + table.strip() + "\n" + tail


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--page", "--readme", dest="page", default=PAGE,
                   help=f"the Markdown file with the bench-table markers (default {PAGE})")
    p.add_argument("--results", default=os.path.join("benchmarks", "results"))
    p.add_argument("--source", help="a results .md to use instead of the newest CPU one")
    p.add_argument("--check", action="store_true", help="exit 1 if the page is out of date")
    args = p.parse_args(argv)
    source = args.source or latest_cpu_result(args.results)
    if source is None:
        print(f"no CPU result in {args.results}", file=sys.stderr)
        return 2
    with open(source) as f:
        table = summary_of(f.read())
    if not table:
        print(f"{source} has no summary markers", file=sys.stderr)
        return 2
    try:
        with open(args.page) as f:
            page = f.read()
        updated = insert_table(page, table)
    except (OSError, ValueError) as exc:
        print(f"{args.page}: {exc}", file=sys.stderr)
        return 2
    if updated == page:
        print(f"{args.page} is up to date with {os.path.basename(source)}")
        return 0
    if args.check:
        print(f"{args.page} is out of date; run python tools/update_readme_bench.py", file=sys.stderr)
        return 1
    with open(args.page, "w") as f:
        f.write(updated)
    print(f"{args.page}: inserted the summary of {os.path.basename(source)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
