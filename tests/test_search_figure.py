"""``hyperplan search figure`` (hyperplan_bench.eval.treesearch.figure): the HyperMCTS paper's cost
comparison -- rows per method and b, model usage per method, paired intervals, table, PNG."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hyperplan.cli import app
from hyperplan.search.mcts import MCTSConfig
from hyperplan.search.policies import Policy, make_policy
from hyperplan_bench.eval.treesearch import figure
from hyperplan_bench.eval.treesearch.figure import (
    BY_BRANCHING,
    PolicySource,
    figure_suite,
    figure_table,
    headline_table,
)
from hyperplan_bench.eval.treesearch.runner import load_tasks


def _heuristic() -> PolicySource:
    def fresh() -> Callable[[], Policy]:
        return lambda: make_policy("heuristic")

    return PolicySource(fresh, dict)


def test_rows_per_method_and_b_with_paired_intervals(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(figure, "rap_available", lambda: False)
    tasks = load_tasks("toy", 3, 0)
    out = figure_suite(tasks, MCTSConfig(budget=4), [2, 3], seed=0, source=_heuristic(),
                       methods=["hypermcts", "rap", "lats", "flare", "cot", "reflexion"])
    assert "llm-reasoners is not installed" in out["skipped"]["rap"]
    keys = [(r["method"], r["b"]) for r in out["rows"]]
    assert keys == [("hypermcts", 2), ("lats", 2), ("flare", 2), ("hypermcts", 3),
                    ("lats", 3), ("flare", 3), ("cot", None), ("reflexion", None)]
    for row in out["rows"]:
        assert row["policy_calls_per_case"] > 0 and 0.0 <= row["case_acc"] <= 1.0
        assert "completion_tokens_per_case" not in row  # no model, no tokens
    same = out["paired"]["same_b"]
    assert set(same) == {"2", "3"} and set(same["2"]) == {"lats", "flare", "cot", "reflexion"}
    assert same["2"]["lats"]["n"] == 3
    largest = out["paired"]["against_b3"]
    assert set(largest["2"]) == {"lats", "flare", "cot", "reflexion"}
    assert largest["2"]["flare"]["calls_other"] > 0
    table = figure_table("toy", out)
    assert "| toy | FLARE | 3 |" in table and "| toy | CoT | – |" in table
    assert "| toy | 2 | FLARE |" in headline_table("toy", out)


def test_each_method_gets_its_own_policy_source_and_usage_per_case() -> None:
    counter = {"completion_tokens": 0.0}
    made: list[int] = []

    def fresh() -> Callable[[], Policy]:
        made.append(1)

        def make() -> Policy:
            counter["completion_tokens"] += 10  # ten "tokens" per run
            return make_policy("heuristic")

        return make

    def usage() -> Mapping[str, float]:
        return dict(counter)

    out = figure_suite(load_tasks("toy", 2, 0), MCTSConfig(budget=2), [2], seed=0,
                       source=PolicySource(fresh, usage), methods=["hypermcts", "cot"])
    assert len(made) == 2  # one policy maker per method run
    assert [r["completion_tokens_per_case"] for r in out["rows"]] == [10.0, 10.0]
    assert "out tokens/case" in figure_table("toy", out)


def test_the_command_writes_png_json_and_table(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, [
        "search", "figure", "--suites", "toy", "--branching", "2,3", "--tasks", "2",
        "--rollouts", "4", "--seed", "1", "--methods", "hypermcts,lats,flare,tot,cot",
        "--output", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "| toy | HyperMCTS | 2 |" in result.output
    doc = json.loads((tmp_path / "figure.json").read_text())
    assert doc["seed"] == 1 and doc["branchings"] == [2, 3]
    rows = doc["suites"]["toy"]["rows"]
    assert {r["method"] for r in rows} == {"hypermcts", "lats", "flare", "tot", "cot"}
    assert (tmp_path / "hypermcts_cost.png").stat().st_size > 1000
    assert "| toy | HyperMCTS | 3 |" in (tmp_path / "table.md").read_text()


@pytest.mark.parametrize(("args", "message"), [
    (["--methods", "nope"], "unknown"),
    (["--branching", "2,x"], "takes integers"),
    (["--branching", "0"], ">= 1"),
    (["--policy", "heuristic", "--llm", "http://127.0.0.1:9/v1"], "are for --policy llm"),
    (["--policy", "llm"], "--policy llm needs --llm URL"),
])
def test_bad_options_fail_with_a_clear_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    monkeypatch.delenv("HYPERPLAN_LLM_BASE_URL", raising=False)
    result = CliRunner().invoke(app, ["search", "figure", "--suites", "toy", "--tasks", "1",
                                      "--output", str(tmp_path), *args])
    assert result.exit_code != 0
    assert message in result.output


def test_search_run_takes_the_new_methods() -> None:
    result = CliRunner().invoke(app, ["search", "run", "--suite", "toy", "--tasks", "2",
                                      "--rollouts", "4", "--methods",
                                      "hypermcts,flare,flare_split,tot,reflexion,cot",
                                      "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout.strip().splitlines()[-1])
    assert set(doc["methods"]) == {"hypermcts", "flare", "flare_split", "tot", "reflexion",
                                   "cot"}
    assert set(BY_BRANCHING) >= {"hypermcts", "flare", "tot"}
