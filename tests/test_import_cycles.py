"""No import cycles where the suites, the executor and its tool sources meet: the agent
suites import their interface, never one another; hyperplan.execute imports neither the demo
world nor the catalog sources (hyperplan.connect wires them together, above all three).
Imports are read from the source (at module level and inside functions alike), not run."""

from __future__ import annotations

import ast
from pathlib import Path

import hyperplan

ROOT = Path(hyperplan.__file__).parent


def _module(path: Path) -> str:
    parts = ("hyperplan", *path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every hyperplan module ``path`` imports, anywhere but under ``if TYPE_CHECKING``."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return {m for m in found if m.startswith("hyperplan.")}


def _graph(collapse: int | None = None) -> dict[str, set[str]]:
    modules = {_module(p): p for p in ROOT.rglob("*.py")}

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    def node(name: str) -> str:
        return ".".join(name.split(".")[:collapse]) if collapse else name

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps = {node(d) for d in map(resolve, _imports(path)) if d}
        graph.setdefault(node(name), set()).update(deps - {node(name)})
    return graph


def _reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, stack = set(), [start]
    while stack:
        for nxt in graph.get(stack.pop(), ()):
            if nxt == goal:
                return True
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return False


def test_eval_modules_import_no_cycle():
    graph = _graph()
    for name in (m for m in graph if m.startswith("hyperplan_bench.eval.")):
        assert not _reaches(graph, name, name), name


def test_execute_demo_world_and_sources_import_no_cycle():
    graph = _graph(collapse=2)
    for name in ("hyperplan.execute", "hyperplan.demo_world", "hyperplan.sources",
                 "hyperplan_bench.synthetic", "hyperplan.plan", "hyperplan.llm"):
        assert not _reaches(graph, name, name), name
