"""One planning policy (plan/support.py): its named steps on the worlds of plan/stated.py's
doc, the same function behind the executor, the selector and the chains benchmark, and the
request relevance the agent computes itself."""

from __future__ import annotations

import numpy as np

from hyperplan.catalog import build_catalog, make_tool
from hyperplan.embed import get_embedder
from hyperplan.execute.results import ToolResult
from hyperplan.execute.subtask import AgentConfig, RunContext
from hyperplan.execute.trace import TraceWriter
from hyperplan.graph.build import structure_from_catalog
from hyperplan.graph.model import Hypergraph, Link
from hyperplan.llm.budget import Accounting
from hyperplan.plan.doe import DOEConfig
from hyperplan.plan.grounding import ground
from hyperplan.plan.relevance import request_relevance
from hyperplan.plan.support import (
    AGENT,
    CHAINS,
    PAPER,
    SELECTOR,
    Goals,
    Policy,
    plan_support,
)
from hyperplan.retrieve.context_graph import GraphIndex
from hyperplan.select.rank import plan_chains


def _tool(name: str, required: list[str], out: str, optional: tuple[str, ...] = ()) -> object:
    props = {k: {"type": "string"} for k in (*required, *optional)}
    return make_tool(name=name, description=f"{name} things",
                     input_schema={"type": "object", "properties": props, "required": required},
                     output_schema={"type": "object", "properties": {out: {"type": "string"}}})


def _tax_graph() -> Hypergraph:
    """tax(amount, tax_rate) -> tax_amount; convert(amount, from, to) -> converted; tax's
    output links to convert's amount ("the tax on $500 at 7%, in euros")."""
    tools = [_tool("tax", ["amount", "tax_rate"], "tax_amount"),
             _tool("convert", ["amount", "from", "to"], "converted")]
    graph = Hypergraph.from_parts(*structure_from_catalog(build_catalog(tools)), [])
    idx = graph.node_index
    return graph.with_links([Link(idx["tax:out:tax_amount"], idx["convert:in:amount"], 0.9)])


def _sound_graph() -> Hypergraph:
    """record -> (process ->) sculpture; process takes the optional effects and volume."""
    tools = [_tool("record", ["location", "duration"], "clip"),
             _tool("process", ["sound_clip"], "processed", ("effects", "volume")),
             _tool("sculpture", ["name", "clip"], "done")]
    graph = Hypergraph.from_parts(*structure_from_catalog(build_catalog(tools)), [])
    idx = graph.node_index
    links = [("record:out:clip", "process:in:sound_clip"), ("record:out:clip", "sculpture:in:clip"),
             ("process:out:processed", "sculpture:in:clip")]
    return graph.with_links(Link(idx[a], idx[b], 0.9) for a, b in links)


def _names(graph: Hypergraph, tools: tuple[int, ...]) -> set[str]:
    return {graph.tools[t].name for t in tools}


def test_policies_name_their_steps() -> None:
    assert PAPER.steps() == ()
    assert SELECTOR.steps() == ("relevance_in_doe",)
    assert AGENT.steps() == ("open_world", "release_contested", "favour_claimants",
                             "offer_claimants", "reading_claimants_only")
    # the benchmark runs the agent's policy plus three steps, without the write guard
    assert set(CHAINS.steps()) - set(AGENT.steps()) == {"relevance_in_doe", "independent_goals",
                                                       "attach_claimants"}
    assert set(AGENT.steps()) - set(CHAINS.steps()) == {"reading_claimants_only"}


def test_release_contested_is_a_step_the_policy_switches() -> None:
    graph = _tax_graph()
    known = {"amount", "tax_rate", "from", "to"}
    state = ground(graph, known)
    paper = plan_support(graph, ["convert"], state, None, PAPER, stated=known)
    assert _names(graph, paper.tools) == {"convert"} and paper.via == ()
    agent = plan_support(graph, ["convert"], state, None, AGENT, stated=known)
    assert _names(graph, agent.tools) == {"tax", "convert"}
    assert agent.via == ("release_contested",) and agent.chosen is not None


def test_favouring_needs_a_relevance_and_spares_writers() -> None:
    graph = _sound_graph()
    known = {"location", "duration", "effects", "volume", "name"}
    state = ground(graph, known)
    relevance = np.array([0.3, 0.2, 0.4])
    cfg = DOEConfig(relevance_weight=1.0, size_cost=2.0)
    plain = plan_support(graph, ["sculpture"], state, None, AGENT, config=cfg, stated=known)
    assert _names(graph, plain.tools) == {"record", "sculpture"}
    favoured = plan_support(graph, ["sculpture"], state, relevance, AGENT, config=cfg,
                            stated=known)
    assert _names(graph, favoured.tools) == {"record", "process", "sculpture"}
    assert favoured.via == ("favour_claimants",)
    # the same steps under Goals.ALL (the benchmark's shape) give the same plan
    every = plan_support(graph, ["sculpture"], state, relevance, AGENT, config=cfg,
                         goals=Goals.ALL, stated=known)
    assert every.tools == favoured.tools and every.ok


def test_unsatisfiable_goal_any_and_all() -> None:
    graph = _tax_graph()
    empty = ground(graph, ())
    plan = plan_support(graph, ["convert"], empty, None, AGENT)
    assert plan.chosen is None and not plan.ok and plan.tools == ()
    assert plan.reason(graph).startswith("unsatisfiable: ")
    whole = plan_support(graph, ["convert"], empty, None, AGENT, goals=Goals.ALL)
    assert not whole.ok and _names(graph, whole.tools) == {"convert"}  # stands for itself


def test_selector_plans_with_the_shared_function() -> None:
    graph = _sound_graph()
    state = ground(graph, {"location", "duration", "name"})
    relevance = np.array([0.3, 0.2, 0.4])
    terminal = graph.tool_index["sculpture"]
    chains = plan_chains(graph, [terminal], state, relevance, DOEConfig())
    plan = plan_support(graph, [terminal], state, relevance, SELECTOR, goals=Goals.ALL)
    assert chains.best() == plan.best(terminal) and chains.best() is not None
    assert _names(graph, chains.best().tools) == {"record", "sculpture"}


def test_timings_receive_every_doe_run() -> None:
    graph = _tax_graph()
    known = {"amount", "tax_rate", "from", "to"}
    timings: list[float] = []
    plan_support(graph, ["convert", "tax"], ground(graph, known), None,
                 Policy(release_contested=True), goals=Goals.ALL, stated=known,
                 timings=timings)
    assert len(timings) >= 2 and all(t >= 0 for t in timings)


def test_relevance_is_computed_from_the_request() -> None:
    graph = _sound_graph()
    embedder = get_embedder("hashing")
    scores = request_relevance(graph, "record a clip at the beach", embedder)
    assert scores is not None and scores.shape == (3,)
    assert request_relevance(graph, "  ", embedder) is None
    index = GraphIndex(graph, embedder)
    from_index = request_relevance(graph, "record a clip at the beach", embedder,
                                   index.tool_vecs)
    assert from_index is not None and np.allclose(scores, from_index, atol=1e-6)
    # the executor computes it itself from the request (no caller injects it)
    ctx = RunContext(graph=graph, catalog=build_catalog([]), runtime=_NoRuntime(),
                     accounting=Accounting(), tracer=TraceWriter(), config=AgentConfig(),
                     request="record a clip at the beach", embedder=embedder, index=index)
    assert ctx.tool_relevance is not None
    assert np.allclose([ctx.tool_relevance[t.name] for t in graph.tools], scores, atol=1e-6)
    no_text = RunContext(graph=graph, catalog=build_catalog([]), runtime=_NoRuntime(),
                         accounting=Accounting(), tracer=TraceWriter(), embedder=embedder)
    assert no_text.tool_relevance is None
    given = RunContext(graph=graph, catalog=build_catalog([]), runtime=_NoRuntime(),
                       accounting=Accounting(), tracer=TraceWriter(), relevance={"record": 1.0})
    assert given.tool_relevance == {"record": 1.0}


class _NoRuntime:
    def call(self, tool: object, arguments: object, timeout: float | None = None) -> ToolResult:
        raise AssertionError("no tool is called here")

    def close(self) -> None:
        pass


def test_the_agent_computes_the_relevance_from_the_request() -> None:
    """The till of test_agent_stated.py: the stated 10 percent brings in apply_discount only
    given a relevance; here it comes from the request and the embedder, not from a caller."""
    from dataclasses import replace

    from hyperplan.execute.agent import run_goal
    from hyperplan.execute.goal import StructuredGoal
    from test_agent_stated import Till, _context

    goal = StructuredGoal.from_dict({"terminals": ["till.pay"],
                                     "values": {"item": "lamp", "percent": 10, "card": "visa"}})
    for request, calls in (("", ["quote", "pay 100.0"]),
                           ("quote a lamp, apply a 10 percent discount and pay by card",
                            ["quote", "apply_discount", "pay 90.0"])):
        till = Till()
        ctx = replace(_context(till.tools()), request=request, embedder=get_embedder("hashing"))
        assert run_goal(ctx, goal).status == "success"
        assert till.calls == calls
