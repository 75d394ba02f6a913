"""Issue 22, item 9: a damaged or foreign run store is one clear line (with what to do) and is
left as it was; pool workers die with the `eval run` process that started them; a lost worker
costs only the task it was running (one line, the other tasks go on in a fresh pool), and
``--resume`` runs that task."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from hyperplan.errors import HyperplanError
from hyperplan.execute.results import ToolRuntime
from hyperplan_bench.eval import agent_suites
from hyperplan_bench.eval.agent_suites import DemoSuite, EvalTask, SuiteSession
from hyperplan_bench.eval.harness import EvalConfig, TaskRunsLost, run_eval
from hyperplan_bench.eval.store import RunStore

AGENTS = "hyperagent-goal,react,planexec"
ADVICE = "move it away or pass another --store"
needs_proc = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
needs_fork = pytest.mark.skipif(multiprocessing.get_start_method() != "fork",
                                reason="the test's suite reaches the workers by fork")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hyperplan", *args], capture_output=True,
                          text=True, timeout=300)


def _one_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("error:")]
    return line


def _store_with_results(path: Path) -> str:
    with RunStore(path) as db:
        rid = db.create_run(suite="demo", agents=["react"], llm="scripted", model="",
                            command="x", config={})
        for i in range(400):
            db.add_result(rid, f"t{i}", "react", status="success", success=True,
                          metrics={"i": i}, trace=[{"type": "run_end", "pad": "x" * 500}])
    return rid


# -- the store -----------------------------------------------------------------------------------
def test_page_corrupted_store_is_one_line_everywhere(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    rid = _store_with_results(store)
    raw = bytearray(store.read_bytes())
    page = 4096
    raw[page * 5: page * 9] = os.urandom(page * 4)
    store.write_bytes(bytes(raw))
    for args in (["eval", "run", "--resume", rid], ["eval", "run", "--suite", "demo",
                 "--agents", "hyperagent-goal"], ["eval", "report", rid]):
        proc = _cli(*args, "--store", str(store))
        line = _one_error(proc)
        assert line.startswith(f"error: {store}: not a usable run store (damaged: ")
        assert line.endswith(ADVICE)
        assert "to do" not in proc.stderr  # refused when opened, before any work is counted
    assert store.read_bytes() == raw  # and left as it was


def test_a_sqlite_file_with_other_tables_is_refused_and_left_alone(tmp_path: Path) -> None:
    foreign = tmp_path / "notes.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE notes (id INTEGER, body TEXT)")
        db.execute("INSERT INTO notes VALUES (1, 'keep me')")
    db.close()
    before = foreign.read_bytes()
    line = _one_error(_cli("eval", "run", "--suite", "demo", "--agents", "hyperagent-goal",
                           "--store", str(foreign)))
    assert line == (f"error: {foreign}: not a hyperplan run store (it has table notes; a run "
                    f"store has tables runs, results); {ADVICE}")
    assert foreign.read_bytes() == before  # no tables added, no journal mode changed
    assert not Path(f"{foreign}-wal").exists()


def test_a_results_table_with_other_columns_is_refused(tmp_path: Path) -> None:
    foreign = tmp_path / "runs.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE runs (run_id TEXT, created REAL, suite TEXT, agents TEXT, "
                   "llm TEXT, model TEXT, command TEXT, config TEXT)")
        db.execute("CREATE TABLE results (id INTEGER, payload TEXT)")
    db.close()
    line = _one_error(_cli("eval", "report", "some-run", "--store", str(foreign)))
    assert line == (f"error: {foreign}: not a hyperplan run store (table 'results' has columns "
                    "id, payload, not run_id, task_id, agent, status, success, metrics, trace, "
                    f"finished); {ADVICE}")


def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path) -> None:
    text = tmp_path / "notes.sqlite"
    text.write_text("hello " * 1000)
    line = _one_error(_cli("eval", "run", "--resume", "r1", "--store", str(text)))
    assert line == f"error: {text}: not a usable run store (not an SQLite database); {ADVICE}"
    assert text.read_text() == "hello " * 1000


def test_values_not_written_by_hyperplan_are_one_line(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    rid = _store_with_results(store)  # its run has an empty config, as no `eval run` writes
    line = _one_error(_cli("eval", "run", "--resume", rid, "--store", str(store)))
    assert line == (f"error: {store}: run {rid} has no usable configuration to resume "
                    "(KeyError: 'agents'); it was not started by `hyperplan eval run`")
    with sqlite3.connect(store) as db:
        db.execute("UPDATE results SET metrics = '{broken' WHERE task_id = 't7'")
    db.close()
    with RunStore(store) as opened, pytest.raises(HyperplanError) as caught:
        list(opened.results(rid))
    assert str(caught.value).startswith(
        f"{store}: run {rid}, task t7 / agent react: metrics is unreadable (not JSON: ")


def test_a_store_that_fills_up_mid_run_is_one_line_and_keeps_what_was_stored(
        tmp_path: Path) -> None:
    cfg = EvalConfig(suite="demo", agents=("hyperagent-goal",), workers=1, limit=6)
    with RunStore(tmp_path / "runs.sqlite") as db:
        rid = db.create_run(suite="demo", agents=cfg.agents, llm="none", model="",
                            command="test", config=cfg.as_dict())
        stored: list[str] = []

        def fill_up(outcome: Any, done: int, total: int) -> None:
            stored.append(outcome.task_id)
            if done == 2:  # the file may not grow any more: the next insert fails
                pages = db._db.execute("PRAGMA page_count").fetchone()[0]
                db._db.execute(f"PRAGMA max_page_count = {pages}")

        with pytest.raises(HyperplanError) as caught:
            run_eval(cfg, db, rid, fill_up)
        assert {t for t, _ in db.done(rid)} == set(stored)
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'runs.sqlite'}: cannot store the result of task ")
    assert message.endswith("(database or disk is full)") and "\n" not in message
    assert 2 <= len(stored) < 6


# -- workers and their parent --------------------------------------------------------------------
def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait_gone(pids: list[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [p for p in pids if _alive(p)]
    for p in left:  # never leave our own processes behind, even when the test fails
        os.kill(p, signal.SIGKILL)
    return left


def _stored(store: Path) -> int:
    try:
        with sqlite3.connect(store, timeout=5) as db:
            return int(db.execute("SELECT COUNT(*) FROM results").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def _start_run(store: Path) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "hyperplan", "eval", "run", "--suite", "demo", "--agents",
           AGENTS, "--scripted", "--workers", "2", "--store", str(store)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for_workers(proc: subprocess.Popen[bytes]) -> list[int]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        workers = [c for c in _children(proc.pid) if _alive(c)]
        if len(workers) >= 2:
            return workers
        time.sleep(0.1)
    raise AssertionError("no workers started")


@needs_proc
def test_workers_die_with_the_killed_parent(tmp_path: Path) -> None:
    proc = _start_run(tmp_path / "runs.sqlite")
    workers = _wait_for_workers(proc)  # read before the kill: afterwards they are init's
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not _wait_gone(workers, 5)


_WATCHED_CHILD = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", '''
import os, sys, time, hyperplan_bench.eval.workers as w
w._set_parent_death_signal = lambda: False  # as where there is no prctl
w.die_with_parent(os.getppid())
print(os.getpid(), flush=True)
time.sleep(120)
'''], stdout=subprocess.PIPE, text=True)
print(child.stdout.readline().strip(), flush=True)
time.sleep(120)
"""


@needs_proc
def test_the_watchdog_alone_ends_a_worker_whose_parent_died() -> None:
    parent = subprocess.Popen([sys.executable, "-c", _WATCHED_CHILD], stdout=subprocess.PIPE,
                              text=True)
    assert parent.stdout is not None
    worker = int(parent.stdout.readline())
    time.sleep(0.3)
    assert _alive(worker)  # the watchdog leaves a worker with a live parent alone
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    assert not _wait_gone([worker], 3)


@needs_proc
def test_a_worker_killed_from_outside_costs_one_task_and_resume_finishes(
        tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    proc = _start_run(store)
    _wait_for_workers(proc)
    deadline = time.monotonic() + 120
    while _stored(store) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    (victim, *_) = [c for c in _children(proc.pid) if _alive(c)]
    os.kill(victim, signal.SIGKILL)
    _, err = proc.communicate(timeout=300)
    stderr = err.decode()
    assert "Traceback" not in stderr and "BrokenProcessPool" not in stderr
    lost = [x for x in stderr.splitlines() if x.startswith("warning: worker process lost")]
    assert len(lost) == 1 and "(killed by signal 9, SIGKILL)" in lost[0], stderr
    with sqlite3.connect(store) as db:
        (rid,) = db.execute("SELECT run_id FROM runs").fetchone()
    db.close()
    if "its result is not stored" in lost[0]:  # killed while running a task (nearly always)
        assert proc.returncode == 1
        assert _stored(store) == 89  # the other tasks went on in a fresh pool
        assert f"`--resume {rid}` runs it again" in lost[0]
        assert _one_error(subprocess.CompletedProcess([], 1, "", stderr)).endswith(
            f"`hyperplan eval run --resume {rid} --store {store}` runs the rest")
        resumed = _cli("eval", "run", "--resume", rid, "--store", str(store))
        assert resumed.returncode == 0, resumed.stderr
        assert f"run {rid}: 1 task runs to do" in resumed.stderr
    else:  # killed between two tasks: nothing to redo
        assert proc.returncode == 0 and "between tasks; no result lost" in lost[0]
    assert _stored(store) == 30 * 3


# -- lost workers, deterministically: a suite whose tasks kill their own worker ----------------
class _Doomed:
    """The demo session, except that starting a doomed task kills the worker (or raises)."""

    def __init__(self, inner: SuiteSession, doomed: set[str], how: str) -> None:
        self.inner, self.doomed, self.how = inner, doomed, how
        self.catalog, self.graph = inner.catalog, inner.graph
        self.embedder, self.index = inner.embedder, inner.index

    def start(self, task: EvalTask) -> ToolRuntime:
        if task.id in self.doomed and self.how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if task.id in self.doomed:
            raise SystemExit(3)
        return self.inner.start(task)

    def check(self, task: EvalTask) -> bool:
        return self.inner.check(task)


class _DoomedSuite(DemoSuite):
    name = "doomed"

    def __init__(self, doomed: str = "", how: str = "kill") -> None:
        self.doomed, self.how = set(doomed.split(",")), how

    def open(self, embedder: str) -> SuiteSession:
        return _Doomed(super().open(embedder), self.doomed, self.how)


def _doomed_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, doomed: list[str],
                how: str = "kill") -> tuple[RunStore, str, EvalConfig]:
    monkeypatch.setitem(agent_suites.SUITES, "doomed", _DoomedSuite)
    cfg = EvalConfig(suite="doomed", agents=("hyperagent-goal",), workers=2, limit=8,
                     suite_options={"doomed": ",".join(doomed), "how": how})
    db = RunStore(tmp_path / "runs.sqlite")
    rid = db.create_run(suite="doomed", agents=cfg.agents, llm="none", model="",
                        command="test", config=cfg.as_dict())
    return db, rid, cfg


@needs_fork
def test_a_dead_worker_loses_only_its_task_and_the_rest_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = [t.id for t in DemoSuite().tasks()[:8]]
    db, rid, cfg = _doomed_run(tmp_path, monkeypatch, [ids[2]])
    lines: list[str] = []
    with db, pytest.raises(TaskRunsLost) as caught:
        run_eval(cfg, db, rid, on_lost=lines.append)
    assert lines == [f"worker process lost (killed by signal 9, SIGKILL) while running task "
                     f"{ids[2]} / agent hyperagent-goal; its result is not stored; "
                     f"`--resume {rid}` runs it again"]
    assert str(caught.value) == (
        f"run {rid}: 1 task run not stored (task {ids[2]} / agent hyperagent-goal); every "
        f"finished result is stored; `hyperplan eval run "
        f"--resume {rid} --store {tmp_path / 'runs.sqlite'}` runs the rest")
    with RunStore(tmp_path / "runs.sqlite") as again:
        assert {t for t, _ in again.done(rid)} == set(ids) - {ids[2]}
        monkeypatch.setitem(agent_suites.SUITES, "doomed", lambda **_: DemoSuite())  # fixed
        assert run_eval(cfg, again, rid) == 1  # what --resume does
        assert {t for t, _ in again.done(rid)} == set(ids)


@needs_fork
def test_workers_that_keep_dying_stop_the_run_after_three_pools(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = [t.id for t in DemoSuite().tasks()[:8]]
    db, rid, cfg = _doomed_run(tmp_path, monkeypatch, ids)
    lines: list[str] = []
    with db:
        with pytest.raises(TaskRunsLost) as caught:
            run_eval(cfg, db, rid, on_lost=lines.append)
        assert db.done(rid) == set()
    lost = [x for x in lines if "while running task" in x]
    assert 3 <= len(lost) <= 6 and len(caught.value.lost) == len(lost)
    assert caught.value.stopped is not None and caught.value.stopped.breaks == 3
    assert str(caught.value).startswith(
        f"run {rid}: stopped after 3 lost worker processes, {8 - len(lost)} task runs not "
        "started (something keeps killing the workers: memory?); ")


@needs_fork
def test_a_job_that_raises_past_the_harness_is_reported_not_stored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = [t.id for t in DemoSuite().tasks()[:8]]
    db, rid, cfg = _doomed_run(tmp_path, monkeypatch, [ids[1]], how="raise")
    lines: list[str] = []
    with db, pytest.raises(TaskRunsLost):
        run_eval(cfg, db, rid, on_lost=lines.append)
    assert lines == [f"task {ids[1]} / agent hyperagent-goal did not finish in its worker "
                     f"process (SystemExit: 3); its result is not stored; `--resume {rid}` "
                     "runs it again"]
    with RunStore(tmp_path / "runs.sqlite") as again:
        assert {t for t, _ in again.done(rid)} == set(ids) - {ids[1]}
