"""A state-conditioned selection session (seed 000, Definition 4: the agent state
S = (C, R, I) of calls made, results and information held).

After each tool result the session records what is now held: the result's values on the
tool's output nodes (as :func:`~hyperplan.execute.state.materialise` finds them), its
effects, and the names of the arguments the agent passed (a value it passed is a value it
has). The next :meth:`Session.select` grounds those, so the context graph and DOE stop
proposing producers of values already known and turn to what the new deficit needs.

The session also records the data flows it observes, a value returned by one call and passed
as an argument to a later one (:class:`~hyperplan.graph.overrides.ObservedFlow`), which
:func:`~hyperplan.graph.overrides.strengthen_from_traces` turns into stronger links.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hyperplan.execute.state import materialise
from hyperplan.graph.overrides import ObservedFlow
from hyperplan.select.model import Selection

if TYPE_CHECKING:
    from hyperplan.select.selector import Selector

MAX_FLOW_VALUES = 10_000  # values remembered for flow detection (oldest dropped first)


@dataclass(frozen=True)
class Observation:
    """One call the session saw: tool, argument names, and whether it succeeded."""

    tool: str
    arguments: tuple[str, ...]
    ok: bool


def _fingerprint(value: Any) -> str | None:
    """A comparable form of a scalar worth tracking as a flow (None for booleans, empty or
    very short strings, containers): a value passed on later is recognised by it."""
    if isinstance(value, bool) or value is None or isinstance(value, (dict, list)):
        return None
    text = str(value).strip()
    if isinstance(value, str) and len(text) < 2:
        return None
    return f"{type(value).__name__}:{text.casefold()}"


class Session:
    """One conversation's selection state: what the agent holds and which calls it made."""

    def __init__(self, selector: Selector, request: str = "", *,
                 known: Collection[str] = ()) -> None:
        self.selector = selector
        self.request = request
        self.held: set[str] = set(known)
        self.effects: set[str] = set()
        self.calls: list[Observation] = []
        self.flows: list[ObservedFlow] = []
        self._sources: dict[str, tuple[str, str]] = {}  # value fingerprint -> (tool, output)
        self.last: Selection | None = None

    def select(self, request: str | None = None, *, budget: int | None = None) -> Selection:
        """The selection for ``request`` (or the session's request) given the state."""
        if request:
            self.request = request
        self.last = self.selector.select(self.request, known=self.held, effects=self.effects,
                                         budget=budget)
        return self.last

    def observe(self, tool: str, arguments: Mapping[str, Any] | None, result: Any = None, *,
                ok: bool = True) -> None:
        """Record a call of ``tool`` with ``arguments`` that returned ``result`` (any JSON-like
        value; ``ok=False`` for a failed call, whose result grounds nothing). Unknown tools
        are recorded but ground nothing beyond their argument names."""
        args = dict(arguments or {})
        self.calls.append(Observation(tool, tuple(sorted(args)), ok))
        self._record_flows(tool, args)
        self.held.update(name for name, value in args.items() if value is not None)
        graph = self.selector.graph
        if not ok or tool not in graph.tool_index:
            return
        bindings, effects = materialise(graph, tool, result, len(self.calls) - 1)
        self.effects.update(effects)
        for binding in bindings:
            self.held.add(binding.node)
            output = binding.node[len(tool) + len(":out:"):]  # the key is tool:out:path
            self._remember(binding.value, tool, output)

    def _remember(self, value: Any, tool: str, output: str) -> None:
        key = _fingerprint(value)
        if key is None:
            return
        if len(self._sources) >= MAX_FLOW_VALUES:
            self._sources.pop(next(iter(self._sources)))
        self._sources[key] = (tool, output)

    def _record_flows(self, consumer: str, args: Mapping[str, Any]) -> None:
        """Flows from an earlier call's output into an argument of this one."""
        for name, value in args.items():
            key = _fingerprint(value)
            source = self._sources.get(key) if key is not None else None
            if source is not None and source[0] != consumer:
                flow = ObservedFlow(source[0], source[1], consumer, name)
                if flow not in self.flows:
                    self.flows.append(flow)

    def state(self) -> dict[str, Any]:
        """The state as JSON-ready data (for a gateway's or plugin's own store)."""
        return {"request": self.request, "held": sorted(self.held),
                "effects": sorted(self.effects),
                "calls": [{"tool": c.tool, "arguments": list(c.arguments), "ok": c.ok}
                          for c in self.calls],
                "flows": [{"producer": f.producer, "output": f.output_path,
                           "consumer": f.consumer, "input": f.input_param}
                          for f in self.flows]}
