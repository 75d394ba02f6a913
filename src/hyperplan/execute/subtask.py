"""Executing one subtask (HyperAgent, "Task Execution" and "Tool-Level Planning"):

1. Tool-level planning over the current state (:func:`hyperplan.plan.support.plan_support`
   with the agent's policy, :data:`hyperplan.plan.support.AGENT`; the selector and the chains
   benchmark run the same function): the grounding comes from the state's known values, bound
   output nodes and achieved effects; DOE runs for each candidate terminal and Support Graph
   Selection picks among them. With the tools' relevance to the request
   (:attr:`RunContext.tool_relevance`: computed from ``request`` with ``embedder``, or given),
   an unsatisfiable goal is planned again with open-world producers, and a plan that leaves
   a stated value unused is repaired (the policy's stated-value steps).
2. Realisation: the support graph's tools run in order, arguments bound deterministically
   (:mod:`hyperplan.execute.binding`); what remains open goes to one LLM call per tool, or,
   without an LLM, the subtask stops *blocked* with the candidates listed.
3. Verification against the subtask's contract: the terminal call succeeded and its targets
   (output nodes or effects) are materialised; with no targets, a terminal that has outputs
   must have produced at least one value.
4. Local refinement, bounded: after a tool error the failing tool is excluded and DOE runs
   again (timeouts and transport errors are retried as they are).

Calls are never repeated where repeating could do something twice: a call
whose outcome is unknown (``OUTCOME_UNKNOWN``: it was sent and did not finish, and the tool is
not safe to repeat, :mod:`hyperplan.execute.repeat`) ends the subtask with no retry and no
re-planning; a write that already succeeded in this subtask with the same arguments is not sent
again when a retry's support graph contains it (its earlier result is used). Every call gets
``min(tool_timeout, time left in the run)`` as its deadline (item 3), so ``--max-seconds`` is a
wall-clock deadline for the whole run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from hyperplan.catalog import Catalog
from hyperplan.execute.binding import Candidate, bind_arguments
from hyperplan.execute.choose import choose_arguments
from hyperplan.execute.events import Blocked, Refined, SupportGraphChosen, ToolCalled
from hyperplan.execute.results import ErrorKind, ToolResult, ToolRuntime
from hyperplan.execute.state import AgentState
from hyperplan.execute.trace import TraceWriter
from hyperplan.graph.effects import write_tools
from hyperplan.graph.model import Hypergraph, NodeKind
from hyperplan.llm.budget import Accounting, BudgetExceeded
from hyperplan.llm.types import LLM, LLMError
from hyperplan.plan.doe import DOEConfig, SupportGraph
from hyperplan.plan.grounding import ground
from hyperplan.plan.relevance import request_relevance
from hyperplan.plan.support import AGENT, Goals, Policy, plan_support
from hyperplan.plan.taskdag import Subtask

if TYPE_CHECKING:
    from hyperplan.embed.base import Embedder
    from hyperplan.retrieve.context_graph import GraphIndex


@dataclass(frozen=True)
class AgentConfig:
    """Parameters of the runtime (HyperAgent, "Task Execution").

    doe: Deficit-Oriented Expansion's parameters.
    min_weight: minimum link weight used for grounding and binding.
    max_retries: local retries per subtask.
    max_refinements: Task DAG refinements (LLM mode).
    tool_timeout: seconds per tool call.
    context_budget: tools in the Tool Context Graph (LLM mode).
    plan_room: model tokens the planner prompt leaves for the plan when the context graph is
        cut to the model's window (:mod:`hyperplan.execute.fit`).
    policy: which steps of tool-level planning run (:class:`hyperplan.plan.support.Policy`).
    """

    doe: DOEConfig = field(default_factory=DOEConfig)
    min_weight: float = 0.5
    max_retries: int = 2
    max_refinements: int = 2
    tool_timeout: float = 30.0
    context_budget: int = 20
    plan_room: int = 512
    policy: Policy = AGENT


@dataclass(frozen=True)
class RunContext:
    """What a run works with (passed around, never mutated)."""

    graph: Hypergraph
    catalog: Catalog
    runtime: ToolRuntime
    accounting: Accounting
    tracer: TraceWriter
    config: AgentConfig = field(default_factory=AgentConfig)
    llm: LLM | None = None
    request: str = ""
    context_graph: Hypergraph | None = None
    context_text: str = ""
    # the tools' relevance to the request comes from ``request`` and ``embedder`` (``index``:
    # the tools' embeddings when at hand); ``relevance`` (per tool name) overrides it
    embedder: Embedder | None = None
    index: GraphIndex | None = None
    relevance: Mapping[str, float] | None = None

    @cached_property
    def tool_relevance(self) -> Mapping[str, float] | None:
        """Per tool name, its relevance to the request (:func:`hyperplan.plan.relevance.
        request_relevance`): ``relevance`` when given, else computed once from ``request``
        with ``embedder``; None without either (the planning steps that need it do not
        run)."""
        if self.relevance is not None:
            return self.relevance
        if self.embedder is None:
            return None
        vectors = self.index.tool_vecs if self.index is not None and self.index.graph is \
            self.graph else None
        scores = request_relevance(self.graph, self.request, self.embedder, vectors)
        if scores is None:
            return None
        return {t.name: float(x) for t, x in zip(self.graph.tools, scores, strict=True)}


@dataclass(frozen=True)
class BlockedChoice:
    """A parameter the agent may not guess: several candidates, or no value at all."""

    subtask: str
    tool: str
    parameter: str
    candidates: tuple[Candidate, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"subtask": self.subtask, "tool": self.tool, "parameter": self.parameter,
                "candidates": [c.as_dict() for c in self.candidates]}


@dataclass(frozen=True)
class Attempt:
    """Outcome of executing a subtask."""

    ok: bool
    reason: str = ""
    failed_tool: str | None = None
    error_kind: ErrorKind | None = None
    blocked: tuple[BlockedChoice, ...] = ()
    support: tuple[str, ...] = ()
    stopped: str = ""  # a budget ran out: the run must end with the state as it is


def known_values(state: AgentState, subtask: Subtask) -> dict[str, Any]:
    return {**state.known, **subtask.values}


def execute_subtask(ctx: RunContext, subtask: Subtask,
                    state: AgentState) -> tuple[AgentState, Attempt]:
    """Steps 1–4 of the module doc for ``subtask``."""
    excluded: set[str] = set()
    attempt = Attempt(False, "not attempted")
    for round_ in range(1 + ctx.config.max_retries):
        graph = _without(ctx.graph, excluded)
        chosen, reason = _select(ctx, graph, subtask, state)
        if chosen is None:
            ctx.tracer.emit(SupportGraphChosen(subtask=subtask.id, attempt=round_, ok=False,
                                               reason=reason))
            return state, Attempt(False, reason)
        _trace_support(ctx, graph, subtask, chosen, round_, via=reason)
        start = len(state.history)
        state, attempt = realize(ctx, graph, subtask, chosen, state)
        if attempt.stopped:
            return state, attempt
        if attempt.ok:
            verdict = verify(graph, subtask, chosen, state, start)
            if not verdict:
                return state, attempt
            attempt = Attempt(False, verdict, graph.tools[chosen.terminal].name,
                              support=attempt.support)
        if attempt.blocked or attempt.error_kind is ErrorKind.OUTCOME_UNKNOWN:
            return state, attempt
        if attempt.failed_tool and attempt.error_kind not in (ErrorKind.TIMEOUT,
                                                                ErrorKind.TRANSPORT):
            excluded.add(attempt.failed_tool)
        ctx.tracer.emit(Refined(scope="subtask", subtask=subtask.id, reason=attempt.reason,
                                excluded=sorted(excluded)))
    return state, attempt


def _without(graph: Hypergraph, excluded: set[str]) -> Hypergraph:
    if not excluded:
        return graph
    return graph.induce(t.id for t in graph.tools if t.name not in excluded)


def _select(ctx: RunContext, graph: Hypergraph, subtask: Subtask,
            state: AgentState) -> tuple[SupportGraph | None, str]:
    """The support graph for ``subtask`` (step 1 of the module doc) and how it was found
    ("links", "open-world producers", either with "; stated values re-planned"), or None and
    why not."""
    terminals = [t for t in subtask.terminals if t in graph.tool_index]
    if not terminals:
        return None, f"no candidate terminal tool left for subtask {subtask.id!r}"
    known = known_values(state, subtask)
    values = list(known) + sorted(state.scoped(known).bound_nodes())
    grounding = ground(graph, values, state.effects, min_weight=ctx.config.min_weight)
    stated = {name for name in known if ":" not in name}  # bare names, not node keys
    plan = plan_support(graph, terminals, grounding, _relevance(ctx, graph), ctx.config.policy,
                        config=ctx.config.doe, goals=Goals.ANY, stated=stated)
    if plan.chosen is None:
        return None, plan.reason(graph)
    via = "open-world producers" if "open_world_producers" in plan.via else "links"
    repaired = any(step != "open_world_producers" for step in plan.via)
    return plan.chosen, f"{via}; stated values re-planned" if repaired else via


def _trace_support(ctx: RunContext, graph: Hypergraph, subtask: Subtask, sg: SupportGraph,
                   round_: int, via: str) -> None:
    ctx.tracer.emit(SupportGraphChosen(
        subtask=subtask.id, attempt=round_, ok=True, via=via,
        terminal=graph.tools[sg.terminal].name,
        tools=[graph.tools[t].name for t in sg.tools],
        resolutions=[{"deficit": graph.node_name(r.deficit), "source": graph.node_name(r.source),
                      "weight": round(r.weight, 4)} for r in sg.resolutions],
    ))


def realize(ctx: RunContext, graph: Hypergraph, subtask: Subtask, sg: SupportGraph,
            state: AgentState) -> tuple[AgentState, Attempt]:
    """Run the tools of ``sg`` in order with bound arguments (step 2 of the module doc)."""
    resolved_by = {graph.node_name(r.deficit): graph.node_name(r.source)
                   for r in sg.resolutions}
    values = known_values(state, subtask)
    names = tuple(graph.tools[t].name for t in sg.tools)
    for name in names:
        try:
            state, failure = _run_one(ctx, graph, subtask, name, resolved_by, values, state)
        except BudgetExceeded as exc:
            return state, Attempt(False, str(exc), name, support=names, stopped=str(exc))
        if failure is not None:
            return state, replace(failure, support=names)
    return state, Attempt(True, support=names)


def _run_one(ctx: RunContext, graph: Hypergraph, subtask: Subtask, name: str,
             resolved_by: dict[str, str], values: dict[str, Any],
             state: AgentState) -> tuple[AgentState, Attempt | None]:
    """Bind, (choose,) charge the budget and call one tool; the failure, if any."""
    plan = bind_arguments(graph, name, state.scoped(values), values, resolved_by=resolved_by,
                          min_weight=ctx.config.min_weight)
    arguments = dict(plan.bound)
    if not plan.complete:
        blocked = tuple(
            [BlockedChoice(subtask.id, name, p, c) for p, c in plan.ambiguous.items()]
            + [BlockedChoice(subtask.id, name, p) for p in plan.missing])
        if ctx.llm is None:
            ctx.tracer.emit(Blocked(subtask=subtask.id, tool=name,
                                    choices=[b.as_dict() for b in blocked]))
            needs = ", ".join(b.parameter for b in blocked)
            return state, Attempt(False, f"{name}: needs a choice for {needs}", name,
                                  blocked=blocked)
        try:
            arguments.update(choose_arguments(ctx.llm, ctx.request, subtask.goal,
                                              ctx.catalog.get(name), plan))
        except LLMError as exc:
            return state, Attempt(False, f"{name}: argument choice failed: {exc}", name,
                                  ErrorKind.INVALID_ARGUMENTS)
    earlier = _earlier_call(graph, state, subtask.id, name, arguments)
    if earlier is not None and earlier.ok:  # a write that succeeded: never sent twice
        ctx.tracer.emit(ToolCalled.of(subtask.id, earlier.as_dict(),
                                      sources=dict(plan.sources), reused=True))
        return state.after_call(graph, subtask.id, earlier), None
    if earlier is not None:  # its outcome is unknown: sending it again could do it twice
        return state, Attempt(False, f"{name}: an earlier identical call's outcome is unknown; "
                              "not re-sent", name, ErrorKind.OUTCOME_UNKNOWN)
    ctx.accounting.charge_tool_call("executor")
    timeout = ctx.accounting.deadline(ctx.config.tool_timeout)
    result = ctx.runtime.call(ctx.catalog.get(name), arguments, timeout=timeout)
    state = state.after_call(graph, subtask.id, result)
    printed = {k: result.metadata[k] for k in ("stdout", "stderr", "truncated")
               if k in result.metadata}  # what the tool printed, kept out of the output
    ctx.tracer.emit(ToolCalled.of(subtask.id, result.as_dict(), sources=dict(plan.sources),
                                  printed=printed))
    if not result.ok:
        return state, Attempt(False, f"{name}: {result.error}", name, result.error_kind)
    return state, None


def _earlier_call(graph: Hypergraph, state: AgentState, subtask: str, name: str,
                  arguments: Mapping[str, Any]) -> ToolResult | None:
    """The result of an earlier identical call (``name``, ``arguments``) in ``subtask`` that
    must not be sent again (module doc): one whose outcome is unknown, or one of a write tool
    that succeeded; else None."""
    tool = graph.tool_index.get(name)
    writes = tool is not None and bool(write_tools(graph)[tool])
    for rec in reversed(state.history):
        r = rec.result
        if rec.subtask != subtask or r.tool != name or dict(r.arguments) != arguments:
            continue
        if r.error_kind is ErrorKind.OUTCOME_UNKNOWN or (r.ok and writes):
            return r
    return None


def verify(graph: Hypergraph, subtask: Subtask, sg: SupportGraph, state: AgentState,
           start: int) -> str:
    """Step 3 of the module doc: ``""`` when the contract holds, else why not."""
    terminal = graph.tools[sg.terminal]
    calls = [r for r in state.history[start:] if r.result.tool == terminal.name and r.result.ok]
    if not calls:
        return f"terminal {terminal.name} did not succeed"
    bound = {b.node for b in state.bindings if b.call == calls[-1].index}
    since = {b.node for b in state.bindings if b.call >= start}
    for target in subtask.targets:
        if target not in state.effects and target not in since:
            return f"target {target} not materialised by {terminal.name}"
    data_outputs = [n for n in terminal.outputs if graph.nodes[n].kind is NodeKind.OUTPUT]
    if not subtask.targets and data_outputs and not bound:
        return f"{terminal.name} returned no values"
    return ""


def observations(state: AgentState, attempt: Attempt, subtask: Subtask) -> list[str]:
    """Readable observations for the refiner: the failure and what the state now holds."""
    out = [f"subtask {subtask.id} failed: {attempt.reason}"]
    for rec in state.history[-5:]:
        r = rec.result
        out.append(f"call {r.tool}: " + ("ok" if r.ok else f"error ({r.error_kind}): {r.error}"))
    out.append("values available: " + ", ".join(sorted(state.bound_nodes())[:30]))
    return out


def _relevance(ctx: RunContext, graph: Hypergraph) -> np.ndarray | None:
    """:attr:`RunContext.tool_relevance` as an array over ``graph``'s tools (0 for a tool it
    does not name); None without one."""
    scores = ctx.tool_relevance
    if scores is None:
        return None
    return np.array([scores.get(t.name, 0.0) for t in graph.tools])
