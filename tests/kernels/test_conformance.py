"""Both primitive implementations define every name of ``PRIMITIVES`` with the specified signature.

The CUDA module is imported where CuPy imports (no GPU is needed to import
it); where the import fails, its source is read with :mod:`ast` instead, so
the check runs on every machine.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import pathlib

import pytest

from gpusparse import _kernels
from gpusparse._kernels import OPTIONAL, PRIMITIVES, Primitives


def _spec_signature(name):
    sig = inspect.signature(getattr(Primitives, name))
    params = list(sig.parameters.values())[1:]  # drop self
    return [(p.name, p.kind, p.default) for p in params]


def _signature(func):
    return [(p.name, p.kind, p.default) for p in inspect.signature(func).parameters.values()]


def _first_doc_line(func_or_doc):
    doc = func_or_doc if isinstance(func_or_doc, str) else inspect.getdoc(func_or_doc)
    return (doc or "").strip().splitlines()[0] if doc else ""


def test_protocol_lists_every_primitive():
    for name in PRIMITIVES:
        assert callable(getattr(Primitives, name, None)), name
        assert _first_doc_line(getattr(Primitives, name)), f"{name} has no precondition line"


def test_cpu_implementation_conforms():
    from gpusparse._kernels import cpu
    for name in PRIMITIVES:
        func = getattr(cpu, name, None)
        assert callable(func), f"gpusparse._kernels.cpu lacks {name}"
        assert _signature(func) == _spec_signature(name), name
        assert _first_doc_line(func) == _first_doc_line(getattr(Primitives, name)), name
        assert name in cpu.__all__, name


def test_optional_primitives_conform_where_provided():
    from gpusparse._kernels import cpu
    assert "merge_rows_values" in cpu.__all__  # the CPU provides every optional primitive
    for name in OPTIONAL:
        assert callable(getattr(Primitives, name, None)), name
        func = getattr(cpu, name, None)
        if func is not None:
            assert _signature(func) == _spec_signature(name), name
            assert _first_doc_line(func) == _first_doc_line(getattr(Primitives, name)), name


# --------------------------------------------------------------------------
# CUDA
# --------------------------------------------------------------------------

def _cuda_package_dir():
    spec = importlib.util.find_spec("gpusparse._kernels.cuda")
    if spec is None or spec.origin in (None, "namespace"):
        return None
    return pathlib.Path(spec.origin).parent


def _cuda_functions():
    """``{name: (signature, first docstring line)}`` of the CUDA implementation."""
    directory = _cuda_package_dir()
    if directory is None:
        pytest.skip("gpusparse._kernels.cuda is not written yet (no __init__.py)")
    try:
        module = importlib.import_module("gpusparse._kernels.cuda")
    except Exception:  # CuPy missing or broken: read the source instead
        module = None
    if module is not None:
        return {
            name: (_signature(getattr(module, name)), _first_doc_line(getattr(module, name)))
            for name in PRIMITIVES if callable(getattr(module, name, None))
        }
    # Follow the package's re-exports to the module defining each name.
    where = {}
    for node in ast.parse((directory / "__init__.py").read_text()).body:
        if isinstance(node, ast.FunctionDef):
            where[node.name] = "__init__"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gpusparse._kernels.cuda."):
            for alias in node.names:
                where[alias.asname or alias.name] = node.module.rsplit(".", 1)[1]
    found = {}
    for name in PRIMITIVES:
        if name not in where:
            continue
        for node in ast.parse((directory / f"{where[name]}.py").read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                found[name] = (_ast_signature(node), _first_doc_line(ast.get_docstring(node) or ""))
    return found


def _ast_signature(node: ast.FunctionDef):
    args = node.args
    positional = args.posonlyargs + args.args
    defaults = [inspect.Parameter.empty] * (len(positional) - len(args.defaults)) + [
        ast.literal_eval(d) for d in args.defaults
    ]
    kinds = [inspect.Parameter.POSITIONAL_ONLY] * len(args.posonlyargs) + [
        inspect.Parameter.POSITIONAL_OR_KEYWORD
    ] * len(args.args)
    sig = [(a.arg, kind, d) for a, kind, d in zip(positional, kinds, defaults)]
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        sig.append((a.arg, inspect.Parameter.KEYWORD_ONLY,
                    inspect.Parameter.empty if d is None else ast.literal_eval(d)))
    return sig


def test_cuda_implementation_conforms():
    found = _cuda_functions()
    missing = [name for name in PRIMITIVES if name not in found]
    assert not missing, f"gpusparse._kernels.cuda lacks {missing}"
    for name in PRIMITIVES:
        signature, doc_line = found[name]
        assert signature == _spec_signature(name), name
        assert doc_line == _first_doc_line(getattr(Primitives, name)), name


def test_operations_and_containers_never_import_an_implementation():
    # The layering rule of the design: gpusparse.ops and gpusparse.containers
    # are written once against the interface and get the implementation from
    # gpusparse._device.kernels_for; they never import Numba, CuPy's kernels
    # or one implementation directly.
    root = pathlib.Path(_kernels.__file__).parent.parent
    offenders = []
    for layer in ("ops", "containers"):
        for path in (root / layer).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
                else:
                    continue
                if any(n.split(".")[0] == "numba" or n.startswith(("gpusparse._kernels.cpu",
                       "gpusparse._kernels.cuda")) for n in names):
                    offenders.append(path.relative_to(root).as_posix())
    assert not offenders, f"these modules import a primitive implementation: {sorted(set(offenders))}"
