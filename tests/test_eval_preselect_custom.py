"""``eval preselect`` on the catalogs people have: a user's own catalog and tasks (``--suite
custom``), saved MCP servers (``mcp-corpus`` on a fixture of three tiny servers, ``mcp-six`` on
the real six when their tools/list files are there), gold slots, unsafe selections and chains,
cold latency, stripped outputs and graph-tool-call."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import shared_path
from hyperplan.cli import app
from hyperplan_bench.eval.baseline_gtc import gtc_status, mcp_tool
from hyperplan_bench.eval.preselect import SuiteSource, evaluate_preselect, load_preselect_suite
from hyperplan_bench.eval.preselect_bench import Baselines, PartBench, gold_slots
from hyperplan_bench.eval.preselect_corpus import MCP_SIX
from hyperplan_bench.eval.preselect_custom import TasksFileError, read_tasks

DATA = Path(__file__).parent / "data" / "preselect_custom"
CORPUS = DATA / "corpus"
NOTES, MAIL = (f"mcp:{CORPUS / 'tools' / f'{s}.json'}" for s in ("notes", "mail"))


def _cli(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["eval", "preselect", *args, "--embedder", "hashing",
                                      "--no-cache", "--json"])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def _hashing() -> Any:
    from hyperplan.embed import get_embedder

    return get_embedder("hashing")


def test_custom_suite_reads_slots_and_qualifies_clashing_names() -> None:
    suite = load_preselect_suite("custom", None, SuiteSource(
        catalogs=(NOTES, MAIL), tasks_file=DATA / "tasks.jsonl"))
    (part,) = suite.parts
    names = part.catalog.names()
    # both servers define "search": qualified in both; the rest keep their names
    assert "notes__search" in names and "mail__search" in names and "search" not in names
    assert "send_email" in names and len(names) == 8
    apps = {t.name: t.metadata["app"] for t in part.catalog.tools}
    assert apps["notes__search"] == "notes" and apps["send_email"] == "mail"
    by_id = {t.id: t for t in part.tasks}
    assert gold_slots(part, by_id["t1"]) == (("notes__search", "list_notes"), ("send_email",))
    assert gold_slots(part, by_id["t3"]) == (("mail__search",),)


def test_custom_cli_scores_every_method_with_cold_latency_and_unsafe_counts() -> None:
    doc = _cli("--suite", "custom", "--catalog", NOTES, "--catalog", MAIL,
               "--tasks-file", str(DATA / "tasks.jsonl"), "--budget", "2,8")
    assert doc["suite"] == "custom" and doc["n_tasks"] == 3 and doc["n_tools"] == 8
    methods = doc["methods"]
    # with every tool selected each slot is filled, and every task has an unsafe tool on offer
    # (create_note, delete_note, remove_message are none of the gold)
    assert methods["all_tools"]["8"]["complete"] == 1.0 and methods["all_tools"]["8"]["unsafe"] == 3
    assert methods["semantic"]["8"]["complete"] == 1.0
    for method in ("semantic", "context_graph", "context_graph_doe"):
        assert methods[method]["2"]["ms_cold_p50"] > 0
    assert "unsafe_chain" in methods["context_graph_doe"]["2"]
    assert "unsafe_chain" not in methods["semantic"]["2"]
    assert set(doc["unsafe_chains"]) == {"2", "8"}
    for listed in doc["unsafe_chains"].values():
        assert all(set(e) == {"task", "tools"} and e["tools"] for e in listed)
    assert len(doc["unsafe_chains"]["2"]) == methods["context_graph_doe"]["2"]["unsafe_chain"]


def test_slot_recall_completeness_and_unsafe_of_one_selection() -> None:
    suite = load_preselect_suite("custom", None, SuiteSource(
        catalogs=(NOTES, MAIL), tasks_file=DATA / "tasks.jsonl"))
    (part,) = suite.parts
    bench = PartBench(part, _hashing(), (3,), None, Baselines(), None, "test")
    index = bench.graph.tool_index
    gold = bench.gold(next(t for t in part.tasks if t.id == "t1"))
    row = bench.row(gold, [index["list_notes"], index["delete_note"]], 1.0, 1.0, (2.0, 2.0))
    assert row.recall == 0.5 and not row.complete and row.unsafe  # delete_note: destructive
    assert row.unsafe_chain is None
    row = bench.row(gold, [index["notes__search"], index["send_email"]], 1.0, 1.0, (2.0, 2.0),
                    chain=[index["create_note"]])
    assert row.recall == 1.0 and row.complete and not row.unsafe  # send_email is gold
    assert row.unsafe_chain  # create_note writes and is no gold alternative
    assert bench.unsafe[index["remove_message"]] and not bench.unsafe[index["list_inbox"]]


def test_corpus_fixture_per_request_catalogs_and_splits() -> None:
    suite = load_preselect_suite("mcp-corpus", CORPUS)
    sizes = sorted(len(p.catalog.tools) for p in suite.parts)
    assert sizes == [3, 4, 4, 7, 8]  # one catalog per set of servers a request names
    # every tool's namespace is its server, a server alone too
    files = next(p for p in suite.parts if len(p.catalog.tools) == 3)
    assert {t.metadata.get("app") for t in files.catalog.tools} == {"files"}
    doc = _cli("--suite", "mcp-corpus", "--data", str(CORPUS), "--split", "dev",
               "--budget", "3")
    assert doc["n_tasks"] == 3 and doc["n_catalogs"] == 5
    # c3 ("show me the notes I have") must not be offered create_note or delete_note: with
    # every tool on offer it is the one task holding one
    assert doc["methods"]["all_tools"]["3"]["must_not"] == 1
    assert 0 <= doc["methods"]["context_graph_doe"]["3"]["must_not_chain"] <= 1
    notes = next(p for p in suite.parts if len(p.catalog.tools) == 4
                 and "c3" in {t.id for t in p.tasks})
    assert notes.must_not["c3"] == ("delete_note", "create_note")
    assert doc["tools_per_task"] == pytest.approx((8 + 4 + 7) / 3, abs=0.1)
    held = _cli("--suite", "mcp-corpus", "--data", str(CORPUS), "--split", "heldout",
                "--budget", "3", "--no-gtc")
    assert held["n_tasks"] == 2 and held["skipped_methods"]["graph_tool_call"] == \
        "disabled (--no-gtc)"
    assert "graph_tool_call" not in held["methods"]


def test_tasks_file_errors_name_file_task_and_field(tmp_path: Path) -> None:
    def bad(rows: list[Any], match: str) -> None:
        file = tmp_path / "tasks.json"
        file.write_text(json.dumps(rows), encoding="utf-8")
        with pytest.raises(TasksFileError, match=match):
            load_preselect_suite("custom", None, SuiteSource(catalogs=(NOTES,),
                                                             tasks_file=file))

    bad([{"id": "a", "request": "find notes", "gold": ["list_note"]}],
        r"tasks.json: task a: 'gold': tool 'list_note' is not in the catalog; "
        r"did you mean 'list_notes'")
    bad([{"id": "a", "request": "", "gold": ["list_notes"]}], "task a: 'request' must be")
    bad([{"id": "a", "request": "x", "gold": []}], "task a: 'gold' must be a non-empty")
    bad([{"id": "a", "request": "x", "gold": [["list_notes", 3]]}], r"task a: 'gold\[0\]'")
    bad([{"id": "a", "request": "x", "gold": ["search"], "split": "test"}],
        "'split' must be dev or heldout")
    bad([{"id": "a", "request": "x", "gold": ["search"]}] * 2, "'id' is used twice")
    bad([{"id": "a", "request": "x", "gold": ["search"], "must_not": ["drop_note"]}],
        "task a: 'must_not': tool 'drop_note' is not in the catalog")
    bad([{"id": "a", "request": "x", "gold": ["search"], "must_not": "delete_note"}],
        "task a: 'must_not' must be a list of names")
    bad({"oops": 1}, "expected a list of tasks")  # type: ignore[arg-type]
    (tmp_path / "broken.jsonl").write_text('{"id": 1, "request": "x", "gold": ["a"]}\n{\n')
    with pytest.raises(TasksFileError, match=r"broken\.jsonl: line 2: malformed JSON"):
        read_tasks(tmp_path / "broken.jsonl")
    with pytest.raises(TasksFileError, match="no such tasks file"):
        read_tasks(tmp_path / "missing.json")
    result = CliRunner().invoke(app, ["eval", "preselect", "--suite", "custom", "--embedder",
                                      "hashing", "--tasks-file", str(DATA / "tasks.jsonl")])
    assert result.exit_code != 0 and "at least one --catalog" in str(result.exception)
    result = CliRunner().invoke(app, ["eval", "preselect", "--suite", "nestools", "--catalog",
                                      NOTES, "--embedder", "hashing"])
    assert result.exit_code != 0 and "for --suite custom" in result.output


def test_corpus_unknown_server_and_gold(tmp_path: Path) -> None:
    (tmp_path / "tools").symlink_to(CORPUS / "tools")
    rows = {"requests": [{"id": 1, "request": "x", "servers": ["note"], "gold": [["a"]]}]}
    (tmp_path / "requests.json").write_text(json.dumps(rows), encoding="utf-8")
    with pytest.raises(TasksFileError, match=r"server 'note' has no tools file.*'notes'"):
        load_preselect_suite("mcp-corpus", tmp_path)
    rows = {"requests": [{"id": 1, "request": "x", "servers": ["notes"],
                          "gold": [["notes:delete_notes"]]}]}
    (tmp_path / "requests.json").write_text(json.dumps(rows), encoding="utf-8")
    with pytest.raises(TasksFileError, match="'notes:delete_notes' is not in the catalog"):
        load_preselect_suite("mcp-corpus", tmp_path)


def test_strip_outputs_strips_every_catalog(tmp_path: Path) -> None:
    from test_eval_preselect import _suite

    data = _suite(tmp_path)
    typed = load_preselect_suite("nestools", data)
    stripped = load_preselect_suite("nestools", data, SuiteSource(data, strip=True))
    assert any(t.output_schema for p in typed.parts for t in p.catalog.tools)
    assert all(t.output_schema is None for p in stripped.parts for t in p.catalog.tools)
    doc = _cli("--suite", "nestools", "--data", str(data), "--budget", "3", "--strip-outputs",
               "--no-gtc")
    assert doc["strip_outputs"] is True and doc["n_tasks"] == 4


def test_graph_tool_call_gets_the_same_tools() -> None:
    suite = load_preselect_suite("mcp-corpus", CORPUS)
    tool = next(t for p in suite.parts for t in p.catalog.tools if t.name == "delete_note")
    entry = mcp_tool(tool)
    assert entry["name"] == "delete_note" and entry["inputSchema"] == tool.input_schema
    assert entry["annotations"]["destructiveHint"] is True
    ok, info = gtc_status()
    if not ok:
        assert "pip install graph-tool-call==" in info
        return
    doc = evaluate_preselect("mcp-corpus", CORPUS, embedder=_hashing(), budgets=(3,))
    assert doc["graph_tool_call"] == info
    assert 0 < doc["methods"]["graph_tool_call"]["3"]["mean_tools"] <= 3


def test_real_mcp_six() -> None:
    """The six real servers' 15 requests, when their tools/list files are in the repository
    (``benchmarks/mcp-corpus/tools``; CI=true: missing files fail)."""
    data = shared_path("mcp-six")
    tools = Path(__file__).parents[1] / "benchmarks" / "mcp-corpus" / "tools"
    missing = [s for s in MCP_SIX if not (tools / f"{s}.json").is_file()]
    if missing:
        message = f"{tools}: no tools/list of {', '.join(missing)}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    doc = _cli("--suite", "mcp-six", "--data", str(data), "--tools-dir", str(tools),
               "--budget", "10", "--no-gtc")
    assert doc["n_tasks"] == 15 and doc["n_catalogs"] == 1 and doc["skipped_tasks"] == 0
    assert doc["methods"]["all_tools"]["10"]["complete"] == 1.0
