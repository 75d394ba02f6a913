"""``hyperplan bench gateway-load`` (:mod:`hyperplan.integrations.mcp_gateway.load`): a small
smoke run of the real command against the bookstore over HTTP, and the judging of answers
without a server."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from hyperplan.integrations.mcp_gateway.load import (
    MIX,
    LoadConfig,
    _refused,
    error_kind,
    schedule,
)
from hyperplan.integrations.mcp_gateway.load_report import latency_ms, markdown

KINDS = {"find_tools", "tools/list", "read", "write", "invalid"}


@pytest.mark.parametrize("mode", ["search", "narrow"])
def test_two_clients_ten_requests_over_http(tmp_path: Path, mode: str) -> None:
    """2 SDK clients x 10 mixed requests: no error, the invalid ones refused as expected,
    every field reported, the gateway stopped by its PID. Narrow mode: each client calls
    only what its own list shows (selecting first), so a refusal means another client's
    traffic changed its list."""
    command = [sys.executable, "-m", "hyperplan", "bench", "gateway-load", "--clients", "2",
               "--requests", "10", "--warmup", "2", "--mode", mode, "--json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120,
                          env=_env(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    result = json.loads(done.stdout)
    (run,) = result["runs"]
    assert run["errors"] == 0 and run["errors_by_kind"] == {}, run["error_samples"]
    assert run["warmup_errors"] == {}, run["error_samples"]
    assert run["expected_refusals"] == {"invalid": 2}  # floor(15% of 10) per client
    assert set(run["latency_ms"]) == KINDS | {"all"}
    calls = {kind: run["latency_ms"][kind]["n"] for kind in ("read", "write", "invalid")}
    assert calls == {"read": 10, "write": 4, "invalid": 2}  # per client 5 + 2 + 1 of 10
    assert run["requests"] == run["latency_ms"]["all"]["n"] and run["requests_per_s"] > 0
    if mode == "search":
        assert run["requests"] == 20
    else:  # a tools/list after each call, and find_tools + tools/list to select a tool
        assert run["latency_ms"]["tools/list"]["n"] >= 16 + 2
    assert run["clients_with_token"] == 2 and run["tokens_changed"] == 0
    for kind, stats in run["latency_ms"].items():
        assert 0 < stats["p50"] <= stats["p95"] <= stats["p99"] <= stats["max"], kind
    assert run["protocols"] == ["2026-07-28"]  # the SDK's default mode negotiated it
    if Path("/proc/self/status").exists():
        rss = run["rss_mb"]
        assert set(rss) == {"listening", "ready", "warm", "end"}
        assert all(value > 20 for value in rss.values()), rss
        assert isinstance(run["rss_growth_mb_per_1000"], float)
        assert run["gateway_cpu_s"] is not None and run["gateway_cpu_s"] >= 0
        assert not Path(f"/proc/{run['gateway_pid']}").exists()  # stopped and reaped
    assert result["summary"]["errors"] == 0 and result["summary"]["runs"] == 1
    assert "hyperplan serve --http PORT" in result["gateway"]
    assert result["checkout"]["module"].endswith("hyperplan/__init__.py")


def _env(tmp_path: Path) -> dict[str, str]:
    import os

    return {**os.environ, "HYPERPLAN_CACHE_DIR": str(tmp_path / "cache")}


def test_schedule_keeps_the_mix() -> None:
    kinds = schedule(200, random.Random(1))
    assert Counter(kinds) == {"find_tools": 30, "tools/list": 20, "read": 70, "write": 50,
                              "invalid": 30}
    assert {kind for kind, _ in MIX} == KINDS
    assert schedule(200, random.Random(1)) == kinds  # seeded: the same for every run
    assert Counter(schedule(3, random.Random(0))) == {"read": 3}  # the rest are reads


@dataclass
class _Result:
    is_error: bool
    text: str = ""
    structured_content: dict[str, Any] | None = None
    content: list[Any] = field(default_factory=list)


def test_a_deserved_refusal_is_not_an_error() -> None:
    refused = _Result(True, structured_content={"error_kind": "invalid_arguments"})
    assert _refused(refused) == (None, True)
    busy = _Result(True, structured_content={"error_kind": "busy"})
    assert _refused(busy) == ("tool error busy", False)
    assert _refused(_Result(False)) == ("invalid arguments accepted", False)
    assert error_kind(_Result(True)) == "tool_error"  # no structure: a plain tool error


def test_latency_ranks_and_markdown() -> None:
    stats = latency_ms([i / 1000 for i in range(1, 101)])
    assert stats == {"n": 100, "mean": 50.5, "p50": 50.0, "p95": 95.0, "p99": 99.0,
                     "max": 100.0}
    run = {"requests_per_s": 10.0, "errors": 1, "expected_refusals": {"invalid": 3},
           "latency_ms": {"all": stats}, "rss_mb": {"ready": 1.0, "warm": 2.0, "end": 3.0},
           "children_rss_mb": {"end": 0}, "rss_growth_mb_per_1000": 0.5, "gateway_cpu_s": 1.0,
           "load_average": [[0.1, 0, 0], [0.2, 0, 0]], "errors_by_kind": {"read: timeout": 1},
           "warmup_errors": {}}
    result = {"date": "d", "config": {**vars(LoadConfig()), "sources": ["s"]},
              "checkout": {"commit": "abc"}, "gateway": "g", "runs": [run],
              "summary": {"requests_per_s": 10.0, "errors": 1, "runs": 1,
                          "rss_growth_mb_per_1000": 0.5,
                          "latency_ms": {"all": {"p50": 50.0, "p95": 95.0, "p99": 99.0}}}}
    text = markdown(result)
    assert "| 1 | 10.0 | 1 | 3 | 50.0 / 95.0 / 99.0 | 1.0 / 2.0 / 3.0 |" in text
    assert "- run 1: 1 x read: timeout" in text


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="mode"):
        LoadConfig(mode="wide")
    with pytest.raises(ValueError, match="clients"):
        LoadConfig(clients=0)
