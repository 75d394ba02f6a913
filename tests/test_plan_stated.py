"""Stated values are there to be used (plan/stated.py), on the sales-tax example of its doc."""

from __future__ import annotations

import numpy as np

from hyperplan.catalog import build_catalog, make_tool
from hyperplan.graph.build import structure_from_catalog
from hyperplan.graph.model import Hypergraph, Link
from hyperplan.plan.doe import DOEConfig
from hyperplan.plan.grounding import ground
from hyperplan.plan.stated import (
    attachable_claimants,
    best_claimants,
    claimants,
    consumed_names,
    contested_names,
    favour,
    keeps_takers,
    release,
    takers,
    unused_values,
)
from hyperplan_bench.eval.chains import plan_terminals

KNOWN = {"amount", "tax_rate", "from", "to"}  # "tax on $500 at 7%, in euros"


def _tool(name: str, required: list[str], out: str, optional: tuple[str, ...] = ()) -> object:
    """A tool with string inputs (``required`` and ``optional``) and one string output."""
    props = {k: {"type": "string"} for k in (*required, *optional)}
    return make_tool(name=name,
                     input_schema={"type": "object", "properties": props, "required": required},
                     output_schema={"type": "object", "properties": {out: {"type": "string"}}})


def _graph(links: list[tuple[str, str, float]]) -> Hypergraph:
    """tax(amount, tax_rate) -> tax_amount; convert(amount, from, to; optional note) ->
    converted; other(amount) -> total. Links as ``(tool:out:x, tool:in:y, weight)``."""
    tools = [_tool("tax", ["amount", "tax_rate"], "tax_amount"),
             _tool("convert", ["amount", "from", "to"], "converted", ("note",)),
             _tool("other", ["amount"], "total")]
    graph = Hypergraph.from_parts(*structure_from_catalog(build_catalog(tools)), [])
    idx = graph.node_index
    return graph.with_links(Link(idx[s], idx[d], w) for s, d, w in links)


def _sound_graph() -> Hypergraph:
    """record(location, duration) -> clip; process(sound_clip; optional effects, volume) ->
    processed; sculpture(name, clip) -> done. record's clip links to both process.sound_clip
    and sculpture.clip, process's output to sculpture.clip: the direct chain is shorter."""
    tools = [_tool("record", ["location", "duration"], "clip"),
             _tool("process", ["sound_clip"], "processed", ("effects", "volume")),
             _tool("sculpture", ["name", "clip"], "done")]
    graph = Hypergraph.from_parts(*structure_from_catalog(build_catalog(tools)), [])
    idx = graph.node_index
    links = [("record:out:clip", "process:in:sound_clip"), ("record:out:clip", "sculpture:in:clip"),
             ("process:out:processed", "sculpture:in:clip")]
    return graph.with_links(Link(idx[a], idx[b], 0.9) for a, b in links)


def _ids(graph: Hypergraph, *names: str) -> list[int]:
    return [graph.tool_index[n] for n in names]


def test_unused_and_contested_names() -> None:
    graph = _graph([])
    convert = _ids(graph, "convert")
    assert consumed_names(graph, convert) == {"amount", "from", "to", "note"}
    assert unused_values(graph, convert, KNOWN) == {"tax_rate"}
    # tax takes the unused tax_rate and also amount, which the plan takes from the literal
    assert contested_names(graph, convert, KNOWN) == {"amount"}
    # nothing is contested once every stated value is used, or when no tool claims it
    assert contested_names(graph, _ids(graph, "tax", "convert"), KNOWN) == set()
    assert contested_names(graph, convert, {"amount", "from", "to", "colour"}) == set()


def test_release_ungrounds_only_the_plans_inputs_of_the_names() -> None:
    graph = _graph([])
    state = ground(graph, KNOWN)
    released = release(graph, state, _ids(graph, "convert"), {"amount"})
    idx = graph.node_index
    assert not released.grounded[idx["convert:in:amount"]]
    assert released.grounded[idx["tax:in:amount"]] and released.grounded[idx["other:in:amount"]]
    assert released.grounded[idx["convert:in:from"]]
    assert state.grounded[idx["convert:in:amount"]]  # the original is untouched
    assert released.count == state.count - 1


def test_plan_is_repaired_only_when_it_uses_more_stated_values() -> None:
    cfg = DOEConfig()
    linked = _graph([("tax:out:tax_amount", "convert:in:amount", 0.9)])
    state = ground(linked, KNOWN)
    # the plain plan grounds convert's amount with the literal; the repair feeds it from tax
    plain, _ = plan_terminals(linked, ["convert"], set(), state, cfg, [])
    assert plain == [{"convert"}]
    repaired, ok = plan_terminals(linked, ["convert"], KNOWN, state, cfg, [])
    assert ok and repaired == [{"tax", "convert"}]
    # when the only producer of amount leaves tax_rate unused too, the plain plan is kept
    decoy = _graph([("other:out:total", "convert:in:amount", 0.9)])
    kept, ok = plan_terminals(decoy, ["convert"], KNOWN, ground(decoy, KNOWN), cfg, [])
    assert ok and kept == [{"convert"}]


def test_claimants_are_favoured_when_releasing_is_not_enough() -> None:
    # effects and volume are stated for process, which the shortest plan skips; process
    # shares no stated name with the plan, so only favouring it brings it in
    graph = _sound_graph()
    known = {"location", "duration", "effects", "volume", "name"}
    plan = _ids(graph, "record", "sculpture")
    assert unused_values(graph, plan, known) == {"effects", "volume"}
    assert claimants(graph, plan, known) == set(_ids(graph, "process"))
    assert contested_names(graph, plan, known) == set()
    relevance = np.array([0.3, 0.2, 0.4])
    raised = favour(relevance, _ids(graph, "process"), 2.0)
    assert raised.tolist() == [0.3, 2.2, 0.4] and relevance[1] == 0.2
    state, cfg = ground(graph, known), DOEConfig(relevance_weight=1.0, size_cost=2.0)
    plain, _ = plan_terminals(graph, ["sculpture"], set(), state, cfg, [], relevance)
    assert plain == [{"record", "sculpture"}]
    repaired, ok = plan_terminals(graph, ["sculpture"], known, state, cfg, [], relevance)
    assert ok and repaired == [{"record", "process", "sculpture"}]
    # without a relevance there is nothing to favour: the plan stays
    kept, _ = plan_terminals(graph, ["sculpture"], known, state, cfg, [])
    assert kept == [{"record", "sculpture"}]


def test_best_claimant_is_the_most_relevant_tool_per_unused_value() -> None:
    # tax_rate is unused by convert; tax is its only claimant. amount is used, so "other",
    # which takes only amount, claims nothing
    graph = _graph([])
    convert = _ids(graph, "convert")
    tax, other = _ids(graph, "tax", "other")
    assert claimants(graph, convert, KNOWN) == {tax}
    relevance = np.array([0.1, 0.2, 0.9])  # tax, convert, other
    assert best_claimants(graph, convert, KNOWN, relevance) == {tax}
    # with "amount" unused too (a plan of nothing but other's consumers), per name the most
    # relevant claimant: other for amount (0.9 > 0.1), tax for tax_rate
    assert best_claimants(graph, [], {"amount", "tax_rate"}, relevance) == {tax, other}
    assert best_claimants(graph, convert, {"amount", "from", "to"}, relevance) == set()


def _ads_graph(ads_needs_campaign: bool = True) -> Hypergraph:
    """campaign(country) -> campaign_info; ads(campaign_info; optional ad_type, so that
    ads is no :func:`attachable_claimants`) -> engagement;
    feedback(campaign_result) -> analysis. campaign's output links to ads.campaign_info (1.0)
    and feedback.campaign_result (0.8); no link leads from ads' engagement anywhere (the
    missing link of NesTools' ``run_social_media_ads``)."""
    ads_inputs = ["campaign_info"] if ads_needs_campaign else []
    tools = [_tool("campaign", ["country"], "campaign_info"),
             _tool("ads", ads_inputs, "engagement", ("ad_type",)),
             _tool("feedback", ["campaign_result"], "analysis")]
    graph = Hypergraph.from_parts(*structure_from_catalog(build_catalog(tools)), [])
    idx = graph.node_index
    links = [("campaign:out:campaign_info", "feedback:in:campaign_result", 0.8)]
    if ads_needs_campaign:
        links.append(("campaign:out:campaign_info", "ads:in:campaign_info", 1.0))
    return graph.with_links(Link(idx[a], idx[b], w) for a, b, w in links)


def test_a_claimant_no_link_leads_from_is_inserted_through_its_open_offer() -> None:
    graph = _ads_graph()
    known = {"country", "ad_type"}
    relevance = np.array([0.5, 0.45, 0.25])
    state = ground(graph, known)
    cfg = DOEConfig(relevance_weight=1.0, size_cost=2.0, open_world_weight=0.4)
    plain, _ = plan_terminals(graph, ["feedback"], set(), state, cfg, [], relevance)
    assert plain == [{"campaign", "feedback"}]
    # ad_type is unused and favouring ads alone cannot help: no link from engagement. Offered
    # open-world (0.4 x type fit), ads is inserted between campaign and feedback
    repaired, ok = plan_terminals(graph, ["feedback"], known, state, cfg, [], relevance)
    assert ok and repaired == [{"campaign", "ads", "feedback"}]
    # without open-world offers in the configuration the plan stays
    closed = DOEConfig(relevance_weight=1.0, size_cost=2.0)
    kept, _ = plan_terminals(graph, ["feedback"], known, state, closed, [], relevance)
    assert kept == [{"campaign", "feedback"}]


def test_a_claimant_never_displaces_a_call_a_value_was_stated_for() -> None:
    # here ads needs nothing from campaign: offering would swap campaign, which takes the
    # stated country, for ads; the round refuses, though the swap uses as many stated values
    graph = _ads_graph(ads_needs_campaign=False)
    known = {"country", "ad_type"}
    relevance = np.array([0.5, 0.45, 0.25])
    cfg = DOEConfig(relevance_weight=1.0, size_cost=2.0, open_world_weight=0.4)
    kept, _ = plan_terminals(graph, ["feedback"], known, ground(graph, known), cfg, [],
                             relevance)
    assert kept == [{"campaign", "feedback"}]
    campaign, ads, feedback = _ids(graph, "campaign", "ads", "feedback")
    assert takers(graph, [campaign, ads, feedback], known) == {campaign, ads}
    assert not keeps_takers(graph, [campaign, feedback], [ads, feedback], known)
    assert keeps_takers(graph, [campaign, feedback], [campaign, ads, feedback], known)


def test_a_claimant_may_displace_a_step_no_stated_value_ties_to_the_request() -> None:
    # with country not stated, campaign takes no stated value: a generic step (as NesTools'
    # random_song) that the claimant ads may displace
    graph = _ads_graph(ads_needs_campaign=False)
    known = {"ad_type"}
    relevance = np.array([0.5, 0.45, 0.25])
    state = ground(graph, {"country", "ad_type"})
    cfg = DOEConfig(relevance_weight=1.0, size_cost=2.0, open_world_weight=0.4)
    plain, _ = plan_terminals(graph, ["feedback"], set(), state, cfg, [], relevance)
    assert plain == [{"campaign", "feedback"}]
    repaired, ok = plan_terminals(graph, ["feedback"], known, state, cfg, [], relevance)
    assert ok and repaired == [{"ads", "feedback"}]


def _ringtone_graph() -> Hypergraph:
    """record(duration) -> audio_file; contact(name; optional email) -> contact_id;
    reviews(query; optional sortBy) -> review; tag(audio, label) -> tagged. No link into
    contact (the spec leaves its ringtone out); record's audio_file links to tag.audio."""
    tools = [_tool("record", ["duration"], "audio_file"),
             _tool("contact", ["name"], "contact_id", ("email",)),
             _tool("reviews", ["query"], "review", ("sortBy",)),
             _tool("tag", ["audio", "label"], "tagged")]
    graph = Hypergraph.from_parts(*structure_from_catalog(build_catalog(tools)), [])
    idx = graph.node_index
    return graph.with_links([Link(idx["record:out:audio_file"], idx["tag:in:audio"], 0.9)])


def test_attachable_claimants_take_a_value_as_required_and_have_their_inputs() -> None:
    graph = _ringtone_graph()
    record, contact, tag = _ids(graph, "record", "contact", "tag")
    relevance = np.array([0.4, 0.3, 0.2, 0.1])
    # duration is stated for record, which contact's plan leaves out: record needs nothing
    # more, so it joins (its audio feeds an input no schema names)
    known = {"duration", "name"}
    state = ground(graph, known)
    assert attachable_claimants(graph, [contact], known, state, relevance) == {record}
    # sortBy is an optional parameter of reviews: too generic to say which call it was for
    known = {"name", "sortBy"}
    assert attachable_claimants(graph, [contact], known, ground(graph, known), relevance) == set()
    # label is stated for tag, whose required audio only record (outside the plan) produces
    known = {"name", "label"}
    state = ground(graph, known)
    assert attachable_claimants(graph, [contact], known, state, relevance) == set()
    # with record in the plan, tag's audio is fed by a link from it: tag joins
    known = {"name", "duration", "label"}
    state = ground(graph, known)
    assert attachable_claimants(graph, [contact, record], known, state, relevance) == {tag}


def test_the_chains_plan_attaches_a_claimant_after_the_re_plans() -> None:
    graph = _ringtone_graph()
    known = {"duration", "name"}
    relevance = np.array([0.4, 0.3, 0.2, 0.1])
    cfg = DOEConfig(relevance_weight=1.0, size_cost=2.0)
    plain, _ = plan_terminals(graph, ["contact"], set(), ground(graph, known), cfg, [],
                              relevance, alternatives=2)
    assert plain == [{"contact"}, {"contact"}]
    attached, ok = plan_terminals(graph, ["contact"], known, ground(graph, known), cfg, [],
                                  relevance, alternatives=2)
    assert ok and attached == [{"record", "contact"}, {"record", "contact"}]
    # without a relevance there is no best claimant to attach
    kept, _ = plan_terminals(graph, ["contact"], known, ground(graph, known), cfg, [])
    assert kept == [{"contact"}]
