"""Execution (HyperAgent, "Task Execution"): the agent state, tool runtimes, argument binding
and the execution loop, LLM-free on a structured goal or with a planner on a request.

``tools_from_source`` (options to a catalog and a runtime) lives in :mod:`hyperplan.connect`,
above this package, which it would otherwise import in a cycle (through the demo world and the
catalog sources); the name still resolves here, on first use."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hyperplan._lazy import lazy_exports

if TYPE_CHECKING:
    from hyperplan.connect import tools_from_source
    from hyperplan.execute.agent import RunResult, plan_request, run_goal, run_request
    from hyperplan.execute.goal import StructuredGoal
    from hyperplan.execute.results import ErrorKind, ToolResult
    from hyperplan.execute.state import AgentState
    from hyperplan.execute.subtask import RunContext
    from hyperplan.execute.trace import TraceWriter, read_trace

_EXPORTS = {
    "AgentState": "state",
    "ErrorKind": "results",
    "RunContext": "subtask",
    "RunResult": "agent",
    "StructuredGoal": "goal",
    "ToolResult": "results",
    "TraceWriter": "trace",
    "plan_request": "agent",
    "read_trace": "trace",
    "run_goal": "agent",
    "run_request": "agent",
}
_getattr, _dir = lazy_exports(__name__, _EXPORTS)


def __getattr__(name: str) -> Any:
    if name == "tools_from_source":  # defined above this package (module doc)
        return importlib.import_module("hyperplan.connect").tools_from_source
    return _getattr(name)


def __dir__() -> list[str]:
    return sorted([*_dir(), "tools_from_source"])


__all__ = [
    "AgentState", "ErrorKind", "RunContext", "RunResult", "StructuredGoal", "ToolResult",
    "TraceWriter", "plan_request", "read_trace", "run_goal", "run_request", "tools_from_source",
]
