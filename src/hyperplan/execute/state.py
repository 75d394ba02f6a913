"""The agent state S = (C, R, I) of Definition 4 (HyperAgent, "Task Execution").

* C, the execution history: every tool call with its observation (:class:`CallRecord`).
* R, the subtask status: :class:`SubtaskStatus` per Task DAG node.
* I, the schema-value bindings and achieved effects: user-supplied values (by parameter name or
  input node key), the values each successful call materialised on its output nodes
  (:class:`Binding`, one per value; a path through an array binds one value per element and
  keeps the element as ``record`` so sibling fields can identify it), and effect predicates.

The state is immutable: :meth:`AgentState.after_call` is StateUpdate(S, ΔI) and returns a new
state. Values are JSON-like data; nothing here calls an LLM.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from hyperplan.execute.results import ToolResult
from hyperplan.graph.model import Hypergraph, NodeKind, node_key


class SubtaskStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    BLOCKED = "blocked"  # needs a choice or value the agent may not guess
    SKIPPED = "skipped"  # a dependency failed


@dataclass(frozen=True)
class Binding:
    """Value ``value`` materialised on output node ``node`` (a node key) by call ``call``;
    ``record`` is the enclosing array element when the path runs through an array."""

    node: str
    value: Any
    call: int
    record: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class CallRecord:
    """One executed (or rejected) tool call in the history, tagged with its subtask."""

    index: int
    subtask: str
    result: ToolResult


def _frozen_map(data: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    return MappingProxyType(dict(data or {}))


@dataclass(frozen=True)
class AgentState:
    """S = (C, R, I) of Definition 4; see the module doc."""

    history: tuple[CallRecord, ...] = ()
    status: Mapping[str, SubtaskStatus] = field(default_factory=_frozen_map)
    known: Mapping[str, Any] = field(default_factory=_frozen_map)
    bindings: tuple[Binding, ...] = ()
    effects: frozenset[str] = frozenset()

    @staticmethod
    def start(known: Mapping[str, Any] | None = None) -> AgentState:
        return AgentState(known=_frozen_map(known))

    # -- StateUpdate ---------------------------------------------------------------------------
    def with_status(self, subtask: str, status: SubtaskStatus) -> AgentState:
        return replace(self, status=_frozen_map({**self.status, subtask: status}))

    def with_known(self, values: Mapping[str, Any]) -> AgentState:
        return replace(self, known=_frozen_map({**self.known, **values}))

    def after_call(self, graph: Hypergraph, subtask: str, result: ToolResult) -> AgentState:
        """Record the call in C and, when it succeeded, bind its outputs and effects (ΔI)."""
        index = len(self.history)
        record = CallRecord(index, subtask, result)
        if not result.ok or result.tool not in graph.tool_index:
            return replace(self, history=(*self.history, record))
        new_bindings, new_effects = materialise(graph, result.tool, result.value, index)
        return replace(
            self,
            history=(*self.history, record),
            bindings=self.bindings + tuple(new_bindings),
            effects=self.effects | new_effects,
        )

    def scoped(self, values: Mapping[str, Any]) -> AgentState:
        """The state as seen by a subtask with known ``values``: bindings made by a call whose
        arguments contradict those values (same parameter name, another value) are dropped,
        because outputs are functions of their inputs — a password looked up for
        ``app_name="payments"`` is no answer for a subtask about ``app_name="messaging"``.
        Only direct arguments are compared, not the inputs of the calls that produced them."""
        stale = {rec.index for rec in self.history
                 if rec.result.ok and _contradicts(rec.result.arguments, values)}
        if not stale:
            return self
        return replace(self, bindings=tuple(b for b in self.bindings if b.call not in stale))

    # -- queries -------------------------------------------------------------------------------
    def bound_nodes(self) -> set[str]:
        return {b.node for b in self.bindings}

    def values_of(self, node: str) -> list[Binding]:
        """Bindings of output node ``node``, latest call first."""
        found = [b for b in self.bindings if b.node == node]
        latest = max((b.call for b in found), default=-1)
        return [b for b in found if b.call == latest]

    def successful_calls(self, subtask: str | None = None) -> Iterator[CallRecord]:
        for rec in self.history:
            if rec.result.ok and (subtask is None or rec.subtask == subtask):
                yield rec

    @property
    def tool_calls(self) -> int:
        """Calls actually sent to a tool (schema-rejected arguments are not counted)."""
        return sum(1 for r in self.history if r.result.error_kind != "invalid_arguments")


def _contradicts(arguments: Mapping[str, Any], values: Mapping[str, Any]) -> bool:
    return any(name in values and _same(values[name]) != _same(value)
               for name, value in arguments.items())


def _same(value: Any) -> Any:
    return value.strip().casefold() if isinstance(value, str) else value


def materialise(graph: Hypergraph, tool_name: str, value: Any,
                call: int) -> tuple[list[Binding], frozenset[str]]:
    """ΔI of one successful call: a binding per value found on each output node of the tool
    and every effect node of the tool as an achieved effect."""
    tool = graph.tool(tool_name)
    bindings: list[Binding] = []
    effects: set[str] = set()
    for nid in tool.outputs:
        node = graph.nodes[nid]
        if node.kind is NodeKind.EFFECT:
            effects.add(node.path)
            continue
        key = node_key(tool.name, node.kind, node.path)
        for found, record in values_at(value, node.path):
            bindings.append(Binding(key, found, call, record))
    return bindings, frozenset(effects)


def path_parts(path: str) -> list[str]:
    """``songs[].id`` -> ``["songs", "[]", "id"]``; ``[].id`` -> ``["[]", "id"]``."""
    parts: list[str] = []
    for segment in path.split("."):
        depth = 0
        while segment.endswith("[]"):
            segment, depth = segment[:-2], depth + 1
        if segment:
            parts.append(segment)
        parts.extend(["[]"] * depth)
    return parts


def values_at(value: Any, path: str) -> list[tuple[Any, Mapping[str, Any] | None]]:
    """Every value at schema path ``path`` inside ``value`` with its enclosing array element
    (``None`` outside arrays). A scalar result sits at the path ``result``."""
    if path == "result" and not (isinstance(value, dict) and "result" in value):
        return [] if value is None else [(value, None)]
    current: list[tuple[Any, Mapping[str, Any] | None]] = [(value, None)]
    for part in path_parts(path):
        step: list[tuple[Any, Mapping[str, Any] | None]] = []
        for item, record in current:
            if part == "[]":
                if isinstance(item, list):
                    step.extend((el, el if isinstance(el, dict) else record) for el in item)
            elif isinstance(item, dict) and part in item:
                step.append((item[part], record))
        current = step
    return [(v, r) for v, r in current if v is not None]
