"""The largest set of modules of a package that import each other in a loop.

Every import statement counts, at module level or inside a function, since
any of them runs the imported module; a package's ``__init__`` is a module
like any other (``from a.b import c`` is an edge to ``a.b``, and to
``a.b.c`` where that is a module). The edge from a module to the packages
above it, which Python runs first, is left out: it is there for every module
and would put the whole tree in one loop whenever the top-level package
imports its submodules, as a library's public face does. The modules that
import each other in a loop are the strongly connected components of that
graph; the largest is reported with its members, and the
import lines that close its loops are listed with ``--verbose``.

Usage, from the repository root::

    python tools/import_cycles.py [--package gpusparse] [--max N] [--verbose]

``--max N`` exits 1 when the largest component has more than ``N`` modules
(the check CI runs; the limit is a ratchet that may only go down). Standard
library only.

Examples
--------
>>> graph = {"a": {"b"}, "b": {"a", "c"}, "c": set()}
>>> sorted(map(sorted, strongly_connected(graph)))
[['a', 'b'], ['c']]
"""

from __future__ import annotations

import argparse
import ast
import os
import sys

__all__ = ["import_graph", "largest_cycle", "main", "strongly_connected"]


def _modules(root: str, package: str) -> dict[str, str]:
    """``{dotted module name: file}`` of every ``.py`` file of ``package`` under ``root``."""
    found = {}
    base = os.path.join(root, package)
    for folder, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__")))
        rel = os.path.relpath(folder, root).split(os.sep)
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            parts = rel if name == "__init__.py" else rel + [name[:-3]]
            found[".".join(parts)] = os.path.join(folder, name)
    return found


def _named(name: str, known) -> set[str]:
    """``name`` where it is a module of the tree."""
    return {name} & known


def _targets(node, module: str, is_package: bool, known) -> set[str]:
    if isinstance(node, ast.Import):
        out = set()
        for alias in node.names:
            out |= _named(alias.name, known)
        return out
    # ast.ImportFrom: resolve a relative import against this module's package.
    if node.level:
        here = module.split(".") if is_package else module.split(".")[:-1]
        here = here[: len(here) - (node.level - 1)] if node.level > 1 else here
        base = ".".join(here + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    out = _named(base, known)
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        if sub in known:  # ``from pkg import module`` runs that module too
            out.add(sub)
    return out


def import_graph(root: str = ".", package: str = "gpusparse"):
    """``({module: {imported modules}}, {(module, target): [line numbers]})`` for ``package``."""
    files = _modules(root, package)
    known = set(files)
    graph, lines = {}, {}
    for module, path in files.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
        edges = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(node, module, path.endswith("__init__.py"), known):
                    if target != module:
                        edges.add(target)
                        lines.setdefault((module, target), []).append(node.lineno)
        graph[module] = edges
    return graph, lines


def strongly_connected(graph) -> list[set[str]]:
    """Tarjan's strongly connected components of ``graph`` (iterative)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                out.append(component)
    return out


def largest_cycle(root: str = ".", package: str = "gpusparse") -> set[str]:
    """The largest set of modules of ``package`` that import each other in a loop."""
    graph, _ = import_graph(root, package)
    components = [c for c in strongly_connected(graph) if len(c) > 1]
    return max(components, key=len, default=set())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p.add_argument("--package", default="gpusparse")
    p.add_argument("--max", type=int, default=None, help="fail when the largest loop has more modules")
    p.add_argument("--verbose", action="store_true", help="list the import lines inside the loop")
    args = p.parse_args(argv)
    graph, lines = import_graph(args.root, args.package)
    cycle = max((c for c in strongly_connected(graph) if len(c) > 1), key=len, default=set())
    print(f"import_cycles: {len(graph)} modules of {args.package}; the largest set that imports "
          f"each other in a loop has {len(cycle)} modules")
    for name in sorted(cycle):
        inside = sorted(t for t in graph[name] if t in cycle)
        print(f"  {name} -> {', '.join(inside)}")
        if args.verbose:
            for target in inside:
                print(f"      line {', '.join(map(str, lines[(name, target)]))}: imports {target}")
    if args.max is not None and len(cycle) > args.max:
        print(f"import_cycles: FAILED: {len(cycle)} modules in one loop, more than --max {args.max}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
