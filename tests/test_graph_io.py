"""save_graph / load_graph: exact round trips and precise errors naming the file."""

from __future__ import annotations

import json
import re
from importlib.resources import files

import numpy as np
import pytest

from hyperplan.errors import GraphError
from hyperplan.graph import build_graph, load_graph, save_graph
from hyperplan.graph.io import matrix_path
from hyperplan.graph.model import Hypergraph, Link, NodeKind, SchemaNode, ToolEdge
from hyperplan.importers.openai_functions import load_openai_functions


@pytest.fixture(scope="module")
def demo():
    return build_graph(load_openai_functions(files("hyperplan") / "examples" /
                                             "music_catalog.json"))


@pytest.fixture
def hand():
    """Three evidence kinds, two outputs of one tool into one input, tool metadata."""
    nodes = [
        SchemaNode(0, NodeKind.INPUT, 1, "id", "integer", "the id", True),
        SchemaNode(1, NodeKind.PRECONDITION, 1, "s.ok", "boolean", "", True),
        SchemaNode(2, NodeKind.OUTPUT, 0, "items[].id", "integer", 'say "hi" ü'),
        SchemaNode(3, NodeKind.OUTPUT, 0, "other", "string"),
        SchemaNode(4, NodeKind.EFFECT, 0, "s.ok", "boolean"),
    ]
    tools = [
        ToolEdge(0, "s.list", "List.", (), (2, 3, 4), (), {"method": "GET", "n": 3}),
        ToolEdge(1, "s.get", "Get.", (0, 1), (), (0, 1), {}),
    ]
    links = [Link(2, 0, 0.8, "inferred"), Link(3, 0, 0.55, "override"), Link(4, 1, 1.0, "effect")]
    return Hypergraph.from_parts(nodes, tools, links, {"source": "hand", "k": [1, 2]})


def assert_same(a: Hypergraph, b: Hypergraph) -> None:
    assert a.nodes == b.nodes
    assert a.tools == b.tools
    assert a.n_input_nodes == b.n_input_nodes
    for name in ("link_source", "link_target", "link_weight"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.link_evidence == b.link_evidence
    assert dict(a.metadata) == dict(b.metadata)
    assert a.producer_matrix.shape == b.producer_matrix.shape
    np.testing.assert_array_equal(a.producer_matrix.toarray(), b.producer_matrix.toarray())


@pytest.mark.parametrize("which", ["demo", "hand"])
def test_round_trip_is_exact(which, request, tmp_path):
    graph = request.getfixturevalue(which)
    json_path, npz_path = save_graph(graph, tmp_path / "g.json")
    assert (json_path, npz_path) == (tmp_path / "g.json", tmp_path / "g.npz")
    loaded = load_graph(json_path)
    assert_same(graph, loaded)
    recomputed = Hypergraph.from_parts(loaded.nodes, loaded.tools, loaded.links())
    np.testing.assert_array_equal(loaded.producer_matrix.toarray(),
                                  recomputed.producer_matrix.toarray())
    for r in range(loaded.n_input_nodes):
        assert loaded.producers_of(r) == graph.producers_of(r)
    for t in range(loaded.n_tools):
        assert loaded.upstream(t) == graph.upstream(t)
        assert loaded.downstream(t) == graph.downstream(t)
    assert not loaded.link_weight.flags.writeable
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json", "g.npz"]  # no temp files


def test_hand_round_trip_values(hand, tmp_path):
    save_graph(hand, tmp_path / "g.json")
    loaded = load_graph(tmp_path / "g.json")
    assert loaded.support(0, 0) == 0.8  # max(0.8, 0.55)
    assert loaded.link_evidence == ("inferred", "override", "effect")
    assert loaded.tool("s.list").metadata == {"method": "GET", "n": 3}
    assert loaded.node("s.list:out:items[].id").description == 'say "hi" ü'
    assert loaded.metadata == {"source": "hand", "k": [1, 2]}
    doc = json.loads((tmp_path / "g.json").read_text("utf-8"))
    assert doc["matrices"]["evidence"] == ["effect", "inferred", "override"]
    assert doc["matrices"]["n_links"] == 3


def test_empty_graph_round_trip(tmp_path):
    empty = Hypergraph.from_parts([], [], [])
    save_graph(empty, tmp_path / "e.json")
    assert_same(empty, load_graph(tmp_path / "e.json"))


def test_non_json_suffix_and_overwrite(hand, demo, tmp_path):
    path = tmp_path / "sub" / "graph.hp"
    assert matrix_path(path) == tmp_path / "sub" / "graph.hp.npz"
    save_graph(demo, path)
    save_graph(hand, path)  # replaced, not merged
    assert_same(hand, load_graph(path))
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["graph.hp", "graph.hp.npz"]


def _error(path, pattern):
    with pytest.raises(GraphError) as info:
        load_graph(path)
    message = str(info.value)
    assert str(path) in message
    assert re.search(pattern, message), message
    return message


def test_missing_file(tmp_path):
    _error(tmp_path / "nope.json", "not found")


def test_malformed_json(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"format": "hyperplan.graph",\n  "version": ', "utf-8")
    _error(path, r"malformed JSON .*line 2")


@pytest.mark.parametrize("doc", [{"format": "other", "version": 1}, [1, 2], "text"])
def test_wrong_format(tmp_path, doc):
    path = tmp_path / "other.json"
    path.write_text(json.dumps(doc), "utf-8")
    _error(path, "not a hyperplan graph file")


def _saved(hand, tmp_path):
    json_path, npz_path = save_graph(hand, tmp_path / "g.json")
    return json_path, npz_path, json.loads(json_path.read_text("utf-8"))


@pytest.mark.parametrize("version", [2, 0, None, "1"])
def test_wrong_version_asks_for_rebuild(hand, tmp_path, version):
    json_path, _, doc = _saved(hand, tmp_path)
    doc["version"] = version
    json_path.write_text(json.dumps(doc), "utf-8")
    message = _error(json_path, "rebuild")
    assert f"version {version}" in message


def test_missing_npz(hand, tmp_path):
    json_path, npz_path, _ = _saved(hand, tmp_path)
    npz_path.unlink()
    message = _error(json_path, "missing")
    assert str(npz_path) in message


def test_tampered_npz(hand, tmp_path):
    json_path, npz_path, _ = _saved(hand, tmp_path)
    other = Hypergraph.from_parts(hand.nodes, hand.tools, [Link(2, 0, 0.1, "x")])
    save_graph(other, tmp_path / "other.json")
    npz_path.write_bytes((tmp_path / "other.npz").read_bytes())  # a valid npz, wrong graph
    message = _error(json_path, "does not match")
    assert str(npz_path) in message
    raw = bytearray((tmp_path / "other.npz").read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    npz_path.write_bytes(bytes(raw))
    _error(json_path, "does not match")


def test_link_count_mismatch(hand, tmp_path):
    json_path, _, doc = _saved(hand, tmp_path)
    doc["matrices"]["n_links"] = 7
    json_path.write_text(json.dumps(doc), "utf-8")
    _error(json_path, "link count mismatch")


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda d: d.pop("nodes"),
        lambda d: d["nodes"][0].__setitem__(0, "bogus-kind"),
        lambda d: d["nodes"][0].pop(),
        lambda d: d["tools"][0].pop("inputs"),
        lambda d: d.pop("matrices"),
    ],
    ids=["no-nodes", "bad-kind", "short-node", "tool-no-inputs", "no-matrices"],
)
def test_corrupt_document(hand, tmp_path, corrupt):
    json_path, _, doc = _saved(hand, tmp_path)
    corrupt(doc)
    json_path.write_text(json.dumps(doc), "utf-8")
    _error(json_path, "corrupt graph file")


@pytest.mark.parametrize(
    "corrupt",
    [lambda d: d["matrices"].pop("evidence"), lambda d: d.__setitem__("matrices", [])],
    ids=["no-evidence", "matrices-list"],
)
def test_corrupt_matrices_section(hand, tmp_path, corrupt):
    json_path, _, doc = _saved(hand, tmp_path)
    corrupt(doc)
    json_path.write_text(json.dumps(doc), "utf-8")
    _error(json_path, "corrupt graph file")
