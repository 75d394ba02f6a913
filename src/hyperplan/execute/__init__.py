"""Execution (seed 000, "Task Execution"): the agent state, tool runtimes, argument binding and
the execution loop, LLM-free on a structured goal or with a planner on a request."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hyperplan._lazy import lazy_exports

if TYPE_CHECKING:
    from hyperplan.execute.agent import RunResult, plan_request, run_goal, run_request
    from hyperplan.execute.goal import StructuredGoal
    from hyperplan.execute.results import ErrorKind, ToolResult
    from hyperplan.execute.setup import tools_from_source
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
    "tools_from_source": "setup",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "AgentState", "ErrorKind", "RunContext", "RunResult", "StructuredGoal", "ToolResult",
    "TraceWriter", "plan_request", "read_trace", "run_goal", "run_request", "tools_from_source",
]
