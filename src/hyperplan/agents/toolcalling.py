"""The function-calling loop the baselines share: offer tools to the model, execute the calls it
makes through the same tool runtime, budget and trace as HyperAgent, feed the results back,
stop when it answers without a tool call.

Tool names are mapped to the ``^[A-Za-z0-9_-]{1,64}$`` form OpenAI-compatible endpoints
require (``music.like_song`` -> ``music__like_song``) and back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from hyperplan.catalog import ToolSpec
from hyperplan.execute.events import ToolCalled
from hyperplan.execute.results import ErrorKind, ToolResult
from hyperplan.execute.state import AgentState
from hyperplan.execute.subtask import RunContext
from hyperplan.llm.budget import BudgetExceeded
from hyperplan.llm.types import LLMError, Message, OfferedTool

_BAD = re.compile(r"[^A-Za-z0-9_-]")
MAX_RESULT_CHARS = 4000


def wire_name(name: str) -> str:
    """A function name endpoints accept."""
    return _BAD.sub("_", name.replace(".", "__"))[:64]


@dataclass(frozen=True)
class LoopOutcome:
    state: AgentState
    answer: str
    finished: bool  # the model answered without calling a tool within max_steps
    stopped: str = ""  # a budget ran out
    error: str = ""  # the LLM call failed


def offered_tools(tools: Sequence[ToolSpec]) -> tuple[list[OfferedTool], dict[str, str]]:
    """The definitions of ``tools`` sent to the model and the map from wire names back to
    tool names."""
    specs, back = [], {}
    for tool in tools:
        name = wire_name(tool.name)
        back[name] = tool.name
        specs.append(OfferedTool(name, tool.description, tool.input_schema))
    return specs, back


def tool_loop(ctx: RunContext, messages: list[Message], tools: Sequence[ToolSpec],
              state: AgentState, *, label: str, component: str,
              max_steps: int) -> LoopOutcome:
    """Run the function-calling loop (module doc) for at most ``max_steps`` model turns; a
    budget hit or an LLM failure ends it with the state reached so far."""
    assert ctx.llm is not None
    specs, back = offered_tools(tools)
    try:
        for _ in range(max_steps):
            resp = ctx.llm.complete(messages, tools=specs, tool_choice="auto",
                                    component=component)
            if not resp.tool_calls:
                return LoopOutcome(state, resp.text, True)
            messages.append(Message.assistant(resp.text, resp.tool_calls))
            for i, call in enumerate(resp.tool_calls):
                result = _execute(ctx, back.get(call.name, call.name), dict(call.arguments))
                state = state.after_call(ctx.graph, label, result)
                ctx.tracer.emit(ToolCalled.of(label, result.as_dict()))
                messages.append(Message.tool(_result_text(result), call.id or f"call_{i}",
                                             call.name))
    except BudgetExceeded as exc:
        return LoopOutcome(state, "", False, stopped=str(exc))
    except LLMError as exc:
        return LoopOutcome(state, "", False, error=str(exc))
    return LoopOutcome(state, "", False)


def _execute(ctx: RunContext, name: str, arguments: dict[str, object]) -> ToolResult:
    try:
        tool = ctx.catalog.get(name)
    except KeyError:
        return ToolResult.failure(name, arguments, ErrorKind.UNKNOWN_TOOL,
                                  f"no tool named {name!r}")
    ctx.accounting.charge_tool_call("executor")
    return ctx.runtime.call(tool, arguments, timeout=ctx.config.tool_timeout)


def _result_text(result: ToolResult) -> str:
    if result.ok:
        text = json.dumps(result.value, ensure_ascii=False, default=str)
    else:
        text = json.dumps({"error": result.error, "kind": str(result.error_kind)})
    return text[:MAX_RESULT_CHARS]
