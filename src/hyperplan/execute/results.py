"""What a tool call returns and the protocol every tool runtime implements.

A runtime never raises for a failing tool: schema-invalid arguments, tool exceptions, HTTP
errors, timeouts, calls whose outcome is unknown and transport failures all come back as a
:class:`ToolResult` with ``ok=False``, an :class:`ErrorKind` and a readable ``error``; the
agent records it as an observation in its state (HyperAgent, "Task Execution": observations
feed refinement).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from hyperplan.catalog import ToolSpec


class ErrorKind(StrEnum):
    """Why a call failed."""

    INVALID_ARGUMENTS = "invalid_arguments"  # rejected by the input JSON Schema, not sent
    UNKNOWN_TOOL = "unknown_tool"  # the runtime cannot execute this tool
    TOOL_ERROR = "tool_error"  # the tool ran and reported an error (exception, HTTP 4xx/5xx)
    TIMEOUT = "timeout"  # no answer in time; the call is safe to repeat (idempotent)
    # the call may have run (a write that timed out or lost its connection after it was sent):
    # never repeated automatically, reported as "outcome unknown"
    OUTCOME_UNKNOWN = "outcome_unknown"
    TRANSPORT = "transport"  # connection / process / protocol failure


@dataclass(frozen=True)
class ToolResult:
    """The observation of one tool call. ``value`` is the JSON-like result when ``ok``."""

    tool: str
    arguments: Mapping[str, Any]
    ok: bool
    value: Any = None
    error: str = ""
    error_kind: ErrorKind | None = None
    seconds: float = 0.0
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @staticmethod
    def failure(tool: str, arguments: Mapping[str, Any], kind: ErrorKind, error: str,
                seconds: float = 0.0) -> ToolResult:
        return ToolResult(tool, dict(arguments), False, None, error, kind, seconds)

    def as_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "arguments": dict(self.arguments),
            "ok": self.ok,
            "value": self.value,
            "error": self.error,
            "error_kind": self.error_kind.value if self.error_kind else None,
            "seconds": round(self.seconds, 6),
        }


@runtime_checkable
class ToolRuntime(Protocol):
    """Executes tools of a catalog. ``call`` validates ``arguments`` against the tool's input
    schema first and never raises for tool-side problems (see :class:`ToolResult`)."""

    def can_run(self, tool: ToolSpec) -> bool: ...

    def call(self, tool: ToolSpec, arguments: Mapping[str, Any], *,
             timeout: float | None = None) -> ToolResult: ...

    def close(self) -> None: ...
