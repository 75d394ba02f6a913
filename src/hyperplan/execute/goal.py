"""Structured goals: what the LLM-free agent is asked to achieve (LLM-free mode).

A structured goal is a Task DAG written by hand instead of by the planner (HyperAgent,
Definition 3): each :class:`SubGoal` names the candidate terminal tools (any one achieves it)
or target effect predicates, the values the user supplies for it, and the sub-goals it depends
on. ``values`` of the goal are known to every sub-goal; a sub-goal's own values take precedence.
Keys are bare parameter names (``"title"``) or node keys (``"music.search:in:query"``).
``"secrets": ["password", ...]`` names the values (of the goal or any sub-goal) that are
secret: they are redacted by value from every output of the run (:mod:`hyperplan.secrets`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hyperplan.errors import HyperplanError
from hyperplan.graph.model import Hypergraph
from hyperplan.plan.taskdag import Subtask, TaskDAG, effect_producers


class GoalError(HyperplanError):
    """A structured goal that cannot be read."""


@dataclass(frozen=True)
class SubGoal:
    id: str
    terminals: tuple[str, ...] = ()
    effects: tuple[str, ...] = ()
    values: Mapping[str, Any] = field(default_factory=dict)
    depends_on: tuple[str, ...] = ()
    description: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "terminals": list(self.terminals),
            "effects": list(self.effects),
            "values": dict(self.values),
            "depends_on": list(self.depends_on),
            "description": self.description,
        }


@dataclass(frozen=True)
class StructuredGoal:
    subgoals: tuple[SubGoal, ...]
    values: Mapping[str, Any] = field(default_factory=dict)
    secrets: tuple[str, ...] = ()  # names of the values that are secret

    def as_dict(self) -> dict[str, Any]:
        return {"subgoals": [s.as_dict() for s in self.subgoals], "values": dict(self.values),
                **({"secrets": list(self.secrets)} if self.secrets else {})}

    def secret_values(self) -> list[Any]:
        """The values named in ``secrets``, wherever the goal or a sub-goal gives them."""
        scopes = [self.values, *(s.values for s in self.subgoals)]
        return [scope[name] for name in self.secrets for scope in scopes if name in scope]

    @staticmethod
    def from_dict(obj: Any, *, source: str = "goal") -> StructuredGoal:
        """Read ``{"values": {...}, "subgoals": [{"id", "terminals"|"effects", "values",
        "depends_on", "description"}]}``; a plain ``{"terminals": [...], "values": {...}}`` is
        one sub-goal."""
        if not isinstance(obj, dict):
            raise GoalError(f"{source}: a goal must be a JSON object")
        raw = obj.get("subgoals")
        if raw is None:
            raw = [{k: v for k, v in obj.items() if k not in ("values", "secrets")}
                   | {"id": "g1"}]
        if not isinstance(raw, list) or not raw:
            raise GoalError(f"{source}: 'subgoals' must be a non-empty list")
        subgoals = tuple(_subgoal(item, i, source) for i, item in enumerate(raw))
        ids = [s.id for s in subgoals]
        if len(set(ids)) != len(ids):
            raise GoalError(f"{source}: duplicate sub-goal ids {ids}")
        for s in subgoals:
            unknown = [d for d in s.depends_on if d not in ids]
            if unknown:
                raise GoalError(f"{source}: sub-goal {s.id!r} depends on unknown {unknown}")
        values = obj.get("values", {})
        if not isinstance(values, dict):
            raise GoalError(f"{source}: 'values' must be an object")
        secrets = _strings(obj.get("secrets", []), f"{source}: secrets")
        goal = StructuredGoal(subgoals, dict(values), secrets)
        named = {k for scope in [goal.values, *(s.values for s in subgoals)] for k in scope}
        missing = [name for name in secrets if name not in named]
        if missing:
            raise GoalError(f"{source}: 'secrets' names values the goal does not give: "
                            f"{', '.join(missing)}")
        return goal


def _subgoal(item: Any, index: int, source: str) -> SubGoal:
    where = f"{source}: subgoals[{index}]"
    if not isinstance(item, dict):
        raise GoalError(f"{where} must be an object")
    terminals = _strings(item.get("terminals", []), f"{where}.terminals")
    effects = _strings(item.get("effects", []), f"{where}.effects")
    if not terminals and not effects:
        raise GoalError(f"{where} needs 'terminals' or 'effects'")
    values = item.get("values", {})
    if not isinstance(values, dict):
        raise GoalError(f"{where}.values must be an object")
    return SubGoal(
        id=str(item.get("id") or f"g{index + 1}"),
        terminals=terminals,
        effects=effects,
        values=dict(values),
        depends_on=_strings(item.get("depends_on", []), f"{where}.depends_on"),
        description=str(item.get("description", "")),
    )


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise GoalError(f"{where} must be a list of strings")
    return tuple(value)


def dag_from_goal(graph: Hypergraph, goal: StructuredGoal) -> TaskDAG:
    """One subtask per sub-goal: its terminals, or the tools producing its target effects;
    the goal's values merged under the sub-goal's own."""
    subtasks = []
    for sg in goal.subgoals:
        terminals = list(sg.terminals)
        for effect in sg.effects:
            terminals += effect_producers(graph, effect)
        subtasks.append(Subtask(
            id=sg.id,
            goal=sg.description or f"achieve {', '.join(sg.terminals or sg.effects)}",
            terminals=tuple(dict.fromkeys(terminals)),
            targets=tuple(sg.effects),
            depends_on=sg.depends_on,
            values={**goal.values, **sg.values},
        ))
    return TaskDAG(tuple(subtasks))
