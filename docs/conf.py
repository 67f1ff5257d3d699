"""Sphinx configuration of gpusparse's documentation.

Build with ``make docs`` (HTML into build/docs/html, then the doctest
builder, which runs the ``{doctest}`` blocks of the pages). The Markdown
pages are read by MyST as they are; the API reference is generated from the
docstrings by autosummary. The list of top-level names is written here, at
build time, from ``gpusparse.__all__``, grouped by the module that defines
each name, so the reference can never miss a public function.
"""

from __future__ import annotations

import inspect
import os
import sys

import gpusparse

HERE = os.path.dirname(os.path.abspath(__file__))

project = "gpusparse"
author = "the gpusparse developers"
copyright = "the gpusparse developers"
release = gpusparse.__version__ if hasattr(gpusparse, "__version__") else "0.1.0"
version = release

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.doctest",
    "sphinx.ext.intersphinx",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# MyST: ```{doctest} fences become Sphinx doctest directives, $...$ is not math.
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

autosummary_imported_members = True
autodoc_default_options = {"member-order": "alphabetical"}
autodoc_typehints = "none"
# numpydoc's own member tables would ask for one stub page per method; the
# containers' page lists their members with autodoc instead.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()

# Doctests. The docstrings' examples run under pytest --doctest-modules (each
# in its module's namespace); the doctest builder runs the pages' examples,
# the ```{doctest} blocks, each page in one namespace.
doctest_test_doctest_blocks = ""
doctest_global_setup = """
import numpy as np
import gpusparse as gs
"""
import doctest as _doctest  # noqa: E402

doctest_default_flags = _doctest.ELLIPSIS | _doctest.NORMALIZE_WHITESPACE | _doctest.DONT_ACCEPT_TRUE_FOR_1

intersphinx_mapping = {}
intersphinx_disabled_reftypes = ["*"]

html_theme = "pydata_sphinx_theme"
html_title = "gpusparse"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
html_static_path: list[str] = []


# ---------------------------------------------------------------------------
# the top-level names, by family
# ---------------------------------------------------------------------------

#: (module prefix, section title), first match wins.
FAMILIES = [
    ("gpusparse.containers", None),  # reference/containers.rst
    ("gpusparse.ops.creation", "Creation"),
    ("gpusparse.ops.interop", "Interoperability"),
    ("gpusparse.ops.elementwise", "Elementwise operations"),
    ("gpusparse.ops.comparison", "Comparison"),
    ("gpusparse.ops.reductions", "Reductions"),
    ("gpusparse.ops.shape", "Manipulation"),
    ("gpusparse.ops.indexing", "Indexing and selection"),
    ("gpusparse.ops.along_axis", "Indexing and selection"),
    ("gpusparse.ops.selection", "Indexing and selection"),
    ("gpusparse.ops.masks", "Indexing and selection"),
    ("gpusparse.ops.linalg", "Products"),
    ("gpusparse.ops.einsum", "Products"),
    ("gpusparse.ops.softmax", "Softmax"),
    ("gpusparse.ops.semiring", "Graph algebra"),
    ("gpusparse.ops.tf_ops", "TensorFlow-style operations"),
    ("gpusparse._array_api", "Array API standard adapters"),
    ("gpusparse.io", "Files"),
    ("gpusparse._device", "Devices, options, configuration"),
    ("gpusparse._options", "Devices, options, configuration"),
    ("gpusparse._config", "Devices, options, configuration"),
    ("gpusparse._warmup", "Devices, options, configuration"),
    ("gpusparse._errors", "Devices, options, configuration"),
    ("gpusparse.ops", "Other operations"),
    ("gpusparse", "Other"),
]


def _family(module: str) -> str | None:
    for prefix, title in FAMILIES:
        if module == prefix or module.startswith(prefix + "."):
            return title
    return "Other"


def _write(path: str, text: str) -> None:
    """Write ``text`` to ``path`` unless it holds it already (keeps rebuilds incremental)."""
    try:
        with open(path) as f:
            if f.read() == text:
                return
    except OSError:
        pass
    with open(path, "w") as f:
        f.write(text)


def _title(text: str) -> list[str]:
    return [text, "=" * len(text), ""]


_HEADER = [".. This file is written by docs/conf.py at build time; do not edit.", ""]


def write_toplevel(path: str) -> None:
    """Write the page of ``gpusparse.__all__``, in autosummary tables by family, to ``path``."""
    groups: dict[str, list[str]] = {}
    plain: list[str] = []
    for name in gpusparse.__all__:
        obj = getattr(gpusparse, name)
        if inspect.ismodule(obj):
            continue
        module = getattr(obj, "__module__", None) if callable(obj) else None
        if not module or not module.startswith("gpusparse"):
            plain.append(name)  # dtypes and constants: NumPy's own objects
            continue
        title = _family(module)
        if title is not None:
            groups.setdefault(title, []).append(name)
    order = []
    for _, title in FAMILIES:
        if title in groups and title not in order:
            order.append(title)
    lines = _HEADER + _title("``gpusparse``: the top-level namespace") + [
        ".. automodule:: gpusparse",
        "   :no-members:",
        "",
        "Every name of ``gpusparse.__all__`` but the containers (:doc:`../containers`),",
        "grouped by the family of operations that defines it.",
        "",
        ".. currentmodule:: gpusparse",
        "",
    ]
    for title in order:
        lines += [title, "-" * len(title), "", ".. autosummary::", "   :toctree: generated/", ""]
        lines += [f"   {name}" for name in sorted(groups[title], key=str.lower)]
        lines.append("")
    if plain:
        title = "Data types and constants"
        lines += [title, "-" * len(title), "",
                  "NumPy's own objects, re-exported as the array API standard asks: "
                  + ", ".join(f"``{n}``" for n in plain) + ".", ""]
    _write(path, "\n".join(lines))


def write_module(module: str, path: str) -> None:
    """Write the page of ``module``: its docstring and an autosummary table of its ``__all__``."""
    mod = __import__(module, fromlist=["__all__"])
    names = [n for n in mod.__all__ if not inspect.ismodule(getattr(mod, n))]
    lines = _HEADER + _title(f"``{module}``") + [
        f".. automodule:: {module}",
        "   :no-members:",
        "",
        f".. currentmodule:: {module}",
        "",
        ".. autosummary::",
        "   :toctree: generated/",
        "",
    ] + [f"   {name}" for name in sorted(names, key=str.lower)] + [""]
    _write(path, "\n".join(lines))


#: The modules whose ``__all__`` each reference page lists (reference/index.rst links them).
MODULES = ["gpusparse.linalg", "gpusparse.fft", "gpusparse.io", "gpusparse.graph",
           "gpusparse.autograd", "gpusparse.dask"]

_PAGES = os.path.join(HERE, "reference", "modules")
os.makedirs(_PAGES, exist_ok=True)
write_toplevel(os.path.join(_PAGES, "gpusparse.rst"))
for _module in MODULES:
    write_module(_module, os.path.join(_PAGES, _module + ".rst"))
autosummary_generate = True
