"""The Task DAG of Definition 3 (HyperAgent, "Task-Level Planning"): subtasks
q_i = (g_i, τ_i, Ê_i, φ_i) and dependency edges grounded in schema-level links.

* :class:`Subtask` holds the local goal g_i, the targets τ_i (output node keys
  ``tool:out:path`` or effect predicates), the candidate terminal tools Ê_i, the subtasks it
  depends on and the values from the request it needs. The status φ_i lives in the agent state.
* :func:`validate_dag` lists every violation of a plan against a (context) hypergraph:
  duplicate or unknown ids, cycles, unknown tools, targets absent from the graph, and
  dependencies that no link path grounds. An empty list means the plan is valid.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hyperplan.errors import HyperplanError
from hyperplan.graph.model import Hypergraph, NodeKind
from hyperplan.graph.text import did_you_mean


class PlanError(HyperplanError):
    """A Task DAG that stays invalid after the bounded repair."""

    def __init__(self, message: str, violations: Sequence[str] = ()) -> None:
        detail = "".join(f"\n  - {v}" for v in violations)
        super().__init__(message + detail)
        self.violations = tuple(violations)


@dataclass(frozen=True)
class Subtask:
    id: str
    goal: str
    terminals: tuple[str, ...]
    targets: tuple[str, ...] = ()
    depends_on: tuple[str, ...] = ()
    values: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "goal": self.goal,
            "terminals": list(self.terminals),
            "targets": list(self.targets),
            "depends_on": list(self.depends_on),
            "inputs": dict(self.values),
        }


@dataclass(frozen=True)
class TaskDAG:
    subtasks: tuple[Subtask, ...]
    version: int = 0

    def get(self, subtask_id: str) -> Subtask:
        for s in self.subtasks:
            if s.id == subtask_id:
                return s
        raise KeyError(subtask_id)

    @property
    def ids(self) -> list[str]:
        return [s.id for s in self.subtasks]

    def ready(self, done: Iterable[str], settled: Iterable[str]) -> list[Subtask]:
        """Subtasks not yet settled whose dependencies are all done (topological frontier)."""
        done_set, settled_set = set(done), set(settled)
        return [s for s in self.subtasks
                if s.id not in settled_set and set(s.depends_on) <= done_set]

    def as_dict(self) -> dict[str, Any]:
        return {"version": self.version, "subtasks": [s.as_dict() for s in self.subtasks]}


# JSON Schema the planner's answers must satisfy (also given to the LLM).
DAG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["subtasks"],
    "properties": {
        "subtasks": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["id", "goal", "terminals", "depends_on"],
                "properties": {
                    "id": {"type": "string"},
                    "goal": {"type": "string"},
                    "terminals": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                    "targets": {"type": "array", "items": {"type": "string"}},
                    "depends_on": {"type": "array", "items": {"type": "string"}},
                    "inputs": {"type": "object"},
                },
            },
        }
    },
}


def dag_from_json(obj: Mapping[str, Any], version: int = 0) -> TaskDAG:
    """Read a (schema-validated) planner answer."""
    subtasks = tuple(
        Subtask(
            id=str(item["id"]),
            goal=str(item.get("goal", "")),
            terminals=tuple(str(t) for t in item.get("terminals", [])),
            targets=tuple(str(t) for t in item.get("targets", [])),
            depends_on=tuple(str(d) for d in item.get("depends_on", [])),
            values=dict(item.get("inputs") or {}),
        )
        for item in obj["subtasks"]
    )
    return TaskDAG(subtasks, version)


def effect_producers(graph: Hypergraph, effect: str) -> list[str]:
    """Names of the tools with effect node ``effect``."""
    return [graph.tools[n.tool].name for n in graph.nodes
            if n.kind is NodeKind.EFFECT and n.path == effect]


def validate_dag(dag: TaskDAG, graph: Hypergraph) -> list[str]:
    """Every violation of ``dag`` against ``graph`` (module doc); ``[]`` when valid."""
    problems: list[str] = []
    if not dag.subtasks:
        return ["the plan has no subtasks"]
    ids = dag.ids
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        problems.append(f"duplicate subtask id {dup!r}")
    for s in dag.subtasks:
        problems += _subtask_problems(s, set(ids), graph)
    cycle = find_cycle(dag)
    if cycle:
        problems.append("dependency cycle: " + " -> ".join(cycle))
    if not problems:
        problems += _ungrounded(dag, graph)
    return problems


def _subtask_problems(s: Subtask, ids: set[str], graph: Hypergraph) -> list[str]:
    out: list[str] = []
    if not s.terminals:
        out.append(f"subtask {s.id!r} has no candidate terminal tools")
    for t in s.terminals:
        if t not in graph.tool_index:
            hint = did_you_mean(t, graph.tool_index)
            hint = f"; {hint}" if hint else ""
            out.append(f"subtask {s.id!r}: unknown tool {t!r} (not in the tool context "
                       f"graph{hint})")
    for d in s.depends_on:
        if d == s.id:
            out.append(f"subtask {s.id!r} depends on itself")
        elif d not in ids:
            out.append(f"subtask {s.id!r} depends on unknown subtask {d!r}")
    effects = {n.path for n in graph.nodes if n.kind is NodeKind.EFFECT}
    for target in s.targets:
        if target not in graph.node_index and target not in effects:
            out.append(f"subtask {s.id!r}: target {target!r} is not a node or effect of the "
                       "tool context graph")
    return out


def find_cycle(dag: TaskDAG) -> list[str]:
    """One dependency cycle as a list of ids (first id repeated at the end), or ``[]``."""
    deps = {s.id: [d for d in s.depends_on if d != s.id] for s in dag.subtasks}
    colour: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        colour[node] = 1
        stack.append(node)
        for nxt in deps.get(node, []):
            if colour.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt in deps and colour.get(nxt) is None:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        colour[node] = 2
        return []

    for start in deps:
        if colour.get(start) is None:
            found = visit(start)
            if found:
                return found
    return []


def _ungrounded(dag: TaskDAG, graph: Hypergraph) -> list[str]:
    """Dependencies q_i -> q_j with no link path from a terminal of q_i to a terminal of q_j
    (Definition 3: edges are grounded in schema-level links)."""
    out = []
    for s in dag.subtasks:
        for d in s.depends_on:
            up = dag.get(d)
            if not _reaches(graph, up.terminals, s.terminals):
                out.append(f"dependency {d!r} -> {s.id!r} is not grounded: no link from the "
                           f"outputs of {list(up.terminals)} reaches the inputs of "
                           f"{list(s.terminals)}")
    return out


def _reaches(graph: Hypergraph, sources: Sequence[str], targets: Sequence[str]) -> bool:
    index = graph.tool_index
    goal = {index[t] for t in targets}
    frontier = [index[t] for t in sources]
    seen = set(frontier)
    while frontier:
        nxt = []
        for tool in frontier:
            for down in graph.downstream(tool):
                if down in goal:
                    return True
                if down not in seen:
                    seen.add(down)
                    nxt.append(down)
        frontier = nxt
    return False
