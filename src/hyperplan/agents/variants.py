"""The ablations of the HyperAgent paper (Ablation Study, RQ3), run under the same harness.

* Variant 1 — no context graph: the planner sees the retrieved tools as plain
  "name: description" lines, without schema nodes and dependency links
  (``run_request(..., plain_context=True)``, re-exported here as :func:`run_variant1`).
* Variant 2 — no support graphs: each subtask of the (graph-planned) Task DAG is carried out by
  a function-calling loop over the top-K tools most similar to the subtask's goal (cosine of
  the tool text and the goal) plus its candidate terminals, instead of DOE's support graph and
  deterministic binding (:func:`run_variant2`).
"""

from __future__ import annotations

from hyperplan.agents.toolcalling import tool_loop
from hyperplan.catalog import ToolSpec
from hyperplan.embed.base import Embedder
from hyperplan.execute.agent import RunResult, finish_run, plan_request, run_request
from hyperplan.execute.events import SubtaskSettled
from hyperplan.execute.state import SubtaskStatus
from hyperplan.execute.subtask import RunContext
from hyperplan.llm.types import Message
from hyperplan.plan.prompts import render
from hyperplan.plan.taskdag import Subtask
from hyperplan.retrieve.baselines import semantic_top_k
from hyperplan.retrieve.context_graph import GraphIndex


def run_variant1(ctx: RunContext, request: str, embedder: Embedder,
                 index: GraphIndex | None = None) -> RunResult:
    """Variant 1 (module doc)."""
    return run_request(ctx, request, embedder, index, plain_context=True)


def semantic_tools(ctx: RunContext, index: GraphIndex, embedder: Embedder, subtask: Subtask,
                   k: int) -> list[ToolSpec]:
    """The subtask's terminals plus the k tools whose text is most similar to its goal
    (:func:`~hyperplan.retrieve.baselines.semantic_top_k` over the graph's tool vectors)."""
    goal_vec = embedder.embed([subtask.goal])[0]
    top = [ctx.graph.tools[i].name for i in semantic_top_k(index, goal_vec, k)]
    names = list(dict.fromkeys([*subtask.terminals, *top]))
    return [ctx.catalog.get(n) for n in names if n in ctx.graph.tool_index]


def run_variant2(ctx: RunContext, request: str, embedder: Embedder,
                 index: GraphIndex | None = None, *, k: int = 5,
                 max_steps: int = 8) -> RunResult:
    """Variant 2 (module doc)."""
    planned = plan_request(ctx, request, embedder, index)
    if isinstance(planned, RunResult):
        return planned
    ctx, dag, state = planned.ctx, planned.dag, planned.state
    index = index if index is not None else GraphIndex(ctx.graph, embedder)
    results: list[str] = []
    for sub in _topological(dag.subtasks):
        system, user = render("planexec_step", request=request, step=sub.goal,
                              previous="\n".join(results) or "none")
        out = tool_loop(ctx, [Message.system(system), Message.user(user)],
                        semantic_tools(ctx, index, embedder, sub, k), state, label=sub.id,
                        component="executor", max_steps=max_steps)
        state = out.state.with_status(sub.id, SubtaskStatus.DONE if out.finished
                                      else SubtaskStatus.FAILED)
        ctx.tracer.emit(SubtaskSettled(id=sub.id, status=state.status[sub.id].value,
                                      reason=out.stopped or out.error or sub.goal))
        if out.stopped:
            return finish_run(ctx, RunResult("budget_exhausted", state, dag, message=out.stopped))
        if not out.finished:
            return finish_run(ctx, RunResult("failed", state, dag,
                                             message=out.error or f"{sub.id} did not finish"))
        results.append(f"{sub.id} ({sub.goal}): {out.answer}")
    return finish_run(ctx, RunResult("success", state, dag, message=results[-1] if results
                                     else ""))


def _topological(subtasks: tuple[Subtask, ...]) -> list[Subtask]:
    done: set[str] = set()
    order: list[Subtask] = []
    remaining = list(subtasks)
    while remaining:
        ready = [s for s in remaining if set(s.depends_on) <= done] or remaining[:1]
        for s in ready:
            order.append(s)
            done.add(s.id)
            remaining.remove(s)
    return order

