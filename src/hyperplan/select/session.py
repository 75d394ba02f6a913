"""A state-conditioned selection session (HyperAgent, Definition 4: the agent state
S = (C, R, I) of calls made, results and information held).

After each tool result the session records what is now held: the result's values on the
tool's output nodes (as :func:`~hyperplan.execute.state.materialise` finds them), its
effects, and the names of the arguments the agent passed (a value it passed is a value it
has). The next :meth:`Session.select` grounds those, so the context graph and DOE stop
proposing producers of values already known and turn to what the new deficit needs; the best
consumer of the results goes first, the tools already called last.

A conversation has several user requests. :meth:`Session.new_turn` re-conditions the state
on a new one. The calls made so far stop counting as this turn's (they are no longer ranked
last), and the values held so far stay usable; whether they still ground the selection
depends on what the new request refers to:

* a request that names a value the conversation has not seen (a quoted title, an id or
  number nobody passed or returned yet: "now delete the ticket called 'Kickoff notes'") asks
  about something new, so the values held move to :attr:`Session.earlier` (usable by the
  agent, not grounding) and a producer the request needs for its new value (the lookup by
  title) is offered again;
* a request that names no new value ("now close it", "add a comment to that ticket", or one
  that repeats ``T-17``) refers back to what is held, so the values keep grounding the
  selection and no producer is proposed for them.

The effects achieved stay in both cases, as they describe the world, not the request. The
values seen are the scalar arguments and results of the calls and the literals of the
requests, at most :data:`MAX_VALUES` of them. A result that is JSON text is parsed
before it grounds anything, and the top-level fields of a result of a tool that declares no
named outputs are held by name (as the arguments of a call are), so such a tool is not
offered again for the value it just returned.

The session also records the data flows it observes, a value returned by one call and passed
as an argument to a later one (:class:`~hyperplan.graph.overrides.ObservedFlow`), which
:func:`~hyperplan.graph.overrides.strengthen_from_traces` turns into stronger links.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hyperplan.graph.overrides import ObservedFlow
from hyperplan.select.flows import FlowRecorder
from hyperplan.select.model import Selection
from hyperplan.select.observed import needs_outputs, observe_result, structured

if TYPE_CHECKING:
    from hyperplan.select.selector import Selector

#: Rows of a list result whose field names are held (a tool with no named outputs).
MAX_ROWS = 50
#: Values a session remembers having seen (to tell a request's references from new values).
MAX_VALUES = 5_000
#: Scalars read from one call's arguments and result for :attr:`Session.seen`.
MAX_SCALARS = 500
_LONGEST_VALUE = 200
_QUOTED = re.compile(r"(?<!\w)'([^'\n]+)'(?!\w)|\"([^\"\n]+)\"|\u201c([^\u201d\n]+)\u201d"
                     r"|\u2018([^\u2019\n]+)\u2019|`([^`\n]+)`")
_TOKEN = re.compile(r"[^\s,;!?()\[\]{}<>]+")


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
        self.given: frozenset[str] = frozenset(known)  # held in every turn
        self.held: set[str] = set(known)
        self.earlier: set[str] = set()  # held in earlier turns: usable, not grounding
        self.effects: set[str] = set()
        self.calls: list[Observation] = []
        self.turn_start = 0  # index in ``calls`` of the current turn's first call
        self.seen: set[str] = set()  # values met in calls and earlier requests (module doc)
        self.recorder = FlowRecorder(selector.graph)
        self.last: Selection | None = None

    def select(self, request: str | None = None, *, budget: int | None = None) -> Selection:
        """The selection for ``request`` (or the session's request) given the state of the
        current turn (a changed ``request`` alone does not start a new turn: an agent's own
        queries change within one; see :meth:`new_turn`)."""
        if request:
            self.request = request
        self.last = self.selector.select(self.request, known=self.held, effects=self.effects,
                                         budget=budget, called=self.turn_called)
        return self.last

    def new_turn(self, request: str) -> bool:
        """Re-condition the state on a new user request (Definition 4, module doc): the calls
        made so far stop counting as this turn's and ``request`` is the request from now on;
        when it names a value the conversation has not seen, the values held move to
        :attr:`earlier` (usable, no longer grounding). True when they moved."""
        self._remember(request_values(self.request))  # the request of the turn that ended
        fresh = bool(request_values(request) - self.seen)
        if fresh:
            self.earlier.update(self.held)
            self.held = set(self.given)
        self.turn_start = len(self.calls)
        self.request = request
        return fresh

    def observe(self, tool: str, arguments: Mapping[str, Any] | None, result: Any = None, *,
                ok: bool = True) -> None:
        """Record a call of ``tool`` with ``arguments`` that returned ``result`` (any JSON-like
        value; ``ok=False`` for a failed call, whose result grounds nothing). Unknown tools
        are recorded but ground nothing beyond their argument names. A result of a tool
        that declares no outputs teaches the selector its output schema
        (:func:`~hyperplan.select.observed.observe_result`)."""
        args = dict(arguments or {})
        if ok:
            result = structured(observe_result(self.selector, tool, result))
        self.calls.append(Observation(tool, tuple(sorted(args)), ok))
        self._remember(scalars(args))
        if ok:
            self._remember(scalars(result))
        self.held.update(name for name, value in args.items() if value is not None)
        held, effects = self.recorder.observe(tool, args, result, ok=ok)
        self.held.update(held)
        self.effects.update(effects)
        if ok and self._nameless(tool):
            self.held.update(fields_of(result))

    def _remember(self, values: Collection[str]) -> None:
        room = MAX_VALUES - len(self.seen)
        if room > 0:
            self.seen.update(list(values)[:room])

    def _nameless(self, tool: str) -> bool:
        try:
            return needs_outputs(self.selector.tool(tool))
        except KeyError:
            return False

    @property
    def called(self) -> list[str]:
        """The tools called successfully so far, in order."""
        return [c.tool for c in self.calls if c.ok]

    @property
    def turn_called(self) -> list[str]:
        """The tools called successfully in the current turn, in order."""
        return [c.tool for c in self.calls[self.turn_start:] if c.ok]

    @property
    def flows(self) -> list[ObservedFlow]:
        """The data flows observed so far (:class:`~hyperplan.select.flows.FlowRecorder`)."""
        return self.recorder.flows

    def state(self) -> dict[str, Any]:
        """The state as JSON-ready data (for a gateway's or plugin's own store)."""
        return {"request": self.request, "held": sorted(self.held),
                "earlier": sorted(self.earlier - self.held), "turn_start": self.turn_start,
                "effects": sorted(self.effects),
                "calls": [{"tool": c.tool, "arguments": list(c.arguments), "ok": c.ok}
                          for c in self.calls],
                "flows": [{"producer": f.producer, "output": f.output_path,
                           "consumer": f.consumer, "input": f.input_param}
                          for f in self.flows]}


def fields_of(result: Any) -> list[str]:
    """The names of the top-level fields with a value of a result (an object, or a list of
    objects)."""
    rows = result if isinstance(result, list) else [result]
    return [k for row in rows[:MAX_ROWS] if isinstance(row, Mapping)
            for k, v in row.items() if isinstance(k, str) and v is not None and v != ""]


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def request_values(text: str) -> set[str]:
    """The values a request names (normalised): its quoted spans ('...', "...", curly quotes,
    backticks) and the words outside them that carry a digit (ids, numbers, dates)."""
    values = {_norm(next(g for g in m.groups() if g is not None))
              for m in _QUOTED.finditer(text or "")}
    rest = _QUOTED.sub(" ", text or "")
    for word in _TOKEN.findall(rest):
        word = word.strip(".:'\"")
        if any(c.isdigit() for c in word):
            values.add(_norm(word))
    return {v for v in values if v and len(v) <= _LONGEST_VALUE}


def scalars(value: Any) -> set[str]:
    """The scalar values (strings, numbers) in a JSON-like value, normalised; at most
    :data:`MAX_SCALARS`, strings longer than a value would be left out."""
    out: set[str] = set()
    stack = [value]
    while stack and len(out) < MAX_SCALARS:
        item = stack.pop()
        if isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item[:MAX_SCALARS])
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, (str, int, float)):
            text = _norm(str(item))
            if text and len(text) <= _LONGEST_VALUE:
                out.add(text)
    return out
