"""Suites registry (issue 6): gold-call suites on the symbolic environment, the AppWorld adapter
(against a double of the ``appworld`` module), scenarios and SGC, and the one suite table."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from conftest import shared_path
from hyperplan.catalog import Catalog, ToolSpec
from hyperplan.cli import app
from hyperplan.errors import HyperplanError
from hyperplan_bench.eval import registry
from hyperplan_bench.eval.agent_suites import SUITES, EvalTask, get_suite
from hyperplan_bench.eval.harness import EvalConfig, run_eval
from hyperplan_bench.eval.replay_suite import (
    RecordedCall,
    SymbolicRuntime,
    goal_from_gold,
    gold_replays,
    load_gold_suite,
    matches_gold,
    replay_gold,
    value_at,
)
from hyperplan_bench.eval.report import summarize_agents
from hyperplan_bench.eval.store import ResultRow, RunStore
from hyperplan_bench.importers.gold import GoldCall, GoldFlow, GoldTask


def _tool(name: str, inputs: dict[str, str], outputs: dict[str, Any]) -> ToolSpec:
    return ToolSpec(name=name, description=name,
                    input_schema={"type": "object",
                                  "properties": {k: {"type": v} for k, v in inputs.items()}},
                    output_schema={"type": "object", "properties": outputs})


CATALOG = Catalog(tools=(
    _tool("find_user", {"email": "string"}, {"user": {"type": "object", "properties": {
        "id": {"type": "integer"}, "name": {"type": "string"}}}}),
    _tool("list_orders", {"user_id": "integer"}, {"orders": {"type": "array", "items": {
        "type": "object", "properties": {"order_id": {"type": "string"}}}}}),
    _tool("cancel", {"order_id": "string", "reason": "string"}, {"ok": {"type": "boolean"}}),
))
GOLD = GoldTask(
    id="t1", text="Cancel the order of ann@x.org: wrong size.",
    tools=("find_user", "list_orders", "cancel"),
    flows=(GoldFlow("find_user", "user.id", "list_orders", "user_id"),
           GoldFlow("list_orders", "orders[0].order_id", "cancel", "order_id")),
    calls=(GoldCall("find_user", (("email", '"ann@x.org"'),)),
           GoldCall("list_orders", (), ("user_id",)),
           GoldCall("cancel", (("reason", '"wrong size"'),), ("order_id",))),
)


def _call(rt: SymbolicRuntime, tool: str, **args: Any) -> Any:
    result = rt.call(rt.tools[tool], args)
    assert result.ok, result.error
    return result.value


def test_symbolic_outputs_are_typed_and_traceable() -> None:
    rt = SymbolicRuntime(CATALOG)
    user = _call(rt, "find_user", email="ann@x.org")
    assert user["user"]["name"] == "⟨find_user#1:user.name⟩"
    assert isinstance(user["user"]["id"], int)
    orders = _call(rt, "list_orders", user_id=user["user"]["id"])
    assert orders == {"orders": [{"order_id": "⟨list_orders#2:orders[].order_id⟩"}]}
    assert rt.values.sources_of(user["user"]["id"]) == {("find_user", "user.id")}
    assert rt.values.sources_of(orders["orders"]) == {("list_orders", "orders")}
    quoted = f"see {orders['orders'][0]['order_id']}"
    assert rt.values.sources_of(quoted) == {("list_orders", "orders[].order_id")}
    assert value_at(orders, "orders[0].order_id") == orders["orders"][0]["order_id"]


def test_gold_replay_passes_and_each_kind_of_mistake_fails() -> None:
    rt = SymbolicRuntime(CATALOG)
    replay_gold(GOLD, rt)
    assert matches_gold(GOLD, rt.calls, rt.values)
    assert gold_replays(GOLD, CATALOG)
    user_id = rt.calls[1].arguments["user_id"]
    order = rt.calls[2].arguments["order_id"]

    def variant(*calls: RecordedCall) -> bool:
        return matches_gold(GOLD, list(calls), rt.values)

    first, second, third = rt.calls
    assert variant(third, first, second)  # order of independent matching does not matter
    assert not variant(first, second)  # a call missing
    assert not variant(first, second, third, third)  # an extra call
    assert not variant(first, second, RecordedCall("cancel", {"order_id": order,
                                                              "reason": "too big"}))
    assert not variant(first, second, RecordedCall("cancel", {"order_id": "A-17",
                                                              "reason": "wrong size"}))
    assert not variant(first, second, RecordedCall("cancel", {"order_id": order}))
    assert not variant(first, RecordedCall("list_orders", {"user_id": 12}), third)
    assert variant(first, RecordedCall("list_orders", {"user_id": user_id}),
                   RecordedCall("cancel", {"order_id": order, "reason": " Wrong Size "}))


def test_goal_from_gold_names_terminals_and_known_values() -> None:
    goal = goal_from_gold(GOLD)
    assert goal is not None
    assert [s.terminals for s in goal.subgoals] == [("cancel",)]
    assert goal.subgoals[0].values == {"reason": "wrong size"}
    assert goal.values == {"email": "ann@x.org"}


def test_real_gold_calls_replay_on_the_symbolic_environment() -> None:
    """Every NesTools task and all but 24 NESTFUL tasks (whose flows read output paths their
    spec lacks) replay their own gold calls to a pass; the suites list exactly those."""
    counts = {}
    for suite, path in (("nestools", shared_path("nestools", "test_data_dev.jsonl")),
                        ("nestful", shared_path("nestful", "data"))):
        catalog, tasks = load_gold_suite(suite, path)
        counts[suite] = (sum(gold_replays(t, catalog) for t in tasks), len(tasks))
        assert len(get_suite(suite, data=str(path)).tasks()) == counts[suite][0]
    assert counts == {"nestools": (600, 600), "nestful": (276, 300)}


def test_nestools_runs_llm_free_through_the_harness(tmp_path: Path) -> None:
    data = str(shared_path("nestools", "test_data_dev.jsonl"))
    cfg = EvalConfig(suite="nestools", agents=("hyperagent-goal",), workers=1, limit=6,
                     suite_options={"data": data})
    with RunStore(tmp_path / "runs.sqlite") as db:
        rid = db.create_run(suite="nestools", agents=cfg.agents, llm="none", model="",
                            command="test", config=cfg.as_dict())
        run_eval(cfg, db, rid)
        rows = list(db.results(rid))
    assert len(rows) == 6
    # test 1: scan_isbn -> locate_book -> engage_ar_experience, all flows bound by DOE links
    first = next(r for r in rows if r.task_id == "1")
    assert first.success and first.metrics["tool_calls"] == 3
    assert all(r.metrics["llm_calls"] == 0 for r in rows)


def test_missing_gold_data_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(HyperplanError, match="data not found"):
        get_suite("nestful", data=str(tmp_path / "nope")).tasks()


# -- AppWorld ------------------------------------------------------------------------------------
class _FakeWorld:
    """A double of ``appworld.AppWorld``: records executed code, answers like its shell."""

    made: ClassVar[list[_FakeWorld]] = []

    def __init__(self, task_id: str, experiment_name: str) -> None:
        self.task_id, self.code, self.closed = task_id, [], False
        _FakeWorld.made.append(self)

    def execute(self, code: str) -> str:
        self.code.append(code)
        if "show_song" in code:
            return "Execution failed. Traceback:\n  Exception: Song not found."
        return json.dumps({"access_token": "tok-1"})

    def evaluate(self) -> Any:
        return types.SimpleNamespace(success=any("login" in c for c in self.code))

    def close(self) -> None:
        self.closed = True


def test_appworld_tasks_group_into_scenarios() -> None:
    directory = shared_path("appworld")
    tasks = get_suite("appworld", data=str(directory)).tasks()
    assert len(tasks) == 90 and len({t.scenario for t in tasks}) == 30
    first = tasks[0]
    assert first.id == "82e2fac_1" and first.scenario == "82e2fac"
    assert "Joyce Weaver" in first.request and "joyce-weav@gmail.com" in first.request


def test_appworld_needs_its_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "appworld", None)
    with pytest.raises(HyperplanError, match="pip install appworld"):
        get_suite("appworld", data=str(shared_path("appworld"))).open("hashing")


def test_appworld_session_runs_calls_in_the_world_and_checks_with_its_evaluator(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "appworld", types.SimpleNamespace(AppWorld=_FakeWorld))
    session = get_suite("appworld", data=str(shared_path("appworld"))).open("hashing")
    task = EvalTask("82e2fac_1", "x", scenario="82e2fac")
    runtime = session.start(task)
    login = session.catalog.get("spotify.login")
    ok = runtime.call(login, {"username": "a@b.c", "password": "p'\"); import os #"})
    assert ok.ok and ok.value == {"access_token": "tok-1"}
    world = _FakeWorld.made[-1]
    assert world.task_id == "82e2fac_1"
    assert "apis.spotify.login(**json.loads(" in world.code[0]
    assert "import os" not in world.code[0].split("json.loads(")[0]  # argument stays data
    bad = runtime.call(session.catalog.get("spotify.show_song"), {"song_id": 1})
    assert not bad.ok and "Song not found" in bad.error
    invalid = runtime.call(login, {"username": 3})
    assert not invalid.ok and len(world.code) == 2  # rejected before reaching the world
    runtime.close()
    assert session.check(task) and world.closed


# -- scenarios, SGC, registry --------------------------------------------------------------------
def _row(task: str, ok: bool, scenario: str) -> ResultRow:
    return ResultRow("r", task, "a", "success", ok, {"scenario": scenario}, (), 0.0)


def test_sgc_reads_scenarios_stored_with_the_results() -> None:
    rows = [_row("x1", True, "x"), _row("x2", True, "x"), _row("y1", True, "y"),
            _row("y2", False, "y"), _row("z", True, "")]
    (summary,) = summarize_agents(rows)
    assert summary.sgc == 0.5 and summary.success == 4


def test_demo_tasks_carry_scenarios() -> None:
    tasks = get_suite("demo").tasks()
    groups: dict[str, int] = {}
    for t in tasks:
        if t.scenario:
            groups[t.scenario] = groups.get(t.scenario, 0) + 1
    assert groups == {"like_song": 3, "send_money": 3, "text_contact": 2, "delete_note": 2}


def test_suite_table_matches_every_registry() -> None:
    from hyperplan_bench.eval import links, preselect, replay_suite
    from hyperplan_bench.eval.retrieval import SUITES as RETRIEVAL
    from hyperplan_bench.eval.treesearch.suites import SUITES as SEARCH

    assert set(registry.suites_of_kind("agent")) == set(SUITES)
    assert set(registry.suites_of_kind("retrieval")) == set(RETRIEVAL)
    assert set(registry.suites_of_kind("search")) == set(SEARCH)
    assert set(registry.suites_of_kind("chains")) == {"nestools", "nestful", "sealtools", "tau2"}
    assert set(links.SUITES) == {"nestools", "nestful", "sealtools", "tau2"}
    assert set(preselect.SUITES) == {"appworld", "nestools", "nestful", "stabletoolbench",
                                     "tau2", "sealtools", "custom", "mcp-six", "mcp-corpus"}
    assert set(preselect.REPLAY_SUITES) == {"nestools", "nestful", "tau2", "sealtools"}
    assert replay_suite.REPLAY_SUITES == {"nestools": "nestools/test_data_dev.jsonl",
                                          "nestful": "nestful/data"}
    result = CliRunner().invoke(app, ["eval", "suites", "--json"])
    assert result.exit_code == 0, result.output
    names = [s["name"] for s in json.loads(result.output)]
    assert names == [s.name for s in registry.SUITE_TABLE]
