"""The link-inference benchmark: matching rules on hand-made tasks, and the real suites."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from conftest import shared_path
from hyperplan.catalog import build_catalog, make_tool
from hyperplan.cli import app
from hyperplan.embed import get_embedder
from hyperplan.eval.links import evaluate_links, score_task, split_tasks
from hyperplan.graph.build import build_graph
from hyperplan.importers.gold import GoldFlow, GoldTask


def _graph():  # type: ignore[no-untyped-def]
    obj = {"type": "object", "properties": {"book_id": {"type": "string"},
                                            "title": {"type": "string"}}}
    tools = [
        make_tool(name="find_book", description="Find a book.",
                  input_schema={"type": "object", "properties": {"query": {"type": "string"}}},
                  output_schema=obj),
        make_tool(name="borrow_book", description="Borrow a book.",
                  input_schema={"type": "object", "properties": {"book_id": {"type": "string"}},
                                "required": ["book_id"]}),
    ]
    return build_graph(build_catalog(tools), embedder=None)


def test_exact_flow_is_true_positive() -> None:
    task = GoldTask("t", "", ("find_book", "borrow_book"),
                    (GoldFlow("find_book", "book_id", "borrow_book", "book_id"),))
    assert score_task(_graph(), task, 0.5) == (1, 1, 1, 1)


def test_unused_link_counts_against_precision() -> None:
    task = GoldTask("t", "", ("find_book", "borrow_book"), ())
    predicted, true_pos, gold, matched = score_task(_graph(), task, 0.5)
    assert (predicted, true_pos, gold, matched) == (1, 0, 0, 0)


def test_whole_output_and_raw_leaf_match() -> None:
    graph = _graph()
    whole = GoldTask("t", "", ("find_book", "borrow_book"),
                     (GoldFlow("find_book", "", "borrow_book", "book_id"),))
    raw = GoldTask("t", "", ("find_book", "borrow_book"),
                   (GoldFlow("find_book", "book_id", "borrow_book", "book_id"),))
    assert score_task(graph, whole, 0.5)[3] == 1
    assert score_task(graph, raw, 0.5)[3] == 1


def test_splits_partition_tasks() -> None:
    tasks = [GoldTask(str(k), "", (), ()) for k in range(23)]
    dev, held = split_tasks(tasks, "dev"), split_tasks(tasks, "heldout")
    assert len(dev) == 5 and len(held) == 18
    assert {t.id for t in dev} | {t.id for t in held} == {str(k) for k in range(23)}


def test_nestools_minilm_quality() -> None:
    """Regression guard at the level measured in docs/benchmarks.md (F1 0.868 at 0.7)."""
    data = shared_path("nestools", "test_data_dev.jsonl")
    result = evaluate_links("nestools", data, embedder=get_embedder("minilm"))
    assert result["n_tasks"] == 600 and result["gold_links"] == 1032
    assert result["f1"] >= 0.85
    assert result["precision"] >= 0.83 and result["recall"] >= 0.83


def test_cli_contract_nestful() -> None:
    data = shared_path("nestful", "data")
    result = CliRunner().invoke(app, ["eval", "links", "--suite", "nestful", "--data", str(data),
                                      "--embedder", "hashing", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    for key in ("suite", "n_tasks", "gold_links", "precision", "recall", "f1", "seconds"):
        assert key in doc
    assert doc["suite"] == "nestful" and doc["n_tasks"] == 300
    assert 0.0 < doc["f1"] < 1.0
