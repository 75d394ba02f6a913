"""Trace events: one frozen dataclass per event type, one serialiser and one parser.

A run's trace (:mod:`hyperplan.execute.trace`) is a sequence of these events; each is written
as one JSON object with ``type`` (the class's :attr:`TraceEvent.TYPE`) and ``t`` (seconds since
the run started) beside its fields. :func:`event_record` turns an event into that object and
:func:`event_from_record` reads it back; nothing else builds or parses trace records.

Two field markers shape the record: an *optional* field (``optional()``) is left out while it
is ``None`` (so a record carries only what the emitter said), and the one *flat* field of an
event (``flat()``, a mapping) spreads its keys into the record, for the open-ended extras a
caller adds (the window fit of a context graph, what a tool printed). Unknown types read back as
:class:`OtherEvent`, so a trace written by a newer version still loads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

_OPTIONAL = "optional"
_FLAT = "flat"


def optional() -> Any:
    """A field left out of the record while it is ``None``."""
    return field(default=None, metadata={_OPTIONAL: True})


def flat() -> Any:
    """The event's open mapping whose keys are spread into the record."""
    return field(default_factory=dict, metadata={_FLAT: True})


@dataclass(frozen=True, kw_only=True)
class TraceEvent:
    """Base of every trace event; ``t`` is set when the event is read back from a trace."""

    TYPE: ClassVar[str] = ""
    t: float | None = optional()


@dataclass(frozen=True, kw_only=True)
class RunStarted(TraceEvent):
    TYPE: ClassVar[str] = "run_start"
    mode: str
    request: str | None = optional()
    goal: Mapping[str, Any] | None = optional()
    plain_context: bool | None = optional()


@dataclass(frozen=True, kw_only=True)
class Interpreted(TraceEvent):
    """The task interpretation (operations, schemas, stated values) the context graph uses."""

    TYPE: ClassVar[str] = "interpretation"
    source: str
    operations: Sequence[str] = ()
    schemas: Sequence[str] = ()
    values: Mapping[str, Any] = field(default_factory=dict)
    reason: str | None = optional()


@dataclass(frozen=True, kw_only=True)
class ContextGraphShown(TraceEvent):
    """A Tool Context Graph shown to the planner (its tools, token count, links and text)."""

    TYPE: ClassVar[str] = "context_graph"
    tools: Sequence[str]
    tokens: int
    links: Sequence[Any] = ()
    text: str | None = optional()
    fitted: Mapping[str, Any] = flat()


@dataclass(frozen=True, kw_only=True)
class DagPlanned(TraceEvent):
    """One version of the Task DAG (every version is traced)."""

    TYPE: ClassVar[str] = "dag"
    version: int
    subtasks: Sequence[Mapping[str, Any]] = ()


@dataclass(frozen=True, kw_only=True)
class SupportGraphChosen(TraceEvent):
    """A subtask's support graph (Deficit-Oriented Expansion), or why none was found."""

    TYPE: ClassVar[str] = "support_graph"
    subtask: str
    attempt: int
    ok: bool
    reason: str | None = optional()
    via: str | None = optional()
    terminal: str | None = optional()
    tools: Sequence[str] | None = optional()
    resolutions: Sequence[Mapping[str, Any]] | None = optional()


@dataclass(frozen=True, kw_only=True)
class Blocked(TraceEvent):
    """A call that needs a choice the run cannot make (its candidates listed)."""

    TYPE: ClassVar[str] = "blocked"
    subtask: str
    tool: str
    choices: Sequence[Mapping[str, Any]] = ()


@dataclass(frozen=True, kw_only=True)
class ToolCalled(TraceEvent):
    """One tool call and its result (``reused``: answered by an earlier identical call)."""

    TYPE: ClassVar[str] = "tool_call"
    tool: str
    subtask: str = ""
    arguments: Mapping[str, Any] = field(default_factory=dict)
    ok: bool = False
    value: Any = None
    error: str | None = None
    error_kind: str | None = None
    seconds: float = 0.0
    sources: Mapping[str, Any] = field(default_factory=dict)
    reused: bool | None = optional()
    printed: Mapping[str, Any] = flat()

    @classmethod
    def of(cls, subtask: str, result: Mapping[str, Any], **extra: Any) -> ToolCalled:
        """The event for a :class:`~hyperplan.execute.results.ToolResult`'s ``as_dict()``."""
        return cls(subtask=subtask, **result, **extra)


@dataclass(frozen=True, kw_only=True)
class LLMCalled(TraceEvent):
    TYPE: ClassVar[str] = "llm_call"
    component: str
    ok: bool
    messages: Sequence[Mapping[str, Any]] = ()
    model: str | None = optional()
    prompt_tokens: int | None = optional()
    completion_tokens: int | None = optional()
    latency_s: float | None = optional()
    text: str | None = optional()
    tool_calls: Sequence[Mapping[str, Any]] | None = optional()
    tool_doc_tokens: int | None = optional()
    error: str | None = optional()


@dataclass(frozen=True, kw_only=True)
class SubtaskSettled(TraceEvent):
    TYPE: ClassVar[str] = "subtask"
    id: str
    status: str
    reason: str | None = optional()


@dataclass(frozen=True, kw_only=True)
class Refined(TraceEvent):
    """A repair of a subtask (tools excluded) or of the whole DAG (a new version)."""

    TYPE: ClassVar[str] = "refinement"
    scope: str
    ok: bool | None = optional()
    subtask: str | None = optional()
    reason: str | None = optional()
    excluded: Sequence[str] | None = optional()
    observations: Sequence[Any] | None = optional()


@dataclass(frozen=True, kw_only=True)
class StepsPlanned(TraceEvent):
    """The plan-and-execute baseline's numbered plan."""

    TYPE: ClassVar[str] = "plan_steps"
    steps: Sequence[str] = ()


@dataclass(frozen=True, kw_only=True)
class RunEnded(TraceEvent):
    TYPE: ClassVar[str] = "run_end"
    status: str
    message: str = ""
    tool_calls: int = 0
    llm_calls: int = 0
    stopped: str | None = None


@dataclass(frozen=True, kw_only=True)
class RunFailed(TraceEvent):
    """An exception that ended a harness task (its message and a short traceback)."""

    TYPE: ClassVar[str] = "error"
    message: str
    traceback: str = ""


@dataclass(frozen=True, kw_only=True)
class OtherEvent(TraceEvent):
    """A record of a type this version does not know, kept whole."""

    type: str
    data: Mapping[str, Any] = field(default_factory=dict)


EVENT_TYPES: dict[str, type[TraceEvent]] = {
    cls.TYPE: cls for cls in (RunStarted, Interpreted, ContextGraphShown, DagPlanned,
                              SupportGraphChosen, Blocked, ToolCalled, LLMCalled, SubtaskSettled,
                              Refined, StepsPlanned, RunEnded, RunFailed)}


def event_type(event: TraceEvent) -> str:
    return event.type if isinstance(event, OtherEvent) else event.TYPE


def event_record(event: TraceEvent) -> dict[str, Any]:
    """The JSON object of ``event``: ``type``, then its fields (module doc: optional and flat
    fields); ``t`` is left to the writer."""
    if isinstance(event, OtherEvent):
        return {"type": event.type, **{k: v for k, v in event.data.items() if k != "t"}}
    record: dict[str, Any] = {"type": event.TYPE}
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        if f.name == "t" or (f.metadata.get(_OPTIONAL) and value is None):
            continue
        if f.metadata.get(_FLAT):
            record.update(value)
        else:
            record[f.name] = _plain(value)
    return record


def event_from_record(record: Mapping[str, Any]) -> TraceEvent:
    """The event a trace record holds (:class:`OtherEvent` for an unknown type or a record
    whose fields do not fit its type)."""
    kind = str(record.get("type", ""))
    data = {k: v for k, v in record.items() if k != "type"}
    cls = EVENT_TYPES.get(kind)
    if cls is None:
        return OtherEvent(type=kind, data=data, t=_time(data))
    fields = {f.name: f for f in dataclasses.fields(cls)}
    flat_name = next((n for n, f in fields.items() if f.metadata.get(_FLAT)), None)
    known = {k: v for k, v in data.items() if k in fields}
    extra = {k: v for k, v in data.items() if k not in fields}
    if flat_name is not None:
        known[flat_name] = extra
    try:
        return cls(**known)
    except TypeError:  # a required field missing: keep the record whole
        return OtherEvent(type=kind, data=data, t=_time(data))


def _time(data: Mapping[str, Any]) -> float | None:
    t = data.get("t")
    return float(t) if isinstance(t, int | float) else None


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    return value
