"""Helpers shared by the tool runtimes: timing, result construction and context-manager use."""

from __future__ import annotations

import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self

from hyperplan.catalog import ToolSpec
from hyperplan.execute.results import ErrorKind, ToolResult

MAX_ERROR_CHARS = 500


class Clock:
    """Wall-clock seconds since construction (``time.perf_counter``)."""

    def __init__(self) -> None:
        self._start = time.perf_counter()

    def seconds(self) -> float:
        return time.perf_counter() - self._start


def ok_result(tool: ToolSpec, arguments: Mapping[str, Any], value: Any, clock: Clock,
              metadata: Mapping[str, Any] | None = None) -> ToolResult:
    return ToolResult(tool.name, dict(arguments), True, value, seconds=clock.seconds(),
                      metadata=dict(metadata or {}))


def fail_result(tool: ToolSpec, arguments: Mapping[str, Any], kind: ErrorKind, error: str,
                clock: Clock | None = None) -> ToolResult:
    seconds = clock.seconds() if clock is not None else 0.0
    return ToolResult.failure(tool.name, arguments, kind, error, seconds)


def truncate(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """``text`` redacted by value, *then* cut to ``limit`` characters, marking the cut (cut
    first, a secret split at the cut would no longer match and escape but for its tail)."""
    from hyperplan.secrets import redact_text

    text = redact_text(text.strip())
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"


class ClosingRuntime:
    """Mixin: ``with runtime: ...`` calls :meth:`close` on exit."""

    def close(self) -> None:
        """Release resources; a no-op by default."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
