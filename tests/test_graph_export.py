"""DOT / Mermaid export and tool neighbourhoods."""

from __future__ import annotations

import re
from collections import Counter
from importlib.resources import files

import pytest

from conftest import shared_path
from hyperplan.errors import GraphError
from hyperplan.graph import build_graph
from hyperplan.graph.export import neighbourhood, to_dot, to_mermaid
from hyperplan.graph.model import Hypergraph, Link, NodeKind, SchemaNode, ToolEdge
from hyperplan.importers.openai_functions import load_openai_functions
from hyperplan_bench.importers.appworld import load_appworld

DOT_STRING = r'"(?:[^"\\]|\\.)*"'
DOT_NODE = re.compile(rf"^  t(\d+) \[label=({DOT_STRING})\];$")
DOT_EDGE = re.compile(rf"^  t(\d+) -> t(\d+) \[label=({DOT_STRING}), fontsize=8\];$")
MERMAID_NODE = re.compile(r'^  t(\d+)\["([^"\[\]]*)"\]$')
MERMAID_EDGE = re.compile(r'^  t(\d+) -->\|"([^"\[\]|]*)"\| t(\d+)$')


@pytest.fixture(scope="module")
def demo():
    return build_graph(load_openai_functions(files("hyperplan") / "examples" /
                                             "music_catalog.json"))


@pytest.fixture
def weird():
    """Names with quotes, brackets, braces and pipes."""
    nodes = [SchemaNode(0, NodeKind.INPUT, 1, 'q"x'), SchemaNode(1, NodeKind.OUTPUT, 0, "a"),
             SchemaNode(2, NodeKind.OUTPUT, 0, "rows[].id"), SchemaNode(3, NodeKind.OUTPUT, 0, "z")]
    tools = [ToolEdge(0, 'say "hi" [x]', "", (), (1, 2, 3), ()),
             ToolEdge(1, "c|d{e}#;<f>", "", (0,), (), ())]
    links = [Link(1, 0, 0.5), Link(2, 0, 0.7), Link(3, 0, 0.2)]
    return Hypergraph.from_parts(nodes, tools, links)


def unescape(dot_string: str) -> str:
    return re.sub(r"\\(.)", r"\1", dot_string[1:-1])


def check_dot_structure(text: str) -> None:
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{}":
            depth += 1 if ch == "{" else -1
            assert depth >= 0
    assert depth == 0 and not in_string


def parse_dot(graph: Hypergraph, text: str):
    check_dot_structure(text)
    lines = text.splitlines()
    assert lines[0] == "digraph hyperplan {" and lines[-1] == "}"
    nodes = {int(m[1]): unescape(m[2]) for m in map(DOT_NODE.match, lines) if m}
    edges = {(int(m[1]), int(m[2])): m[3][1:-1].split("\\n")
             for m in map(DOT_EDGE.match, lines) if m}
    assert len(lines) == 3 + len(nodes) + len(edges) + 1  # nothing unparsed
    assert sorted(nodes) == list(range(graph.n_tools))
    assert all(a in nodes and b in nodes for a, b in edges)
    return nodes, edges


def tool_pairs(graph: Hypergraph, min_weight: float = 0.0) -> Counter:
    return Counter((int(graph.node_tool[lk.source]), int(graph.node_tool[lk.target]))
                   for lk in graph.links() if lk.weight >= min_weight)


def test_dot_of_demo_graph(demo):
    nodes, edges = parse_dot(demo, to_dot(demo))
    assert nodes[demo.tool("music.like_song").id] == "music.like_song(song_id, access_token, " \
        "music.authenticated)"
    pairs = tool_pairs(demo)
    assert set(edges) == set(pairs)
    for pair, labels in edges.items():
        assert len(labels) == min(pairs[pair], 3) + (pairs[pair] > 3)
    login, show = demo.tool("music.login").id, demo.tool("music.show_song").id
    assert sorted(edges[(login, show)]) == [
        "access_token -> access_token (1.00)",
        "music.authenticated -> music.authenticated (1.00)",
    ]


def test_dot_min_weight_and_max_labels(demo):
    _, strong = parse_dot(demo, to_dot(demo, min_weight=0.95))
    assert set(strong) == set(tool_pairs(demo, 0.95)) != set(tool_pairs(demo))
    _, short = parse_dot(demo, to_dot(demo, max_labels=1))
    login, show = demo.tool("music.login").id, demo.tool("music.show_song").id
    assert short[(login, show)][1:] == ["..."] and len(short[(login, show)]) == 2


def test_dot_escapes_quotes_in_names(weird):
    text = to_dot(weird)
    nodes, edges = parse_dot(weird, text)
    assert nodes == {0: 'say "hi" [x]()', 1: 'c|d{e}#;<f>(q"x)'}
    assert [unescape(f'"{lab}"') for lab in edges[(0, 1)]] == [  # in link order
        'a -> q"x (0.50)', 'rows[].id -> q"x (0.70)', 'z -> q"x (0.20)']


def test_dot_escapes_backslashes_in_edge_labels():
    nodes = [SchemaNode(0, NodeKind.INPUT, 1, "x"), SchemaNode(1, NodeKind.OUTPUT, 0, 'b\\"c')]
    tools = [ToolEdge(0, "p", "", (), (1,), ()), ToolEdge(1, "c", "", (0,), (), ())]
    graph = Hypergraph.from_parts(nodes, tools, [Link(1, 0, 0.5)])
    _, edges = parse_dot(graph, to_dot(graph))
    assert unescape(f'"{edges[(0, 1)][0]}"') == 'b\\"c -> x (0.50)'


def parse_mermaid(graph: Hypergraph, text: str):
    lines = text.splitlines()
    assert lines[0] == "flowchart LR"
    nodes = {int(m[1]): m[2] for m in map(MERMAID_NODE.match, lines[1:]) if m}
    edges = {(int(m[1]), int(m[3])): m[2] for m in map(MERMAID_EDGE.match, lines[1:]) if m}
    assert len(lines) == 1 + len(nodes) + len(edges)  # every line is a node or an edge
    assert sorted(nodes) == list(range(graph.n_tools))
    assert all(a in nodes and b in nodes for a, b in edges)
    return nodes, edges


def test_mermaid_of_demo_graph(demo):
    nodes, edges = parse_mermaid(demo, to_mermaid(demo))
    assert [nodes[t.id] for t in demo.tools] == [t.name for t in demo.tools]
    assert set(edges) == set(tool_pairs(demo))
    search, like = demo.tool("music.search_songs").id, demo.tool("music.like_song").id
    assert edges[(search, like)] == "#91;#93;.song_id → song_id (1.00)"  # shows [].song_id
    _, strong = parse_mermaid(demo, to_mermaid(demo, min_weight=0.95, max_labels=1))
    assert set(strong) == set(tool_pairs(demo, 0.95))
    login, show = demo.tool("music.login").id, demo.tool("music.show_song").id
    assert strong[(login, show)].endswith("  ...")


def test_mermaid_sanitises_names(weird):
    nodes, edges = parse_mermaid(weird, to_mermaid(weird, min_weight=0.4))
    assert nodes == {0: "say  hi   x ", 1: "c d e    f "}
    assert list(edges) == [(0, 1)] and "z →" not in edges[(0, 1)]
    assert edges[(0, 1)] == "a → q x (0.50)  rows#91;#93;.id → q x (0.70)"  # shows rows[].id


def test_neighbourhood_one_hop_is_tool_plus_neighbours(demo):
    for tool in demo.tools:
        expected = {tool.id} | demo.upstream(tool.id) | demo.downstream(tool.id)
        assert neighbourhood(demo, [tool.name], hops=1) == sorted(expected)
        assert neighbourhood(demo, [tool.name], hops=0) == [tool.id]
    login = demo.tool("music.login").id
    assert neighbourhood(demo, ["music.like_song"]) == sorted(
        {demo.tool(n).id for n in ("music.like_song", "music.search_songs", "music.show_song",
                                   "music.show_playlist", "music.show_playlist_library")}
        | {login})  # show_playlist_library: its playlists' song_ids hold song ids


def test_neighbourhood_two_hops_and_several_starts(demo):
    names = [t.name for t in demo.tools]
    for tool in demo.tools:
        one = neighbourhood(demo, [tool.name], hops=1)
        two = set().union(*(neighbourhood(demo, [names[t]], hops=1) for t in one))
        assert neighbourhood(demo, [tool.name], hops=2) == sorted(two)
    both = neighbourhood(demo, ["mail.send_email", "profile.show_profile"])
    assert both == sorted(set(neighbourhood(demo, ["mail.send_email"]))
                          | set(neighbourhood(demo, ["profile.show_profile"])))
    with pytest.raises(GraphError, match=re.escape("'music.nope'")):
        neighbourhood(demo, ["music.nope"])


def test_export_of_appworld_neighbourhood():
    graph = build_graph(load_appworld(shared_path("appworld", "api_docs")))
    keep = neighbourhood(graph, ["spotify.login"], hops=1)
    assert len(keep) == 1 + 72 + 1  # itself, protected Spotify APIs, the password source
    sub = graph.induce(keep)
    nodes, edges = parse_dot(sub, to_dot(sub))
    assert set(nodes.values()) == {f"{t.name}({', '.join(sub.nodes[v].path for v in t.inputs)})"
                                   for t in sub.tools}
    assert set(edges) == set(tool_pairs(sub))
    mermaid_nodes, _ = parse_mermaid(sub, to_mermaid(sub))
    assert sorted(mermaid_nodes.values()) == sorted(graph.tools[t].name for t in keep)
