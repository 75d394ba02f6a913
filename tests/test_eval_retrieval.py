"""The retrieval benchmark: JSON contract on the real suites, and the measured AppWorld numbers."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import shared_path
from hyperplan.cli import app
from hyperplan.embed import get_embedder
from hyperplan_bench.eval.retrieval import (
    METHODS,
    RetrievalEvalError,
    evaluate_retrieval,
    load_retrieval_suite,
)

METRICS = ("recall", "complete", "mean_tools", "prompt_tokens")


def _cli(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["eval", "retrieval", *args, "--json"])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def _check_contract(doc: dict[str, Any], suite: str, budget: int) -> None:
    assert {"suite", "n_tasks", "budget", "methods", "seconds"} <= set(doc)
    assert doc["suite"] == suite and doc["budget"] == budget and doc["n_tasks"] > 0
    assert set(doc["methods"]) == set(METHODS)
    for method in METHODS:
        scores = doc["methods"][method]
        assert set(METRICS) <= set(scores)
        assert 0.0 <= scores["complete"] <= scores["recall"] <= 1.0
        assert 0 < scores["mean_tools"] <= budget
        assert scores["prompt_tokens"] > 0


def test_cli_contract_appworld_hashing() -> None:
    tools = shared_path("appworld", "api_docs")
    tasks = shared_path("appworld", "tasks_train.jsonl")
    doc = _cli("--suite", "appworld", "--catalog", str(tools), "--tasks-file", str(tasks),
               "--embedder", "hashing", "--split", "dev")
    _check_contract(doc, "appworld", 20)
    assert doc["n_tasks"] == 18 and doc["n_tools"] == 457
    cg, sem = doc["methods"]["context_graph"], doc["methods"]["semantic"]
    assert cg["recall"] > sem["recall"] and cg["complete"] > sem["complete"]


def test_cli_contract_stabletoolbench_and_nestools_hashing() -> None:
    stb = shared_path("stabletoolbench", "G1_category.json")
    doc = _cli("--suite", "stabletoolbench", "--catalog", str(stb), "--tasks-file", str(stb),
               "--embedder", "hashing", "--budget", "10", "--split", "dev")
    _check_contract(doc, "stabletoolbench", 10)
    nes = shared_path("nestools", "test_data_dev.jsonl")
    doc = _cli("--suite", "nestools", "--catalog", str(nes), "--tasks-file", str(nes),
               "--embedder", "hashing", "--split", "dev")
    _check_contract(doc, "nestools", 20)
    assert doc["n_tasks"] == 120


def test_nestools_gold_is_the_called_apis() -> None:
    nes = shared_path("nestools", "test_data_dev.jsonl")
    suite = load_retrieval_suite("nestools", nes, nes)
    names = {t.name for t in suite.catalog.tools}
    assert len(suite.tasks) == 600
    assert all(t.tools and set(t.tools) <= names for t in suite.tasks)


def test_appworld_gold_drops_supervisor_bookkeeping() -> None:
    suite = load_retrieval_suite("appworld", shared_path("appworld", "api_docs"),
                                 shared_path("appworld", "tasks_train.jsonl"))
    assert len(suite.tasks) == 90
    assert not any(n.startswith("supervisor.show_profile") for t in suite.tasks for n in t.tools)


def test_errors_name_the_file(tmp_path: Any) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(RetrievalEvalError, match=r"nope\.json"):
        evaluate_retrieval("appworld", missing, missing, embedder=get_embedder("hashing"))
    with pytest.raises(RetrievalEvalError, match="unknown retrieval suite"):
        load_retrieval_suite("nosuch", tmp_path, tmp_path)
    result = CliRunner().invoke(app, ["eval", "retrieval", "--suite", "appworld", "--catalog",
                                      str(missing), "--tasks-file", str(missing), "--json"])
    assert result.exit_code != 0 and isinstance(result.exception, RetrievalEvalError)


@pytest.mark.parametrize("split", ["all", "dev", "heldout"])
def test_appworld_minilm_measured_numbers(split: str) -> None:
    """Regression guard at the numbers measured with MiniLM, budget 20: all 90 train tasks,
    the dev split (every 5th task, used to choose the defaults) and the 72 held-out tasks."""
    doc = evaluate_retrieval(
        "appworld", shared_path("appworld", "api_docs"),
        shared_path("appworld", "tasks_train.jsonl"), embedder=get_embedder("minilm"),
        split=split,
    )
    methods = doc["methods"]
    n_tasks, cg_complete, cg_recall, sem_complete, sem_recall = MEASURED[split]
    assert doc["n_tasks"] == n_tasks
    assert methods["context_graph"]["complete"] == pytest.approx(cg_complete, abs=0.03)
    assert methods["context_graph"]["recall"] == pytest.approx(cg_recall, abs=0.02)
    assert methods["semantic"]["complete"] == pytest.approx(sem_complete, abs=0.03)
    assert methods["semantic"]["recall"] == pytest.approx(sem_recall, abs=0.02)
    assert methods["context_graph"]["complete"] >= methods["semantic"]["complete"] + 0.6


# Measured 2026-11-30 (hyperplan eval retrieval --suite appworld ... --embedder minilm --split S):
# split -> (n_tasks, context_graph complete, recall, semantic complete, recall)
MEASURED = {
    "all": (90, 0.7889, 0.9638, 0.0333, 0.5152),
    "dev": (18, 0.8889, 0.9869, 0.0, 0.4692),
    "heldout": (72, 0.7639, 0.9581, 0.0417, 0.5267),
}


def test_custom_suite_reads_any_catalog_source_and_labelled_requests(tmp_path: Any) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(json.dumps(t) for t in [
        {"id": "like", "request": "Like the song Yesterday",
         "tools": ["music.search_songs", "music.like_song"]},
        {"request": "Email my friend Ann the playlist Chill",
         "tools": ["contacts.search_contacts", "mail.send_email"]},
    ]) + "\n")
    doc = _cli("--suite", "custom", "--catalog", "demo", "--tasks-file", str(tasks), "--embedder",
               "hashing", "--budget", "5")
    _check_contract(doc, "custom", 5)
    assert doc["n_tasks"] == 2 and doc["n_tools"] == 12
    assert doc["interpretation"]["by"] == "rules" and doc["interpretation"]["rules"] == 2

    details = tmp_path / "details.jsonl"
    again = _cli("--suite", "custom", "--catalog", "demo", "--tasks-file", str(tasks), "--embedder",
                 "hashing", "--budget", "5", "--details", str(details))
    records = [json.loads(line) for line in details.read_text().splitlines()]
    assert [r["id"] for r in records] == ["like", "2"]
    assert records[0]["gold"] == ["music.search_songs", "music.like_song"]
    assert records[0]["interpretation"]["source"] == "rules"
    for method in METHODS:
        complete = 0
        for record in records:
            got = record["methods"][method]
            assert len(got["retrieved"]) <= 5
            assert got["missing"] == [n for n in record["gold"] if n not in got["retrieved"]]
            complete += not got["missing"]
        assert again["methods"][method]["complete"] == complete / 2


@pytest.mark.parametrize(("line", "message"), [
    ('["not", "an object"]', "task 1: expected a JSON object"),
    ('{"request": " ", "tools": ["music.like_song"]}', "'request' must be a non-empty"),
    ('{"request": "like it", "tools": []}', "'tools' must be a non-empty list"),
    ('{"request": "like it", "tools": ["music.nope"]}', r"gold tools not in the catalog"),
])
def test_custom_suite_errors_name_the_task(tmp_path: Any, line: str, message: str) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(line + "\n")
    with pytest.raises(RetrievalEvalError, match=message):
        evaluate_retrieval("custom", "demo", tasks, embedder=get_embedder("hashing"))
