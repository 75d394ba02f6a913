"""Deterministic argument binding for the tools of a support graph (HyperAgent, "Task
Execution": runtime binding is a deterministic module; the LLM is asked only when semantic
ambiguity remains).

For each input parameter p of tool e (input node r = ``e:in:p``), in order:

1. **User value**: a known value under the node key ``e:in:p``, else under the bare name
   ``p`` (sub-goal values take precedence over goal values) -- unless DOE chose a producer for
   r (the support graph released r's bare-name value as stated for another call,
   :mod:`hyperplan.plan.stated`): then rule 2 comes first and the bare-name value is the
   fallback.
2. **Linked outputs** (required inputs only): the values the state holds on the output node
   that DOE's resolution used for r, else on the highest-weight linked output node (weight at
   least ``min_weight``) that has values. Only the latest call of a producer counts. Values of
   the wrong JSON type for the input are dropped, except that a list of values of the right
   type offers its elements (an MCP tool's ``{"result": ["b1", "b2"]}`` for a string input).
   An array-typed input linked from a path that runs through an array takes the whole list.
3. **Disambiguation**: several distinct values are narrowed to the elements whose record (the
   enclosing array element) has the most fields equal to a known value (strings compared
   case-insensitively); one value left binds, more stay *ambiguous* with their candidates.

What stays ambiguous or has no value at all is reported, never guessed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from hyperplan.execute.state import AgentState, Binding, path_parts
from hyperplan.graph.model import Hypergraph, NodeKind, node_key

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


@dataclass(frozen=True)
class Candidate:
    """A possible value for a parameter, where it came from, and its array element."""

    value: Any
    source: str
    record: Mapping[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "source": self.source}
        if self.record is not None:
            out["record"] = dict(self.record)
        return out


@dataclass(frozen=True)
class ArgumentPlan:
    """The outcome of binding one tool's arguments."""

    tool: str
    bound: Mapping[str, Any] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)
    ambiguous: Mapping[str, tuple[Candidate, ...]] = field(default_factory=dict)
    missing: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        return not self.ambiguous and not self.missing


def bind_arguments(
    graph: Hypergraph,
    tool_name: str,
    state: AgentState,
    values: Mapping[str, Any],
    *,
    resolved_by: Mapping[str, str] | None = None,
    min_weight: float = 0.5,
) -> ArgumentPlan:
    """Bind the arguments of ``tool_name`` (rules 1–3 of the module doc). ``values`` are the
    known values of the subtask; ``resolved_by`` maps input node keys to the output node key DOE
    chose to resolve them."""
    tool = graph.tool(tool_name)
    bound: dict[str, Any] = {}
    sources: dict[str, str] = {}
    ambiguous: dict[str, tuple[Candidate, ...]] = {}
    missing: list[str] = []
    for nid in tool.inputs:
        node = graph.nodes[nid]
        if node.kind is not NodeKind.INPUT:
            continue
        key = node_key(tool.name, node.kind, node.path)
        producer = (resolved_by or {}).get(key)
        user = key in values or (node.path in values and producer is None)
        if user:
            bound[node.path] = values[key] if key in values else values[node.path]
            sources[node.path] = "user"
            continue
        if not node.required and producer is None:
            continue
        chosen = narrow(linked_candidates(graph, nid, state, producer, min_weight), values)
        if len(chosen) == 1:
            bound[node.path] = chosen[0].value
            sources[node.path] = chosen[0].source
        elif chosen:
            ambiguous[node.path] = tuple(chosen)
        elif node.path in values:  # the producer gave nothing: the stated value after all
            bound[node.path] = values[node.path]
            sources[node.path] = "user"
        else:
            missing.append(node.path)
    return ArgumentPlan(tool.name, bound, sources, ambiguous, tuple(missing))


def linked_candidates(graph: Hypergraph, input_node: int, state: AgentState,
                      preferred: str | None, min_weight: float) -> list[Candidate]:
    """Candidate values for ``input_node`` from the outputs linked to it (rule 2)."""
    target = graph.nodes[input_node]
    sources: list[str] = [preferred] if preferred else []
    links = sorted(graph.links_into(input_node), key=lambda lk: (-lk.weight, lk.source))
    sources += [graph.node_name(lk.source) for lk in links if lk.weight >= min_weight]
    for source in dict.fromkeys(sources):
        found = state.values_of(source)
        if not found:
            continue
        if target.type == "array" and "[]" in path_parts(source.split(":", 2)[-1]):
            return [Candidate([b.value for b in found], source)]
        typed = [b for b in found if _type_ok(b.value, target.type)]
        if not typed and target.type != "array":  # a list of such values offers its elements
            typed = [replace(b, value=v) for b in found if isinstance(b.value, list)
                     for v in b.value if _type_ok(v, target.type)]
        if typed:
            return _distinct(typed, source)
    return []


def narrow(candidates: Sequence[Candidate], values: Mapping[str, Any]) -> list[Candidate]:
    """Rule 3: keep the candidates whose records match the most known values."""
    if len(candidates) <= 1:
        return list(candidates)
    known = {_norm(v) for v in values.values() if isinstance(v, str | int | float)}
    scores = [_matches(c.record, known) for c in candidates]
    best = max(scores)
    if best == 0:
        return list(candidates)
    return [c for c, s in zip(candidates, scores, strict=True) if s == best]


def _matches(record: Mapping[str, Any] | None, known: set[str]) -> int:
    if not record:
        return 0
    return sum(1 for v in record.values()
               if isinstance(v, str | int | float) and _norm(v) in known)


def _norm(value: Any) -> str:
    return value.strip().casefold() if isinstance(value, str) else json.dumps(value)


def _distinct(found: Sequence[Binding], source: str) -> list[Candidate]:
    seen: dict[str, Candidate] = {}
    for b in found:
        seen.setdefault(json.dumps(b.value, sort_keys=True, default=str),
                        Candidate(b.value, source, b.record))
    return list(seen.values())


def _type_ok(value: Any, kind: str) -> bool:
    allowed = _JSON_TYPES.get(kind)
    if allowed is None:
        return True
    if isinstance(value, bool) and kind in ("integer", "number"):
        return False
    return isinstance(value, allowed)
