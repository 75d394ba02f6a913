"""``search figure --policy llm`` end to end against the real local llama.cpp server
(``scripts/start-llm-server.sh PORT``, ``HYPERPLAN_LLM_TEST_URL``; the ``llm_server_url``
fixture of conftest.py: skipped without it, failing in CI when it is required). Plumbing only:
the 135M model's answers may be unusable (the policy then falls back to uniform choices), so
no success rate is read; the point is that every method asks the model over HTTP, that each
method's output tokens are counted, and that the figure is written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hyperplan.cli import app


def test_figure_with_the_real_model_as_the_policy(
    llm_server_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HYPERPLAN_LLM_MAX_TOKENS", "64")
    model = os.environ.get("HYPERPLAN_LLM_TEST_MODEL", "smollm2")
    result = CliRunner().invoke(app, [
        "search", "figure", "--suites", "shopping", "--branching", "2", "--tasks", "1",
        "--seed", "1", "--rollouts", "2", "--methods", "hypermcts,lats,flare,cot",
        "--policy", "llm", "--llm", llm_server_url, "--model", model,
        "--max-llm-calls", "8", "--output", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout.strip().splitlines()[-1])
    report = doc["llm"]
    assert report["model"] == model and 1 <= report["calls"] <= 8
    assert report["prompt_tokens"] > 0
    rows = doc["suites"]["shopping"]["rows"]
    assert [r["method"] for r in rows] == ["hypermcts", "lats", "flare", "cot"]
    for row in rows:
        assert row["policy_calls_per_case"] >= 1
        assert row["completion_tokens_per_case"] >= 0 and "llm_calls_per_case" in row
    assert sum(r["llm_calls_per_case"] for r in rows) == report["calls"]
    assert (tmp_path / "hypermcts_cost.png").stat().st_size > 1000
