"""Observed data flows: a value one call returned that a later call received as an argument
(the evidence :func:`~hyperplan.graph.overrides.strengthen_from_traces` turns into stronger
links, HyperAgent's dependency links D(v_o, v_i) learned from use).

:class:`FlowRecorder` follows calls in order; :func:`flows_from_trace` replays the
``tool_call`` events of a ``hyperplan run --trace`` file through one, and :func:`read_flows` /
:func:`write_flows` keep flows as JSON lines ``{"producer", "output", "consumer", "input"}``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from hyperplan.errors import HyperplanError
from hyperplan.execute.events import ToolCalled, TraceEvent
from hyperplan.execute.state import materialise
from hyperplan.graph.model import Hypergraph
from hyperplan.graph.overrides import ObservedFlow

MAX_VALUES = 10_000  # output values remembered for flow detection (oldest dropped first)
FLOW_FIELDS = ("producer", "output", "consumer", "input")


def fingerprint(value: Any) -> str | None:
    """A comparable form of a scalar worth tracking (None for booleans, None, containers and
    one-character strings, which match too much by chance)."""
    if isinstance(value, bool) or value is None or isinstance(value, (dict, list)):
        return None
    text = str(value).strip()
    if isinstance(value, str) and len(text) < 2:
        return None
    return f"{type(value).__name__}:{text.casefold()}"


class FlowRecorder:
    """Follows the calls of one conversation over ``graph``: which output node each value came
    from, and the flows from earlier outputs into later arguments."""

    def __init__(self, graph: Hypergraph) -> None:
        self.graph = graph
        self.flows: list[ObservedFlow] = []
        self._sources: dict[str, tuple[str, str]] = {}  # fingerprint -> (tool, output path)
        self._calls = 0

    def observe(self, tool: str, arguments: Mapping[str, Any], result: Any, *,
                ok: bool = True) -> tuple[set[str], set[str]]:
        """Record one call; returns the output node keys now held and the effects achieved
        (both empty for a failed call or a tool the graph does not have)."""
        self._record_flows(tool, arguments)
        self._calls += 1
        if not ok or tool not in self.graph.tool_index:
            return set(), set()
        bindings, effects = materialise(self.graph, tool, result, self._calls - 1)
        for binding in bindings:
            output = binding.node[len(tool) + len(":out:"):]  # the key is tool:out:path
            self._remember(binding.value, tool, output)
        return {b.node for b in bindings}, set(effects)

    def _remember(self, value: Any, tool: str, output: str) -> None:
        key = fingerprint(value)
        if key is None:
            return
        if len(self._sources) >= MAX_VALUES:
            self._sources.pop(next(iter(self._sources)))
        self._sources[key] = (tool, output)

    def _record_flows(self, consumer: str, args: Mapping[str, Any]) -> None:
        for name, value in args.items():
            key = fingerprint(value)
            source = self._sources.get(key) if key is not None else None
            if source is not None and source[0] != consumer:
                flow = ObservedFlow(source[0], source[1], consumer, name)
                if flow not in self.flows:
                    self.flows.append(flow)


def flows_from_trace(graph: Hypergraph, events: Iterable[TraceEvent]) -> list[ObservedFlow]:
    """The flows of one trace's successful tool calls, in order (calls reused from an earlier
    identical call count once)."""
    recorder = FlowRecorder(graph)
    for event in events:
        if not isinstance(event, ToolCalled) or event.reused:
            continue
        recorder.observe(event.tool, dict(event.arguments), event.value, ok=event.ok)
    return recorder.flows


def known_flows(graph: Hypergraph, flows: Iterable[ObservedFlow]) -> list[ObservedFlow]:
    """The flows whose producer output and consumer input are nodes of ``graph``."""
    index = graph.node_index
    return [f for f in flows
            if f"{f.producer}:out:{f.output_path}" in index
            and f"{f.consumer}:in:{f.input_param}" in index]


def write_flows(path: str | Path, flows: Iterable[ObservedFlow]) -> int:
    """Append ``flows`` to the JSON-lines file ``path``; returns how many were written."""
    lines = [json.dumps(dict(zip(FLOW_FIELDS, (f.producer, f.output_path, f.consumer,
                                                f.input_param), strict=True)))
             for f in flows]
    if lines:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with open(descriptor, "a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
    return len(lines)


def read_flows(path: str | Path) -> list[ObservedFlow]:
    """The flows of a JSON-lines file (one error line naming the file and line when one is
    malformed)."""
    flows: list[ObservedFlow] = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            values = [row[k] for k in FLOW_FIELDS]
        except (json.JSONDecodeError, KeyError, TypeError):
            raise HyperplanError(f"{path}:{number}: not a flow; expected a JSON object with "
                                 f"{', '.join(FLOW_FIELDS)}") from None
        if not all(isinstance(v, str) and v for v in values):
            raise HyperplanError(f"{path}:{number}: every field of a flow must be a non-empty "
                                 "string")
        flows.append(ObservedFlow(*values))
    return flows
