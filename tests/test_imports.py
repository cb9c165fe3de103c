"""The import graph of arena: no cycle, and every arrow between rooms points down a floor (docs/ARCHITECTURE.md).

A *room* is a package under ``arena/`` (``arena.game``, ``arena.match``, ...) or a module at the top. Every import
statement counts, at module level, inside a function or under ``TYPE_CHECKING``: a function-level import only hides
an arrow from the interpreter, and the modules it joins still cannot be read, tested or moved apart. A module's
import of its own package (``arena.sandbox.process`` naming ``arena.sandbox``'s types) is no arrow: the package's
``__init__`` is its face to the rest.
"""

from __future__ import annotations

import ast
from pathlib import Path

ARENA = Path(__file__).resolve().parent.parent / "arena"

FLOORS: list[set[str]] = [
    {"arena", "arena.procfs", "arena.yamlfile", "arena.resources", "arena.schedule", "arena.extras"},  # values, small OS readers, the extras
    {"arena.game", "arena.stats", "arena.bots"},  # the pure game, the statistics, a bot on disk
    {"arena.sandbox"},  # how a bot runs: processes and containers, no rules
    {"arena.match"},  # one match between programs: protocol, channel, referee, its log
    {"arena.registry", "arena.store"},  # getting a bot in; the SQLite store
    {"arena.run", "arena.site", "arena.play"},  # many matches; the results site; a person at the table
    {"arena.server"},  # the league server
    {"arena.cli"},  # the command line
    {"arena.__main__"},
]
"""Each floor's rooms, lowest first: a room imports only rooms of floors below its own."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ARENA.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def room(module: str) -> str:
    return ".".join(module.split(".")[:2])


def import_graph() -> dict[str, set[str]]:
    """Each arena module (the bot templates left out: they are not arena's code) and the arena modules it imports."""
    paths = {module_name(path): path for path in sorted(ARENA.rglob("*.py")) if "templates" not in path.parts}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                named = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(here + ([base] if base else []))
                # ``from arena.site import urls`` imports the module arena.site.urls, not only the package
                named = [base] + [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in named:
                while target and target not in paths:  # a name inside a module: the module
                    target = target.rpartition(".")[0]
                if target and target != name and not name.startswith(target + "."):
                    imported.add(target)
        graph[name] = imported
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []
    for start, imported in graph.items():
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        work = [(start, iter(sorted(imported)))]
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(component)
    return found


def arrows_up(graph: dict[str, set[str]], floors: list[set[str]]) -> list[str]:
    """Each import whose target's room is not on a floor below its importer's room, as 'a -> b'."""
    floor = {name: level for level, rooms in enumerate(floors) for name in rooms}
    return sorted(f"{name} -> {target}" for name, targets in graph.items() for target in targets
                  if room(name) != room(target) and floor[room(target)] >= floor[room(name)])


def test_the_checks_can_fail() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [{"a", "b", "c"}]
    assert cycles(graph | {"c": set()}) == []
    two = {"arena.game.engine": {"arena.match.referee"}, "arena.match.referee": {"arena.game.engine"}}
    assert arrows_up(two, FLOORS) == ["arena.game.engine -> arena.match.referee"]


def test_arena_has_no_import_cycle_and_no_arrow_up() -> None:
    graph = import_graph()
    # Imports inside a function and under TYPE_CHECKING count (get_sandbox's, the registry's of the check report).
    assert "arena.sandbox.process" in graph["arena.sandbox"]
    assert "arena.registry.check" in graph["arena.registry.versions"]
    assert [sorted(cycle) for cycle in cycles(graph)] == []
    placed = set().union(*FLOORS)
    assert sorted({room(name) for name in graph} - placed) == [], "a new room: give it a floor in FLOORS"
    assert arrows_up(graph, FLOORS) == []


def test_the_store_imports_nothing_from_the_statistics() -> None:
    # The store does SQL and nothing else: the standings' statistics read it (arena/stats/standings.py), never the
    # other way round, though the floors alone would allow it.
    graph = import_graph()
    store = {name: targets for name, targets in graph.items() if room(name) == "arena.store"}
    assert "arena.store.schema" in store
    assert sorted(f"{name} -> {target}" for name, targets in store.items() for target in targets
                  if room(target) == "arena.stats") == []


def test_the_top_of_the_package_holds_few_modules() -> None:
    top = sorted(path.name for path in ARENA.glob("*.py"))
    assert len(top) <= 12, top


def test_no_test_module_imports_another() -> None:
    """What several test modules share lives in tests/support/ or, for fixtures, tests/conftest.py: a test module
    imported by another runs its module-level set-up twice and ties the two files' fates together."""
    found = []
    for path in sorted(ARENA.parent.joinpath("tests").rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.name} imports {name}" for name in names if name.startswith("tests.test_")]
    assert found == [], found
