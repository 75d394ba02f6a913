"""The HyperAgent loop (the paper's "Task Execution": topological execution, verification,
refinement).

* :func:`run_goal` — LLM-free mode: a structured goal becomes the Task DAG directly; DOE and
  deterministic binding do the rest. With no LLM the run makes zero LLM calls and stops
  *blocked*, listing the candidates, where a choice is ambiguous.
* :func:`run_request` — the full agent: interpretation, Tool Context Graph, LLM Task DAG,
  execution, and DAG refinement after a failed subtask.
* :func:`execute_dag` — the shared loop: pick a ready subtask (all dependencies done), execute
  it (:mod:`hyperplan.execute.subtask`), update R; dependants of failed or blocked subtasks are
  skipped. A budget hit ends the run cleanly with whatever was achieved.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from hyperplan.embed.base import Embedder
from hyperplan.execute.events import (
    ContextGraphShown,
    DagPlanned,
    Interpreted,
    Refined,
    RunEnded,
    RunStarted,
    SubtaskSettled,
)
from hyperplan.execute.fit import MAX_FITS, Render, shrink_to_window
from hyperplan.execute.goal import StructuredGoal, dag_from_goal
from hyperplan.execute.results import ErrorKind
from hyperplan.execute.state import AgentState, SubtaskStatus
from hyperplan.execute.subtask import (
    BlockedChoice,
    RunContext,
    execute_subtask,
    observations,
)
from hyperplan.graph.model import Hypergraph
from hyperplan.graph.text import concise
from hyperplan.llm.budget import BudgetExceeded
from hyperplan.llm.types import ContextLengthError
from hyperplan.plan.planner import Interpretation, interpret, plan_dag, refine_dag
from hyperplan.plan.taskdag import PlanError, TaskDAG, validate_dag
from hyperplan.retrieve.context_graph import (
    ContextGraph,
    ContextGraphConfig,
    GraphIndex,
    extract_context_graph,
)
from hyperplan.retrieve.interpret import interpret_request
from hyperplan.retrieve.serialize import count_tokens, serialize_context_graph
from hyperplan.secrets import SECRETS

_SETTLED = (SubtaskStatus.DONE, SubtaskStatus.FAILED, SubtaskStatus.BLOCKED,
            SubtaskStatus.SKIPPED)


RunStatus = Literal["success", "partial", "blocked", "failed", "budget_exhausted"]
"""How a run ended (:class:`RunResult`); the strings are what JSON output and traces carry."""


@dataclass(frozen=True)
class RunResult:
    """How a run ended: ``success`` (every subtask done), ``partial`` (some done),
    ``blocked`` (a choice the agent may not guess), ``failed`` or ``budget_exhausted``."""

    status: RunStatus
    state: AgentState
    dag: TaskDAG | None
    blocked: tuple[BlockedChoice, ...] = ()
    message: str = ""
    accounting: Mapping[str, Any] = field(default_factory=dict)

    @property
    def tool_calls(self) -> int:
        return self.state.tool_calls

    @property
    def llm_calls(self) -> int:
        return int(self.accounting.get("totals", {}).get("calls", 0))

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "message": self.message,
            "tool_calls": self.tool_calls,
            "llm_calls": self.llm_calls,
            "subtasks": {k: v.value for k, v in self.state.status.items()},
            "blocked": [b.as_dict() for b in self.blocked],
            "accounting": dict(self.accounting),
        }


def run_goal(ctx: RunContext, goal: StructuredGoal) -> RunResult:
    """LLM-free mode (module doc). Unknown terminal tools are a :class:`PlanError`."""
    dag = dag_from_goal(ctx.graph, goal)
    problems = [p for p in validate_dag(dag, ctx.graph) if "not grounded" not in p]
    if problems:
        raise PlanError("the structured goal does not fit the tool graph", problems)
    SECRETS.add_all(str(v) for v in goal.secret_values())  # before anything is written
    ctx.tracer.emit(RunStarted(mode="goal", goal=goal.as_dict()))
    ctx.tracer.emit(DagPlanned(**dag.as_dict()))
    return finish_run(ctx, execute_dag(ctx, dag, AgentState.start(goal.values), refine=False))


@dataclass(frozen=True)
class PlannedRequest:
    """A request after interpretation, context retrieval and Task DAG planning."""

    ctx: RunContext
    dag: TaskDAG
    state: AgentState


def plan_request(ctx: RunContext, request: str, embedder: Embedder,
                 index: GraphIndex | None = None, *,
                 plain_context: bool = False) -> PlannedRequest | RunResult:
    """Interpretation, Tool Context Graph and a validated Task DAG; a finished
    :class:`RunResult` when planning fails or a budget runs out. ``plain_context`` gives the
    planner the retrieved tools as plain "name: description" lines without schema nodes and
    links (the paper's Variant 1)."""
    llm = ctx.llm
    if llm is None:
        raise PlanError("planning a request needs an LLM; use run_goal for LLM-free runs")
    ctx = replace(ctx, request=request,
                  embedder=embedder if ctx.embedder is None else ctx.embedder,
                  index=index if ctx.index is None else ctx.index)
    ctx.tracer.emit(RunStarted(mode="request", request=request, plain_context=plain_context))
    state = AgentState.start()
    try:
        interp = interpret(llm, request, namespaces(ctx.graph))
        ctx.tracer.emit(Interpreted(source=interp.source,
                                       operations=list(interp.task.operations),
                                       schemas=list(interp.task.schemas),
                                       values=dict(interp.values)))
        interp, cg = _context_graph(ctx, interp, embedder, index)
        cg, text, dag = _plan_in_window(ctx, request, cg, plain_context)
    except BudgetExceeded as exc:
        return finish_run(ctx, RunResult("budget_exhausted", state, None, message=str(exc)))
    except PlanError as exc:
        return finish_run(ctx, RunResult("failed", state, None, message=str(exc)))
    ctx.tracer.emit(DagPlanned(**dag.as_dict()))
    ctx = replace(ctx, context_graph=cg.subgraph, context_text=text)
    return PlannedRequest(ctx, dag, AgentState.start(interp.values))


def _context_graph(ctx: RunContext, interp: Interpretation, embedder: Embedder,
                   index: GraphIndex | None) -> tuple[Interpretation, ContextGraph]:
    """The Tool Context Graph of the interpretation; when the model's interpretation anchors
    no tool at all, the deterministic rules read the request instead (traced), as they do
    when its answer is unusable."""
    config = ContextGraphConfig(budget=ctx.config.context_budget)
    cg = extract_context_graph(ctx.graph, interp.task, embedder=embedder, index=index,
                               config=config)
    if cg.tools or interp.source != "llm":
        return interp, cg
    interp = replace(interp, task=interpret_request(ctx.request, namespaces(ctx.graph)),
                     source="rules")
    ctx.tracer.emit(Interpreted(source="rules",
                                   reason="the model's interpretation anchors no tool",
                                   operations=list(interp.task.operations),
                                   schemas=list(interp.task.schemas),
                                   values=dict(interp.values)))
    return interp, extract_context_graph(ctx.graph, interp.task, embedder=embedder, index=index,
                                         config=config)


def _plan_in_window(ctx: RunContext, request: str, cg: ContextGraph,
                    plain_context: bool) -> tuple[ContextGraph, str, TaskDAG]:
    """The Task DAG over ``cg``, cut to its best-ranked tools when the model's context window
    cannot hold the planner prompt (:mod:`hyperplan.execute.fit`); each graph the planner is
    shown is traced. A window too small even for one tool is a :class:`PlanError`."""
    assert ctx.llm is not None
    render: Render = ((lambda c: plain_tools(c.subgraph)) if plain_context
                      else serialize_context_graph)
    history: list[tuple[int, int]] = []
    fitted: dict[str, Any] = {}
    for cuts in range(MAX_FITS + 1):
        text = render(cg)
        ctx.tracer.emit(ContextGraphShown(
            tools=cg.tool_names, tokens=count_tokens(text),
            links=[] if plain_context else tool_links(cg.subgraph), text=text, fitted=fitted))
        try:
            return cg, text, plan_dag(ctx.llm, request, cg.subgraph, text)
        except ContextLengthError as exc:
            smaller = (shrink_to_window(cg, render, exc, history, ctx.config.plan_room)
                       if cuts < MAX_FITS else None)
            if smaller is None:
                raise PlanError(f"the planner prompt does not fit the model's context window "
                                f"with the {len(cg.tools)} best tools: {exc}") from None
            fitted = {"fitted_to_window": exc.limit, "tools_before": len(cg.tools)}
            cg = smaller
    raise AssertionError("unreachable: the last cut either plans or raises")


def run_request(ctx: RunContext, request: str, embedder: Embedder,
                index: GraphIndex | None = None, *, plain_context: bool = False) -> RunResult:
    """The full agent on a natural-language ``request`` (needs ``ctx.llm``)."""
    planned = plan_request(ctx, request, embedder, index, plain_context=plain_context)
    if isinstance(planned, RunResult):
        return planned
    return finish_run(planned.ctx, execute_dag(planned.ctx, planned.dag, planned.state,
                                               refine=True))


def plain_tools(graph: Hypergraph) -> str:
    """Tools as "name: description" lines, no schema nodes or links (Variant 1)."""
    return "\n".join(f"- {t.name}: {concise(t.description)}" for t in
                     sorted(graph.tools, key=lambda t: t.name)) + "\n"


def tool_links(graph: Hypergraph) -> list[list[str]]:
    """Tool-level edges (producer, consumer) of a (context) graph, for traces and reports."""
    owner = graph.node_tool
    pairs = {(graph.tools[int(owner[s])].name, graph.tools[int(owner[t])].name)
             for s, t in zip(graph.link_source.tolist(), graph.link_target.tolist(),
                             strict=True)}
    return [list(p) for p in sorted(pairs) if p[0] != p[1]]


def namespaces(graph: Hypergraph) -> list[str]:
    """The app namespaces of a graph's tools (prefix before the first dot or ``app``)."""
    found = {str(t.metadata.get("app") or t.name.split(".", 1)[0])
             for t in graph.tools if "." in t.name or t.metadata.get("app")}
    return sorted(found)


def execute_dag(ctx: RunContext, dag: TaskDAG, state: AgentState, *,
                refine: bool) -> RunResult:
    """The loop of the module doc."""
    blocked: list[BlockedChoice] = []
    reasons: list[str] = []
    refinements = 0
    try:
        while True:
            state = _skip_dependants(dag, state, ctx)
            done = [k for k, v in state.status.items() if v is SubtaskStatus.DONE]
            settled = [k for k, v in state.status.items() if v in _SETTLED]
            ready = dag.ready(done, settled)
            if not ready:
                break
            sub = ready[0]
            state = state.with_status(sub.id, SubtaskStatus.RUNNING)
            state, attempt = execute_subtask(ctx, sub, state)
            if attempt.stopped:
                return RunResult("budget_exhausted", state, dag, tuple(blocked), attempt.stopped)
            if not attempt.ok:
                reasons.append(f"{sub.id}: {attempt.reason}")
            if attempt.ok:
                state = _settle(ctx, state, sub.id, SubtaskStatus.DONE, attempt.reason)
            elif attempt.blocked:
                blocked += attempt.blocked
                state = _settle(ctx, state, sub.id, SubtaskStatus.BLOCKED, attempt.reason)
            elif (refine and ctx.llm is not None and refinements < ctx.config.max_refinements
                  and attempt.error_kind is not ErrorKind.OUTCOME_UNKNOWN):  # never re-plan it
                refinements += 1
                new = _refine(ctx, dag, state, observations(state, attempt, sub))
                if new is None:
                    state = _settle(ctx, state, sub.id, SubtaskStatus.FAILED, attempt.reason)
                else:
                    dag, state = new, _reset_status(new, state)
            else:
                state = _settle(ctx, state, sub.id, SubtaskStatus.FAILED, attempt.reason)
    except BudgetExceeded as exc:
        return RunResult("budget_exhausted", state, dag, tuple(blocked), str(exc))
    status = _overall(dag, state)
    return RunResult(status, state, dag, tuple(blocked),
                     "" if status == "success" else "; ".join(reasons[-3:]))


def _refine(ctx: RunContext, dag: TaskDAG, state: AgentState,
            notes: list[str]) -> TaskDAG | None:
    assert ctx.llm is not None
    status = {k: v.value for k, v in state.status.items()}
    try:
        new = refine_dag(ctx.llm, ctx.request, dag, status, notes,
                         ctx.context_graph or ctx.graph, ctx.context_text)
    except (PlanError, ContextLengthError) as exc:
        ctx.tracer.emit(Refined(scope="dag", ok=False, reason=str(exc)))
        return None
    ctx.tracer.emit(Refined(scope="dag", ok=True, observations=notes))
    ctx.tracer.emit(DagPlanned(**new.as_dict()))
    return new


def _reset_status(dag: TaskDAG, state: AgentState) -> AgentState:
    """Keep the status of done subtasks; everything in the new plan starts pending."""
    kept = {k: v for k, v in state.status.items()
            if v is SubtaskStatus.DONE and k in dag.ids}
    return replace(state, status=kept)


def _settle(ctx: RunContext, state: AgentState, sid: str, status: SubtaskStatus,
            reason: str) -> AgentState:
    ctx.tracer.emit(SubtaskSettled(id=sid, status=status.value, reason=reason))
    return state.with_status(sid, status)


def _skip_dependants(dag: TaskDAG, state: AgentState, ctx: RunContext) -> AgentState:
    bad = (SubtaskStatus.FAILED, SubtaskStatus.BLOCKED, SubtaskStatus.SKIPPED)
    changed = True
    while changed:
        changed = False
        for s in dag.subtasks:
            if s.id in state.status:
                continue
            if any(state.status.get(d) in bad for d in s.depends_on):
                state = _settle(ctx, state, s.id, SubtaskStatus.SKIPPED, "a dependency failed")
                changed = True
    return state


def _overall(dag: TaskDAG, state: AgentState) -> RunStatus:
    statuses = [state.status.get(s.id) for s in dag.subtasks]
    if all(s is SubtaskStatus.DONE for s in statuses):
        return "success"
    if any(s is SubtaskStatus.BLOCKED for s in statuses):
        return "blocked"
    if any(s is SubtaskStatus.DONE for s in statuses):
        return "partial"
    return "failed"


def finish_run(ctx: RunContext, result: RunResult) -> RunResult:
    """Attach the accounting snapshot and write ``run_end`` to the trace."""
    result = replace(result, accounting=ctx.accounting.snapshot())
    ctx.tracer.emit(RunEnded(status=result.status, message=result.message,
                           tool_calls=result.tool_calls, llm_calls=result.llm_calls,
                           stopped=result.accounting.get("stopped")))
    return result
