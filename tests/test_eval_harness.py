"""The evaluation harness: run store, agents under one harness, and a run that is killed with
SIGKILL mid-way and resumed without losing or redoing finished tasks."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hyperplan.cli import app
from hyperplan.errors import HyperplanError
from hyperplan.llm import Budget
from hyperplan_bench.eval.harness import EvalConfig, run_eval
from hyperplan_bench.eval.store import RunStore

runner = CliRunner()


def test_store_round_trip_and_errors(tmp_path: Path) -> None:
    with RunStore(tmp_path / "r.sqlite") as db:
        rid = db.create_run(suite="demo", agents=["react"], llm="scripted", model="",
                            command="x", config={"a": 1})
        db.add_result(rid, "t1", "react", status="success", success=True,
                      metrics={"tool_calls": 2}, trace=[{"type": "run_end", "t": 0.1}])
        (row,) = list(db.results(rid))
        assert row.success and row.metrics == {"tool_calls": 2}
        assert row.trace[0]["type"] == "run_end"
        assert db.done(rid) == {("t1", "react")}
        with pytest.raises(HyperplanError, match="no run 'nope'"):
            db.run("nope")
    bad = tmp_path / "bad.sqlite"
    bad.write_text("not a database at all" * 100)
    with pytest.raises(HyperplanError, match="not a usable run store"):
        RunStore(bad)


def test_in_process_run_records_every_agent(tmp_path: Path) -> None:
    cfg = EvalConfig(suite="demo", agents=("hyperagent-goal", "react", "planexec"),
                     llm="scripted", workers=1, limit=4, budget=Budget(max_calls=10))
    with RunStore(tmp_path / "r.sqlite") as db:
        rid = db.create_run(suite="demo", agents=cfg.agents, llm="scripted", model="",
                            command="test", config=cfg.as_dict())
        assert run_eval(cfg, db, rid) == 12
        rows = list(db.results(rid))
    goal_rows = [r for r in rows if r.agent == "hyperagent-goal"]
    assert all(r.success and r.metrics["llm_calls"] == 0 for r in goal_rows)
    react = [r for r in rows if r.agent == "react"]
    assert all(not r.success and r.metrics["category"] == "checker_failed" for r in react)
    assert all(r.metrics["tool_doc_tokens"] > 0 for r in react)
    assert all(any(e["type"] == "run_end" for e in r.trace) for r in rows)


def test_agents_that_need_an_llm_are_refused_without_one() -> None:
    with pytest.raises(HyperplanError, match="need --llm"):
        EvalConfig(suite="demo", agents=("react",)).check()
    with pytest.raises(HyperplanError, match="unknown agent"):
        EvalConfig(suite="demo", agents=("gpt",), llm="scripted").check()


def _count(store: Path) -> int:
    try:
        with sqlite3.connect(store, timeout=5) as db:
            return int(db.execute("SELECT COUNT(*) FROM results").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def test_killed_run_resumes_without_losing_finished_tasks(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    cmd = [sys.executable, "-c", "from hyperplan.cli import main; main()", "eval", "run",
           "--suite", "demo", "--agents", "hyperagent,hyperagent-goal,react,planexec",
           "--scripted", "--workers", "1", "--store", str(store)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while _count(store) < 8 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_at = _count(store)
    assert 8 <= killed_at < 120, "the run must be killed mid-way"
    with sqlite3.connect(store) as db:
        (run_id,) = db.execute("SELECT run_id FROM runs").fetchone()
        before = dict(((t, a), f) for t, a, f in
                      db.execute("SELECT task_id, agent, finished FROM results"))
    result = runner.invoke(app, ["eval", "run", "--resume", run_id, "--store", str(store),
                                 "--json"])
    assert result.exit_code == 0, result.output
    with sqlite3.connect(store) as db:
        after = dict(((t, a), f) for t, a, f in
                     db.execute("SELECT task_id, agent, finished FROM results"))
    assert len(after) == 120
    assert all(after[key] == stamp for key, stamp in before.items())  # not redone
    summary = json.loads(result.stdout)
    assert summary["agents"]["hyperagent-goal"]["success"] == 26


def test_ray_backend_runs_the_same_tasks_on_a_local_ray_instance(tmp_path: Path) -> None:
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        message = "ray is not installed (pip install 'hyperplan[ray]')"
        if os.environ.get("CI") == "true" and os.environ.get("HYPERPLAN_RAY_REQUIRED") == "1":
            pytest.fail(message)
        pytest.skip(message)
    cfg = EvalConfig(suite="demo", agents=("hyperagent-goal",), workers=2, limit=3,
                     backend="ray")
    with RunStore(tmp_path / "r.sqlite") as db:
        rid = db.create_run(suite="demo", agents=cfg.agents, llm="none", model="",
                            command="test", config=cfg.as_dict())
        assert run_eval(cfg, db, rid) == 3
        rows = list(db.results(rid))
    assert sorted(r.task_id for r in rows) == ["t01_like_song", "t02_like_song_pick_title",
                                                "t03_add_song_to_playlist"]
    assert all(r.success for r in rows)
