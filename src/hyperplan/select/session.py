"""A state-conditioned selection session (HyperAgent, Definition 4: the agent state
S = (C, R, I) of calls made, results and information held).

After each tool result the session records what is now held: the result's values on the
tool's output nodes (as :func:`~hyperplan.execute.state.materialise` finds them), its
effects, and the names of the arguments the agent passed (a value it passed is a value it
has). The next :meth:`Session.select` grounds those, so the context graph and DOE stop
proposing producers of values already known and turn to what the new deficit needs; the best
consumer of the results goes first, the tools already called last.

The session also records the data flows it observes, a value returned by one call and passed
as an argument to a later one (:class:`~hyperplan.graph.overrides.ObservedFlow`), which
:func:`~hyperplan.graph.overrides.strengthen_from_traces` turns into stronger links.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hyperplan.graph.overrides import ObservedFlow
from hyperplan.select.flows import FlowRecorder
from hyperplan.select.model import Selection
from hyperplan.select.observed import observe_result

if TYPE_CHECKING:
    from hyperplan.select.selector import Selector



@dataclass(frozen=True)
class Observation:
    """One call the session saw: tool, argument names, and whether it succeeded."""

    tool: str
    arguments: tuple[str, ...]
    ok: bool


class Session:
    """One conversation's selection state: what the agent holds and which calls it made."""

    def __init__(self, selector: Selector, request: str = "", *,
                 known: Collection[str] = ()) -> None:
        self.selector = selector
        self.request = request
        self.held: set[str] = set(known)
        self.effects: set[str] = set()
        self.calls: list[Observation] = []
        self.recorder = FlowRecorder(selector.graph)
        self.last: Selection | None = None

    def select(self, request: str | None = None, *, budget: int | None = None) -> Selection:
        """The selection for ``request`` (or the session's request) given the state."""
        if request:
            self.request = request
        self.last = self.selector.select(self.request, known=self.held, effects=self.effects,
                                         budget=budget, called=self.called)
        return self.last

    def observe(self, tool: str, arguments: Mapping[str, Any] | None, result: Any = None, *,
                ok: bool = True) -> None:
        """Record a call of ``tool`` with ``arguments`` that returned ``result`` (any JSON-like
        value; ``ok=False`` for a failed call, whose result grounds nothing). Unknown tools
        are recorded but ground nothing beyond their argument names. A result of a tool
        that declares no outputs teaches the selector its output schema
        (:func:`~hyperplan.select.observed.observe_result`)."""
        args = dict(arguments or {})
        if ok:
            result = observe_result(self.selector, tool, result)
        self.calls.append(Observation(tool, tuple(sorted(args)), ok))
        self.held.update(name for name, value in args.items() if value is not None)
        held, effects = self.recorder.observe(tool, args, result, ok=ok)
        self.held.update(held)
        self.effects.update(effects)

    @property
    def called(self) -> list[str]:
        """The tools called successfully so far, in order."""
        return [c.tool for c in self.calls if c.ok]

    @property
    def flows(self) -> list[ObservedFlow]:
        """The data flows observed so far (:class:`~hyperplan.select.flows.FlowRecorder`)."""
        return self.recorder.flows

    def state(self) -> dict[str, Any]:
        """The state as JSON-ready data (for a gateway's or plugin's own store)."""
        return {"request": self.request, "held": sorted(self.held),
                "effects": sorted(self.effects),
                "calls": [{"tool": c.tool, "arguments": list(c.arguments), "ok": c.ok}
                          for c in self.calls],
                "flows": [{"producer": f.producer, "output": f.output_path,
                           "consumer": f.consumer, "input": f.input_param}
                          for f in self.flows]}
