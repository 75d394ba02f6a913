"""Catalog -> hypergraph: structure, effects/preconditions, inferred links (demo and AppWorld)."""

from __future__ import annotations

from importlib.resources import files

import numpy as np
import pytest

from conftest import shared_path
from hyperplan.catalog import build_catalog, make_tool
from hyperplan.graph import LinkConfig, build_graph, infer_links, structure_from_catalog
from hyperplan.graph.effects import namespace
from hyperplan.graph.links import type_codes, type_compatibility, type_fit
from hyperplan.graph.model import Hypergraph, NodeKind
from hyperplan.importers.openai_functions import load_openai_functions
from hyperplan_bench.importers.appworld import load_appworld


def _obj(**props):
    return {"type": "object", "properties": {k: {"type": v} for k, v in props.items()}}


@pytest.fixture(scope="module")
def demo_catalog():
    return load_openai_functions(files("hyperplan") / "examples" / "music_catalog.json")


@pytest.fixture(scope="module")
def demo(demo_catalog):
    return build_graph(demo_catalog)


@pytest.fixture(scope="module")
def appworld():
    return build_graph(load_appworld(shared_path("appworld", "api_docs")))


def producer_names(graph, node_name):
    return [graph.tools[e].name for e, _ in graph.producers_of(graph.node(node_name).id)]


def link_names(graph):
    return {(graph.node_name(lk.source), graph.node_name(lk.target)): lk.weight
            for lk in graph.links()}


def test_demo_structure_ordering_and_ownership(demo, demo_catalog):
    assert [t.name for t in demo.tools] == demo_catalog.names()
    assert (demo.n_tools, demo.n_nodes, demo.n_input_nodes) == (12, 66, 27)
    sides = [n.kind.input_side for n in demo.nodes]
    assert sides == [True] * demo.n_input_nodes + [False] * (demo.n_nodes - demo.n_input_nodes)
    for side in (True, False):  # stable sort: tool order kept within each side
        owners = [n.tool for n in demo.nodes if n.kind.input_side is side]
        assert owners == sorted(owners)
    for tool in demo.tools:
        assert all(demo.nodes[v].tool == tool.id for v in (*tool.inputs, *tool.outputs))
        assert all(demo.nodes[v].kind.input_side for v in tool.inputs)
        assert not any(demo.nodes[v].kind.input_side for v in tool.outputs)
        assert set(tool.required) <= set(tool.inputs)
    covered = sorted(v for t in demo.tools for v in (*t.inputs, *t.outputs))
    assert covered == list(range(demo.n_nodes))
    show = demo.tool("music.search_songs")
    assert [demo.nodes[v].path for v in show.required] == ["query"]
    assert demo.node("music.search_songs:in:page_index").type == "integer"


def test_demo_login_supports_protected_tools(demo):
    assert producer_names(demo, "music.show_song:in:access_token") == ["music.login"]
    assert producer_names(demo, "music.show_song:pre:music.authenticated") == ["music.login"]
    login = demo.tool("music.login").id
    protected = {t.id for t in demo.tools if any(
        demo.nodes[v].path == "access_token" for v in t.inputs)}
    assert len(protected) == 6
    assert demo.downstream(login) == protected
    links = link_names(demo)
    assert links[("music.login:eff:music.authenticated",
                  "music.like_song:pre:music.authenticated")] == 1.0
    assert links[("profile.show_account_passwords:out:[].password",
                  "music.login:in:password")] == pytest.approx(0.9)  # cross-app penalty


def test_demo_flattened_outputs_link_to_id_inputs(demo):
    links = link_names(demo)
    for consumer in ("music.show_song", "music.like_song", "music.add_song_to_playlist"):
        target = f"{consumer}:in:song_id"
        assert links[("music.search_songs:out:[].song_id", target)] == 1.0
        assert links[("music.show_playlist:out:songs[].song_id", target)] == 1.0
    assert links[("music.show_playlist_library:out:[].playlist_id",
                  "music.show_playlist:in:playlist_id")] == 1.0
    assert "music.like_song:out:message" not in {s for s, _ in links}


def test_credential_links_never_cross_namespaces(demo, demo_catalog):
    spaces = {t.name: namespace(t) for t in demo_catalog.tools}
    checked = 0
    for lk in demo.links():
        target = demo.nodes[lk.target]
        if target.path in ("access_token", "music.authenticated"):
            src = demo.tools[demo.nodes[lk.source].tool].name
            assert spaces[src] == spaces[demo.tools[target.tool].name] == "music"
            checked += 1
    assert checked == 12


def test_demo_effects_and_preconditions(demo):
    def ports(name, kind):
        return [demo.nodes[v].path for v in (*demo.tool(name).inputs, *demo.tool(name).outputs)
                if demo.nodes[v].kind is kind]

    assert ports("music.like_song", NodeKind.EFFECT) == ["music.like_song.done"]
    assert ports("music.like_song", NodeKind.PRECONDITION) == ["music.authenticated"]
    assert ports("music.login", NodeKind.EFFECT) == ["music.authenticated", "music.login.done"]
    assert ports("music.login", NodeKind.PRECONDITION) == []
    assert ports("mail.send_email", NodeKind.EFFECT) == ["mail.send_email.done"]
    for reader in ("music.search_songs", "music.show_song", "profile.show_profile"):
        assert ports(reader, NodeKind.EFFECT) == []
    assert demo.node("music.like_song:eff:music.like_song.done").type == "boolean"


def test_effect_rules_on_crafted_tools():
    tools = [
        make_tool(name="x.show_stuff", metadata={"method": "DELETE", "app": "shop"},
                  input_schema={**_obj(api_key="string"), "required": ["api_key"]}),
        make_tool(name="x.like_post", metadata={"method": "GET"},
                  input_schema=_obj(access_token="string")),  # optional credential
        make_tool(name="nodots", output_schema=_obj(session_id="string"),
                  effects=("door.open",), preconditions=("door.unlocked",)),
    ]
    nodes, edges = structure_from_catalog(build_catalog(tools))
    by_tool = [{(n.kind.value, n.path) for n in nodes if n.tool == t} for t in range(3)]
    assert ("pre", "shop.authenticated") in by_tool[0]  # metadata app wins over "x"
    assert ("eff", "x.show_stuff.done") in by_tool[0]  # DELETE writes despite "show"
    assert not any(k in ("pre", "eff") for k, _ in by_tool[1])  # GET; credential optional
    assert {p for k, p in by_tool[2] if k in ("pre", "eff")} == {
        "door.open", "door.unlocked", "authenticated"}
    assert [nodes[v].path for v in edges[0].required] == ["api_key", "shop.authenticated"]


def test_type_compatibility_table():
    assert type_compatibility("integer", "number") == 1.0
    assert type_compatibility("number", "integer") == 0.8
    assert type_compatibility("integer", "array") == 0.7
    assert type_compatibility("integer", "array", collected=True) == 1.0
    assert type_compatibility("boolean", "integer") == 0.3
    assert type_compatibility("weird", "string") == 0.9  # unknown -> any


def test_type_fit_is_type_compatibility_vectorised():
    outs = ["integer", "string", "array", "boolean", "weird", "object"]
    collected = np.array([False, True, False, False, True, False])
    for in_type in ("number", "string", "array", "integer", "weird"):
        fit = type_fit(type_codes(outs), collected, in_type)
        expected = [type_compatibility(t, in_type, c) for t, c in zip(outs, collected, strict=True)]
        assert fit.tolist() == expected


def test_link_config_threshold_and_cap(demo_catalog, demo):
    strict = build_graph(demo_catalog, config=LinkConfig(min_weight=0.95))
    assert set(link_names(strict)) == {k for k, w in link_names(demo).items() if w >= 0.95}
    capped = build_graph(demo_catalog, config=LinkConfig(max_links_per_input=1))
    inferred = [lk for lk in capped.links() if lk.evidence == "inferred"]
    targets = {lk.target for lk in demo.links() if lk.evidence == "inferred"}
    assert len(inferred) == len({lk.target for lk in inferred}) == len(targets) >= 13
    for lk in inferred:  # the survivor is the strongest of the uncapped links into its input
        assert lk.weight == max(x.weight for x in demo.links_into(lk.target))
    assert capped.metadata["link_config"]["max_links_per_input"] == 1


class ConstantEmbedder:
    name = "constant"

    def embed(self, texts):
        return np.ones((len(texts), 4)) / 2.0  # every cosine is 1


def test_infer_links_with_and_without_embedder(demo, demo_catalog):
    skeleton = Hypergraph.from_parts(demo.nodes, demo.tools, [])
    stages = []
    plain = infer_links(skeleton, progress=lambda s, d, t: stages.append((s, d, t)))
    assert {(lk.source, lk.target, lk.weight) for lk in plain} == {
        (lk.source, lk.target, lk.weight) for lk in demo.links()}
    assert stages[0] == ("features", 0, 4) and stages[-1] == ("done", 4, 4)
    # every pair scores at least as high when every description cosine is 1 (compared before
    # the one-output-per-producer choice, which the boost may settle on another output)
    every = LinkConfig(best_output_per_producer=False)
    boosted = {(lk.source, lk.target): lk.weight
               for lk in infer_links(skeleton, embedder=ConstantEmbedder(), config=every)}
    for lk in infer_links(skeleton, config=every):
        assert boosted[(lk.source, lk.target)] >= lk.weight
    chosen = infer_links(skeleton, embedder=ConstantEmbedder())
    # description evidence adds links only into specific inputs of the same namespace here
    # (tests/test_link_roles.py); the demo's other inputs are generic or identifiers
    assert len(chosen) >= len(plain)
    graph = build_graph(demo_catalog, embedder=ConstantEmbedder())
    assert graph.metadata["embedder"] == "constant" and demo.metadata["embedder"] is None
    assert graph.n_links == len(chosen)


def test_tiny_and_empty_catalogs():
    one = build_graph(build_catalog([make_tool(name="ping", input_schema=_obj(host="string"))]))
    assert (one.n_tools, one.n_nodes, one.n_links) == (1, 1, 0)
    assert one.producer_matrix.shape == (1, 1) and one.producers_of(0) == []
    empty = build_graph(build_catalog([]))
    assert (empty.n_tools, empty.n_nodes, empty.n_links) == (0, 0, 0)
    assert empty.producer_matrix.shape == (0, 0)


def test_appworld_login_produces_spotify_tokens_only(appworld):
    assert appworld.n_tools == 457
    login = appworld.tool("spotify.login").id
    assert producer_names(appworld, "spotify.show_playlist:in:access_token") == ["spotify.login"]
    supported = 0
    for tool in appworld.tools:
        for v in tool.inputs:
            if appworld.nodes[v].path != "access_token":
                continue
            producers = [e for e, _ in appworld.producers_of(v)]
            app = tool.name.split(".")[0]
            assert (login in producers) == (app == "spotify"), tool.name
            if app == "gmail":
                assert producers == [appworld.tool("gmail.login").id]
            supported += app == "spotify"
    assert supported == len(appworld.downstream(login)) == 72
    assert producer_names(appworld, "spotify.login:in:password") == [
        "supervisor.show_account_passwords"]
    balance = appworld.tool("splitwise.show_person_balance")
    effects = {appworld.nodes[v].path for v in balance.outputs
               if appworld.nodes[v].kind is NodeKind.EFFECT}
    assert "splitwise.show_person_balance.done" in effects  # POST wins over "show"


def test_appworld_build_is_deterministic(appworld):
    again = build_graph(load_appworld(shared_path("appworld", "api_docs")))
    for name in ("link_source", "link_target", "link_weight"):
        np.testing.assert_array_equal(getattr(again, name), getattr(appworld, name))
    assert again.link_evidence == appworld.link_evidence
    assert again.nodes == appworld.nodes and again.tools == appworld.tools
    assert (again.producer_matrix != appworld.producer_matrix).nnz == 0


def _bare(name, inputs, output, desc):
    return make_tool(name=name, description=desc, input_schema=_obj(**inputs),
                     output_schema=output)


def test_bare_return_values_are_linked_by_their_description():
    """A bare return value (``result``) or a list of scalars (``[]``) has no name of its own,
    so its description names it: "the cart id" feeds ``cart_id``, "The id of each book"
    feeds ``book_id``; without a description there is nothing to link by."""
    tools = [
        _bare("add_to_cart", {"book_id": "string"},
              {"type": "string", "description": "the cart id"}, "Add a book to the cart."),
        _bare("find_books", {"query": "string"},
              {"type": "array", "items": {"type": "string"},
               "description": "The id of each book."}, "Search books."),
        _bare("checkout", {"cart_id": "string"}, {"type": "string"}, "Pay for the cart."),
        _bare("ship", {"order_id": "string"}, {"type": "string"}, "Ship an order."),
    ]
    graph = build_graph(build_catalog(tools))
    links = link_names(graph)
    assert links[("add_to_cart:out:result", "checkout:in:cart_id")] >= 0.5
    assert links[("find_books:out:[]", "add_to_cart:in:book_id")] >= 0.5
    plural = build_graph(build_catalog([tools[0], _bare(
        "find_books", {"query": "string"}, {"type": "array", "items": {"type": "string"},
                                            "description": "The ids of the books."}, "")]))
    assert link_names(plural)[("find_books:out:[]", "add_to_cart:in:book_id")] >= 0.5  # ids: id
    # checkout's bare result has no description: no name, no link to ship's order_id
    assert not any(target == "ship:in:order_id" for _, target in links)
    assert producer_names(graph, "checkout:in:cart_id") == ["add_to_cart"]


def test_undescribed_bare_values_take_the_returns_clause_of_the_tool():
    wrapped = {"type": "object", "properties": {"result": {"type": "string", "title": "Result"}}}
    described = {"type": "string", "description": "an opaque handle"}
    graph = build_graph(build_catalog([
        _bare("make_cart", {}, wrapped, "Create a cart; returns the cart id."),  # MCP's wrapper
        _bare("make_order", {}, described, "Place an order; returns the order id."),
        _bare("ping", {}, {"type": "string"}, "Check the server."),
    ]))
    descriptions = {graph.node_name(n.id): n.description for n in graph.nodes}
    assert descriptions["make_cart:out:result"] == "the cart id"
    assert descriptions["make_order:out:result"] == "an opaque handle"  # the schema's own
    assert descriptions["ping:out:result"] == ""
