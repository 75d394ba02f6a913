"""Retrieval on a hand-built graph with a keyword embedder, so every score is checkable by hand."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

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
from hyperplan.retrieve.context_graph import word_stems
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
        unit: FloatMatrix = np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
        return unit


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
    base = {"node_mix": 0.0, "k_e": 1, "theta_e": 0.5, "lexical_mix": 0.0}  # Eq. 1-2 exactly
    config = ContextGraphConfig(**{**base, **cfg})  # type: ignore[arg-type]
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
    it = from_llm_json({"operations": ["list songs"], "schemas": [], "apps": ["spotify", ""]})
    assert it.apps == ("spotify",)
    for bad, msg in [("[1]", "JSON object"), ('{"operations": "x", "schemas": []}', "list"),
                     ('{"operations": [1], "schemas": []}', r"operations\[0\]"),
                     ('{"operations": [], "schemas": []}', "empty"),
                     ('{"operations": ["a"], "schemas": [], "x": 1}', "unknown keys"),
                     ('{"operations": ["a"], "schemas": [], "apps": [1]}', "apps"),
                     ("{", "not valid JSON")]:
        with pytest.raises(InterpretationError, match=msg):
            from_llm_json(bad)


# ------------------------------------------------------- namespaces and the lexical name match
# tool name -> (description, outputs); no links: these tests look at seeds and the budget only
NAMED = {
    "music.show_liked_songs": ("play song", ["songs"]),
    "music.play_song": ("play song", ["message"]),
    "music.show_song": ("song", ["title"]),
    "notes.show_note": ("song lyrics", ["content"]),
}


def _named_graph() -> Hypergraph:
    nodes: list[SchemaNode] = []
    tools: list[ToolEdge] = []
    for t, (name, (desc, outs)) in enumerate(NAMED.items()):
        ids = []
        for path in outs:
            nodes.append(SchemaNode(len(nodes), NodeKind.OUTPUT, t, path, "string"))
            ids.append(len(nodes) - 1)
        tools.append(ToolEdge(t, name, desc, (), tuple(ids), ()))
    return Hypergraph.from_parts(nodes, tools, [])


def test_word_stems() -> None:
    assert word_stems("Liked songs played, downloaded albums") == {
        "lik", "song", "play", "download", "album"}
    assert word_stems("music.show_liked_songs") == {"music", "show", "lik", "song"}


def test_name_match_is_idf_weighted_share_of_name_words() -> None:
    graph = _named_graph()
    index = GraphIndex(graph, KeywordEmbedder())
    assert index.namespaces == ("music", "notes")
    # df over the 4 names: music 3, show 3, lik 1, song 3, play 1, note 2 (notes.show_note)
    idf = {w: math.log1p(4 / df) for w, df in
           {"music": 3, "show": 3, "lik": 1, "song": 3, "play": 1, "note": 2}.items()}
    lex = index.name_match("Which songs have I liked?")
    liked = ("music", "show", "lik", "song")
    assert lex[0] == pytest.approx((idf["lik"] + idf["song"]) / sum(idf[w] for w in liked))
    assert lex[2] == pytest.approx(idf["song"] / sum(idf[w] for w in ("music", "show", "song")))
    assert lex[3] == 0.0
    assert index.name_match("Music: show liked songs")[0] == pytest.approx(1.0)
    assert not index.name_match("nothing here").any()


def test_lexical_mix_ranks_the_named_tool_first() -> None:
    # "play song" embeds the same for show_liked_songs and play_song (same description): with
    # lexical_mix = 0 the tie keeps tool order; the name match puts play_song first, and
    # priority = (1 - m) * q + m * lex^p for both
    graph, emb = _named_graph(), KeywordEmbedder()
    index = GraphIndex(graph, emb)
    interp = TaskInterpretation(("play song",), ())
    # seed_rank_decay = 1: the two tied seeds keep their full q (the decay has its own test)
    cfg = ContextGraphConfig(node_mix=0.0, k_e=2, theta_e=0.5, hops=0, lexical_mix=0.0,
                             seed_rank_decay=1.0)
    plain = extract_context_graph(graph, interp, embedder=emb, index=index, config=cfg)
    assert plain.tool_names[:2] == ["music.show_liked_songs", "music.play_song"]
    cfg = replace(cfg, lexical_mix=0.5, lexical_power=3.0)
    mixed = extract_context_graph(graph, interp, embedder=emb, index=index, config=cfg)
    assert mixed.tool_names[:2] == ["music.play_song", "music.show_liked_songs"]
    lex = index.name_match("play song")
    assert mixed.tools[0].score == pytest.approx(0.5 * 1.0 + 0.5 * lex[1] ** 3, abs=1e-6)
    assert mixed.tools[1].score == pytest.approx(0.5 * 1.0 + 0.5 * lex[0] ** 3, abs=1e-6)


def test_namespace_prior_demotes_tools_of_apps_not_named() -> None:
    graph, emb = _named_graph(), KeywordEmbedder()
    index = GraphIndex(graph, emb)
    assert index.namespace_weights(("notes",), 0.5).tolist() == [0.5, 0.5, 0.5, 1.0]
    assert index.namespace_weights((), 0.5).tolist() == [1.0] * 4
    assert index.namespace_weights(("other",), 0.5).tolist() == [1.0] * 4
    # "song lyrics": show_note 1.0, show_song 1/sqrt(2), the two others 0.5; naming only "music"
    # scales show_note to 0.5, below show_song
    cfg = ContextGraphConfig(node_mix=0.0, k_e=4, theta_e=0.5, hops=0, lexical_mix=0.0,
                             namespace_prior=0.5)
    for apps, first in (((), "notes.show_note"), (("music",), "music.show_song")):
        interp = TaskInterpretation(("song lyrics",), (), apps)
        cg = extract_context_graph(graph, interp, embedder=emb, index=index, config=cfg)
        assert cg.tool_names[0] == first
    assert {t.name: t.score for t in cg.tools}["notes.show_note"] == pytest.approx(0.5)


def test_interpretation_names_apps_and_adds_lookups() -> None:
    apps = ["spotify", "simple_note", "phone"]
    it = interpret_request("Play the most listened to song on Spotify's app from the Velvet "
                           "Underground album.", apps)
    assert it.apps == ("spotify",)
    assert "search Velvet Underground album" in it.operations
    assert not any("Spotify" in op for op in it.operations if op.startswith("search"))
    it = interpret_request("What is the title of the least played song by Zoey James?", apps)
    assert "search played song by Zoey James" in it.operations and it.apps == ()
    it = interpret_request('Mark "Taking a trip" in my Bucket List Simple Note as done.', apps)
    assert it.apps == ("simple_note",)
    assert "search Bucket List Simple Note" in it.operations
    it = interpret_request("Like the payments from my coworkers and send it to Robert.", apps)
    assert {"search contacts of my coworkers", "search contacts of Robert"} <= set(
        it.operations)
    it = interpret_request("Share the playlist with Spotify.", apps)  # an app is not a person
    assert not any("contacts" in op for op in it.operations)
    assert interpret_request("Play a song.", apps).apps == ()


def test_seed_rank_decay_discounts_later_seeds_of_one_phrase() -> None:
    # "play song" ties show_liked_songs and play_song (same description, cos 1): ranked by
    # tool id, the second seed of the phrase is offered q * decay^1
    graph, emb = _named_graph(), KeywordEmbedder()
    index = GraphIndex(graph, emb)
    interp = TaskInterpretation(("play song",), ())
    cfg = ContextGraphConfig(node_mix=0.0, k_e=2, theta_e=0.5, hops=0, lexical_mix=0.0,
                             seed_rank_decay=0.5)
    cg = extract_context_graph(graph, interp, embedder=emb, index=index, config=cfg)
    scores = {t.name: t.score for t in cg.tools}
    assert scores == pytest.approx({"music.show_liked_songs": 1.0, "music.play_song": 0.5})
    # each phrase has its own ranks: show_song is the first seed of "song" (cos 1) and keeps
    # its full score, though it would be third for "play song"
    both = TaskInterpretation(("play song", "song"), ())
    cg = extract_context_graph(graph, both, embedder=emb, index=index, config=cfg)
    assert {t.name: t.score for t in cg.tools} == pytest.approx(
        {"music.show_liked_songs": 1.0, "music.show_song": 1.0, "music.play_song": 0.5})


def test_share_power_scales_the_prerequisite_bound() -> None:
    # d_op "play", k_back = 2: song_id of play has producers search and lyrics, both with
    # s_back 0 (cos 0), so each has share 1/2; search (lower id) is the best. play is kept first
    # (q = 1/sqrt(2)) and raises search to q * 0.9 * share^power
    q = 0.5 ** 0.5
    for power, expected in ((1.0, q * 0.9 * 0.5), (0.0, q * 0.9)):
        _, _, got = _extract(("play",), hops=1, k_back=2, budget=None, share_power=power)
        assert got["search"].reason == "prerequisite" and got["search"].via == "play"
        assert got["search"].score == pytest.approx(expected, abs=1e-5)


def test_interpretation_marks_pure_questions() -> None:
    assert interpret_request("What is the title of the most-liked song?").question
    assert interpret_request("How long is my longest playlist? Which one is it?").question
    assert not interpret_request("Play the most-liked song.").question
    assert not interpret_request("What is my top song? Then play it.").question
    assert not interpret_request("weather").question  # no operation clause at all


def test_interpretation_lead_ins_contractions_and_task_verbs() -> None:
    it = interpret_request("After that, run video ads for 7 days. Following the extraction, "
                           "I'd like to check the structure. Finally, rent an SUV.")
    assert {"run video ads for 7 days", "check the structure", "rent an SUV"} <= set(
        it.operations)
    # "I'd like to X": X is the operation, not "like"
    it = interpret_request("I would like to borrow this book for 14 days.")
    assert it.operations[0] == "borrow this book for 14 days"
    # a lead-in longer than five words is not skipped (", " before a verb still cuts a clause)
    it = interpret_request("After that, I'd like to check the ads.")
    assert it.operations[0] == "check the ads"
    it = interpret_request("After a long and winding day at work, I'd like to check the ads.")
    assert "check the ads" not in it.operations


def _write_graph() -> Hypergraph:
    """music.show_song (read, output title) and music.play_song (write: effect
    music.play_song.done), both described "play song"."""
    nodes = [SchemaNode(0, NodeKind.OUTPUT, 0, "title", "string"),
             SchemaNode(1, NodeKind.EFFECT, 1, "music.play_song.done", "bool")]
    tools = [ToolEdge(0, "music.show_song", "play song", (), (0,), ()),
             ToolEdge(1, "music.play_song", "play song", (), (1,), ())]
    return Hypergraph.from_parts(nodes, tools, [])


def test_question_write_factor_demotes_write_tools_for_questions() -> None:
    # cos("play song", either tool) = 1; for a question the write tool's q is scaled by 0.5
    graph, emb = _write_graph(), KeywordEmbedder()
    index = GraphIndex(graph, emb)
    assert index.writes.tolist() == [False, True]
    cfg = ContextGraphConfig(node_mix=0.0, k_e=2, theta_e=0.5, hops=0, lexical_mix=0.0,
                             seed_rank_decay=1.0, question_write_factor=0.5)
    for question, expected in ((True, 0.5), (False, 1.0)):
        interp = TaskInterpretation(("play song",), (), (), question)
        cg = extract_context_graph(graph, interp, embedder=emb, index=index, config=cfg)
        scores = {t.name: t.score for t in cg.tools}
        assert scores == pytest.approx({"music.show_song": 1.0, "music.play_song": expected})
    off = replace(cfg, question_write_factor=1.0)
    interp = TaskInterpretation(("play song",), (), (), True)
    cg = extract_context_graph(graph, interp, embedder=emb, index=index, config=off)
    assert [t.score for t in cg.tools] == pytest.approx([1.0, 1.0])
