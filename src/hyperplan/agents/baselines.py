"""Baseline agents run under the same harness as HyperAgent (the HyperAgent paper, Experiments,
"Baselines", Non-Fine-Tuning Methods): same LLM, tool runtime, budgets, accounting and traces,
so only the planning method differs.

* :func:`run_react` — ReAct with native function calling: every tool of the catalog (or the
  ``tools`` given) is offered; the model calls tools until it answers in text.
* :func:`run_plan_and_execute` — Plan-and-Execute: the model writes a list of steps from the
  tool descriptions, then each step runs as a short function-calling loop that sees the
  results of the earlier steps.

A run ends ``success`` when the model declares it finished (the benchmark's checker decides
whether it really is), ``failed`` when it runs out of steps or its plan is unusable, and
``budget_exhausted`` when a budget stops it; the state keeps every call either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from hyperplan.agents.toolcalling import LoopOutcome, tool_loop
from hyperplan.catalog import ToolSpec
from hyperplan.execute.agent import RunResult, finish_run
from hyperplan.execute.events import RunStarted, StepsPlanned, SubtaskSettled
from hyperplan.execute.state import AgentState, SubtaskStatus
from hyperplan.execute.subtask import RunContext
from hyperplan.llm.budget import BudgetExceeded
from hyperplan.llm.types import LLMError, Message
from hyperplan.plan.prompts import render

STEPS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["steps"],
    "properties": {"steps": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                             "maxItems": 12}},
}


def _tools(ctx: RunContext, names: Sequence[str] | None) -> list[ToolSpec]:
    if names is None:
        return list(ctx.catalog.tools)
    return [ctx.catalog.get(n) for n in names]


def run_react(ctx: RunContext, request: str, *, tools: Sequence[str] | None = None,
              max_steps: int = 15) -> RunResult:
    """ReAct (module doc)."""
    if ctx.llm is None:
        raise LLMError("ReAct needs an LLM")
    ctx.tracer.emit(RunStarted(mode="react", request=request))
    system, user = render("react", request=request)
    out = tool_loop(ctx, [Message.system(system), Message.user(user)], _tools(ctx, tools),
                    AgentState.start(), label="react", component="react", max_steps=max_steps)
    return finish_run(ctx, _outcome_result(out, f"no final answer within {max_steps} steps"))


def _outcome_result(out: LoopOutcome, unfinished: str) -> RunResult:
    if out.stopped:
        return RunResult("budget_exhausted", out.state, None, message=out.stopped)
    if out.error:
        return RunResult("failed", out.state, None, message=out.error)
    if not out.finished:
        return RunResult("failed", out.state, None, message=unfinished)
    return RunResult("success", out.state, None, message=out.answer)


def run_plan_and_execute(ctx: RunContext, request: str, *, max_steps_per_step: int = 6
                         ) -> RunResult:
    """Plan-and-Execute (module doc)."""
    if ctx.llm is None:
        raise LLMError("Plan-and-Execute needs an LLM")
    ctx.tracer.emit(RunStarted(mode="planexec", request=request))
    state = AgentState.start()
    tools = list(ctx.catalog.tools)
    catalog_text = "\n".join(f"- {t.name}: {t.description}" for t in tools)
    try:
        system, user = render("planexec_plan", request=request, tools=catalog_text)
        resp = ctx.llm.complete([Message.system(system), Message.user(user)],
                                schema=STEPS_SCHEMA, component="planner")
        steps = [str(s) for s in resp.parsed["steps"]]
        ctx.tracer.emit(StepsPlanned(steps=steps))
    except BudgetExceeded as exc:
        return finish_run(ctx, RunResult("budget_exhausted", state, None, message=str(exc)))
    except LLMError as exc:
        return finish_run(ctx, RunResult("failed", state, None, message=str(exc)))
    results: list[str] = []
    for i, step in enumerate(steps, 1):
        label = f"step{i}"
        system, user = render("planexec_step", request=request, step=step,
                              previous="\n".join(results) or "none")
        out = tool_loop(ctx, [Message.system(system), Message.user(user)], tools, state,
                        label=label, component="executor", max_steps=max_steps_per_step)
        state = out.state.with_status(label, SubtaskStatus.DONE if out.finished
                                      else SubtaskStatus.FAILED)
        ctx.tracer.emit(SubtaskSettled(id=label, status=state.status[label].value, reason=step))
        if not out.finished:
            result = _outcome_result(out, f"step {i} did not finish: {step}")
            return finish_run(ctx, replace(result, state=state))
        results.append(f"step {i} ({step}): {out.answer}")
    return finish_run(ctx, RunResult("success", state, None, message=results[-1]))
