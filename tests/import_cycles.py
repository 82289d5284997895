"""Import cycles among our modules, function-local imports included.

``python3 -m tests.import_cycles [PREFIX ...]`` prints every strongly connected
component (two or more modules that import each other, directly or around a loop) of
the module graph restricted to modules named by the prefixes (all of ours when none
are given), with one import line per edge of the loop, and exits 1 if it found any.

The graph is read from the source with ``ast``, so imports inside functions, which a
fresh interpreter never runs at import time, count like top-level ones: a function-local
import that closes a loop hides a cycle, it does not remove it. ``from pkg import name``
is an edge to ``pkg.name`` when that is a module, else to ``pkg``; importing
``a.b.c`` also runs ``a.b``'s ``__init__``, so it is an edge to ``a.b`` too (unless
the importer lives inside ``a.b``, whose ``__init__`` is already running).
``if TYPE_CHECKING:`` imports are left out (``--typing`` counts them): they never run.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from pathlib import Path

__all__ = ["import_graph", "cycles", "main"]

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("ds_events", "projections", "handlers")


def import_graph(root: Path = REPO, *, typing_imports: bool = False) -> dict[str, dict[str, int]]:
    """``{module: {imported module: first line}}`` over every module of ours."""
    paths = {_module_name(p, root): p for pkg in PACKAGES for p in sorted((root / pkg).rglob("*.py"))}
    graph: dict[str, dict[str, int]] = {}
    for me, path in paths.items():
        package = me if path.name == "__init__.py" else me.rpartition(".")[0]
        edges: dict[str, int] = {}
        tree = ast.parse(path.read_text(), str(path))
        skipped = set() if typing_imports else _type_checking_nodes(tree)
        for node in ast.walk(tree):
            if node in skipped:
                continue
            for target in _targets(node, package, paths):
                for name in [target, *_parents(target)]:
                    if name != me and name in paths and not me.startswith(name + "."):
                        edges.setdefault(name, node.lineno)  # type: ignore[attr-defined]
        graph[me] = edges
    return graph


def cycles(graph: dict[str, dict[str, int]], prefixes: Iterable[str] = ()) -> list[list[str]]:
    """The strongly connected components of more than one module, of the graph
    restricted to the modules whose names start with one of ``prefixes`` (every module
    if none; ``ds_events.store`` covers ``ds_events.stores`` too), sorted."""
    wanted = tuple(prefixes)
    keep = {m for m in graph if not wanted or any(m.startswith(p) for p in wanted)}
    sub = {m: [t for t in graph[m] if t in keep] for m in keep}
    return sorted(sorted(c) for c in _tarjan(sub) if len(c) > 1)


def main(argv: list[str]) -> int:
    typing_imports = "--typing" in argv
    prefixes = [a for a in argv if not a.startswith("--")]
    graph = import_graph(typing_imports=typing_imports)
    found = cycles(graph, prefixes)
    scope = ", ".join(prefixes) or "every module"
    print(f"{len(graph)} modules, {sum(len(e) for e in graph.values())} imports; cycles within {scope}: {len(found)}")
    for component in found:
        print("cycle: " + " <-> ".join(component))
        members = set(component)
        for module in component:
            for target, line in sorted(graph[module].items()):
                if target in members:
                    print(f"    {module}:{line} imports {target}")
    return 1 if found else 0


# -- private helpers ----------------------------------------------------------------------


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _targets(node: ast.AST, package: str, modules: dict[str, Path]) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] in PACKAGES]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        base = package.split(".")
        base = base[: len(base) - (node.level - 1)]
        module = ".".join(base + ([node.module] if node.module else []))
    else:
        module = node.module or ""
    if module.split(".")[0] not in PACKAGES:
        return []
    return [f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module for a in node.names]


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)]


def _type_checking_nodes(tree: ast.AST) -> set[ast.AST]:
    """Every node under an ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``) block."""
    found: set[ast.AST] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else ""
            if name == "TYPE_CHECKING":
                for child in node.body:
                    found.update(ast.walk(child))
    return found


def _tarjan(graph: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, int]] = [(start, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            targets = graph[node]
            if i < len(targets):
                work.append((node, i + 1))
                target = targets[i]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return components


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
