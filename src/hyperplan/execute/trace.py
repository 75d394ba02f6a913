"""Run traces: one JSON object per line, written as the run happens (nothing is lost when a run
crashes), readable back with :func:`read_trace` and summarised with :func:`summarize`.

Event types: ``run_start``, ``interpretation``, ``context_graph``, ``dag`` (every version),
``support_graph``, ``blocked``, ``tool_call``, ``llm_call``, ``subtask``, ``refinement``,
``run_end``. Every event carries ``t`` (seconds since the run started) and ``type``.

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
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

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
    redacted (by key and by value) and clipped (module doc) before it is kept or written."""

    def __init__(self, path: str | Path | None = None, *, max_chars: int = DEFAULT_MAX_CHARS,
                 max_items: int = DEFAULT_MAX_ITEMS) -> None:
        self.path = Path(path) if path is not None else None
        self.max_chars = max_chars
        self.max_items = max_items
        self.events: list[dict[str, Any]] = []
        self._start = time.monotonic()
        self._file: IO[str] | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("w", encoding="utf-8")

    def emit(self, type_: str, **data: Any) -> None:
        data = clip(SECRETS.redact_value(redact(data)), self.max_chars, self.max_items)
        event = {"t": round(time.monotonic() - self._start, 4), "type": type_, **data}
        self.events.append(event)
        if self._file is not None:
            line = json.dumps(event, default=str, ensure_ascii=False)
            self._file.write(SECRETS.redact_text(line) + "\n")
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_trace(path: str | Path) -> list[dict[str, Any]]:
    """The events of a trace file; a malformed line is an error naming the file and line
    (a truncated last line from a crash is skipped)."""
    events, _ = read_records(path, what="trace event", key="type")
    return events


def of_type(events: list[dict[str, Any]], *types: str) -> Iterator[dict[str, Any]]:
    return (e for e in events if e.get("type") in types)


def summarize(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals of a trace: status, tool calls (ok / failed), LLM calls and tokens, subtasks,
    plan versions, refinements and the final stop reason."""
    calls = list(of_type(events, "tool_call"))
    llm = list(of_type(events, "llm_call"))
    end = next(of_type(events, "run_end"), {})
    subtasks: dict[str, str] = {}
    for e in of_type(events, "subtask"):
        subtasks[str(e.get("id"))] = str(e.get("status"))
    return {
        "status": end.get("status", "incomplete"),
        "tool_calls": sum(1 for c in calls if c.get("error_kind") != "invalid_arguments"),
        "failed_calls": sum(1 for c in calls if not c.get("ok")),
        "llm_calls": len(llm),
        "prompt_tokens": sum(int(e.get("prompt_tokens", 0)) for e in llm),
        "completion_tokens": sum(int(e.get("completion_tokens", 0)) for e in llm),
        "subtasks": subtasks,
        "dag_versions": sum(1 for _ in of_type(events, "dag")),
        "refinements": sum(1 for _ in of_type(events, "refinement")),
        "stopped": end.get("stopped"),
        "seconds": events[-1]["t"] if events else 0.0,
    }
