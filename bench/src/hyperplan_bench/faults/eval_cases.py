"""Cases of ``hyperplan bench faults`` about the evaluation store and its workers (fault item 9
of docs/benchmarks.md, "Runtime trust under faults"): a page-corrupted and a foreign
``runs.sqlite``; ``kill -9`` of a pool worker and of the ``eval run`` process itself (three
times, at different moments), each followed by ``--resume``, counting the results lost.

The runs are those of ``tests/test_eval_store_faults.py``: the demo suite with three agents and
the scripted LLM double on two workers, 90 task runs in all. The kills signal only processes
of the benchmark's own ``eval run`` (its pid, and its children read from ``/proc``).
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from hyperplan_bench.faults.common import case, expect_error
from hyperplan_bench.faults.runner import CaseContext, Running, children, kill_pids
from hyperplan_bench.faults.verdict import TRACEBACK, Check, Step, one_line

AGENTS = "hyperagent-goal,react,planexec"
ADVICE = "move it away or pass another --store"
_TO_DO = re.compile(r"run (\S+): (\d+) task runs to do")
_WAIT_S = 90.0
RUN_ALLOWANCE_S = 180.0  # an `eval run` of the whole suite on a busy machine


def _eval(store: Path) -> tuple[str, ...]:
    return ("eval", "run", "--suite", "demo", "--agents", AGENTS, "--scripted",
            "--workers", "2", "--store", str(store.name))


def _resume(run_id: str, store: Path) -> tuple[str, ...]:
    return ("eval", "run", "--resume", run_id, "--store", store.name)


def _stored(store: Path) -> int:
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5) as db:
            count = int(db.execute("SELECT COUNT(*) FROM results").fetchone()[0])
        db.close()
        return count
    except sqlite3.Error:
        return 0


def _wait_for(running: Running, condition: Callable[[], bool]) -> bool:
    """Poll ``condition`` until it holds, the step ends, or :data:`_WAIT_S` pass."""
    until = time.monotonic() + _WAIT_S
    while time.monotonic() < until and running.proc.poll() is None:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def _planned(step: Step) -> tuple[str | None, int | None]:
    """``(run id, task runs to do)`` from the first line of ``eval run``."""
    found = _TO_DO.search(step.stderr)
    return (found.group(1), int(found.group(2))) if found else (None, None)


# -- the store -----------------------------------------------------------------------------------

def _damaged_store(path: Path) -> str:
    from hyperplan_bench.eval.store import RunStore

    with RunStore(path) as db:
        run_id = db.create_run(suite="demo", agents=["react"], llm="scripted", model="",
                               command="x", config={})
        for i in range(400):
            db.add_result(run_id, f"t{i}", "react", status="success", success=True,
                          metrics={"i": i}, trace=[{"type": "run_end", "pad": "x" * 500}])
    raw = bytearray(path.read_bytes())
    page = 4096
    raw[page * 5: page * 9] = os.urandom(page * 4)
    path.write_bytes(bytes(raw))
    return run_id


@case("store-page-corrupted", 9)
def store_page_corrupted(ctx: CaseContext) -> Check:
    """A page-corrupted ``runs.sqlite`` given to ``eval run --resume``, a new ``eval run`` and
    ``report``: each one line with what to do, before any work is counted; the file is left
    as it was (item 9; before the fix: ``DatabaseError`` tracebacks and "8 task runs to do")."""
    store = ctx.work / "runs.sqlite"
    run_id = _damaged_store(store)
    before = store.read_bytes()
    checks = [expect_error(ctx.cli(*args, "--store", store.name), "not a usable run store",
                           ADVICE)
              for args in (("eval", "run", "--resume", run_id),
                           ("eval", "run", "--suite", "demo", "--agents", "hyperagent-goal"),
                           ("eval", "report", run_id))]
    counted = any("to do" in s.stderr for s in ctx.steps)
    same = store.read_bytes() == before
    bad = [c.detail for c in checks if not c.ok]
    ok = not bad and not counted and same
    detail = bad[0] if bad else checks[0].detail
    if counted:
        detail = f"work was counted before the refusal; {detail}"
    if not same:
        detail = f"the store WAS changed; {detail}"
    return Check(ok, f"3 commands; {detail}")


@case("store-foreign-schema", 9)
def store_foreign_schema(ctx: CaseContext) -> Check:
    """An SQLite file with another application's tables as ``--store``: refused in one line,
    no table added, no journal mode changed (item 9; before the fix: ``OperationalError``)."""
    foreign = ctx.work / "notes.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE notes (id INTEGER, body TEXT)")
        db.execute("INSERT INTO notes VALUES (1, 'keep me')")
    db.close()
    before = foreign.read_bytes()
    step = ctx.cli("eval", "run", "--suite", "demo", "--agents", "hyperagent-goal", "--store",
                   foreign.name)
    same = foreign.read_bytes() == before and not Path(f"{foreign}-wal").exists()
    return expect_error(step, "not a hyperplan run store", ADVICE, also=same,
                        note="" if same else "the file WAS changed")


# -- workers -------------------------------------------------------------------------------------

@case("eval-worker-killed", 9)
def eval_worker_killed(ctx: CaseContext) -> Check:
    """``kill -9`` of one pool worker once 3 results are stored, then ``--resume``: one
    warning naming the lost task (no ``BrokenProcessPool`` traceback), the rest goes on, and
    after the resume all 90 results are there (item 9)."""
    store = ctx.work / "runs.sqlite"
    first = ctx.spawn(*_eval(store), expect=(0, 1), allowance=RUN_ALLOWANCE_S)
    _wait_for(first, lambda: len(children(first.pid)) >= 2 and _stored(store) >= 3)
    workers = children(first.pid)
    kill_pids(workers[:1])
    step = ctx.finish(first)
    run_id, total = _planned(step)
    if run_id is None or total is None:
        return Check(False, f"no 'task runs to do' line ({one_line(step.stderr, 120)})")
    lost_lines = [x for x in step.stderr.splitlines()
                  if x.startswith("warning: worker process lost")]
    ctx.cli(*_resume(run_id, store), expect=(0,), allowance=RUN_ALLOWANCE_S)
    stored = _stored(store)
    clean = "BrokenProcessPool" not in step.stderr and TRACEBACK not in step.stderr
    ok = bool(workers) and len(lost_lines) == 1 and clean
    detail = (f"worker {workers[0] if workers else '?'} killed at "
              f"{'>=3' if workers else '?'} results; {len(lost_lines)} 'worker process lost' "
              f"line(s); {stored}/{total} results after --resume")
    return Check(ok, detail, lost=max(0, total - stored))


@case("eval-main-killed-three-times", 9)
def eval_main_killed_three_times(ctx: CaseContext) -> Check:
    """``kill -9`` of the ``eval run`` process itself at 3, 30 and 60 stored results, each
    time followed by ``--resume``: the workers die with their parent every time (before the fix
    they were alive 17 minutes later) and in the end nothing is lost (item 9)."""
    store = ctx.work / "runs.sqlite"
    run_id: str | None = None
    total: int | None = None
    moments = []
    for threshold in (3, 30, 60):
        args = _eval(store) if run_id is None else _resume(run_id, store)
        running = ctx.spawn(*args, expect=(0, 1), allowance=RUN_ALLOWANCE_S)

        def reached(at_least: int = threshold) -> bool:
            return _stored(store) >= at_least

        _wait_for(running, reached)
        moments.append(_stored(store))
        ctx.kill(running)
        ctx.finish(running)  # workers alive after the grace: left over (a hang), killed
        step = ctx.steps[-1]
        if run_id is None:
            run_id, total = _planned(step)
            if run_id is None or total is None:
                return Check(False, f"no 'task runs to do' line ({one_line(step.stderr, 120)})")
    assert run_id is not None and total is not None
    ctx.cli(*_resume(run_id, store), expect=(0,), allowance=RUN_ALLOWANCE_S)
    stored = _stored(store)
    return Check(True, f"killed at {', '.join(map(str, moments))} stored results; "
                 f"{stored}/{total} results after the last --resume", lost=max(0, total - stored))
