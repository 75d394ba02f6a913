"""Deficit-Oriented Expansion pinned on hand-built graphs whose answers can be checked by hand
(seed 000, Definitions 5-6, Eq. 3-5)."""

from __future__ import annotations

import numpy as np
import pytest

from hyperplan.catalog import build_catalog, make_tool
from hyperplan.graph.build import structure_from_catalog
from hyperplan.graph.model import Hypergraph, Link
from hyperplan.plan.doe import (
    DOEConfig,
    SupportGraphChoice,
    best_support_graph,
    expand,
    goal_relevance,
    omega,
    rank_support_graphs,
    select_support_graph,
)
from hyperplan.plan.grounding import ground


def make_graph(spec: dict[str, tuple[list[str], list[str]]],
               links: list[tuple[str, str, float]]) -> Hypergraph:
    """``spec``: tool -> (inputs, outputs); an input ending in ``?`` is optional.
    ``links``: ("tool.out", "tool.in", w)."""
    tools = []
    for name, (ins, outs) in spec.items():
        props = {p.rstrip("?"): {"type": "string"} for p in ins}
        required = [p for p in ins if not p.endswith("?")]
        out_schema = {"type": "object", "properties": {o: {"type": "string"} for o in outs}}
        tools.append(make_tool(name=name, input_schema={"type": "object", "properties": props,
                                                        "required": required},
                               output_schema=out_schema if outs else None))
    graph = Hypergraph.from_parts(*structure_from_catalog(build_catalog(tools)), [])

    def node(ref: str, kind: str) -> int:
        tool, _, path = ref.partition(".")
        return graph.node_index[f"{tool}:{kind}:{path}"]

    return graph.with_links(Link(node(s, "out"), node(d, "in"), w) for s, d, w in links)


@pytest.fixture
def graph_a() -> Hypergraph:
    # t needs a and b (c optional); p1 gives both; p2 gives a but needs x (from p3); q gives b.
    return make_graph(
        {"t": (["a", "b", "c?"], ["done"]), "p1": ([], ["oa", "ob"]), "p2": (["x"], ["oa2"]),
         "p3": ([], ["ox"]), "q": ([], ["ob2"])},
        [("p1.oa", "t.a", 0.9), ("p1.ob", "t.b", 0.8), ("p2.oa2", "t.a", 1.0),
         ("p3.ox", "p2.x", 1.0), ("q.ob2", "t.b", 0.5)],
    )


def names(graph: Hypergraph, ids: tuple[int, ...]) -> list[str]:
    return [graph.tools[i].name for i in ids]


def test_omega_is_sum_of_support_over_deficits(graph_a: Hypergraph) -> None:
    a, b = graph_a.node_index["t:in:a"], graph_a.node_index["t:in:b"]
    tools, scores = omega(graph_a, [a, b])
    got = {graph_a.tools[t].name: round(s, 6) for t, s in zip(tools, scores, strict=True)}
    assert got == {"p1": 1.7, "p2": 1.0, "q": 0.5}


def test_omega_matches_dense_product_on_random_graph() -> None:
    rng = np.random.default_rng(3)
    spec = {f"t{k}": ([f"i{j}" for j in range(3)], [f"o{j}" for j in range(3)])
            for k in range(20)}
    links = [(f"t{rng.integers(20)}.o{rng.integers(3)}", f"t{rng.integers(20)}.i{rng.integers(3)}",
              float(rng.uniform(0.1, 1.0))) for _ in range(120)]
    links = [lk for lk in links if lk[0].split(".")[0] != lk[1].split(".")[0]]
    graph = make_graph(spec, links)
    deficits = sorted(set(rng.integers(graph.n_input_nodes, size=10).tolist()))
    m = np.zeros(graph.n_input_nodes)
    m[deficits] = 1.0
    dense = m @ graph.producer_matrix.toarray()
    tools, scores = omega(graph, deficits)
    assert np.allclose(dense[tools], scores)
    assert set(np.flatnonzero(dense > 0)) == set(tools.tolist())


def test_joint_producer_completes_in_one_step(graph_a: Hypergraph) -> None:
    result = expand(graph_a, graph_a.tool_index["t"])
    assert result.ok
    best = best_support_graph(result.complete)
    assert best is not None
    assert names(graph_a, best.tools) == ["p1", "t"]  # producers before consumers
    assert {(graph_a.node_name(r.deficit), graph_a.node_name(r.source), r.weight)
            for r in best.resolutions} == {("t:in:a", "p1:out:oa", 0.9),
                                           ("t:in:b", "p1:out:ob", 0.8)}


def test_support_graphs_ranked_fewest_tools_then_support(graph_a: Hypergraph) -> None:
    # with a grounded, b has two producers: p1 (0.8) before q (0.5); the ranking's head is
    # Support Graph Selection's choice
    result = expand(graph_a, graph_a.tool_index["t"], ground(graph_a, ["a"]))
    ranked = rank_support_graphs(result.complete)
    assert [names(graph_a, g.tools) for g in ranked] == [["p1", "t"], ["q", "t"]]
    assert best_support_graph(result.complete) == ranked[0]
    assert rank_support_graphs([]) == [] and best_support_graph([]) is None


def test_grounding_removes_deficits_and_producers(graph_a: Hypergraph) -> None:
    t = graph_a.tool_index["t"]
    only_b = expand(graph_a, t, ground(graph_a, ["a"]))
    assert sorted(names(graph_a, g.tools) for g in only_b.complete) == [["p1", "t"], ["q", "t"]]
    best = best_support_graph(only_b.complete)
    assert best is not None and names(graph_a, best.tools) == ["p1", "t"]  # support .8 > .5
    both = expand(graph_a, t, ground(graph_a, {"t:in:a": 1, "b": 2}))
    assert [names(graph_a, g.tools) for g in both.complete] == [["t"]]


def test_bound_output_grounds_linked_inputs(graph_a: Hypergraph) -> None:
    grounding = ground(graph_a, ["p1:out:oa"])
    assert graph_a.node_index["t:in:a"] in grounding
    assert graph_a.node_index["t:in:b"] not in grounding


def test_optional_inputs_are_not_deficits_unless_asked(graph_a: Hypergraph) -> None:
    t = graph_a.tool_index["t"]
    strict = expand(graph_a, t, ground(graph_a, ["a", "b"]), DOEConfig(include_optional=True))
    assert not strict.ok
    assert strict.unsatisfiable == {graph_a.node_index["t:in:c"]}


def test_chain_through_second_producer() -> None:
    graph = make_graph({"t": (["a"], []), "p2": (["x"], ["oa"]), "p3": ([], ["ox"])},
                       [("p2.oa", "t.a", 1.0), ("p3.ox", "p2.x", 1.0)])
    result = expand(graph, graph.tool_index["t"])
    assert [names(graph, g.tools) for g in result.complete] == [["p3", "p2", "t"]]


def test_beam_ranks_by_remaining_deficits() -> None:
    # With K=2, B=1 the beam keeps {t, p1} (no deficit left) over {t, p2} (needs x).
    graph = make_graph({"t": (["a"], []), "p1": ([], ["oa"]), "p2": (["x"], ["oa"]),
                        "p3": ([], ["ox"])},
                       [("p1.oa", "t.a", 0.6), ("p2.oa", "t.a", 0.9), ("p3.ox", "p2.x", 1.0)])
    result = expand(graph, graph.tool_index["t"], config=DOEConfig(top_k=2, beam_width=1))
    assert [names(graph, g.tools) for g in result.complete] == [["p1", "t"]]


def test_producer_ties_break_by_tool_id() -> None:
    graph = make_graph({"t": (["a"], []), "p1": ([], ["oa"]), "p2": ([], ["oa"])},
                       [("p2.oa", "t.a", 0.7), ("p1.oa", "t.a", 0.7)])
    result = expand(graph, graph.tool_index["t"], config=DOEConfig(top_k=1))
    assert [names(graph, g.tools) for g in result.complete] == [["p1", "t"]]


def test_producer_ties_go_first_to_fewer_open_inputs() -> None:
    # p1 and p2 tie on Ω (0.7); p1 (the lower id) needs x, which only p3 gives, p2 needs
    # nothing: with K = 1 the tie goes to p2, so the one support graph found is {p2, t}
    graph = make_graph({"t": (["a"], []), "p1": (["x"], ["oa"]), "p2": ([], ["oa"]),
                        "p3": ([], ["ox"])},
                       [("p1.oa", "t.a", 0.7), ("p2.oa", "t.a", 0.7), ("p3.ox", "p1.x", 1.0)])
    result = expand(graph, graph.tool_index["t"], config=DOEConfig(top_k=1))
    assert [names(graph, g.tools) for g in result.complete] == [["p2", "t"]]
    # once x is known, both need nothing and the tool id decides again
    known = ground(graph, ["x"])
    result = expand(graph, graph.tool_index["t"], known, config=DOEConfig(top_k=1))
    assert [names(graph, g.tools) for g in result.complete] == [["p1", "t"]]


def test_unreachable_input_is_unsatisfiable() -> None:
    graph = make_graph({"t": (["a", "b"], []), "p": ([], ["oa"])}, [("p.oa", "t.a", 1.0)])
    selection = select_support_graph(graph, ["t"])
    assert isinstance(selection, SupportGraphChoice) and selection.chosen is None
    assert selection.reason == "unsatisfiable: t:in:b"


def test_the_old_name_of_support_graph_choice_still_imports() -> None:
    """``Selection`` now means only hyperplan.select.Selection; the plan's old name resolves
    for one release, from the module and the package, with a DeprecationWarning."""
    import hyperplan.plan
    import hyperplan.plan.doe

    for module in (hyperplan.plan.doe, hyperplan.plan):
        with pytest.warns(DeprecationWarning, match=r"Selection is renamed .*SupportGraphChoice"):
            assert module.Selection is SupportGraphChoice
    assert "Selection" not in hyperplan.plan.__all__ and "Selection" not in dir(hyperplan.plan)


def test_cycle_ends_unsatisfiable() -> None:
    # u needs y from v; v needs z, whose only producer is u itself: no executable order.
    graph = make_graph({"u": (["y"], ["z"]), "v": (["z"], ["y"])},
                       [("v.y", "u.y", 1.0), ("u.z", "v.z", 1.0)])
    result = expand(graph, graph.tool_index["u"])
    assert not result.ok
    assert result.unsatisfiable == {graph.node_index["v:in:z"]}


def test_sibling_producer_supports_new_deficit() -> None:
    # t needs a (from p) and b (from s); p also needs b: s, already selected, supplies it.
    graph = make_graph({"t": (["a", "b"], []), "p": (["b"], ["oa"]), "s": ([], ["ob"])},
                       [("p.oa", "t.a", 1.0), ("s.ob", "t.b", 1.0), ("s.ob", "p.b", 1.0)])
    result = expand(graph, graph.tool_index["t"], config=DOEConfig(top_k=1))
    assert [names(graph, g.tools) for g in result.complete] == [["s", "p", "t"]]


def test_selection_prefers_fewer_tools_then_relevance() -> None:
    graph = make_graph({"t1": (["a"], []), "t2": (["a"], []), "p": (["x"], ["oa"]),
                        "r": ([], ["ox"]), "q1": ([], ["oa"]), "q2": ([], ["oa"])},
                       [("p.oa", "t1.a", 1.0), ("r.ox", "p.x", 1.0), ("q1.oa", "t2.a", 0.6),
                        ("q2.oa", "t2.a", 0.6)])
    plain = select_support_graph(graph, ["t1", "t2"])
    assert plain.chosen is not None and names(graph, plain.chosen.tools) == ["q1", "t2"]
    relevance = np.zeros(graph.n_tools)
    relevance[graph.tool_index["q2"]] = 0.5
    ranked = select_support_graph(graph, ["t1", "t2"], relevance=relevance)
    assert ranked.chosen is not None and names(graph, ranked.chosen.tools) == ["q2", "t2"]


def test_precondition_deficit_resolved_by_effect() -> None:
    tools = [
        make_tool(name="app.login", input_schema={"type": "object", "properties": {}},
                  output_schema={"type": "object", "properties": {"access_token": {}}}),
        make_tool(name="app.show", input_schema={
            "type": "object", "properties": {"access_token": {"type": "string"}},
            "required": ["access_token"]}),
    ]
    from hyperplan.graph.build import build_graph

    graph = build_graph(build_catalog(tools))
    show = graph.tool_index["app.show"]
    result = expand(graph, show)
    assert [names(graph, g.tools) for g in result.complete] == [["app.login", "app.show"]]
    done = expand(graph, show, ground(graph, ["access_token"], effects=["app.authenticated"]))
    assert [names(graph, g.tools) for g in done.complete] == [["app.show"]]


def test_dead_end_producer_is_skipped_for_the_next_best() -> None:
    # K = 1: p1 has the higher support (1.0) but needs x, which nothing produces; pruning
    # dead ends takes p2 (0.6) instead. Without pruning the only branch dies.
    graph = make_graph({"t": (["a"], []), "p1": (["x"], ["oa"]), "p2": ([], ["oa"])},
                       [("p1.oa", "t.a", 1.0), ("p2.oa", "t.a", 0.6)])
    t = graph.tool_index["t"]
    result = expand(graph, t, config=DOEConfig(top_k=1))
    assert [names(graph, g.tools) for g in result.complete] == [["p2", "t"]]
    stuck = expand(graph, t, config=DOEConfig(top_k=1, prune_dead_ends=False))
    assert not stuck.ok and stuck.unsatisfiable == {graph.node_index["p1:in:x"]}


def test_relevance_breaks_producer_ties() -> None:
    # equal support: tool id decides without relevance (p1), relevance with it (p2)
    graph = make_graph({"t": (["a"], []), "p1": ([], ["oa"]), "p2": ([], ["oa"])},
                       [("p1.oa", "t.a", 0.7), ("p2.oa", "t.a", 0.7)])
    t = graph.tool_index["t"]
    relevance = np.zeros(graph.n_tools)
    relevance[graph.tool_index["p2"]] = 0.4
    plain = expand(graph, t, config=DOEConfig(top_k=1))
    ranked = expand(graph, t, config=DOEConfig(top_k=1), relevance=relevance)
    assert [names(graph, g.tools) for g in plain.complete] == [["p1", "t"]]
    assert [names(graph, g.tools) for g in ranked.complete] == [["p2", "t"]]


def shortcut_graph() -> Hypergraph:
    # check needs corpus: read gives it directly (1.0), or through tokenize (read -> tokenize
    # 1.0, tokenize -> check 0.8)
    return make_graph(
        {"check": (["corpus"], ["freq"]), "read": ([], ["corpus"]),
         "tokenize": (["corpus"], ["tokens"])},
        [("read.corpus", "check.corpus", 1.0), ("read.corpus", "tokenize.corpus", 1.0),
         ("tokenize.tokens", "check.corpus", 0.8)],
    )


def test_size_cost_takes_a_longer_chain_only_when_its_steps_are_relevant() -> None:
    graph = shortcut_graph()
    check = graph.tool_index["check"]
    relevance = np.zeros(graph.n_tools)
    relevance[graph.tool_index["read"]] = 0.5
    # without relevance: the paper's DOE, stop at the first complete depth, fewest tools
    plain = select_support_graph(graph, ["check"])
    assert plain.chosen is not None and names(graph, plain.chosen.tools) == ["read", "check"]
    assert [names(graph, g.tools) for g in plain.results[0].complete] == [["read", "check"]]
    # with relevance DOE searches one depth further (extra_depth = 1) and prices each tool at
    # c = 1.2: {read, check} 1.0 + 0.5 - 1.2 = 0.3; {read, tokenize, check} with tokenize
    # relevance 0.3: 1.8 + 0.8 - 2.4 = 0.2 -> shortcut; with 0.9: 1.8 + 1.4 - 2.4 = 0.8 -> chain
    cfg = DOEConfig(extra_depth=1, size_cost=1.2)
    result = expand(graph, check, config=cfg, relevance=relevance)
    assert [names(graph, g.tools) for g in result.complete] == [
        ["read", "check"], ["read", "tokenize", "check"]]
    for rel, chosen in ((0.3, ["read", "check"]), (0.9, ["read", "tokenize", "check"])):
        relevance[graph.tool_index["tokenize"]] = rel
        selection = select_support_graph(graph, ["check"], config=cfg, relevance=relevance)
        assert selection.chosen is not None and names(graph, selection.chosen.tools) == chosen
    # size_cost=None keeps the fewest-tools rule even with relevance
    best = best_support_graph(result.complete, relevance)
    assert best is not None and names(graph, best.tools) == ["read", "check"]


def test_weak_links_are_a_fallback_for_unsatisfiable_terminals() -> None:
    # a's only producer p links at 0.3; b has a strong producer q (0.9) and a weak one r (0.3)
    graph = make_graph({"t": (["a"], []), "u": (["b"], []), "p": ([], ["oa"]),
                        "q": ([], ["ob"]), "r": ([], ["ob"])},
                       [("p.oa", "t.a", 0.3), ("q.ob", "u.b", 0.9), ("r.ob", "u.b", 0.3)])
    strict = DOEConfig(min_link_weight=0.5)
    t = graph.tool_index["t"]
    assert not expand(graph, t, config=strict).ok
    fallback = DOEConfig(min_link_weight=0.5, fallback_link_weight=0.1)
    assert [names(graph, g.tools) for g in expand(graph, t, config=fallback).complete] == [
        ["p", "t"]]
    # the weak r is not considered while the strong q resolves b, even if r is more relevant
    relevance = np.zeros(graph.n_tools)
    relevance[graph.tool_index["r"]] = 1.0
    result = expand(graph, graph.tool_index["u"], config=fallback, relevance=relevance)
    assert [names(graph, g.tools) for g in result.complete] == [["q", "u"]]


def _typed_graph(links: list[tuple[str, str, float]]) -> Hypergraph:
    """t needs ``a`` (a number); p outputs a number, q a string, s nothing; w outputs a
    number too. Links as in :func:`make_graph`."""
    def tool(name: str, ins: dict[str, str], outs: dict[str, str]) -> object:
        obj = {"type": "object", "properties": {k: {"type": v} for k, v in ins.items()},
               "required": list(ins)}
        out = {"type": "object", "properties": {k: {"type": v} for k, v in outs.items()}}
        return make_tool(name=name, input_schema=obj, output_schema=out if outs else None)

    tools = [tool("t", {"a": "number"}, {"done": "string"}), tool("p", {}, {"n": "number"}),
             tool("q", {}, {"label": "string"}), tool("s", {}, {}),
             tool("w", {}, {"m": "number"})]
    graph = Hypergraph.from_parts(*structure_from_catalog(build_catalog(tools)), [])
    idx = graph.node_index
    return graph.with_links(Link(idx[f"{s.replace('.', ':out:')}"],
                                 idx[f"{d.replace('.', ':in:')}"], w) for s, d, w in links)


def _relevance(graph: Hypergraph, **scores: float) -> np.ndarray:
    relevance = np.zeros(graph.n_tools)
    for name, value in scores.items():
        relevance[graph.tool_index[name]] = value
    return relevance


def test_open_world_producers_supply_a_missing_link() -> None:
    # no link into t.a at all: unsatisfiable, unless open-world producers are allowed and a
    # relevance picks among them; s has no output and never offers
    graph = _typed_graph([])
    t = graph.tool_index["t"]
    open_cfg = DOEConfig(min_link_weight=0.5, fallback_link_weight=0.1, open_world_weight=0.4)
    relevance = _relevance(graph, q=0.9, s=1.0)
    assert not expand(graph, t, config=DOEConfig(min_link_weight=0.5),
                      relevance=relevance).ok
    assert not expand(graph, t, config=open_cfg).ok  # no relevance: nothing to choose by
    result = expand(graph, t, config=open_cfg, relevance=relevance)
    best = best_support_graph(result.complete, relevance, 1.0, 2.0)
    assert best is not None and names(graph, best.tools) == ["q", "t"]
    # the resolution names q's output and weighs 0.4 x fit(string -> number) = 0.4 x 0.7
    (res,) = best.resolutions
    assert graph.node_name(res.source) == "q:out:label"
    assert res.weight == pytest.approx(0.28)


def test_open_world_offers_follow_type_fit_at_equal_relevance() -> None:
    # p (number) fits t.a better than q (string): offer 0.4 vs 0.28
    graph = _typed_graph([])
    cfg = DOEConfig(open_world_weight=0.4)
    relevance = _relevance(graph, p=0.5, q=0.5)
    result = expand(graph, graph.tool_index["t"], config=cfg, relevance=relevance)
    best = best_support_graph(result.complete, relevance, 1.0, 2.0)
    assert best is not None and names(graph, best.tools) == ["p", "t"]


def test_open_world_runs_only_when_links_fail_and_caps_weak_links() -> None:
    # a trusted link from w (0.9) is kept even when q is far more relevant
    strong = _typed_graph([("w.m", "t.a", 0.9)])
    cfg = DOEConfig(min_link_weight=0.5, fallback_link_weight=0.1, open_world_weight=0.4)
    relevance = _relevance(strong, q=1.0)
    result = expand(strong, strong.tool_index["t"], config=cfg, relevance=relevance)
    assert [names(strong, g.tools) for g in result.complete] == [["w", "t"]]
    # a weak link (0.2) counts no more than an open offer (0.4 for a number output): the
    # relevance decides between w and p
    weak = _typed_graph([("w.m", "t.a", 0.2)])
    for favourite in ("p", "w"):
        relevance = _relevance(weak, **{favourite: 0.6})
        result = expand(weak, weak.tool_index["t"], config=cfg, relevance=relevance)
        best = best_support_graph(result.complete, relevance, 1.0, 2.0)
        assert best is not None and names(weak, best.tools) == [favourite, "t"]


def test_goal_relevance_explains_away_the_other_goals() -> None:
    # t and p are two independent goals of one request; q is a third tool. p's relevance
    # (0.9) would make it t's open-world producer (offer 0.4 x fit 1.0 + 0.9 = 1.3 against
    # q's 0.4 x 0.7 + 0.5 = 0.78); with p's relevance explained away q wins (0.4 vs 0.78)
    graph = _typed_graph([])
    t, p = graph.tool_index["t"], graph.tool_index["p"]
    cfg = DOEConfig(open_world_weight=0.4)
    relevance = _relevance(graph, p=0.9, q=0.5, t=0.7)
    own = goal_relevance(relevance, [t, p], t)
    assert own.tolist() == _relevance(graph, q=0.5, t=0.7).tolist()
    assert relevance[p] == 0.9  # a copy: the caller's relevance is untouched
    assert goal_relevance(relevance, [t], t).tolist() == relevance.tolist()
    for rel, producer in ((relevance, "p"), (own, "q")):
        result = expand(graph, t, config=cfg, relevance=rel)
        best = best_support_graph(result.complete, rel, 1.0, 2.0)
        assert best is not None and names(graph, best.tools) == [producer, "t"]


def test_offering_tools_make_open_offers_in_the_first_search() -> None:
    # a trusted link from w (0.9) would win alone; q, offering, makes an open offer (0.28)
    # that its relevance carries, and only q does: p, not offering, stays silent
    graph = _typed_graph([("w.m", "t.a", 0.9)])
    t, q = graph.tool_index["t"], graph.tool_index["q"]
    cfg = DOEConfig(min_link_weight=0.5, open_world_weight=0.4)
    relevance = _relevance(graph, q=2.5, p=3.0)
    plain = expand(graph, t, config=cfg, relevance=relevance)
    assert [names(graph, g.tools) for g in plain.complete] == [["w", "t"]]
    result = expand(graph, t, config=cfg, relevance=relevance, offering={q})
    found = sorted(names(graph, g.tools) for g in result.complete)
    assert found == [["q", "t"], ["w", "t"]]
    best = best_support_graph(result.complete, relevance, 1.0, 2.0)
    assert best is not None and names(graph, best.tools) == ["q", "t"]
    # offers need open-world weight and a relevance; without either, offering changes nothing
    for config, rel in ((DOEConfig(min_link_weight=0.5), relevance), (cfg, None)):
        same = expand(graph, t, config=config, relevance=rel, offering={q})
        assert [names(graph, g.tools) for g in same.complete] == [["w", "t"]]
