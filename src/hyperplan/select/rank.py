"""One selection: the state-conditioned Tool Context Graph, the chains DOE proposes for its
anchored tools, and the two merged into one ranked list (HyperAgent: "Context Graph
Extraction", Eq. 1-2 and Definition 2; "Deficit-Oriented Expansion", Definitions 4-6).

The context graph ranks the tools a request anchors and their one-hop producers. DOE then
takes each of the best ``terminals`` anchored tools as a terminal and finds the smallest
support graph whose outputs, together with what the state holds, supply every required input
(multi-hop, cycle-free). The merged ranking walks the context graph in priority order; the
chains' producers go where :class:`ChainPlacement` says: in the places the context graph
leaves (default), or before each anchored tool that has a chain, in execution order, so that
cutting the list at any budget keeps whole chains for the best-ranked anchors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from hyperplan.graph.model import Hypergraph
from hyperplan.plan.doe import DOEConfig, SupportGraph
from hyperplan.plan.grounding import Grounding
from hyperplan.plan.support import SELECTOR, Goals, Policy, plan_support
from hyperplan.retrieve.context_graph import ContextGraph, GraphIndex, RetrievedTool, Why
from hyperplan.select.model import ChainStep, Reason

ANCHOR_REASONS = frozenset({Why.SEED, Why.CONSUMER_OF, Why.PRODUCER_OF})


@dataclass(frozen=True)
class Ranked:
    """A tool of the merged ranking (ids, before names and token costs are attached)."""

    tool: int
    reason: Reason
    score: float
    for_tool: int = -1
    for_input: int = -1


@dataclass(frozen=True)
class Chains:
    """Per anchored tool DOE planned, its support graph (None: unsatisfiable); ``first``: the
    best-ranked of them, and ``deficits``: what DOE could not resolve for it."""

    graphs: dict[int, SupportGraph | None]
    first: int = -1
    deficits: tuple[int, ...] = ()

    def best(self) -> SupportGraph | None:
        return self.graphs.get(self.first)


def anchored(cg: ContextGraph, limit: int) -> list[int]:
    """The ``limit`` best-ranked tools of ``cg`` that the request itself anchors."""
    return [t.tool for t in cg.tools if t.reason in ANCHOR_REASONS][:limit]


def plan_chains(graph: Hypergraph, terminals: Sequence[int], grounding: Grounding,
                relevance: np.ndarray, config: DOEConfig,
                asked: Sequence[int] | None = None, policy: Policy = SELECTOR) -> Chains:
    """Tool-level planning for each terminal (:func:`~hyperplan.plan.support.plan_support`,
    the planner the agent runs; the selector's policy: DOE and Support Graph Selection read
    the request relevance). ``asked``: the tools the request asks for
    (:attr:`ContextGraph.asked` and the terminals); when given, a write tool outside them is
    never a producer (:attr:`Hypergraph.unprompted_writers`)."""
    plan = plan_support(graph, terminals, grounding, relevance, policy, config=config,
                        goals=Goals.ALL, asked=asked)
    graphs = {t: plan.best(t) for t in terminals}
    deficits = tuple(sorted(plan.results[0].unsatisfiable)) if terminals else ()
    return Chains(graphs, terminals[0] if terminals else -1, deficits)


class ChainPlacement(StrEnum):
    """Where DOE's chain producers go in the ranking.

    * ``fill``: after the context graph's tools, in the places its budget leaves (the
      default: the chains are reported in :attr:`Selection.chain` either way);
    * ``before_anchor``: before each anchored tool that has a chain (the module doc's merge),
      so a cut at any budget keeps whole chains for the best anchors.

    How the default was chosen: docs/benchmarks.md, "Configuration history".
    """

    FILL = "fill"
    BEFORE_ANCHOR = "before_anchor"


def merge(cg: ContextGraph, chains: Chains, budget: int,
          placement: ChainPlacement = ChainPlacement.FILL) -> list[Ranked]:
    """The merged ranking (:class:`ChainPlacement`), at most ``budget`` tools."""
    out: list[Ranked] = []
    placed: set[int] = set()

    def put(item: Ranked) -> None:
        if item.tool not in placed and len(out) < budget:
            placed.add(item.tool)
            out.append(item)

    similar = [t for t in cg.tools if t.reason is Why.SIMILAR]
    for tool in cg.tools:
        if tool.reason is Why.SIMILAR:
            continue
        support = chains.graphs.get(tool.tool)
        if support is not None and placement is ChainPlacement.BEFORE_ANCHOR:
            for item in chain_items(cg.graph, support):
                put(item)
        put(_from_context(cg.graph, tool))
    for tool in cg.tools:  # fill: the chains of the anchors, best anchor first
        support = chains.graphs.get(tool.tool)
        if support is not None:
            for item in chain_items(cg.graph, support):
                put(item)
    for tool in similar:  # the places left, by similarity alone
        put(_from_context(cg.graph, tool))
    return out


def follow_calls(index: GraphIndex, called: Sequence[int],
                 relevance: np.ndarray) -> Ranked | None:
    """The tool most likely to come next after the calls made: among the consumers of the
    called tools' outputs (links of A_prod out of a called tool) that were not called
    themselves, the one with the highest w(v_o, v_i) * max(q(e), 0); None when there is none.
    """
    if not called:
        return None
    entries = index.fed_by(called)
    rows = index.prod_row[entries]
    consumers = index.node_tool[rows]
    keep = ~np.isin(consumers, np.asarray(called, dtype=np.int64))
    if not keep.any():
        return None
    entries, rows, consumers = entries[keep], rows[keep], consumers[keep]
    scores = index.prod_w[entries] * np.maximum(relevance[consumers], 0.0)
    best = int(np.argmax(scores))
    if scores[best] <= 0:
        return None
    return Ranked(int(consumers[best]), Reason.FOLLOWS, float(scores[best]),
                  int(index.prod_tool[entries[best]]), int(rows[best]))


def place_follow(ranked: list[Ranked], follow: Ranked | None, called: Sequence[int],
                 budget: int) -> list[Ranked]:
    """``follow`` first, then the ranking without the called tools, then the called tools
    (a tool may be called again, but a new one is likelier next), cut at ``budget``."""
    if follow is None and not called:
        return ranked
    done = set(called)
    first = [follow] if follow is not None else []
    skip = {follow.tool} if follow is not None else set()
    fresh = [r for r in ranked if r.tool not in skip and r.tool not in done]
    again = [r for r in ranked if r.tool not in skip and r.tool in done]
    return (first + fresh + again)[:budget]


def chain_items(graph: Hypergraph, support: SupportGraph) -> list[Ranked]:
    """The producers of ``support`` in execution order, each with the tool and input it feeds
    (its first resolution)."""
    feeds: dict[int, tuple[int, int]] = {}
    for res in support.resolutions:
        feeds.setdefault(res.producer, (graph.nodes[res.deficit].tool, res.deficit))
    return [Ranked(t, Reason.CHAIN, 0.0, *feeds.get(t, (-1, -1)))
            for t in support.tools if t != support.terminal]


def _from_context(graph: Hypergraph, tool: RetrievedTool) -> Ranked:
    """A context-graph tool as a ranked item: anchored, or a producer with what it feeds."""
    if tool.reason in ANCHOR_REASONS:
        return Ranked(tool.tool, Reason.ANCHORED, tool.score)
    if tool.reason is Why.SIMILAR:
        return Ranked(tool.tool, Reason.SIMILAR, tool.score)
    if tool.reason is Why.PREREQUISITE:
        feeds = graph.tool_index.get(tool.via, -1)
        return Ranked(tool.tool, Reason.PRODUCER, tool.score, feeds,
                      _fed_input(graph, tool.tool, feeds))
    node = graph.node_index.get(tool.via, -1)  # backward hop: the frontier input it supplies
    owner = graph.nodes[node].tool if node >= 0 else -1
    return Ranked(tool.tool, Reason.PRODUCER, tool.score, owner, node)


def _fed_input(graph: Hypergraph, producer: int, consumer: int) -> int:
    """The required input of ``consumer`` that ``producer`` supports most strongly (-1: none
    or no consumer)."""
    if consumer < 0:
        return -1
    weights = [(graph.support(producer, r), -r) for r in graph.tools[consumer].required]
    best = max(weights, default=(0.0, 1))
    return -best[1] if best[0] > 0 else -1


def all_steps(graph: Hypergraph, chains: Chains, order: Sequence[int]) -> tuple[ChainStep, ...]:
    """The calls of every planned chain whose terminal is in ``order`` (the merged ranking),
    terminals in that order, each chain in execution order, every tool once."""
    steps: list[ChainStep] = []
    seen: set[str] = set()
    for terminal in order:
        support = chains.graphs.get(terminal)
        if support is None:
            continue
        for step in chain_steps(graph, support):
            if step.tool not in seen:
                seen.add(step.tool)
                steps.append(step)
    return tuple(steps)


def chain_steps(graph: Hypergraph, support: SupportGraph) -> tuple[ChainStep, ...]:
    """The support graph as calls in execution order, each with the inputs it reads from an
    earlier call: (input name, producer tool, producer output path)."""
    reads: dict[int, list[tuple[str, str, str]]] = {}
    for res in support.resolutions:
        consumer = graph.nodes[res.deficit].tool
        reads.setdefault(consumer, []).append((graph.nodes[res.deficit].path,
                                               graph.tools[res.producer].name,
                                               graph.nodes[res.source].path))
    return tuple(ChainStep(graph.tools[t].name, tuple(sorted(reads.get(t, ()))))
                 for t in support.tools)
