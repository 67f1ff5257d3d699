"""tools/update_readme_bench.py: the latest CPU benchmark summary goes into docs/benchmarks.md."""

from __future__ import annotations

import doctest
import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _tool():
    spec = importlib.util.spec_from_file_location(
        "update_readme_bench", ROOT / "tools" / "update_readme_bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docstring_examples():
    failures, tries = doctest.testmod(_tool())
    assert tries and not failures


def test_default_target_is_the_benchmark_page():
    tool = _tool()
    assert pathlib.PurePath(tool.PAGE) == pathlib.PurePath("docs/benchmarks.md")
    text = (ROOT / tool.PAGE).read_text(encoding="utf-8")
    assert tool.START in text and "<!-- /bench-table -->" in text
    assert tool.START not in (ROOT / "README.md").read_text(encoding="utf-8")


def _result(folder: pathlib.Path, table: str) -> pathlib.Path:
    path = folder / "2026-01-02-cpu-test.md"
    path.write_text(f"# run\n\n<!-- summary:start -->\n{table}\n<!-- summary:end -->\n")
    return path


def test_page_is_updated_and_checked(tmp_path, capsys):
    tool = _tool()
    page = tmp_path / "benchmarks.md"
    page.write_text("# Benchmarks\n\n<!-- bench-table -->\nold\n<!-- /bench-table -->\n\nafter\n")
    source = _result(tmp_path, "| new |")
    args = ["--page", str(page), "--source", str(source)]
    assert tool.main(args + ["--check"]) == 1
    assert tool.main(args) == 0
    assert page.read_text() == "# Benchmarks\n\n<!-- bench-table -->\n| new |\n<!-- /bench-table -->\n\nafter\n"
    assert tool.main(args + ["--check"]) == 0
    # --readme is the option's older name
    assert tool.main(["--readme", str(page), "--source", str(source), "--check"]) == 0


def test_page_without_marker_or_result(tmp_path):
    tool = _tool()
    page = tmp_path / "page.md"
    page.write_text("no markers\n")
    assert tool.main(["--page", str(page), "--source", str(_result(tmp_path, "| t |"))]) == 2
    assert tool.main(["--page", str(page), "--results", str(tmp_path / "empty")]) == 2

