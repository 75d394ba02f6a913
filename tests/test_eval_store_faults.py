"""Issue 22, item 9: a damaged or foreign run store is one clear line (with what to do), pool
workers die with the `eval run` process that started them, and a lost worker is reported as
such, its task left to ``--resume``."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hyperplan.errors import HyperplanError
from hyperplan.eval.store import RunStore

AGENTS = "hyperagent-goal,react,planexec"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hyperplan", *args], capture_output=True,
                          text=True, timeout=300)


def _store_with_results(path: Path) -> str:
    with RunStore(path) as db:
        rid = db.create_run(suite="demo", agents=["react"], llm="scripted", model="",
                            command="x", config={})
        for i in range(400):
            db.add_result(rid, f"t{i}", "react", status="success", success=True,
                          metrics={"i": i}, trace=[{"type": "run_end", "pad": "x" * 500}])
    return rid


def _one_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("error:")]
    return line


def test_page_corrupted_store_is_one_line_everywhere(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    rid = _store_with_results(store)
    raw = bytearray(store.read_bytes())
    page = 4096
    raw[page * 5: page * 9] = os.urandom(page * 4)
    store.write_bytes(bytes(raw))
    for args in (["eval", "run", "--resume", rid], ["eval", "run", "--suite", "demo",
                 "--agents", "hyperagent-goal"], ["report", rid]):
        line = _one_error(_cli(*args, "--store", str(store)))
        assert str(store) in line and "another --store" in line
        assert "to do" not in line


def test_foreign_schema_and_non_sqlite_are_refused(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE results (id INTEGER, payload TEXT)")
    with pytest.raises(HyperplanError, match="not a hyperplan run store"):
        RunStore(foreign)
    text = tmp_path / "notes.sqlite"
    text.write_text("hello " * 1000)
    with pytest.raises(HyperplanError, match="not a usable run store"):
        RunStore(text)


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


def _stored(store: Path) -> int:
    try:
        with sqlite3.connect(store, timeout=5) as db:
            return int(db.execute("SELECT COUNT(*) FROM results").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def _start_run(store: Path) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "hyperplan", "eval", "run", "--suite", "demo", "--agents",
           AGENTS, "--llm", "scripted", "--workers", "2", "--store", str(store)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for_workers(proc: subprocess.Popen[bytes]) -> list[int]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        workers = [c for c in _children(proc.pid) if _alive(c)]
        if len(workers) >= 2:
            return workers
        time.sleep(0.1)
    raise AssertionError("no workers started")


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_workers_die_with_the_killed_parent(tmp_path: Path) -> None:
    proc = _start_run(tmp_path / "runs.sqlite")
    workers = _wait_for_workers(proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [w for w in workers if _alive(w)]
    for w in left:  # never leave our own processes behind, even when the test fails
        os.kill(w, signal.SIGKILL)
    assert not left


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_a_killed_worker_is_reported_and_resume_finishes(tmp_path: Path) -> None:
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
    assert proc.returncode == 1 and "Traceback" not in stderr
    assert "worker process was lost" in stderr and "--resume" in stderr
    with sqlite3.connect(store) as db:
        (rid,) = db.execute("SELECT run_id FROM runs").fetchone()
    resumed = _cli("eval", "run", "--resume", rid, "--store", str(store))
    assert resumed.returncode == 0, resumed.stderr
    with sqlite3.connect(store) as db:
        count = db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    assert count == 30 * 3
