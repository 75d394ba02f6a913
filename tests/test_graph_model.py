"""Hypergraph model: A_prod (Definition 5), neighbours (Definition 1), induction, validation."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from hyperplan.errors import GraphError
from hyperplan.graph import neighbours, subgraph, views
from hyperplan.graph.model import Hypergraph, Link, NodeKind, SchemaNode, ToolEdge, node_key

IN, PRE, OUT, EFF = NodeKind.INPUT, NodeKind.PRECONDITION, NodeKind.OUTPUT, NodeKind.EFFECT


def make_graph(spec, links=(), metadata=None):
    """``spec``: [(tool name, [(kind, path), ...]), ...]; links by node name with weights."""
    pending = [(t, kind, path) for t, (_, ports) in enumerate(spec) for kind, path in ports]
    pending.sort(key=lambda p: not p[1].input_side)
    nodes = [SchemaNode(i, kind, t, path) for i, (t, kind, path) in enumerate(pending)]
    tools = []
    for t, (name, _) in enumerate(spec):
        ins = tuple(n.id for n in nodes if n.tool == t and n.kind.input_side)
        outs = tuple(n.id for n in nodes if n.tool == t and not n.kind.input_side)
        tools.append(ToolEdge(t, name, f"tool {name}", ins, outs, ins))
    index = {node_key(tools[n.tool].name, n.kind, n.path): n.id for n in nodes}
    parsed = [Link(index[a], index[b], w, ev) for a, b, w, ev in links]
    return Hypergraph.from_parts(nodes, tools, parsed, metadata)


@pytest.fixture
def small():
    spec = [
        ("a.login", [(IN, "user"), (OUT, "token"), (OUT, "token_type"), (EFF, "a.auth")]),
        ("a.search", [(IN, "query"), (OUT, "items[].id"), (OUT, "items[].name")]),
        ("a.show", [(IN, "item_id"), (IN, "token"), (PRE, "a.auth"), (OUT, "name")]),
        ("b.lonely", [(IN, "x")]),
    ]
    links = [
        ("a.login:out:token", "a.show:in:token", 1.0, "inferred"),
        ("a.login:out:token_type", "a.show:in:token", 0.4, "inferred"),
        ("a.login:eff:a.auth", "a.show:pre:a.auth", 1.0, "effect"),
        ("a.search:out:items[].id", "a.show:in:item_id", 0.9, "inferred"),
        ("a.search:out:items[].name", "a.show:in:item_id", 0.3, "inferred"),
        ("a.show:out:name", "a.search:in:query", 0.6, "inferred"),
    ]
    return make_graph(spec, links, {"origin": "hand"})


def random_graph(seed: int, n_tools: int = 30, n_links: int = 160):
    rng = np.random.default_rng(seed)
    spec = []
    for t in range(n_tools):
        ports = [(IN, f"in{k}") for k in range(rng.integers(0, 4))]
        ports += [(PRE, f"p{t}")] if rng.random() < 0.2 else []
        ports += [(OUT, f"out{k}") for k in range(rng.integers(0, 4))]
        ports += [(EFF, f"e{t}")] if rng.random() < 0.2 else []
        spec.append((f"t{t:02d}", ports))
    base = make_graph(spec)
    ins = [n.id for n in base.nodes if n.kind.input_side]
    outs = [n.id for n in base.nodes if not n.kind.input_side]
    raw = [Link(int(rng.choice(outs)), int(rng.choice(ins)), float(rng.uniform(0.01, 1)), "r")
           for _ in range(n_links)]
    raw += raw[:20]  # exact duplicates, and re-weighted duplicates below
    raw += [Link(lk.source, lk.target, lk.weight / 2, "dup") for lk in raw[20:40]]
    return base.with_links(raw), raw


def brute_weights(raw):
    best: dict[tuple[int, int], float] = {}
    for lk in raw:
        best[(lk.source, lk.target)] = max(best.get((lk.source, lk.target), 0.0), lk.weight)
    return best


@pytest.mark.parametrize("seed", [0, 7, 2024])
def test_producer_matrix_is_max_over_outputs_of_link_weights(seed):
    graph, raw = random_graph(seed)
    weights = brute_weights(raw)
    expected = np.zeros((graph.n_input_nodes, graph.n_tools))
    for r in range(graph.n_input_nodes):
        for tool in graph.tools:
            expected[r, tool.id] = max((weights.get((o, r), 0.0) for o in tool.outputs),
                                       default=0.0)
    prod = graph.producer_matrix
    assert prod.shape == (graph.n_input_nodes, graph.n_tools)
    np.testing.assert_allclose(prod.toarray(), expected)
    assert graph.n_links == len(weights)
    assert expected.max() > 0
    for r in range(graph.n_input_nodes):
        pairs = graph.producers_of(r)
        assert [e for e, _ in pairs] == sorted(
            np.flatnonzero(expected[r]).tolist(), key=lambda e: (-expected[r, e], e))
        assert all(graph.support(e, r) == w for e, w in pairs)


@pytest.mark.parametrize("seed", [1, 99])
def test_upstream_downstream_match_definition_1_and_are_symmetric(seed):
    graph, raw = random_graph(seed)
    pairs = {(graph.nodes[s].tool, graph.nodes[t].tool) for s, t in brute_weights(raw)}
    for j in range(graph.n_tools):
        assert graph.upstream(j) == {a for a, b in pairs if b == j}
        assert graph.downstream(j) == {b for a, b in pairs if a == j}
        for i in range(graph.n_tools):
            assert (i in graph.upstream(j)) == (j in graph.downstream(i))


def test_duplicate_outputs_of_one_tool_take_max_not_sum(small):
    token = small.node("a.show:in:token").id
    login, search = small.tool("a.login").id, small.tool("a.search").id
    assert small.support(login, token) == 1.0  # max(1.0, 0.4), not 1.4
    item = small.node("a.show:in:item_id").id
    assert small.support(search, item) == pytest.approx(0.9)  # max(0.9, 0.3)
    assert small.producers_of(item) == [(search, pytest.approx(0.9))]
    assert [lk.weight for lk in small.links_into(token)] == [1.0, 0.4]
    assert small.upstream(small.tool("a.show").id) == {login, search}
    assert small.downstream(small.tool("a.show").id) == {search}
    assert small.upstream(small.tool("b.lonely").id) == set()
    assert small.downstream(small.tool("b.lonely").id) == set()


def test_producers_of_sorted_by_weight_then_tool_id():
    spec = [("p0", [(OUT, "v")]), ("p1", [(OUT, "v")]), ("p2", [(OUT, "v")]),
            ("p3", [(OUT, "v")]), ("c", [(IN, "v")])]
    links = [("p0:out:v", "c:in:v", 0.2, ""), ("p1:out:v", "c:in:v", 0.8, ""),
             ("p2:out:v", "c:in:v", 0.5, ""), ("p3:out:v", "c:in:v", 0.8, "")]
    expected = [(1, 0.8), (3, 0.8), (2, 0.5), (0, 0.2)]
    assert make_graph(spec, links).producers_of(0) == expected  # c:in:v is node 0


def test_duplicate_links_keep_max_weight_and_its_evidence():
    spec = [("p", [(OUT, "v")]), ("c", [(IN, "v")])]
    for order in ([0.3, 0.9, 0.5], [0.9, 0.3], [0.5, 0.9]):
        links = [("p:out:v", "c:in:v", w, f"ev{w}") for w in order]
        graph = make_graph(spec, links)
        assert list(graph.links()) == [Link(1, 0, 0.9, "ev0.9")]


def test_induce_keeps_exactly_inner_links_and_names(small):
    keep = [small.tool("a.show").id, small.tool("a.login").id]
    sub = small.induce(keep)
    assert [t.name for t in sub.tools] == ["a.login", "a.show"]
    assert sub.metadata == {"origin": "hand"}
    names = {small.node_name(n.id) for n in small.nodes if n.tool in keep}
    assert {sub.node_name(n.id) for n in sub.nodes} == names
    assert all(sub.nodes[i].kind.input_side for i in range(sub.n_input_nodes))
    inner = {(small.node_name(lk.source), small.node_name(lk.target), lk.weight, lk.evidence)
             for lk in small.links()
             if small.nodes[lk.source].tool in keep and small.nodes[lk.target].tool in keep}
    assert len(inner) == 3 and inner == {
        (sub.node_name(lk.source), sub.node_name(lk.target), lk.weight, lk.evidence)
        for lk in sub.links()}


@pytest.mark.parametrize("seed", [3, 11])
def test_induce_random_subsets_restrict_links_and_producer_matrix(seed):
    graph, _ = random_graph(seed)
    rng = np.random.default_rng(seed + 100)
    keep = sorted(rng.choice(graph.n_tools, size=12, replace=False).tolist())
    sub = graph.induce(keep)
    expected = {(graph.node_name(lk.source), graph.node_name(lk.target), lk.weight)
                for lk in graph.links()
                if graph.node_tool[lk.source] in keep and graph.node_tool[lk.target] in keep}
    assert {(sub.node_name(lk.source), sub.node_name(lk.target), lk.weight)
            for lk in sub.links()} == expected and len(expected) > 10
    for r in range(sub.n_input_nodes):
        old_r = graph.node(sub.node_name(r)).id
        for e, tool in enumerate(sub.tools):
            assert sub.support(e, r) == graph.support(graph.tool(tool.name).id, old_r)
    for tool in sub.tools:
        old = graph.tool(tool.name)
        assert [sub.node_name(v) for v in tool.inputs] == [graph.node_name(v) for v in old.inputs]
        assert [sub.node_name(v) for v in tool.outputs] == [
            graph.node_name(v) for v in old.outputs]


def test_arrays_are_read_only(small):
    for array in (small.link_source, small.link_target, small.link_weight, small.node_tool):
        assert not array.flags.writeable
        with pytest.raises(ValueError):
            array[0] = 0


def test_lookup_by_name_and_unknown_names(small):
    assert node_key("a.login", OUT, "token") == "a.login:out:token"
    assert small.node("a.show:pre:a.auth").kind is PRE
    assert small.tool("a.search").id == 1
    with pytest.raises(GraphError, match=re.escape("'a.nope'")):
        small.tool("a.nope")
    with pytest.raises(GraphError, match=re.escape("'a.show:in:zzz'")):
        small.node("a.show:in:zzz")


def _ok_parts():
    nodes = [SchemaNode(0, IN, 1, "x"), SchemaNode(1, OUT, 0, "y")]
    tools = [ToolEdge(0, "p", "", (), (1,), ()), ToolEdge(1, "c", "", (0,), (), (0,))]
    return nodes, tools


_OUT_FIRST = [SchemaNode(0, OUT, 0, "y"), SchemaNode(1, IN, 1, "x")]
_OUT_FIRST_TOOLS = [ToolEdge(0, "p", "", (), (0,), ()), ToolEdge(1, "c", "", (1,), (), ())]


@pytest.mark.parametrize(
    ("nodes", "tools", "message"),
    [
        ([SchemaNode(5, IN, 1, "x"), SchemaNode(1, OUT, 0, "y")], None, "node ids"),
        ([SchemaNode(0, IN, 9, "x"), SchemaNode(1, OUT, 0, "y")], None, "unknown tool"),
        (_OUT_FIRST, _OUT_FIRST_TOOLS, "input-side nodes must precede"),
        (None, [ToolEdge(0, "p", "", (), (1,), ()), ToolEdge(4, "c", "", (0,), (), ())],
         "tool ids"),
        (None, [ToolEdge(0, "p", "", (0,), (1,), ()), ToolEdge(1, "c", "", (), (), ())],
         "owned by another tool"),
    ],
)
def test_from_parts_rejects_bad_structure(nodes, tools, message):
    ok_nodes, ok_tools = _ok_parts()
    nodes, tools = nodes or ok_nodes, tools or ok_tools
    with pytest.raises(GraphError, match=message):
        Hypergraph.from_parts(nodes, tools, [])


@pytest.mark.parametrize(
    ("link", "message"),
    [
        (Link(1, 2, 0.5), "outside"),
        (Link(-1, 0, 0.5), "outside"),
        (Link(0, 0, 0.5), "from an output"),  # input -> input
        (Link(1, 1, 0.5), "from an output"),  # output -> output
        (Link(1, 0, 0.0), "weight"),
        (Link(1, 0, -0.2), "weight"),
        (Link(1, 0, 1.0001), "weight"),
        (Link(1, 0, math.nan), "weight"),
    ],
)
def test_from_parts_rejects_bad_links(link, message):
    with pytest.raises(GraphError, match=message):
        Hypergraph.from_parts(*_ok_parts(), [link])


@pytest.mark.parametrize("weight", [1.0, 1e-9])
def test_from_parts_accepts_boundary_weights(weight):
    graph = Hypergraph.from_parts(*_ok_parts(), [Link(1, 0, weight)])
    assert graph.producers_of(0) == [(0, weight)]


def test_from_parts_rejects_tool_port_out_of_range():
    nodes, tools = _ok_parts()
    with pytest.raises(GraphError):
        Hypergraph.from_parts(nodes, [tools[0], ToolEdge(1, "c", "", (0, 7), (), (0,))], [])


def test_empty_graph():
    graph = Hypergraph.from_parts([], [], [])
    assert graph.n_nodes == graph.n_tools == graph.n_links == graph.induce([]).n_tools == 0
    assert graph.producer_matrix.shape == (0, 0)


def test_views_name_writers_logins_and_input_nodes_by_name():
    """graph/views.py: the effect ``<tool>.done`` marks a writer, ``<ns>.authenticated`` a
    login; a writer that is no login is an unprompted writer; inputs and preconditions are
    indexed by path. The graph's attributes are these functions' results, computed once."""
    graph = make_graph([
        ("a.login", [(IN, "user"), (OUT, "token"), (EFF, "a.authenticated"),
                     (EFF, "a.login.done")]),
        ("a.delete", [(IN, "item_id"), (IN, "token"), (PRE, "a.authenticated"),
                      (EFF, "a.delete.done")]),
        ("a.show", [(IN, "item_id"), (OUT, "name"), (EFF, "a.show.seen")]),
    ])
    assert views.writing_tools(graph).tolist() == [True, True, False]
    assert views.authenticating_tools(graph).tolist() == [True, False, False]
    assert graph.unprompted_writers.tolist() == [False, True, False]
    assert graph.unprompted_writers is graph.unprompted_writers  # cached
    assert not graph.writing_tools.flags.writeable
    by_name = {name: [graph.node_name(i) for i in ids]
               for name, ids in graph.inputs_by_name.items()}
    assert by_name == {"user": ["a.login:in:user"],
                       "item_id": ["a.delete:in:item_id", "a.show:in:item_id"],
                       "token": ["a.delete:in:token"]}
    assert [graph.node_name(i) for i in graph.preconditions_by_path["a.authenticated"]] == [
        "a.delete:pre:a.authenticated"]


def test_queries_are_the_neighbour_functions(small):
    """The graph's neighbourhood methods are graph/neighbours.py's functions, and
    graph/subgraph.py's ``induce`` builds the same graph as the method."""
    show = small.tool_index["a.show"]
    item = small.node_index["a.show:in:item_id"]
    assert small.upstream(show) == neighbours.upstream(small, show) == {0, 1}
    assert small.producers_of(item) == neighbours.producers_of(small, item)
    assert small.links_into(item) == neighbours.links_into(small, item)
    assert small.support(1, item) == pytest.approx(0.9)
    sub = subgraph.induce(small, [1, 2])
    assert list(sub.links()) == list(small.induce([1, 2]).links())
