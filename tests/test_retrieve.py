"""Retrieval on a hand-built graph with a keyword embedder, so every score is checkable by hand."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from hyperplan.embed.base import FloatMatrix
from hyperplan.graph.model import Hypergraph, Link, NodeKind, SchemaNode, ToolEdge
from hyperplan.retrieve import (
    ContextGraphConfig,
    GraphIndex,
    InterpretationError,
    TaskInterpretation,
    count_tokens,
    extract_context_graph,
    from_llm_json,
    interpret_request,
    one_hop,
    semantic_top_k,
    serialize_context_graph,
    serialize_subgraph,
    serialize_tools,
)
from hyperplan.retrieve.serialize import _approx_tokens

VOCAB = ("play", "song", "login", "weather", "lyrics", "profile", "search", "token", "user")


class KeywordEmbedder:
    """One dimension per VOCAB word (substring match), L2-normalised; no word: zero row."""

    name = "keywords-test"
    dim = len(VOCAB)

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for j, word in enumerate(VOCAB):
                out[i, j] = float(word in text.lower())
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)


# tool: (name, description, inputs [(path, required)], outputs [path])
SPEC = [
    ("profile", "show user profile", [], ["username"]),
    ("login", "login", [("username", True)], ["access_token"]),
    ("search", "search song", [("access_token", True)], ["song_id"]),
    ("play", "play song", [("access_token", True), ("song_id", True)], []),
    ("lyrics", "song lyrics", [("song_id", True)], ["text"]),
    ("weather", "weather", [("city", True)], ["forecast"]),
]
# (producer, output, consumer, input, weight)
LINKS = [
    ("profile", "username", "login", "username", 1.0),
    ("login", "access_token", "search", "access_token", 1.0),
    ("login", "access_token", "play", "access_token", 1.0),
    ("search", "song_id", "play", "song_id", 0.9),
    ("lyrics", "text", "play", "song_id", 0.6),
    ("search", "song_id", "lyrics", "song_id", 0.9),
]


def _graph() -> Hypergraph:
    ins = [(t, p, r) for t, (_, _, i, _) in enumerate(SPEC) for p, r in i]
    outs = [(t, p) for t, (_, _, _, o) in enumerate(SPEC) for p in o]
    nodes = [SchemaNode(k, NodeKind.INPUT, t, p, "string", f"{p} input", r)
             for k, (t, p, r) in enumerate(ins)]
    nodes += [SchemaNode(len(ins) + k, NodeKind.OUTPUT, t, p, "string")
              for k, (t, p) in enumerate(outs)]
    tools = [
        ToolEdge(t, name, desc,
                 tuple(n.id for n in nodes if n.tool == t and n.kind is NodeKind.INPUT),
                 tuple(n.id for n in nodes if n.tool == t and n.kind is NodeKind.OUTPUT),
                 tuple(n.id for n in nodes if n.tool == t and n.required))
        for t, (name, desc, _, _) in enumerate(SPEC)
    ]
    graph = Hypergraph.from_parts(nodes, tools, [])
    links = [Link(graph.node_index[f"{p}:out:{o}"], graph.node_index[f"{c}:in:{i}"], w)
             for p, o, c, i, w in LINKS]
    return graph.with_links(links)


def _extract(ops: tuple[str, ...], schemas: tuple[str, ...] = (), **cfg: object):  # type: ignore[no-untyped-def]
    graph, emb = _graph(), KeywordEmbedder()
    config = ContextGraphConfig(**{"node_mix": 0.0, "k_e": 1, "theta_e": 0.5, **cfg})  # type: ignore[arg-type]
    cg = extract_context_graph(graph, TaskInterpretation(ops, schemas), embedder=emb,
                               index=GraphIndex(graph, emb), config=config)
    return graph, cg, {t.name: t for t in cg.tools}


def test_seed_and_backward_scores_by_hand() -> None:
    # d_op = "play" -> tool "play song": cos = 1/sqrt(2) (Eq. 1); seed score 0.7071
    _, cg, got = _extract(("play",), hops=1, k_back=1, budget=None)
    assert got["play"].reason == "seed" and got["play"].score == pytest.approx(0.5 ** 0.5)
    # song_id of play: s_back(search) = 0.9 * cos("search song", "play") = 0 vs lyrics 0.6 * 0:
    # both 0, tie broken by tool id -> search (id 2); access_token: login, 1.0 * 0 = 0.
    # Both are then raised as play's prerequisites: login 0.71 * 1 * 1, search 0.71 * 0.9 * 1
    assert cg.tool_names == ["play", "login", "search"] and cg.n_candidates == 3
    assert got["search"].reason == "prerequisite" and got["search"].hop == 1
    assert got["search"].score == pytest.approx(0.9 * 0.5 ** 0.5)
    _, _, got = _extract(("play",), hops=1, k_back=1, budget=None, k_e=0)
    assert not got  # no seed, no seed node: nothing to expand


def test_s_back_ranks_producers_by_weight_times_similarity() -> None:
    # d_op "play song lyrics": cos(lyrics) = 2/sqrt(6)=.816 > cos(search) = 1/sqrt(6)=.408, but
    # s_back: lyrics 0.6 * .816 = .490 vs search 0.9 * .408 = .367 -> lyrics wins with k_back=1
    _, _, got = _extract(("play song lyrics",), hops=1, k_back=1, budget=None)
    assert got["play"].reason == "seed" and "search" not in got
    assert got["lyrics"].reason == "backward"
    assert got["lyrics"].score == pytest.approx(0.6 * 2 / 6 ** 0.5, abs=1e-5)
    _, _, got = _extract(("play song lyrics",), hops=1, k_back=2, budget=None, hop_decay=0.5)
    assert got["search"].score == pytest.approx(0.9 / 6 ** 0.5, abs=1e-5)  # hop 1: no decay


def test_hop_limit() -> None:
    _, _, one = _extract(("play",), hops=1, k_back=1, budget=None)
    _, _, two = _extract(("play",), hops=2, k_back=1, budget=None)
    assert "profile" not in one
    assert two["profile"].hop == 2  # reason: raised as login's prerequisite


def test_seed_node_anchoring_adds_producer() -> None:
    # schema "user token" anchors login:out:access_token (text "access token (login)")
    _, cg, got = _extract(("weather",), ("token",), hops=0, k_v=1, theta_v=0.5, budget=None)
    names = {cg.graph.node_name(v) for v, _ in cg.seed_nodes}
    assert "login:out:access_token" in names
    assert got["login"].reason == "producer-of" and got["login"].via == "login:out:access_token"


def test_budget_keeps_prerequisites() -> None:
    # play (0.71) is kept first; login, sole producer of its access_token (w 1, share 1), is
    # raised to 0.71 * 1 * 1 and kept before search (raised to 0.71 * 0.9 for song_id)
    _, cg, got = _extract(("play",), hops=1, k_back=1, budget=2)
    assert cg.tool_names == ["play", "login"]
    assert got["login"].reason == "prerequisite" and got["login"].via == "play"
    assert got["login"].score == pytest.approx(0.5 ** 0.5)


def test_baselines_rank_by_cosine_and_neighbours() -> None:
    graph, emb = _graph(), KeywordEmbedder()
    index = GraphIndex(graph, emb)
    vec = emb.embed(["song lyrics"])[0]
    assert semantic_top_k(index, vec, 2) == [4, 2]  # lyrics (1.0), then search/play tie -> 2
    hop = one_hop(index, vec, 4, n_seeds=1)
    assert hop[0] == 4 and set(hop[1:]) <= {2, 3}


def test_serialization_by_hand() -> None:
    graph = _graph()
    text = serialize_tools(graph, [1, 2])
    assert text == (
        "# Tools\n"
        "- login: login\n"
        "  in: username*: string - username input\n"
        "  out: access_token: string\n"
        "- search: search song\n"
        "  in: access_token*: string - access_token input\n"
        "  out: song_id: string\n"
        "# Links\n"
        "login.access_token -> search.access_token (1.00)\n"
    )
    assert serialize_subgraph(graph.induce([1, 2])) == text
    _, cg, _ = _extract(("play",), hops=0, budget=None)
    assert serialize_context_graph(cg) == serialize_tools(graph, [3])
    assert count_tokens("hello world") == 2 and _approx_tokens("hello world") == 2
    assert count_tokens(text) > 20


def test_interpretation_splits_operations_and_schemas() -> None:
    it = interpret_request('Find the cheapest flight from NYC to Paris, book it and email the '
                           'receipt to bob@x.com.')
    assert it.operations[0] == "Find the cheapest flight from NYC to Paris"
    assert "book it (Find the cheapest flight from NYC to Paris)" in it.operations
    assert "email the receipt to bob@x.com" in it.operations
    assert {"bob@x.com", "NYC", "Paris", "cheapest flight", "receipt"} <= set(it.schemas)
    it = interpret_request('I need to send "Hello there" to my roommates, then play 3 songs.')
    assert it.operations[0] == 'send "Hello there" to my roommates'
    assert "play 3 songs" in it.operations
    assert {"Hello there", "3", "contact information of my roommates"} <= set(it.schemas)
    assert interpret_request("What is the weather in Paris?").operations == (
        "What is the weather in Paris",)
    assert interpret_request("weather").operations == ("weather",)


def test_from_llm_json_validates() -> None:
    it = from_llm_json('{"operations": ["list songs", " "], "schemas": ["song title"]}')
    assert it == TaskInterpretation(("list songs",), ("song title",))
    for bad, msg in [("[1]", "JSON object"), ('{"operations": "x", "schemas": []}', "list"),
                     ('{"operations": [1], "schemas": []}', r"operations\[0\]"),
                     ('{"operations": [], "schemas": []}', "empty"),
                     ('{"operations": ["a"], "schemas": [], "x": 1}', "unknown keys"),
                     ("{", "not valid JSON")]:
        with pytest.raises(InterpretationError, match=msg):
            from_llm_json(bad)
