"""Run traces: one JSON object per line, written as the run happens (nothing is lost when a run
crashes), readable back with :func:`read_events` (typed) or :func:`read_trace` (the JSON
records) and summarised with :func:`summarize`.

The events are the frozen dataclasses of :mod:`hyperplan.execute.events` (``run_start``,
``interpretation``, ``context_graph``, ``dag`` (every version), ``support_graph``, ``blocked``,
``tool_call``, ``llm_call``, ``subtask``, ``refinement``, ``run_end``); every record carries
``t`` (seconds since the run started) and ``type``.

Secrets never land in a trace: values of credential-like keys (tokens, passwords, API keys,
payment card numbers and security codes) are replaced by ``"***"`` wherever they appear, in
arguments and in results, and every value registered in :data:`hyperplan.secrets.SECRETS`
(headers from the environment, goal values marked secret, the LLM key ...) is replaced by value
in every string of every event, whatever its key.

Traces stay bounded: a string longer than ``max_chars`` (default
:data:`DEFAULT_MAX_CHARS`) keeps its first ``max_chars`` characters and a marker
``... [N more chars]``; a list longer than ``max_items`` keeps its first items and a marker
string ``... [N more items]``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar

from hyperplan.execute.events import (
    EVENT_TYPES,
    DagPlanned,
    LLMCalled,
    OtherEvent,
    Refined,
    RunEnded,
    SubtaskSettled,
    ToolCalled,
    TraceEvent,
    event_from_record,
    event_record,
)
from hyperplan.graph.effects import is_credential
from hyperplan.jsonl import read_records
from hyperplan.secrets import SECRETS

SECRET_WORDS = ("password", "passwd", "secret", "authorization", "cookie",
                # payment cards: the number and its security code
                "card_number", "cardnumber", "cvv", "cvc", "security_code")
REDACTED = "***"
DEFAULT_MAX_CHARS = 20_000
DEFAULT_MAX_ITEMS = 1_000


def is_secret_key(key: str) -> bool:
    low = key.lower()
    return is_credential(low) or any(word in low for word in SECRET_WORDS)


def redact(value: Any) -> Any:
    """A copy of ``value`` with the values of secret keys replaced (recursively)."""
    if isinstance(value, Mapping):
        return {k: REDACTED if isinstance(k, str) and is_secret_key(k) and v is not None
                else redact(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value


def clip(value: Any, max_chars: int = DEFAULT_MAX_CHARS,
         max_items: int = DEFAULT_MAX_ITEMS) -> Any:
    """``value`` with long strings and lists cut, each cut marked (module doc)."""
    if isinstance(value, str):
        if len(value) <= max_chars:
            return value
        return value[:max_chars] + f"... [{len(value) - max_chars} more chars]"
    if isinstance(value, Mapping):
        return {k: clip(v, max_chars, max_items) for k, v in value.items()}
    if isinstance(value, list | tuple):
        kept = [clip(v, max_chars, max_items) for v in value[:max_items]]
        if len(value) > max_items:
            kept.append(f"... [{len(value) - max_items} more items]")
        return kept
    return value


class TraceWriter:
    """Append-only JSONL trace; ``path=None`` keeps events in memory only. Each event is
    redacted (by key and by value) and clipped (module doc) before it is kept or written:
    :attr:`records` are the JSON objects as written, :attr:`events` the same read back as
    typed events."""

    def __init__(self, path: str | Path | None = None, *, max_chars: int = DEFAULT_MAX_CHARS,
                 max_items: int = DEFAULT_MAX_ITEMS) -> None:
        self.path = Path(path) if path is not None else None
        self.max_chars = max_chars
        self.max_items = max_items
        self.records: list[dict[str, Any]] = []
        self._start = time.monotonic()
        self._file: IO[str] | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("w", encoding="utf-8")

    def emit(self, event: TraceEvent) -> None:
        data = event_record(event)
        kind = data.pop("type")
        data = clip(SECRETS.redact_value(redact(data)), self.max_chars, self.max_items)
        record = {"t": round(time.monotonic() - self._start, 4), "type": kind, **data}
        self.records.append(record)
        if self._file is not None:
            line = json.dumps(record, default=str, ensure_ascii=False)
            self._file.write(SECRETS.redact_text(line) + "\n")
            self._file.flush()

    @property
    def events(self) -> list[TraceEvent]:
        """The events kept so far, as written (redacted, clipped), typed."""
        return [event_from_record(r) for r in self.records]

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_trace(path: str | Path) -> list[dict[str, Any]]:
    """The JSON records of a trace file; a malformed line is an error naming the file and line
    (a truncated last line from a crash is skipped)."""
    records, _ = read_records(path, what="trace event", key="type")
    return records


def read_events(path: str | Path) -> list[TraceEvent]:
    """The typed events of a trace file (:func:`read_trace`, each record parsed)."""
    return [event_from_record(r) for r in read_trace(path)]


def malformed_event(events: Sequence[TraceEvent]) -> str | None:
    """Why the first event of ``events`` could not have been written by a :class:`TraceWriter`
    (no time, or a known type without its fields), or None."""
    for i, event in enumerate(events, 1):
        if event.t is None:
            return f"event {i} has no 't'"
        if isinstance(event, OtherEvent) and event.type in EVENT_TYPES:
            return f"event {i} is a {event.type!r} event without its required fields"
    return None


E = TypeVar("E", bound=TraceEvent)


def of_type(events: Iterable[TraceEvent], kind: type[E]) -> Iterator[E]:
    return (e for e in events if isinstance(e, kind))


def summarize(events: Iterable[TraceEvent]) -> dict[str, Any]:
    """Totals of a trace: status, tool calls (ok / failed), LLM calls and tokens, subtasks,
    plan versions, refinements and the final stop reason."""
    events = list(events)
    calls = list(of_type(events, ToolCalled))
    llm = list(of_type(events, LLMCalled))
    end = next(of_type(events, RunEnded), None)
    subtasks = {e.id: e.status for e in of_type(events, SubtaskSettled)}
    return {
        "status": end.status if end else "incomplete",
        "tool_calls": sum(1 for c in calls if c.error_kind != "invalid_arguments"),
        "failed_calls": sum(1 for c in calls if not c.ok),
        "llm_calls": len(llm),
        "prompt_tokens": sum(e.prompt_tokens or 0 for e in llm),
        "completion_tokens": sum(e.completion_tokens or 0 for e in llm),
        "subtasks": subtasks,
        "dag_versions": sum(1 for _ in of_type(events, DagPlanned)),
        "refinements": sum(1 for _ in of_type(events, Refined)),
        "stopped": end.stopped if end else None,
        "seconds": (events[-1].t or 0.0) if events else 0.0,
    }
