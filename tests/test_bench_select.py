"""``hyperplan bench select``: its JSON contract, the generated requests, the query memo and
determinism of everything but the timings (not timed)."""

from __future__ import annotations

import json

import numpy as np
from typer.testing import CliRunner

from hyperplan.cli import app
from hyperplan.embed.hashing import HashingEmbedder
from hyperplan.embed.memo import MemoEmbedder
from hyperplan_bench.eval.select_scale import build_selector, linked_requests, query_texts

TIMING_KEYS = {f"{mode}_{kind}_{p}" for mode in ("context", "doe")
               for kind in ("ms", "cpu_ms") for p in ("p50", "p99")}
RUN_KEYS = TIMING_KEYS | {
    "n_tools", "n_nodes", "n_links", "embedder", "catalog_seconds", "build_seconds",
    "index_seconds", "graph_rss_mb", "index_rss_mb", "index_array_mb", "rss_mb", "queries",
    "budget",
    "context_both_selected", "doe_both_selected", "embed_misses", "seconds", "peak_rss_mb"}
UNTIMED = ("n_tools", "n_nodes", "n_links", "embedder", "index_array_mb", "queries", "budget",
           "context_both_selected", "doe_both_selected", "embed_misses")


def _bench(*extra: str) -> dict:
    result = CliRunner().invoke(app, ["bench", "select", "--sizes", "200,500", "--queries", "4",
                                      "--budget", "10", "--json", *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_json_contract_and_determinism() -> None:
    first, second = _bench(), _bench()
    assert {k for k in first if k != "runs"} == {"bench", "embedder", "seed", "queries",
                                                  "budget", "seconds"}
    assert first["bench"] == "select" and first["embedder"] == "hashing"
    assert [r["n_tools"] for r in first["runs"]] == [200, 500]
    for run in first["runs"]:
        assert set(run) == RUN_KEYS
        assert run["queries"] == 4 and run["budget"] == 10
        assert run["embed_misses"] == 0  # the query embedding is outside the timer
        assert all(run[k] >= 0 for k in TIMING_KEYS)
        assert run["context_ms_p50"] <= run["context_ms_p99"]
    for a, b in zip(first["runs"], second["runs"], strict=True):
        assert {k: a[k] for k in UNTIMED} == {k: b[k] for k in UNTIMED}


def test_bad_options_are_refused() -> None:
    for extra in (["--embedder", "nope"], ["--queries", "0"], ["--budget", "0"]):
        result = CliRunner().invoke(app, ["bench", "select", "--sizes", "200", *extra])
        assert result.exit_code != 0


def test_requests_follow_same_app_links_and_repeat() -> None:
    selector, memo, built = build_selector(200, 0, "hashing")
    assert built["n_tools"] == 200 and built["index_array_mb"] > 0
    requests = linked_requests(selector.graph, 6, seed=3)
    assert requests == linked_requests(selector.graph, 6, seed=3)
    assert requests != linked_requests(selector.graph, 6, seed=4)
    for request in requests:
        producer, consumer = request.tools
        assert producer.split(".")[0] == consumer.split(".")[0] != ""
        assert not producer.endswith(".login") and ", then " in request.text
        assert producer in selector.graph.tool_index and consumer in selector.graph.tool_index
    memo.fill([t for r in requests for t in query_texts(selector, r.text)])
    memo.misses = 0
    picked = selector.select(requests[0].text, budget=10)
    assert memo.misses == 0 and 0 < len(picked.names) <= 10


def test_query_memo_reads_held_texts_and_passes_others() -> None:
    inner = HashingEmbedder(32)
    memo = MemoEmbedder(inner, keep=False)
    memo.fill(["list orders", "show order"])
    held = memo.embed(["show order", "list orders"])
    assert np.array_equal(held, inner.embed(["show order", "list orders"]))
    assert memo.misses == 0
    other = memo.embed(["delete order", "show order"])
    assert other.shape == (2, 32) and memo.misses == 1
    assert memo.embed(["delete order"]).shape == (1, 32) and memo.misses == 2  # not kept
    assert memo.embed([]).shape == (0, 32)
