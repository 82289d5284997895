"""Layering, checked on the source as an allowlist.

Every module of ours belongs to one layer and may import only from its own layer or
lower ones (relative imports resolved, imports inside functions included):

    0  ds_events.errors, ds_events.events        domain errors and event types
    1  projections                               pure folds and renders
    2  core: the log and stores, home, views, replay, verify, config, fd helpers,
       and the low helpers of each domain (ds_events.memory, .bash, .artifacts)
    3  ds_events.services                        commands and queries
    4  adapters: handlers, ds_events.cli, the bash monitor process

On top of that: projections do no I/O and read no clock, and adapters never append,
emit or open a transaction themselves — they call a service.

Inside layer 3 the services are domain packages with a DAG of their own (``DOMAINS``):
a domain imports only itself, the shared modules and the domains below it — never one
above it nor one beside it. And nowhere in our code is there an import cycle, counting
imports inside functions (which hide cycles from Python until they run).
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("ds_events", "projections", "handlers")

# Longest prefix wins. "ds_events" itself names only the package's __init__: a new
# module under ds_events must be placed here before the check passes.
LAYERS: dict[str, int] = {
    "ds_events": 0,
    "ds_events.errors": 0,
    "ds_events.events": 0,
    "projections": 1,
    "ds_events.log": 2,
    "ds_events.store": 2,
    "ds_events.stores": 2,
    "ds_events.migrate": 2,
    "ds_events.fdio": 2,
    "ds_events.crashpoints": 2,
    "ds_events.paths": 2,
    "ds_events.config": 2,
    "ds_events.config_edit": 2,
    "ds_events.home": 2,
    "ds_events.views": 2,
    "ds_events.replay": 2,
    "ds_events.verify": 2,
    "ds_events.memory": 2,
    "ds_events.bash": 2,
    "ds_events.artifacts": 2,
    "ds_events.services": 3,
    "handlers": 4,
    "ds_events.cli": 4,
    "ds_events.runners": 4,
    "ds_events.doctor": 4,
    "ds_events.bash_monitor": 4,
    "ds_events.__main__": 4,
}
PROJECTION_FORBIDDEN = {
    "os", "io", "pathlib", "shutil", "subprocess", "socket", "time", "datetime", "random", "sqlite3",
    "aiohttp", "aiofiles", "mcp", "pygit2", "threading", "asyncio",
}  # fmt: skip
ADAPTER_FORBIDDEN_CALLS = {"emit", "emit_async", "transaction"}
# The network and protocol libraries belong to the adapters: a service that needs the
# network takes a function from its caller (see services.interactions.Deliver).
EDGE_LIBRARIES = {"aiohttp", "mcp", "anyio", "acp"}
# Edge libraries that belong to named adapters only: the Agent Client Protocol SDK is
# handlers/acp's (the agent side, ``ds acp``) and the acp runner's (the client side);
# projections.acp builds the notifications as plain dicts.
EDGE_OWNERS = {"acp": ("handlers.acp", "ds_events.runners.acp")}


def module_name(path: Path, root: Path = REPO) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> int | None:
    best: tuple[int, int] | None = None
    for prefix, layer in LAYERS.items():
        if module == prefix or (module.startswith(prefix + ".") and prefix != "ds_events"):
            if best is None or len(prefix) > best[0]:
                best = (len(prefix), layer)
    return None if best is None else best[1]


def imported_modules(path: Path, root: Path = REPO) -> list[tuple[int, str]]:
    """``(line, module)`` for every import of ours in ``path``, relative ones resolved.

    ``from pkg import name`` counts as importing ``pkg.name`` when that is a module,
    else ``pkg``; the layer lookup treats both the same.
    """
    me = module_name(path, root)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found += [(node.lineno, f"{target}.{a.name}") for a in node.names]
    return [(line, name) for line, name in found if name.split(".")[0] in PACKAGES]


def third_party_imports(path: Path) -> list[tuple[int, str]]:
    """``(line, top-level package)`` of every absolute import that is not ours."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name.split(".")[0]) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
    return [(line, name) for line, name in found if name not in PACKAGES]


def edge_library_violations(root: Path = REPO) -> list[str]:
    problems = []
    for path in our_modules(root):
        me = module_name(path, root)
        mine = layer_of(me)
        problems += [
            f"{me}:{line} imports {name}, which only {' and '.join(EDGE_OWNERS[name])} may use"
            for line, name in third_party_imports(path)
            if name in EDGE_OWNERS and not any(me == o or me.startswith(o + ".") for o in EDGE_OWNERS[name])
        ]
        if mine is None or mine >= 4:
            continue
        problems += [
            f"{me}:{line} (layer {mine}) imports {name}, which only adapters may use"
            for line, name in third_party_imports(path) if name in EDGE_LIBRARIES
        ]
    return problems


def our_modules(root: Path = REPO) -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (root / pkg).rglob("*.py"))


def layer_violations(root: Path = REPO) -> list[str]:
    problems: list[str] = []
    for path in our_modules(root):
        me = module_name(path, root)
        mine = layer_of(me)
        if mine is None:
            problems.append(f"{me}: belongs to no layer (add it to LAYERS)")
            continue
        for line, name in imported_modules(path, root):
            theirs = layer_of(name)
            if theirs is None:
                problems.append(f"{me}:{line} imports {name}, which belongs to no layer")
            elif theirs > mine:
                problems.append(f"{me}:{line} (layer {mine}) imports {name} (layer {theirs})")
    return problems


def purity_violations(root: Path = REPO) -> list[str]:
    problems: list[str] = []
    for path in sorted((root / "projections").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                if name.split(".")[0] in PROJECTION_FORBIDDEN:
                    problems.append(f"{module_name(path, root)}:{node.lineno} imports {name}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id in {"open", "utc_now", "new_event_id", "new_event_ids"}:
                    problems.append(f"{module_name(path, root)}:{node.lineno} calls {node.func.id}()")
    return problems


def adapter_violations(root: Path = REPO) -> list[str]:
    """Adapters that append, emit or open a transaction themselves."""
    problems: list[str] = []
    for path in our_modules(root):
        me = module_name(path, root)
        if layer_of(me) != 4:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            attr, owner = node.func.attr, ast.unparse(node.func.value)
            if attr in ADAPTER_FORBIDDEN_CALLS:
                problems.append(f"{me}:{node.lineno} calls {owner}.{attr}()")
            elif attr in {"append", "append_async"} and (owner.endswith("log") or "txn" in owner):
                problems.append(f"{me}:{node.lineno} appends to {owner}")
    return problems


SERVICES = "ds_events.services"
# The service modules every domain may use: the Command/Result vocabulary, the call log
# and the package itself (lazy_exports). They import no domain.
SHARED = {"commands", "tool_calls"}
# Which other domains each domain may import; its own and the shared modules always.
DOMAINS: dict[str, set[str]] = {
    "quest": set(),
    "memory": {"quest"},
    "bash": {"quest"},
    "interactions": {"quest"},
    "artifacts": {"quest"},
    "research": {"quest", "artifacts"},
    "paper": {"quest", "artifacts", "research"},
    "views": {"quest", "artifacts", "research"},
    # the claim audit reads the log's records; the paper chain (above it) calls it
    "claims": {"quest"},
    # the runtime drives the domains: a turn's prompt reads memory, steering ends shell
    # sessions, the scheduler delivers the mailbox
    "runtime": {"quest", "memory", "bash", "interactions", "artifacts", "research"},
}


def resolve_module(name: str, root: Path = REPO) -> str | None:
    """The longest prefix of ``name`` that is a module or package of ours."""
    parts = name.split(".")
    while parts:
        path = root.joinpath(*parts)
        if path.with_suffix(".py").is_file() or (path / "__init__.py").is_file():
            return ".".join(parts)
        parts.pop()
    return None


def domain_of(module: str) -> str | None:
    """``"shared"`` for the shared service modules, the domain's name for a module of
    a domain package, None outside the services."""
    if module != SERVICES and not module.startswith(SERVICES + "."):
        return None
    parts = module.split(".")
    if len(parts) == 2 or parts[2] in SHARED:
        return "shared"
    return parts[2]


def domain_violations(root: Path = REPO) -> list[str]:
    problems: list[str] = []
    for path in our_modules(root):
        me = module_name(path, root)
        mine = domain_of(me)
        if mine is None:
            continue
        if mine != "shared" and mine not in DOMAINS:
            problems.append(f"{me}: belongs to no domain (add {mine!r} to DOMAINS)")
            continue
        for line, name in imported_modules(path, root):
            target = resolve_module(name, root)
            theirs = domain_of(target) if target else None
            if theirs is None or theirs in ("shared", mine):
                continue
            if mine == "shared":
                problems.append(f"{me}:{line} (shared) imports {target} (domain {theirs})")
            elif theirs not in DOMAINS.get(mine, set()):
                problems.append(f"{me}:{line} (domain {mine}) imports {target} (domain {theirs})")
    return problems


def import_graph(root: Path = REPO) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports (imports inside functions and under
    TYPE_CHECKING included). Importing ``a.b.c`` also runs the packages ``a`` and
    ``a.b``, so they are edges too — except the importer's own enclosing packages,
    which Python initialises before it."""
    modules = {module_name(p, root): p for p in our_modules(root)}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for me, path in modules.items():
        mine = me.split(".")
        enclosing = {".".join(mine[:i]) for i in range(1, len(mine))}
        # Imports only the type checker runs are no cycle — except a domain package's,
        # which name what its lazy exports import at run time.
        typing_only = set() if path.name == "__init__.py" else type_checking_lines(path)
        for line, name in imported_modules(path, root):
            if line in typing_only:
                continue
            target = resolve_module(name, root)
            if target is None:
                continue
            parts = target.split(".")
            for i in range(1, len(parts) + 1):
                step = ".".join(parts[:i])
                if step in modules and step != me and step not in enclosing:
                    graph[me].add(step)
    return graph


def type_checking_lines(path: Path) -> set[int]:
    """The lines of the statements under ``if TYPE_CHECKING:`` in ``path``."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            for stmt in node.body:
                lines |= set(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return lines


def import_cycles(root: Path = REPO) -> list[list[str]]:
    """Every strongly connected set of two or more modules (Tarjan), each sorted."""
    graph = import_graph(root)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(cycles)


def lazy_export_mismatches(root: Path = REPO) -> list[str]:
    """A domain package's ``lazy_exports`` table and its ``TYPE_CHECKING`` imports name
    the same things from the same modules (the type checker sees one, Python the other)."""
    problems: list[str] = []
    for init in sorted((root / "ds_events" / "services").glob("*/__init__.py")):
        tree = ast.parse(init.read_text(), str(init))
        checked: set[tuple[str, str]] = set()
        table: set[tuple[str, str]] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
                for imp in node.body:
                    if isinstance(imp, ast.ImportFrom) and imp.level == 1 and imp.module:
                        checked |= {(imp.module, a.name) for a in imp.names}
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "lazy_exports":
                mapping = ast.literal_eval(node.args[1])
                table |= {(module, name) for module, names in mapping.items() for name in names}
        pkg = init.parent.name
        problems += [f"{pkg}: {m}.{n} is imported for the type checker only" for m, n in sorted(checked - table)]
        problems += [f"{pkg}: {m}.{n} is exported lazily but hidden from the type checker" for m, n in sorted(table - checked)]
    return problems


def test_there_is_something_to_check():
    assert len(our_modules()) > 50
    assert any(name.endswith(".services.memory.cards") for _, name in imported_modules(REPO / "handlers/mcp/memory.py"))


def test_every_module_imports_only_its_own_layer_or_lower():
    assert layer_violations() == []


def test_only_adapters_use_the_network_and_protocol_libraries():
    assert edge_library_violations() == []


def test_projections_do_no_io_and_read_no_clock():
    assert purity_violations() == []


def test_adapters_never_append_emit_or_open_a_transaction_themselves():
    assert adapter_violations() == []


def test_every_service_domain_imports_only_itself_the_shared_modules_and_the_domains_below_it():
    assert domain_violations() == []


def test_there_is_no_import_cycle_anywhere_counting_imports_inside_functions():
    assert import_cycles() == []


def test_every_domain_package_exports_to_the_type_checker_what_it_exports_lazily():
    assert lazy_export_mismatches() == []
    for init in sorted((REPO / "ds_events" / "services").glob("*/__init__.py")):
        package = importlib.import_module(module_name(init))
        missing = [name for name in package.__all__ if not hasattr(package, name)]
        assert missing == [], f"{package.__name__} exports names it cannot resolve: {missing}"


def _plant(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        target = tmp_path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))
    for pkg in PACKAGES:
        (tmp_path / pkg).mkdir(exist_ok=True)
        (tmp_path / pkg / "__init__.py").touch()
    return tmp_path


def test_the_checks_catch_planted_violations(tmp_path):
    root = _plant(
        tmp_path,
        {
            # a relative import reaching up a layer: core importing a service
            "ds_events/memory/__init__.py": "",
            "ds_events/memory/store.py": "from ..services import memory\n",
            "ds_events/services/__init__.py": "",
            "ds_events/services/memory/cards.py": "def f():\n    from ds_events.cli import main\n",
            "ds_events/services/hooks.py": "def post():\n    import aiohttp.client\n",
            "ds_events/cli/__init__.py": "def main(): pass\n",
            "projections/view.py": "import os\nfrom ds_events.home import Home\n",
            "handlers/mcp.py": "def tool(quest):\n    quest.emit([])\n    quest.log.append([])\n",
            "ds_events/nowhere.py": "",
            # the ACP SDK belongs to handlers/acp, not to another adapter
            "handlers/acp/__init__.py": "",
            "handlers/acp/agent.py": "import acp\n",
            "handlers/http.py": "from acp.schema import SessionNotification\n",
        },
    )
    layers = layer_violations(root)
    assert any(v.startswith("ds_events.memory.store:1 (layer 2) imports ds_events.services.memory") for v in layers)
    assert any(v.startswith("ds_events.services.memory.cards:2 (layer 3) imports ds_events.cli.main") for v in layers)
    assert any(v.startswith("projections.view:2 (layer 1) imports ds_events.home.Home") for v in layers)
    assert "ds_events.nowhere: belongs to no layer (add it to LAYERS)" in layers
    assert purity_violations(root) == ["projections.view:1 imports os"]
    assert sorted(edge_library_violations(root)) == [
        "ds_events.services.hooks:2 (layer 3) imports aiohttp, which only adapters may use",
        "handlers.http:1 imports acp, which only handlers.acp and ds_events.runners.acp may use",
    ]
    assert adapter_violations(root) == ["handlers.mcp:2 calls quest.emit()", "handlers.mcp:3 appends to quest.log"]


# Imports every module named on the command line first, each in a fresh child: the
# parent loads only third-party libraries, then forks once per module. A circular
# import shows only when a module of the cycle is the first of ours to be imported.
_IMPORT_FIRST = """
import importlib, os, sys, traceback
for lib in ("msgspec", "yaml", "click", "pygit2", "aiohttp", "mcp.server.mcpserver", "frontmatter"):
    importlib.import_module(lib)
for name in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:
        try:
            importlib.import_module(name)
        except BaseException:
            print(name + ": " + traceback.format_exc().strip().splitlines()[-1], flush=True)
            os._exit(1)
        os._exit(0)
    os.waitpid(pid, 0)
"""


@pytest.mark.slow
def test_every_module_imports_first_in_a_fresh_interpreter():
    names = [module_name(p) for p in our_modules() if p.name != "__main__.py"]
    done = subprocess.run([sys.executable, "-c", _IMPORT_FIRST, *names], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == []


def test_the_import_first_check_catches_a_cycle(tmp_path):
    (tmp_path / "cyc_a.py").write_text("from cyc_b import B\nA = 1\n")
    (tmp_path / "cyc_b.py").write_text("from cyc_a import A\nB = 2\n")
    done = subprocess.run([sys.executable, "-c", _IMPORT_FIRST, "cyc_a"], cwd=tmp_path, capture_output=True, text=True)
    assert done.stdout.startswith("cyc_a: ImportError: cannot import name")


@pytest.mark.parametrize("name", ["ds_events.events", "projections.status"])
def test_low_layers_import_without_the_heavy_edge_libraries(name):
    code = (
        f"import sys, importlib; importlib.import_module({name!r}); "
        "print(sorted(m for m in ('aiohttp', 'mcp', 'pygit2', 'click') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    importlib.import_module(name)


def test_the_domain_and_cycle_checks_catch_planted_violations(tmp_path):
    root = _plant(
        tmp_path,
        {
            "ds_events/services/commands.py": "from ds_events.services.memory import cards\n",  # shared -> domain
            "ds_events/services/quest/__init__.py": "",
            "ds_events/services/quest/lifecycle.py": "def f():\n    from ds_events.services.research import ideas\n",  # upward
            "ds_events/services/memory/__init__.py": "",
            "ds_events/services/memory/cards.py": "from ds_events.services.quest import lifecycle\n",  # allowed
            "ds_events/services/bash/__init__.py": "",
            "ds_events/services/bash/sessions.py": "from ..memory import cards\n",  # sideways
            "ds_events/services/research/__init__.py": "",
            "ds_events/services/research/ideas.py": "from ds_events.services.artifacts.records import x\n",  # allowed
            "ds_events/services/artifacts/__init__.py": "",
            "ds_events/services/artifacts/records.py": "x = 1\n",
            "ds_events/services/gadgets/__init__.py": "",
            "ds_events/services/gadgets/tool.py": "",
            # a cycle hidden by a function-local import, through a package's __init__
            "ds_events/log/__init__.py": "from .store import Store\n",
            "ds_events/log/store.py": "class Store:\n    def verify(self):\n        from ds_events.verify import audit\n",
            "ds_events/verify/__init__.py": "",
            "ds_events/verify/audit.py": "from ds_events.log import Store\n",
            # a back import the type checker alone runs closes no cycle
            "ds_events/log/reads.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .store2 import y\n",
            "ds_events/log/store2.py": "from .reads import x\n",
            # the lazy table and the type checker's imports disagree
            "ds_events/services/views/__init__.py": textwrap.dedent(
                """
                from typing import TYPE_CHECKING
                if TYPE_CHECKING:
                    from .nodes import node_details as node_details
                    from .nodes import hidden as hidden
                __all__, __getattr__ = lazy_exports(__name__, {"nodes": ("node_details", "extra")})
                """
            ),
        },
    )
    assert sorted(domain_violations(root)) == [
        "ds_events.services.bash.sessions:1 (domain bash) imports ds_events.services.memory.cards (domain memory)",
        "ds_events.services.commands:1 (shared) imports ds_events.services.memory.cards (domain memory)",
        "ds_events.services.gadgets.tool: belongs to no domain (add 'gadgets' to DOMAINS)",
        "ds_events.services.gadgets: belongs to no domain (add 'gadgets' to DOMAINS)",
        "ds_events.services.quest.lifecycle:2 (domain quest) imports ds_events.services.research.ideas (domain research)",
    ]
    assert import_cycles(root) == [["ds_events.log", "ds_events.log.store", "ds_events.verify.audit"]]
    assert lazy_export_mismatches(root) == [
        "views: nodes.hidden is imported for the type checker only",
        "views: nodes.extra is exported lazily but hidden from the type checker",
    ]
