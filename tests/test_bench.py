"""Synthetic catalogs and ``hyperplan bench links``: determinism, sizes, JSON contract and
sub-quadratic growth of link inference (counted, not timed). Synthetic hypergraphs,
``Hypergraph.from_arrays`` and ``hyperplan bench scale`` (shape and contract, not timed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from hyperplan.cli import app
from hyperplan.errors import GraphError
from hyperplan.graph.build import build_graph
from hyperplan.graph.effects import namespace
from hyperplan.graph.model import Hypergraph, Link, NodeKind, SchemaNode, ToolEdge
from hyperplan.graph.schema_paths import input_fields, output_fields
from hyperplan.graph.text import name_tokens
from hyperplan_bench.cli.bench_cmds import parse_sizes
from hyperplan_bench.eval.link_scale import measure_links
from hyperplan_bench.eval.scale import degree_stats
from hyperplan_bench.synthetic import (
    MAX_IN_DEGREE,
    TOOLS_PER_APP,
    RandomWordEmbedder,
    id_inputs_with_producer,
    synthetic_catalog,
    synthetic_expectations,
    synthetic_hypergraph,
)


def _dump(catalog):
    return json.dumps([t.model_dump() for t in catalog.tools], sort_keys=True)


def test_same_seed_same_catalog_other_seed_other_catalog():
    assert _dump(synthetic_catalog(300, seed=3)) == _dump(synthetic_catalog(300, seed=3))
    assert _dump(synthetic_catalog(300, seed=3)) != _dump(synthetic_catalog(300, seed=4))


def test_catalog_is_identical_across_hash_seeds():
    code = ("import hashlib, json; from hyperplan_bench.synthetic import synthetic_catalog; "
            "c = synthetic_catalog(250, seed=1); print(hashlib.sha256(json.dumps("
            "[t.model_dump() for t in c.tools], sort_keys=True).encode()).hexdigest())")
    digests = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env={**os.environ, "PYTHONHASHSEED": str(h)}).stdout
        for h in (1, 2)
    }
    assert len(digests) == 1


@pytest.mark.parametrize("n", [0, 1, 2, 7, 39, 40, 41, 333, 1000])
def test_exact_sizes_unique_names(n):
    catalog = synthetic_catalog(n)
    assert len(catalog) == n
    assert len(set(catalog.names())) == n


def test_catalog_shape():
    catalog = synthetic_catalog(2000, seed=0)
    apps = {namespace(t) for t in catalog.tools}
    assert abs(len(apps) - 2000 / TOOLS_PER_APP) <= 1
    assert all(a.startswith("app") and a[3:].isdigit() for a in apps)
    names = catalog.names()
    for verb in ("login", "show_", "search_", "create_", "update_", "delete_"):
        assert sum(verb in n for n in names) >= 20, verb
    show = next(t for t in catalog.tools if ".show_" in t.name and "profile" not in t.name)
    entity = show.name.split(".show_")[1]
    required = [name_tokens(f.path) for f in input_fields(show.input_schema) if f.required]
    assert (*entity.split("_"), "id") in required, show.input_schema
    paths = [f.path for t in catalog.tools for f in output_fields(t.output_schema)]
    assert any("[]." in p and p.endswith("_id") for p in paths)  # orders[].order_id
    assert any(p.count(".") >= 2 and "[]" in p for p in paths)  # orders[].customer.email
    types = {f.type for t in catalog.tools for f in input_fields(t.input_schema)}
    assert {"string", "integer", "number", "boolean", "array"} <= types
    described = [f.description for t in catalog.tools for f in input_fields(t.input_schema)]
    assert 0.5 < sum(bool(d) for d in described) / len(described) < 1.0
    # vocabulary grows with the catalog
    def entities(c):
        return {t.name.split(".show_")[1] for t in c.tools if ".show_" in t.name}

    assert len(entities(synthetic_catalog(8000))) > 1.5 * len(entities(catalog))


def test_expectations_and_coverage():
    catalog = synthetic_catalog(400, seed=2)
    expectations = synthetic_expectations(catalog)
    assert len(expectations) > 100
    for exp in expectations:
        app = exp.tool.split(".")[0]
        assert exp.input.lower().endswith("id")
        assert exp.tool not in exp.producers
        assert all(p.split(".")[0] == app for p in exp.producers)
    by_tool = {e.tool: e for e in expectations}
    show = next(t for t in by_tool if ".show_" in t and "profile" not in t)
    entity = show.split(".show_")[1]
    assert any(".search_" in p or f".create_{entity}" in p for p in by_tool[show].producers)
    graph = build_graph(catalog)  # names and types only
    satisfied = id_inputs_with_producer(graph, expectations)
    assert satisfied / len(expectations) > 0.9


def test_parse_sizes():
    assert parse_sizes("1000, 10k,100_000") == [1000, 10000, 100000]


def test_cli_bench_links_json():
    result = CliRunner().invoke(app, ["bench", "links", "--sizes", "200,400", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["bench"] == "links"
    assert data["embedder"] == "hashing"
    assert data["seconds"] > 0
    runs = data["runs"]
    assert [r["tools"] for r in runs] == [200, 400]
    for run in runs:
        assert "error" not in run
        assert run["nodes"] > 5 * run["tools"]
        assert run["tools"] <= run["links"] <= run["candidate_pairs"]
        assert run["seconds"] > 0
        assert 50 < run["peak_rss_mb"] < 4000
        assert run["id_inputs"] > 0.2 * run["tools"]
        assert 0.9 <= run["id_inputs_with_producer"] <= 1.0
    assert runs[1]["nodes"] > runs[0]["nodes"]
    assert runs[1]["links"] > runs[0]["links"]


def test_link_inference_grows_sub_quadratically():
    small = measure_links(500, seed=0, embedder="none")
    large = measure_links(2000, seed=0, embedder="none")
    assert large["tools"] == 4 * small["tools"]
    links_per_tool = (small["links"] / small["tools"], large["links"] / large["tools"])
    assert links_per_tool[1] < 2 * links_per_tool[0]
    # 4x the tools: quadratic blocking would give 16x the candidate pairs
    assert large["candidate_pairs"] < 8 * small["candidate_pairs"]
    assert large["id_inputs_with_producer"] > 0.9


# ---------------------------------------------------------------- bench scale


def _same_graph(a, b):
    assert a.nodes == b.nodes
    assert a.tools == b.tools
    assert a.n_input_nodes == b.n_input_nodes
    for name in ("link_source", "link_target", "link_weight"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    assert a.link_evidence == b.link_evidence
    assert dict(a.metadata) == dict(b.metadata)
    assert np.array_equal(a.node_tool, b.node_tool)
    pa, pb = a.producer_matrix, b.producer_matrix
    assert pa.shape == pb.shape and (pa != pb).nnz == 0


def _random_columns(seed, n_tools=12, n_in=25, n_out=30, n_links=120):
    """Columns of a random small graph (input-side nodes first, owners and kinds random) and
    the same graph as SchemaNode / ToolEdge / Link lists for from_parts."""
    rng = np.random.default_rng(seed)
    kinds = np.concatenate([rng.choice([0, 1], n_in, p=[0.8, 0.2]),
                            rng.choice([2, 3], n_out, p=[0.8, 0.2])]).astype(np.int8)
    owner = rng.integers(0, n_tools, n_in + n_out)
    required = rng.random(n_in + n_out) < 0.5
    members = list(NodeKind)
    nodes = [SchemaNode(i, members[k], int(owner[i]), f"p{i % 7}", ("string", "integer")[i % 2],
                        f"node {i}", bool(required[i])) for i, k in enumerate(kinds.tolist())]
    tools = [ToolEdge(j, f"t{j}", f"tool {j}",
                      tuple(n.id for n in nodes if n.tool == j and n.kind.input_side),
                      tuple(n.id for n in nodes if n.tool == j and not n.kind.input_side),
                      tuple(n.id for n in nodes if n.tool == j and n.kind.input_side
                            and n.required), {"k": j})
             for j in range(n_tools)]
    src = rng.integers(n_in, n_in + n_out, n_links)
    tgt = rng.integers(0, n_in, n_links)
    weight = rng.choice([0.25, 0.5, 0.75, 1.0], n_links)  # many exact ties among duplicates
    src[-20:], tgt[-20:] = src[:20], tgt[:20]  # duplicates
    evidence = [f"e{k}" for k in range(n_links)]
    links = [Link(int(s), int(t), float(w), e)
             for s, t, w, e in zip(src, tgt, weight, evidence, strict=True)]
    columns = {
        "node_kind": kinds, "node_tool": owner, "node_path": [n.path for n in nodes],
        "node_type": [n.type for n in nodes], "node_description": [n.description for n in nodes],
        "node_required": required, "tool_name": [t.name for t in tools],
        "tool_description": [t.description for t in tools],
        "tool_metadata": [t.metadata for t in tools], "link_source": src, "link_target": tgt,
        "link_weight": weight, "link_evidence": evidence, "metadata": {"seed": seed},
    }
    return columns, nodes, tools, links


@pytest.mark.parametrize("seed", range(5))
def test_from_arrays_equals_from_parts(seed):
    columns, nodes, tools, links = _random_columns(seed)
    expected = Hypergraph.from_parts(nodes, tools, links, {"seed": seed})
    _same_graph(Hypergraph.from_arrays(**columns), expected)
    # kinds given as NodeKind members, lists instead of arrays
    columns |= {"node_kind": [n.kind for n in nodes], "link_source": columns["link_source"]
                .tolist(), "node_required": columns["node_required"].tolist()}
    _same_graph(Hypergraph.from_arrays(**columns), expected)


def test_from_arrays_defaults_and_empty():
    graph = Hypergraph.from_arrays(node_kind=["in", "out"], node_tool=[0, 0],
                                   node_path=["a", "b"], tool_name=["t"])
    assert graph.nodes == (SchemaNode(0, NodeKind.INPUT, 0, "a"),
                           SchemaNode(1, NodeKind.OUTPUT, 0, "b"))
    assert graph.tools == (ToolEdge(0, "t", "", (0,), (1,), ()),)
    assert graph.n_links == 0 and graph.producer_matrix.shape == (1, 1)
    empty = Hypergraph.from_arrays(node_kind=[], node_tool=[], node_path=[], tool_name=[])
    assert empty.n_nodes == empty.n_tools == empty.n_links == 0


@pytest.mark.parametrize("case", ["tool", "order", "range", "direction", "weight0", "weight2",
                                  "nan", "later_bad_link"])
def test_from_arrays_rejects_what_from_parts_rejects(case):
    columns, nodes, tools, links = _random_columns(7)
    n_in = int((columns["node_kind"] <= 1).sum())
    src, tgt = columns["link_source"].copy(), columns["link_target"].copy()
    weight = columns["link_weight"].copy()
    if case == "tool":
        columns["node_tool"] = columns["node_tool"].copy()
        columns["node_tool"][3] = 99
        nodes[3] = SchemaNode(3, nodes[3].kind, 99, nodes[3].path, nodes[3].type,
                              nodes[3].description, nodes[3].required)
    elif case == "order":  # an input-side node after the first output-side node
        kinds = columns["node_kind"].copy()
        kinds[n_in + 2] = 0
        columns["node_kind"] = kinds
        nodes[n_in + 2] = SchemaNode(n_in + 2, NodeKind.INPUT, nodes[n_in + 2].tool, "x")
    elif case == "range":
        tgt[5] = 1000
    elif case == "direction":
        src[5], tgt[5] = tgt[5], src[5]
    elif case in ("weight0", "weight2", "nan"):
        weight[5] = {"weight0": 0.0, "weight2": 1.5, "nan": float("nan")}[case]
    else:  # the first bad link decides the message
        weight[9], tgt[4] = 2.0, -1
    columns |= {"link_source": src, "link_target": tgt, "link_weight": weight}
    links = [Link(int(s), int(t), float(w), e) for s, t, w, e in
             zip(src, tgt, weight, columns["link_evidence"], strict=True)]
    with pytest.raises(GraphError) as parts_error:
        Hypergraph.from_parts(nodes, tools, links)
    with pytest.raises(GraphError) as arrays_error:
        Hypergraph.from_arrays(**columns)
    assert str(arrays_error.value) == str(parts_error.value)


def test_synthetic_hypergraph_is_deterministic():
    a, b = synthetic_hypergraph(400, seed=3), synthetic_hypergraph(400, seed=3)
    _same_graph(a, b)
    c = synthetic_hypergraph(400, seed=4)
    assert not np.array_equal(a.link_source, c.link_source) or a.nodes != c.nodes


@pytest.mark.parametrize("n", [0, 1, 2, 39, 40, 41, 333])
def test_synthetic_hypergraph_exact_sizes_unique_names(n):
    graph = synthetic_hypergraph(n)
    assert graph.n_tools == n
    assert len({t.name for t in graph.tools}) == n
    assert len(graph.node_index) == graph.n_nodes  # node keys are unique too


def test_synthetic_hypergraph_shape():
    graph = synthetic_hypergraph(5000, seed=1)
    kinds = [[graph.nodes[v].kind for v in (*t.inputs, *t.outputs)] for t in graph.tools]
    ports_in = [sum(k is NodeKind.INPUT for k in ks) for ks in kinds]
    pre = NodeKind.PRECONDITION
    required = [sum(graph.nodes[r].kind is not pre for r in t.required) for t in graph.tools]
    outputs = [sum(k is NodeKind.OUTPUT for k in ks) for ks in kinds]
    assert max(required) == 4 and min(required) == 0
    assert all(0 <= p - r <= 2 for p, r in zip(ports_in, required, strict=True))
    assert min(outputs) == 1 and max(outputs) == 6
    with_pre = np.mean([pre in ks for ks in kinds])
    with_eff = np.mean([NodeKind.EFFECT in ks for ks in kinds])
    assert 0.08 < with_pre < 0.16 and 0.08 < with_eff < 0.18  # logins always have one
    assert 5 <= graph.n_links / graph.n_tools <= 20
    assert graph.link_weight.min() > 0 and graph.link_weight.max() <= 1
    assert (graph.link_weight < 0.5).mean() > 0.05  # weak links exist
    owners = graph.node_tool
    assert not np.any(owners[graph.link_source] == owners[graph.link_target])
    apps = {t.metadata["app"] for t in graph.tools}
    assert len(apps) == 5000 // TOOLS_PER_APP
    assert all(t.name.split(".")[0] == t.metadata["app"] for t in graph.tools)
    # most links stay inside their app
    app_of = np.asarray([t.id // TOOLS_PER_APP for t in graph.tools])
    assert (app_of[owners[graph.link_source]] == app_of[owners[graph.link_target]]).mean() > 0.6
    pre_links = [k for k, e in enumerate(graph.link_evidence) if e == "effect"]
    assert pre_links and all(graph.nodes[graph.link_source[k]].path
                             == graph.nodes[graph.link_target[k]].path for k in pre_links)


def test_synthetic_degrees_are_heavy_tailed():
    small, large = synthetic_hypergraph(2000, seed=0), synthetic_hypergraph(20000, seed=0)
    stats = degree_stats(large)
    assert stats["in_degree_max"] >= 10 * max(stats["in_degree_median"], 1)
    assert stats["in_degree_max"] <= MAX_IN_DEGREE + large.n_tools  # ports <= 64 + effects
    assert stats["out_degree_max"] >= 50 * max(stats["out_degree_median"], 1)
    # preferential attachment: the most popular outputs grow with the catalog
    assert stats["out_degree_max"] > 2 * degree_stats(small)["out_degree_max"]
    prod_rows = np.diff(large.producer_matrix.indptr)
    assert prod_rows.max() <= MAX_IN_DEGREE + TOOLS_PER_APP
    assert np.median(prod_rows) <= 2


def test_random_word_embedder(monkeypatch):
    monkeypatch.setattr(RandomWordEmbedder, "_CHUNK", 3)  # vocabulary grows across chunks
    texts = ["search orders", "Show the ORDER status", "delete a playlist", "", "order_id",
             "playlists of zenmar", "search orders"]
    emb = RandomWordEmbedder(dim=32, seed=1)
    vecs = emb.embed(texts)
    assert vecs.shape == (7, 32) and vecs.dtype == np.float32
    norms = np.linalg.norm(vecs, axis=1)
    assert np.allclose(norms[[0, 1, 2, 4, 5, 6]], 1, atol=1e-5) and norms[3] == 0
    assert np.array_equal(vecs[0], vecs[6])
    assert vecs[0] @ vecs[1] > 0.2 > abs(vecs[0] @ vecs[2])  # shared word "order(s)"
    again = RandomWordEmbedder(dim=32, seed=1).embed(texts[::-1])[::-1]
    assert np.allclose(vecs, again, atol=1e-6)  # a word's vector does not depend on order
    assert emb.name != RandomWordEmbedder(dim=32, seed=2).name


def test_cli_bench_scale_json():
    result = CliRunner().invoke(app, ["bench", "scale", "--sizes", "300,600", "--json",
                                      "--terminals", "40", "--requests", "10"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["bench"] == "scale" and data["seed"] == 0 and data["seconds"] > 0
    runs = data["runs"]
    assert [r["tools"] for r in runs] == [300, 600]
    for run in runs:
        assert "error" not in run, run
        for key in ("tools", "nodes", "links", "build_seconds", "peak_rss_mb", "doe_ms_p50",
                    "doe_ms_p99", "doe_complete", "context_ms_p50", "context_ms_p99"):
            assert key in run, key
        assert run["nodes"] > 4 * run["tools"] and run["links"] > 4 * run["tools"]
        assert 0 < run["doe_ms_p50"] <= run["doe_ms_p99"]
        assert 0 < run["context_ms_p50"] <= run["context_ms_p99"]
        assert 0 < run["doe_complete"] <= 1
        assert run["doe_terminals"] == 40 and run["context_requests"] == 10
        assert 50 < run["peak_rss_mb"] < 4000
        assert run["embedder"].startswith("random-words")
    assert runs[1]["links"] > runs[0]["links"]


def test_cli_bench_scale_table_and_bad_embedder():
    result = CliRunner().invoke(app, ["bench", "scale", "--sizes", "200", "--terminals", "5",
                                      "--requests", "0"])
    assert result.exit_code == 0, result.output
    assert "bench scale" in result.stdout and "200" in result.stdout
    bad = CliRunner().invoke(app, ["bench", "scale", "--sizes", "200", "--embedder", "minilm"])
    assert bad.exit_code != 0
