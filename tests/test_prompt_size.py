"""Large real-world catalogs in retrieval and prompts: concise tool descriptions, capped output
lists, one link per producer and input, and a warm embedding cache after ``graph build``."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pytest

from hyperplan.cli.common import printed_warnings
from hyperplan.cli.graph_cmds import warm_retrieval_cache
from hyperplan.embed.base import FloatMatrix
from hyperplan.embed.cache import CachedEmbedder
from hyperplan.graph.model import Hypergraph, Link, NodeKind, SchemaNode, ToolEdge
from hyperplan.graph.text import concise
from hyperplan.retrieve import GraphIndex, index_texts, serialize_tools, tool_text

GITHUB_LIKE = ("Create an issue comment\n\nYou can use the REST API to create comments on "
               "issues and pull requests. Every pull request is an issue.\n\nThis endpoint "
               "triggers [notifications](https://docs.github.com/...).")


def test_concise_keeps_the_first_paragraph_and_whole_sentences() -> None:
    assert concise(GITHUB_LIKE) == "Create an issue comment"
    assert concise(GITHUB_LIKE, first_paragraph=False, limit=110) == (
        "Create an issue comment You can use the REST API to create comments on issues and "
        "pull requests.")
    assert concise("  Play   a\nsong. ") == "Play a song."
    # no sentence ends in the limit: cut at a word, with an ellipsis
    assert concise("word " * 100, limit=23) == "word word word word…"
    # a sentence ending before a third of the limit is not enough: cut at a word instead
    assert concise("Hi. " + "long words here " * 30, limit=60) == (
        "Hi. long words here long words here long words here long…")
    assert concise("x" * 50, limit=10) == "x" * 10 + "…"
    assert concise("") == ""


def test_tool_text_embeds_the_concise_description() -> None:
    tool = ToolEdge(0, "issues/create-comment", GITHUB_LIKE, (), (), ())
    assert tool_text(tool) == "issues create comment: Create an issue comment"


def _wide_graph(n_fields: int) -> Hypergraph:
    """``get_repo`` returns ``n_fields`` nested fields plus ``owner.login``, which feeds
    ``star``'s ``owner`` (twice: from ``owner.login`` at 0.9 and ``name`` at 0.5)."""
    paths = ["name"] + [f"meta.f{i}" for i in range(n_fields - 2)] + ["owner.login"]
    nodes = [SchemaNode(0, NodeKind.INPUT, 1, "owner", "string", "", True)]
    nodes += [SchemaNode(1 + k, NodeKind.OUTPUT, 0, p, "string") for k, p in enumerate(paths)]
    tools = [ToolEdge(0, "get_repo", "Get a repository", (), tuple(range(1, len(nodes))), ()),
             ToolEdge(1, "star", "Star a repository", (0,), (), (0,))]
    graph = Hypergraph.from_parts(nodes, tools, [])
    return graph.with_links([Link(len(nodes) - 1, 0, 0.9), Link(1, 0, 0.5)])


def test_serialization_caps_output_fields_linked_first() -> None:
    graph = _wide_graph(60)
    text = serialize_tools(graph, [0, 1], max_outputs=4)
    out_line = next(line for line in text.splitlines() if line.startswith("  out:"))
    # owner.login (linked) first, then the shallowest (name, then the first meta fields),
    # listed in schema order, then the count left out
    assert out_line == ("  out: name: string, meta.f0: string, meta.f1: string, "
                        "owner.login: string, (+56 more)")
    # one link per (producer tool, consumer input): the strongest
    assert text.endswith("# Links\nget_repo.owner.login -> star.owner (0.90)\n")
    assert "(+" not in serialize_tools(graph, [0, 1], max_outputs=60)
    assert serialize_tools(_wide_graph(5), [0, 1]).count("meta.f") == 3


class CountingEmbedder:
    name = "counting-test"
    dim = 3

    def __init__(self) -> None:
        self.calls: list[int] = []

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        self.calls.append(len(texts))
        return np.ones((len(texts), self.dim), dtype=np.float32)


def test_warm_cache_makes_the_first_index_free(tmp_path: pytest.TempPathFactory) -> None:
    graph = _wide_graph(30)
    inner = CountingEmbedder()
    seen: list[tuple[str, int, int]] = []
    with CachedEmbedder(inner, cache_dir=str(tmp_path)) as cached:
        warm_retrieval_cache(graph, cached, lambda *a: seen.append(a), chunk=8)
        n_texts = len(set(index_texts(graph)))
        assert sum(inner.calls) == n_texts == graph.n_tools + graph.n_nodes
        assert seen[-1] == ("embedding texts for retrieval", n_texts, n_texts)
        before = len(inner.calls)
        GraphIndex(graph, cached)
        assert len(inner.calls) == before  # every vector read from the cache


def test_printed_warnings_one_line_each(capsys: pytest.CaptureFixture[str]) -> None:
    with printed_warnings(limit=2):
        for i in (1, 1, 2, 3):
            warnings.warn(f"schema {i} is odd", UserWarning, stacklevel=1)
    err = capsys.readouterr().err
    assert err.count("warning: schema 1 is odd") == 1
    assert "warning: schema 2 is odd" in err and "schema 3" not in err
    assert "... and 1 more" in err and "UserWarning" not in err


def test_oversized_output_schemas_give_one_warning() -> None:
    from hyperplan.graph.build import build_graph
    from hyperplan.graph.schema_paths import MAX_OUTPUT_PATHS, SchemaWarning
    from hyperplan.importers.openai_functions import load_openai_functions

    def fn(name: str, n_fields: int) -> dict[str, object]:
        fields = {f"f{i}": {"type": "string"} for i in range(n_fields)}
        return {"name": name, "description": name, "parameters": {"type": "object"},
                "returns": {"type": "object", "properties": fields}}

    catalog = load_openai_functions([fn("wide", 450), fn("wider", 500), fn("narrow", 3)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graph = build_graph(catalog, embedder=None)
    messages = [str(w.message) for w in caught if issubclass(w.category, SchemaWarning)]
    assert messages == [f"2 tools' output schemas have more than {MAX_OUTPUT_PATHS} paths, "
                        f"kept the first {MAX_OUTPUT_PATHS} of each: wider (500), wide (450)"]
    assert sum(1 for n in graph.nodes if n.tool == 1 and n.kind is NodeKind.OUTPUT) == 400
