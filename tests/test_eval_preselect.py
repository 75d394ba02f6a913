"""``hyperplan eval preselect``: the JSON contract on a tiny inline suite with a producer chain,
the replay mode, and smoke runs on the real suites (which fail in CI when the data is missing)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import shared_path
from hyperplan.catalog import build_catalog, make_tool
from hyperplan.cli import app
from hyperplan_bench.eval.preselect import METHODS, MemoEmbedder, PreselectError, evaluate_preselect
from hyperplan_bench.eval.preselect_replay import synthetic, synthetic_calls
from hyperplan_bench.importers.gold import GoldCall, GoldFlow, GoldTask

TIMES = {"ms_p50", "ms_p99", "cpu_ms_p50", "cpu_ms_p99"}
SELECT_METRICS = {"recall", "complete", "mean_tools", "tokens", "token_ratio", "ms_cold_p50",
                  "ms_cold_p99", "cpu_ms_cold_p50", "cpu_ms_cold_p99", "unsafe", "must_not", *TIMES}
REPLAY_METRICS = {"next_hit", "next_hit_first", "next_hit_later", "tasks_all_hit", "steps",
                  *TIMES}


def _api(name: str, description: str, params: dict[str, str],
         responses: dict[str, str]) -> dict[str, Any]:
    return {"api_name": name, "api_description": description,
            "parameters": {p: {"type": "str", "description": d} for p, d in params.items()},
            "required": list(params),
            "responses": {r: {"type": "str", "description": d} for r, d in responses.items()}}


FIND_ORDER = _api("find_order", "Find the customer's order of a book title.",
                  {"title": "title of the ordered book"}, {"order_id": "id of the order"})
CANCEL_ORDER = _api("cancel_order", "Cancel an order.",
                    {"order_id": "id of the order to cancel"}, {"status": "cancellation status"})
WEATHER = _api("get_weather", "Get the weather forecast of a city.",
               {"city": "name of the city"}, {"forecast": "weather forecast"})
TRANSLATE = _api("translate_text", "Translate a text into another language.",
                 {"text": "text to translate", "language": "target language"},
                 {"translation": "translated text"})
CONVERT = _api("convert_currency", "Convert an amount of money into another currency.",
               {"amount": "amount of money", "currency": "target currency"},
               {"converted": "converted amount"})
SONG = _api("play_song", "Play a song by its title.", {"song": "song title"},
            {"playing": "what is playing"})
DISTRACTORS = [WEATHER, TRANSLATE, CONVERT, SONG]


def _row(test_id: int, task: str, apis: list[dict[str, Any]],
         calls: list[dict[str, Any]]) -> dict[str, Any]:
    return {"test_id": test_id, "task": task, "api": apis, "call": calls}


def _suite(path: Path) -> Path:
    """Four NesTools-format tasks over six tools; the first needs a producer (find_order
    supplies cancel_order's order_id, which the request does not state)."""
    rows = [
        _row(1, "Please cancel my order of the book Dune.",
             [FIND_ORDER, CANCEL_ORDER, *DISTRACTORS],
             [{"api_name": "find_order", "parameters": {"title": "Dune"},
               "responses": ["API_call_0"]},
              {"api_name": "cancel_order", "parameters": {"order_id": "API_call_0"},
               "responses": ["API_call_1"]}]),
        _row(2, "What is the weather forecast in Paris?", [WEATHER, *DISTRACTORS[1:]],
             [{"api_name": "get_weather", "parameters": {"city": "Paris"},
               "responses": ["API_call_0"]}]),
        _row(3, "Translate the text 'good morning' into French.", DISTRACTORS,
             [{"api_name": "translate_text",
               "parameters": {"text": "good morning", "language": "French"},
               "responses": ["API_call_0"]}]),
        _row(4, "Convert 20 dollars into euros and play the song Yesterday.", DISTRACTORS,
             [{"api_name": "convert_currency",
               "parameters": {"amount": "20 dollars", "currency": "EUR"},
               "responses": ["API_call_0"]},
              {"api_name": "play_song", "parameters": {"song": "Yesterday"},
               "responses": ["API_call_1"]}]),
    ]
    file = path / "tiny.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return file


def _cli(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["eval", "preselect", *args, "--json"])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def _check_select(doc: dict[str, Any], budgets: list[int]) -> None:
    assert {"suite", "mode", "split", "budgets", "n_tasks", "n_tools", "all_tokens", "methods",
            "subsets", "seconds", "skipped_methods", "embedder", "tokenizer", "timing",
            "strip_outputs", "unsafe_chains", "graph_tool_call", "fastmcp"} <= set(doc)
    assert doc["mode"] == "select" and doc["budgets"] == budgets and doc["n_tasks"] > 0
    ran = set(doc["methods"])
    assert ran | set(doc["skipped_methods"]) == set(METHODS)
    for method, by_k in doc["methods"].items():
        assert set(by_k) == {str(k) for k in budgets}
        for k, scores in by_k.items():
            doe = {"unsafe_chain", "must_not_chain"} if method == "context_graph_doe" else set()
            assert set(scores) == SELECT_METRICS | doe
            assert 0.0 <= scores["complete"] <= scores["recall"] <= 1.0
            assert 0 <= scores["ms_p50"] <= scores["ms_p99"]
            assert 0 <= scores["cpu_ms_p50"] <= scores["cpu_ms_p99"]
            assert 0 <= scores["ms_cold_p50"] <= scores["ms_cold_p99"]
            assert 0 <= scores["unsafe"] <= doc["n_tasks"]
            assert 0 <= scores.get("unsafe_chain", 0) <= doc["n_tasks"]
            if method != "all_tools":
                assert 0 < scores["mean_tools"] <= int(k)
                assert 0 < scores["tokens"] < doc["all_tokens"]
    everything = doc["methods"]["all_tools"][str(budgets[0])]
    assert everything["complete"] == everything["recall"] == 1.0
    assert everything["tokens"] == doc["all_tokens"] and everything["token_ratio"] == 1.0
    for subset in doc["subsets"].values():
        assert set(subset["methods"]) == ran


def test_inline_suite_contract_and_a_producer_chain(tmp_path: Path) -> None:
    data = _suite(tmp_path)
    doc = _cli("--suite", "nestools", "--data", str(data), "--embedder", "hashing",
               "--budget", "2,3", "--no-cache")
    _check_select(doc, [2, 3])
    assert doc["suite"] == "nestools" and doc["n_tasks"] == 4 and doc["n_tools"] == 6
    assert doc["subsets"]["multi_tool"]["n_tasks"] == 2
    assert doc["subsets"]["with_flows"]["n_tasks"] == 1
    # the producer-needing task (the only one with a data flow) is complete with DOE's chain
    flows = doc["subsets"]["with_flows"]["methods"]
    assert flows["context_graph_doe"]["2"]["complete"] == 1.0
    assert flows["context_graph_doe"]["3"]["complete"] == 1.0


def test_inline_suite_replay(tmp_path: Path) -> None:
    data = _suite(tmp_path)
    doc = _cli("--suite", "nestools", "--data", str(data), "--embedder", "hashing",
               "--budget", "3", "--no-cache", "--replay", "--no-fastmcp")
    assert doc["mode"] == "replay" and doc["n_tasks"] == 4 and doc["n_steps"] == 6
    assert doc["skipped_methods"]["fastmcp_bm25"] == "disabled (--no-fastmcp)"
    assert set(doc["methods"]) == set(METHODS) - set(doc["skipped_methods"])
    for by_k in doc["methods"].values():
        scores = by_k["3"]
        assert set(scores) == REPLAY_METRICS and scores["steps"] == 6
        assert 0.0 <= scores["tasks_all_hit"] <= scores["next_hit"] <= 1.0
    assert doc["methods"]["all_tools"]["3"]["next_hit"] == 1.0
    # after find_order's result the session holds order_id: cancel_order is the next tool
    assert doc["methods"]["context_graph_doe"]["3"]["next_hit_later"] == 1.0


def test_split_and_limit(tmp_path: Path) -> None:
    data = _suite(tmp_path)
    dev = _cli("--suite", "nestools", "--data", str(data), "--embedder", "hashing",
               "--budget", "2", "--no-cache", "--split", "dev", "--no-fastmcp")
    assert dev["n_tasks"] == 1 and dev["split"] == "dev"
    held = _cli("--suite", "nestools", "--data", str(data), "--embedder", "hashing",
                "--budget", "2", "--no-cache", "--split", "heldout", "--limit", "2",
                "--no-fastmcp")
    assert held["n_tasks"] == 2 and held["limit"] == 2
    spread = _cli("--suite", "nestools", "--data", str(data), "--embedder", "hashing",
                  "--budget", "2", "--no-cache", "--sample", "2", "--no-fastmcp")
    assert spread["n_tasks"] == 2 and spread["sample"] == 2


def test_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    bad = runner.invoke(app, ["eval", "preselect", "--suite", "nestools", "--data",
                              str(tmp_path / "missing.jsonl"), "--embedder", "hashing"])
    assert bad.exit_code != 0
    with pytest.raises(PreselectError, match="unknown pre-selection suite"):
        evaluate_preselect("nope", tmp_path, embedder=MemoEmbedder(_hashing()))
    with pytest.raises(PreselectError, match="--replay needs gold call sequences"):
        evaluate_preselect("appworld", tmp_path, embedder=_hashing(), replay=True)
    result = runner.invoke(app, ["eval", "preselect", "--suite", "nestools", "--data",
                                 str(_suite(tmp_path)), "--budget", "0", "--embedder", "hashing"])
    assert result.exit_code != 0 and "at least 1" in result.output


def _hashing() -> Any:
    from hyperplan.embed import get_embedder

    return get_embedder("hashing")


def test_synthetic_results_follow_the_output_schema_and_carry_flows() -> None:
    schema = {"type": "object", "properties": {
        "orders": {"type": "array", "items": {"type": "object", "properties": {
            "order_id": {"type": "integer"}, "paid": {"type": "boolean"}}}},
        "note": {"type": ["string", "null"]}}}
    value = synthetic(schema, "find#0")
    assert isinstance(value["orders"][0]["order_id"], int) and value["orders"][0]["paid"] is True
    assert value["note"] == "find#0:note"
    assert synthetic(None, "t#1") == "t#1:result"
    tools = [make_tool(name="find", input_schema={"type": "object", "properties": {
                 "title": {"type": "string"}}}, output_schema=schema),
             make_tool(name="cancel", input_schema={"type": "object", "properties": {
                 "order_id": {"type": "integer"}}})]
    specs = {t.name: t for t in build_catalog(tools).tools}
    task = GoldTask("1", "cancel", ("find", "cancel"),
                    (GoldFlow("find", "orders[].order_id", "cancel", "order_id"),),
                    (GoldCall("find", (("title", '"Dune"'),)),
                     GoldCall("cancel", (), ("order_id",))))
    find, cancel = synthetic_calls(specs, task)
    assert find.arguments == {"title": "Dune"}
    assert cancel.arguments["order_id"] == find.result["orders"][0]["order_id"]


def test_memo_embedder_serves_repeats_from_memory() -> None:
    calls: list[list[str]] = []
    inner = _hashing()

    class Counting:
        name, dim = inner.name, inner.dim

        def embed(self, texts: Any) -> Any:
            calls.append(list(texts))
            return inner.embed(texts)

    memo = MemoEmbedder(Counting())
    first = memo.embed(["a b", "c d"])
    again = memo.embed(["c d", "a b", "a b"])
    assert calls == [["a b", "c d"]] and again.shape == (3, inner.dim)
    assert (again[1] == first[0]).all()


# --- the real suites: smoke runs (CI=true: missing data fails) ---------------------------------


def test_real_nestools_select_and_replay(tmp_path: Path) -> None:
    data = shared_path("nestools", "test_data_dev.jsonl")
    cache = str(tmp_path / "cache")  # the graph is built once for both runs
    doc = _cli("--suite", "nestools", "--data", str(data), "--embedder", "hashing",
               "--split", "dev", "--limit", "8", "--budget", "10", "--cache-dir", cache)
    _check_select(doc, [10])
    assert doc["n_tasks"] == 8 and doc["n_tools"] == 1824
    assert doc["methods"]["semantic"]["10"]["token_ratio"] > 10
    doc = _cli("--suite", "nestools", "--data", str(data), "--embedder", "hashing",
               "--split", "dev", "--limit", "4", "--budget", "10", "--cache-dir", cache,
               "--replay")
    assert doc["mode"] == "replay" and doc["n_tasks"] == 4 and doc["n_steps"] >= 4


def test_real_appworld_select() -> None:
    data = shared_path("appworld")
    doc = _cli("--suite", "appworld", "--data", str(data), "--embedder", "hashing",
               "--split", "dev", "--limit", "6", "--budget", "20", "--no-cache", "--no-fastmcp")
    _check_select(doc, [20])
    assert doc["n_tools"] == 457 and doc["n_tasks"] == 6


def test_bench_select_cold_times_requests_never_seen_beside_bm25_and_semantic() -> None:
    """``bench select --cold``: the same requests with their query embedding included (the
    model itself, no cache), beside BM25 and semantic top-K (select_scale.time_cold)."""
    result = CliRunner().invoke(app, ["bench", "select", "--sizes", "200", "--queries", "4",
                                      "--budget", "10", "--cold", "--json"])
    assert result.exit_code == 0, result.output
    (run,) = json.loads(result.stdout)["runs"]
    for key in ("cold_context", "cold_doe", "semantic_cold", "bm25"):
        assert 0 < run[f"{key}_ms_p50"] <= run[f"{key}_ms_p99"]
        assert 0.0 <= run[f"{key}_both_selected"] <= 1.0
    assert run["embed_misses"] == 0  # the warm timings still read the memo only
