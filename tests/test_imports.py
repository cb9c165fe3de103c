"""arena's modules import each other without cycles, but for the few known ones.

Every import statement counts, at module level, inside a function or under ``TYPE_CHECKING``: a function-level
import only hides a cycle from the interpreter, and the modules of one still cannot be read, tested or moved apart.
"""

from __future__ import annotations

import ast
from pathlib import Path

ARENA = Path(__file__).resolve().parent.parent / "arena"

KNOWN = [
    # The package picks a backend in get_sandbox (a function-level import of each); its backends use its types.
    {"arena.sandbox", "arena.sandbox.bwrap", "arena.sandbox.common", "arena.sandbox.docker", "arena.sandbox.process",
     "arena.sandbox.rlimits", "arena.sandbox.uids"},
    # The stop rule and the cluster run a tournament's jobs; the tournament starts them (being rewritten).
    {"arena.cluster", "arena.stoprule", "arena.tournament"},
]
"""The cycles there are: a new cycle fails the test, one of these broken up does not."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ARENA.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


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
                # ``from arena.site import data`` imports the module arena.site.data, not only the package
                named = [base] + [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in named:
                while target and target not in paths:  # a name inside a module: the module
                    target = target.rpartition(".")[0]
                if target and target != name:
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


def test_the_cycle_finder() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [{"a", "b", "c"}]
    assert cycles(graph | {"c": set()}) == []


def test_arena_has_no_import_cycle_but_the_known_ones() -> None:
    graph = import_graph()
    # Imports inside a function and under TYPE_CHECKING count (get_sandbox's, the registry's of the check report).
    assert "arena.sandbox.process" in graph["arena.sandbox"] and "arena.registry.check" in graph["arena.registry.versions"]
    assert {"arena.registry.build", "arena.registry.versions", "arena.registry.check", "arena.bots.files", "arena.site.replay"} <= set(graph)
    # The build copies a bot's files with arena.bots.files, not through the registry (which names the checker's
    # report, and the checker runs the build).
    assert "arena.registry.versions" not in graph["arena.registry.build"] and "arena.bots.files" in graph["arena.registry.build"]
    new = [sorted(cycle) for cycle in cycles(graph) if not any(cycle <= known for known in KNOWN)]
    assert new == []
