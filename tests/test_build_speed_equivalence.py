"""The fast paths of graph building give what a straightforward computation gives (issue 23).

Link inference scores candidate pairs in chunks, drops pairs that cannot reach ``min_weight``
before computing their cosine, embeds only the texts it needs and attaches the links as
columns. Here a plain per-pair loop over the same candidates, written from the definition in
:mod:`hyperplan.graph.links`, must give the same links and weights, exactly, on a small catalog
with every kind of evidence; and the batching of MiniLM and the embedding cache must not change
a vector.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path

import numpy as np
import pytest

from hyperplan.catalog import Catalog, build_catalog, make_tool, merge_catalogs
from hyperplan.embed import CachedEmbedder, HashingEmbedder
from hyperplan.embed import cache as cache_module
from hyperplan.embed.minilm import BATCH_TOKENS, MiniLMEmbedder, minilm_available
from hyperplan.graph import links
from hyperplan.graph.build import build_graph, structure_from_catalog
from hyperplan.graph.columns import with_link_columns
from hyperplan.graph.effects import is_credential
from hyperplan.graph.field_roles import (
    GENERIC_WORDS,
    ID_WORDS,
    FieldRole,
    field_role,
    leaf_key,
    role_suffixes,
)
from hyperplan.graph.links import LinkConfig, infer_links
from hyperplan.graph.model import Hypergraph, Link, NodeKind
from hyperplan.importers.openai_functions import load_openai_functions


def _bits(text: str, n: int) -> np.ndarray:
    return np.unpackbits(np.frombuffer(hashlib.sha256(text.encode()).digest()[:2], np.uint8))[:n]


class QuarterEmbedder:
    """Unit vectors of 16 entries of ±1/4: the signs of 12 entries from the text's first word,
    of 4 from the whole text, so texts with the same first word have cosines of 0.5 to 1. Every
    dot product is a multiple of 1/16, exact in float32 whatever the order of summation, so a
    reference can recompute each cosine exactly."""

    name = "quarters-16"
    dim = 16

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        rows = [np.r_[_bits((t.split() or [""])[0], 12), _bits(t, 4)] for t in texts]
        signs = np.array(rows, dtype=np.float32).reshape(len(texts), 16) * 2 - 1
        return signs * np.float32(0.25)


def _catalog() -> Catalog:
    """The demo catalog plus tools with shared keys, plurals, a nameless output, credentials
    of two apps, arrays, mismatched types and descriptions that name outputs."""
    demo = load_openai_functions(files("hyperplan") / "examples" / "music_catalog.json")

    def obj(required: Sequence[str] = (), **props: dict[str, object]) -> dict[str, object]:
        return {"type": "object", "properties": props, "required": list(required)}

    text = {"type": "string"}
    extra = [
        make_tool(name="shop.login", description="Log in to the shop.",
                  input_schema=obj(("email",), email=text),
                  output_schema=obj(access_token={"type": "string"})),
        make_tool(name="shop.list_orders", description="Orders of the user.",
                  input_schema=obj(("access_token",), access_token=text),
                  output_schema={"type": "array", "items": obj(
                      order_id={"type": "integer", "description": "id of the order"},
                      total={"type": "number"})}),
        make_tool(name="shop.refund", description="Refund orders; returns the refund id.",
                  input_schema=obj(("order_ids", "access_token"), access_token=text,
                                   order_ids={"type": "array", "description": "the order ids"},
                                   reason={"type": "string",
                                           "description": "why, e.g. the order total"}),
                  output_schema={"type": "string"}),
        make_tool(name="mail.send", description="Send a mail about a refund.",
                  input_schema=obj(("refund_id", "access_token"), refund_id=text,
                                   access_token=text,
                                   amount={"type": "boolean", "description": "total paid"}),
                  output_schema=obj(message_id={"type": "string"})),
    ]
    return merge_catalogs([demo, build_catalog(extra, source="extra")])


def _reference_links(graph: Hypergraph, embedder: QuarterEmbedder | None,
                     cfg: LinkConfig) -> dict[tuple[int, int], float]:
    """Links from the candidates of ``_candidate_pairs``, scored and selected pair by pair."""
    ins_nodes = [n for n in graph.nodes if n.kind is NodeKind.INPUT
                 and field_role(n.path) is not FieldRole.CONTROL]
    out_nodes = [n for n in graph.nodes if n.kind is NodeKind.OUTPUT]
    ins, outs, credential_keys = links._features(graph, ins_nodes, out_nodes)
    a, b = links._candidate_pairs(ins, outs, cfg, credential_keys)
    feats = ([links._input_features(graph, n) for n in ins_nodes],
             [links._output_features(graph, n) for n in out_nodes])
    scored = []
    for i, j in zip(a.tolist(), b.tolist(), strict=True):
        (key_i, name_i, desc_i), (key_o, name_o, _) = feats[0][i], feats[1][j]
        key = min(sum(w * key_o[k] for k, w in key_i.items() if k in key_o), 1.0)
        inter = float(len(name_i.keys() & name_o.keys()))
        n_in, n_out = float(len(name_i)), float(len(name_o))
        names = (0.5 * (inter / max(n_in + n_out - inter, 1.0))
                 + 0.5 * (inter / max(min(n_in, n_out), 1.0)))
        mention = float(len(desc_i.keys() & name_o.keys()) >= max(n_out, 1.0))
        cos = 0.0
        if embedder is not None and key < 1.0:
            u, v = embedder.embed([ins.texts[i], outs.texts[j]])
            cos = float(np.float32(u @ v))
        desc = min(max((cos - cfg.desc_low) / (cfg.desc_high - cfg.desc_low), 0.0), 1.0)
        node_i, node_o = ins_nodes[i], out_nodes[j]
        s_i, s_o = ins.spaces[i], outs.spaces[j]
        same = s_i == s_o or "" in (s_i, s_o)
        role = field_role(node_i.path)
        whole = inter >= n_in and node_o.path in ("result", "[]")
        kind = leaf_key(node_o.path) in role_suffixes(node_i.path)
        entity = same and any(t not in GENERIC_WORDS and t not in ID_WORDS
                              for t in name_i.keys() & name_o.keys())
        key_only = (not same or (role is FieldRole.IDENTIFIER and not whole and not entity)) \
            and not kind
        if key_only:
            key = key if key >= links.SPECIFIC_KEY else 0.0
        if kind:
            key = max(key, links.ROLE_KEY)
        if key_only:
            score = key
        else:
            score = max(key, cfg.w_name * names + cfg.w_desc * desc + cfg.w_mention * mention)
        fit = links.type_compatibility(node_o.type, node_i.type, "[]" in node_o.path)
        space = 1.0 if same else 0.0 if is_credential(node_i.path) else cfg.cross_namespace
        if role is FieldRole.GENERIC and not (same and (key > 0 or names > 0)) and key < 1.0:
            space = 0.0
        if role is FieldRole.GENERIC and "" not in (ins.servers[i], outs.servers[j]) \
                and ins.servers[i] != outs.servers[j]:
            space = 0.0
        scored.append((i, j, min(score, 1.0) * fit * space))
    return _reference_selection(scored, ins, outs, cfg)


def _reference_selection(scored: list[tuple[int, int, float]], ins: links._Side,
                         outs: links._Side, cfg: LinkConfig) -> dict[tuple[int, int], float]:
    """Threshold, the best output per (input, producer tool), the top ``max_links_per_input``."""
    best: dict[tuple[int, int], float] = {}
    for i, j, s in scored:
        if s >= cfg.min_weight:
            group = (i, int(outs.tools[j]))
            best[group] = max(best.get(group, 0.0), s)
    per_input: dict[int, list[tuple[float, int]]] = {}
    for i, j, s in scored:
        if s >= cfg.min_weight and s >= best[(i, int(outs.tools[j]))] - 1e-9:
            per_input.setdefault(i, []).append((-s, int(outs.ids[j])))
    return {(source, int(ins.ids[i])): -neg
            for i, ranked in per_input.items()
            for neg, source in sorted(ranked)[: cfg.max_links_per_input]}


@pytest.fixture(scope="module")
def skeleton() -> Hypergraph:
    return Hypergraph.from_parts(*structure_from_catalog(_catalog()), [])


@pytest.mark.parametrize("with_embedder", [False, True])
@pytest.mark.parametrize("chunk", [3, 1 << 17])
def test_links_equal_a_pair_by_pair_reference(skeleton: Hypergraph, with_embedder: bool,
                                              chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(links, "PAIR_CHUNK", chunk)
    monkeypatch.setattr(links, "COSINE_CHUNK", max(chunk // 2, 1))
    cfg = LinkConfig()
    embedder = QuarterEmbedder() if with_embedder else None
    expected = _reference_links(skeleton, embedder, cfg)
    inferred = {(lk.source, lk.target): lk.weight for lk in infer_links(
        skeleton, embedder=QuarterEmbedder() if with_embedder else None, config=cfg)
        if lk.evidence == "inferred"}
    assert len(expected) > 25  # the catalog exercises every kind of evidence
    if with_embedder:  # ... and descriptions change some links
        assert expected != _reference_links(skeleton, None, cfg)
    assert inferred == expected


def test_only_needed_texts_are_embedded_each_once(skeleton: Hypergraph) -> None:
    embedder = QuarterEmbedder()
    infer_links(skeleton, embedder=embedder)
    sent = [t for call in embedder.calls for t in call]
    assert len(embedder.calls) == 1 and len(sent) == len(set(sent)) > 0
    texts = {links._node_text(n) for n in skeleton.nodes if n.kind in (NodeKind.INPUT,
                                                                      NodeKind.OUTPUT)}
    assert set(sent) <= texts


def test_build_graph_equals_links_attached_one_by_one() -> None:
    catalog, embedder = _catalog(), HashingEmbedder()
    built = build_graph(catalog, embedder=embedder)
    skeleton = Hypergraph.from_parts(*structure_from_catalog(catalog), [])
    plain = skeleton.with_links(infer_links(skeleton, embedder=embedder))
    assert built.nodes == plain.nodes and built.tools == plain.tools
    assert list(built.links()) == list(plain.links())
    assert {k: v for k, v in built.metadata.items() if k != "build_seconds"} == {
        "source": catalog.source, "embedder": embedder.name,
        "link_config": LinkConfig().as_dict()}


def test_link_columns_deduplicate_and_order_as_from_parts(skeleton: Hypergraph) -> None:
    rng = np.random.default_rng(0)
    n_in, n = skeleton.n_input_nodes, skeleton.n_nodes
    src = rng.integers(n_in, n, 300)
    tgt = rng.integers(0, n_in, 300)
    weight = rng.choice([0.25, 0.5, 1.0], 300)
    evidence = tuple(f"e{k}" for k in range(300))
    raw = [Link(int(s), int(t), float(w), e)
           for s, t, w, e in zip(src, tgt, weight, evidence, strict=True)]
    fast = with_link_columns(skeleton, (src, tgt, weight, evidence), {"x": 1})
    plain = skeleton.with_links(raw, x=1)
    assert list(fast.links()) == list(plain.links()) and fast.metadata == plain.metadata


def test_minilm_batches_bound_rows_and_padded_tokens() -> None:
    embedder = MiniLMEmbedder.__new__(MiniLMEmbedder)
    embedder.batch_size = 64
    lengths = sorted([3] * 100 + [40] * 70 + [128] * 20 + [3000])
    batches = embedder._batches(lengths)
    assert [k for s in batches for k in range(len(lengths))[s]] == list(range(len(lengths)))
    for s in batches:
        rows = lengths[s]
        assert len(rows) <= 64 and (len(rows) == 1 or len(rows) * rows[-1] <= BATCH_TOKENS)


@pytest.mark.skipif(not minilm_available(), reason="MiniLM assets not installed")
def test_minilm_vectors_do_not_depend_on_batching() -> None:
    texts = [f"{word} of the {thing}" * reps for word in ("id", "name", "price")
             for thing in ("song", "order") for reps in (1, 5, 30)]
    one = MiniLMEmbedder(batch_size=1).embed(texts)
    assert np.array_equal(MiniLMEmbedder(batch_size=64).embed(texts), one)


def test_cache_keeps_computed_chunks_when_a_later_one_fails(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class FailingSecond(QuarterEmbedder):
        def embed(self, texts: Sequence[str]) -> np.ndarray:
            if self.calls:
                raise RuntimeError("down")
            return super().embed(texts)

    monkeypatch.setattr(cache_module, "_CHUNK", 2)
    texts = ["alpha", "beta", "gamma", "delta"]
    with CachedEmbedder(FailingSecond(), cache_dir=tmp_path) as cached, \
            pytest.raises(RuntimeError):
        cached.embed(texts)
    inner = QuarterEmbedder()
    with CachedEmbedder(inner, cache_dir=tmp_path) as cached:
        vectors = cached.embed(texts)
    assert inner.calls == [["gamma", "delta"]]  # alpha and beta were stored before the error
    assert np.array_equal(vectors, QuarterEmbedder().embed(texts))


def test_a_catalog_without_candidate_pairs_builds() -> None:
    def schema(field: str) -> dict[str, object]:
        return {"type": "object", "properties": {field: {"type": "string"}}}

    tools = [make_tool(name="make_cake", description="Bake.", input_schema=schema("flour"),
                       output_schema=schema("cake")),
             make_tool(name="paint_wall", description="Paint.", input_schema=schema("colour"),
                       output_schema=schema("wall"))]
    embedder = QuarterEmbedder()
    graph = build_graph(build_catalog(tools), embedder=embedder)
    assert graph.n_tools == 2 and not any(e == "inferred" for e in graph.link_evidence)
    assert embedder.calls == []  # no pair to score, nothing embedded
