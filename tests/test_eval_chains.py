"""The producer-chain benchmark: its link policy on a hand-built graph, and NesTools."""

from __future__ import annotations

import numpy as np

from conftest import shared_path
from hyperplan.catalog import build_catalog, make_tool
from hyperplan.embed import get_embedder
from hyperplan.graph.build import structure_from_catalog
from hyperplan.graph.links import LinkConfig
from hyperplan.graph.model import Hypergraph, Link
from hyperplan.plan.doe import DOEConfig
from hyperplan.plan.grounding import empty_grounding
from hyperplan_bench.eval.chains import (
    LINK_FALLBACK,
    LINK_RETENTION,
    OPEN_WORLD,
    backward_closure,
    chain_links,
    evaluate_chains,
    plan_terminals,
)


def _graph() -> Hypergraph:
    # t needs a: p links to it at 0.9, q at 0.3
    obj = {"type": "object", "properties": {"a": {"type": "string"}}}
    tools = [
        make_tool(name="t", input_schema={**obj, "required": ["a"]}),
        make_tool(name="p", input_schema={"type": "object", "properties": {}}, output_schema=obj),
        make_tool(name="q", input_schema={"type": "object", "properties": {}}, output_schema=obj),
    ]
    graph = Hypergraph.from_parts(*structure_from_catalog(build_catalog(tools)), [])
    a = graph.node_index["t:in:a"]
    return graph.with_links([Link(graph.node_index["p:out:a"], a, 0.9),
                             Link(graph.node_index["q:out:a"], a, 0.3)])


def test_all_producers_baseline_follows_links_above_the_retention() -> None:
    graph = _graph()
    state = empty_grounding(graph)
    assert backward_closure(graph, ["t"], state) == {"t", "p", "q"}
    assert backward_closure(graph, ["t"], state, min_weight=0.5) == {"t", "p"}


def test_chain_graph_keeps_links_down_to_the_fallback() -> None:
    assert LINK_FALLBACK < LINK_RETENTION == LinkConfig().min_weight
    cfg = DOEConfig(fallback_link_weight=LINK_FALLBACK)
    assert chain_links(cfg).min_weight == LINK_FALLBACK
    assert chain_links(DOEConfig()) == LinkConfig()


def test_open_world_offers_stay_below_trusted_links() -> None:
    # an open-world offer (OPEN_WORLD x type fit <= OPEN_WORLD) never outweighs a trusted link
    assert LINK_FALLBACK < OPEN_WORLD < LINK_RETENTION


def test_independent_terminals_do_not_lend_each_other_relevance() -> None:
    # terminals t and p; t needs a number that no link supplies, so DOE's open-world retry
    # picks its producer by relevance. p, the other terminal, is the most relevant tool: with
    # independent terminals its relevance is explained away and q (an output of the wrong type,
    # but relevant) feeds t; with dependent ones (τ²'s write actions) p does
    def tool(name: str, ins: dict[str, str], outs: dict[str, str]) -> object:
        schema = {"type": "object", "properties": {k: {"type": v} for k, v in ins.items()},
                  "required": list(ins)}
        out = {"type": "object", "properties": {k: {"type": v} for k, v in outs.items()}}
        return make_tool(name=name, input_schema=schema, output_schema=out)

    tools = [tool("t", {"a": "number"}, {"done": "string"}), tool("p", {}, {"n": "number"}),
             tool("q", {}, {"label": "string"})]
    graph = Hypergraph.from_parts(*structure_from_catalog(build_catalog(tools)), [])
    relevance = np.array([0.7, 0.9, 0.5])  # t, p, q
    cfg = DOEConfig(open_world_weight=OPEN_WORLD)
    state = empty_grounding(graph)
    apart, ok = plan_terminals(graph, ["t", "p"], set(), state, cfg, [], relevance)
    assert ok and apart == [{"t", "p", "q"}]
    joint, ok = plan_terminals(graph, ["t", "p"], set(), state, cfg, [], relevance,
                               independent=False)
    assert ok and joint == [{"t", "p"}]


def test_nestools_dev_split_measured_numbers() -> None:
    """Regression guard at the numbers of docs/benchmarks.md (NesTools dev split, MiniLM)."""
    doc = evaluate_chains("nestools", shared_path("nestools", "test_data_dev.jsonl"),
                          embedder=get_embedder("minilm"), split="dev")
    assert doc["n_tasks"] == 120
    assert doc["doe_config"]["min_link_weight"] == LINK_RETENTION
    assert doc["doe_config"]["open_world_weight"] == OPEN_WORLD
    assert doc["exact"] >= 0.78
    methods = doc["methods"]
    assert doc["producer_precision"] > methods["semantic_topk"]["producer_precision"]
    assert doc["producer_precision"] > methods["all_producers"]["producer_precision"]
    # operating points: DOE's first point is its answer, widening never loses recall, and on
    # NesTools dev DOE is more precise than semantic top-K wherever the two recalls meet
    points = doc["operating_points"]
    doe_points = points["doe"]
    assert doe_points[0]["producer_recall"] == doc["producer_recall"]
    recalls = [p["producer_recall"] for p in doe_points]
    assert recalls == sorted(recalls)
    assert {p["k"] for p in points["semantic_topk"]} >= {5}
    semantic = doc["equal_recall"]["semantic_topk"]
    assert semantic["doe_at_baseline_recall"]["doe_more_precise"]
    at_doe = semantic["baseline_at_doe_recall"]
    if at_doe is None:  # no K reaches DOE's recall: DOE dominates the whole curve
        assert max(p["producer_recall"] for p in points["semantic_topk"]) < doc["producer_recall"]
    else:
        assert at_doe["doe_more_precise"]
