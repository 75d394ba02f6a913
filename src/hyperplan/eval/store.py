"""The run store: one SQLite file holding evaluation runs and a result row per (task, agent),
written and committed the moment the task finishes, so a crash or ``kill -9`` loses at most the
tasks that were running. ``--resume RUN_ID`` reads which (task, agent) pairs are done and runs
only the rest.

Tables: ``runs(run_id, created, suite, agents, llm, model, command, config)`` and
``results(run_id, task_id, agent, status, success, metrics, trace, finished)`` with
``metrics``/``config`` as JSON and ``trace`` the JSONL events of the run (secrets already
redacted by the trace writer). WAL journaling keeps readers (reports) off the writer's back.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyperplan.errors import HyperplanError
from hyperplan.secrets import redact_text

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, created REAL, suite TEXT, agents TEXT, llm TEXT, model TEXT,
    command TEXT, config TEXT
);
CREATE TABLE IF NOT EXISTS results (
    run_id TEXT, task_id TEXT, agent TEXT, status TEXT, success INTEGER, metrics TEXT,
    trace TEXT, finished REAL, PRIMARY KEY (run_id, task_id, agent)
);
"""


_COLUMNS = {
    "runs": ["run_id", "created", "suite", "agents", "llm", "model", "command", "config"],
    "results": ["run_id", "task_id", "agent", "status", "success", "metrics", "trace",
                "finished"],
}


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    created: float
    suite: str
    agents: tuple[str, ...]
    llm: str
    model: str
    command: str
    config: Mapping[str, Any]


@dataclass(frozen=True)
class ResultRow:
    run_id: str
    task_id: str
    agent: str
    status: str
    success: bool
    metrics: Mapping[str, Any]
    trace: tuple[dict[str, Any], ...]
    finished: float


class RunStore:
    """A SQLite run store at ``path`` (created on first use)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        advice = "move it away or pass another --store"
        try:
            self._db = sqlite3.connect(self.path, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_SCHEMA)
            problems = [r[0] for r in self._db.execute("PRAGMA quick_check(3)")]
        except sqlite3.DatabaseError as exc:
            raise HyperplanError(f"{self.path}: not a usable run store ({exc}); "
                                 f"{advice}") from None
        if problems != ["ok"]:
            self._db.close()
            what = " ".join(str(problems[-1]).replace("*** in database main ***", "").split())
            raise HyperplanError(f"{self.path}: the run store is damaged ({what[:160]}); "
                                 f"{advice}")
        for table, columns in _COLUMNS.items():
            found = [r[1] for r in self._db.execute(f"PRAGMA table_info({table})")]
            if found != columns:
                self._db.close()
                raise HyperplanError(f"{self.path}: table {table!r} has columns "
                                     f"{', '.join(found)}, not a hyperplan run store's; "
                                     f"{advice}")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- runs ------------------------------------------------------------------------------------
    def create_run(self, *, suite: str, agents: Sequence[str], llm: str, model: str,
                   command: str, config: Mapping[str, Any], run_id: str | None = None) -> str:
        rid = run_id or time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        with self._db:
            self._db.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?)",
                             (rid, time.time(), suite, ",".join(agents), llm, model,
                              redact_text(command),  # a command line may hold a secret
                              redact_text(json.dumps(dict(config), default=str))))
        return rid

    def run(self, run_id: str) -> RunInfo:
        row = self._db.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            known = ", ".join(r.run_id for r in self.runs()[-5:]) or "none"
            raise HyperplanError(f"{self.path}: no run {run_id!r} (latest: {known})")
        return RunInfo(row[0], row[1], row[2], tuple(row[3].split(",")), row[4], row[5],
                       row[6], json.loads(row[7]))

    def runs(self) -> list[RunInfo]:
        ids = [r[0] for r in self._db.execute("SELECT run_id FROM runs ORDER BY created")]
        return [self.run(i) for i in ids]

    # -- results ---------------------------------------------------------------------------------
    def add_result(self, run_id: str, task_id: str, agent: str, *, status: str, success: bool,
                   metrics: Mapping[str, Any], trace: Sequence[Mapping[str, Any]]) -> None:
        """Record one finished (task, agent) and commit at once."""
        with self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO results VALUES (?,?,?,?,?,?,?,?)",
                (run_id, task_id, agent, status, int(success),
                 json.dumps(dict(metrics), default=str),
                 redact_text("\n".join(json.dumps(dict(e), default=str) for e in trace)),
                 time.time()))

    def done(self, run_id: str) -> set[tuple[str, str]]:
        """The (task_id, agent) pairs already recorded for ``run_id``."""
        rows = self._db.execute("SELECT task_id, agent FROM results WHERE run_id = ?",
                                (run_id,))
        return {(t, a) for t, a in rows}

    def results(self, run_id: str) -> Iterator[ResultRow]:
        rows = self._db.execute(
            "SELECT * FROM results WHERE run_id = ? ORDER BY agent, task_id", (run_id,))
        for r in rows:
            trace = tuple(json.loads(line) for line in r[6].splitlines() if line.strip())
            yield ResultRow(r[0], r[1], r[2], r[3], bool(r[4]), json.loads(r[5]), trace, r[7])
