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
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyperplan.errors import HyperplanError
from hyperplan.secrets import redact_cut, redact_text

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
    "runs": ("run_id", "created", "suite", "agents", "llm", "model", "command", "config"),
    "results": ("run_id", "task_id", "agent", "status", "success", "metrics", "trace",
                "finished"),
}
_ADVICE = "move it away or pass another --store"


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
    """A SQLite run store at ``path`` (created on first use). Opening checks the file before
    anything is read or written: an SQLite database that is damaged (``PRAGMA quick_check``,
    linear in the file's size), that is not a database at all, or that holds other tables or
    other columns is refused with one line, and left as it was."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(self.path, timeout=30)
        except sqlite3.Error as exc:
            raise HyperplanError(f"{self.path}: cannot open the run store ({exc})") from None
        try:
            self._open()
        except sqlite3.Error as exc:
            self._db.close()
            reason = "not an SQLite database" if "not a database" in str(exc) else \
                f"damaged: {exc}"
            raise HyperplanError(f"{self.path}: not a usable run store ({reason}); "
                                 f"{_ADVICE}") from None
        except HyperplanError:
            self._db.close()
            raise

    def _open(self) -> None:
        """Check an existing store, or make the tables of an empty database."""
        objects = self._db.execute("SELECT type, name, tbl_name FROM sqlite_master").fetchall()
        problems = [r[0] for r in self._db.execute("PRAGMA quick_check(3)")]
        if problems != ["ok"]:
            what = " ".join(str(problems[-1]).replace("*** in database main ***", "").split())
            raise HyperplanError(f"{self.path}: not a usable run store (damaged: "
                                 f"{redact_cut(what, 160)}); {_ADVICE}")
        if objects:
            self._check_schema(objects)
        else:  # one transaction, so another process never sees half a schema
            self._db.executescript(f"BEGIN IMMEDIATE; {_SCHEMA} COMMIT;")
        self._db.execute("PRAGMA journal_mode=WAL")

    def _check_schema(self, objects: Sequence[tuple[str, str, str]]) -> None:
        """Only the two tables (and indexes on them) with exactly the expected columns."""
        foreign = sorted({f"{kind} {name}" for kind, name, table in objects
                          if not name.startswith("sqlite_")
                          and (kind, name) not in {("table", t) for t in _COLUMNS}
                          and not (kind == "index" and table in _COLUMNS)})
        missing = [t for t in _COLUMNS if ("table", t) not in {(k, n) for k, n, _ in objects}]
        if foreign or missing:
            found = ", ".join(foreign) if foreign else "no table " + " or ".join(missing)
            raise HyperplanError(f"{self.path}: not a hyperplan run store (it has {found}; a "
                                 f"run store has tables {', '.join(_COLUMNS)}); {_ADVICE}")
        for table, columns in _COLUMNS.items():
            found_columns = tuple(r[1] for r in self._db.execute(f"PRAGMA table_info({table})"))
            if found_columns != columns:
                raise HyperplanError(
                    f"{self.path}: not a hyperplan run store (table {table!r} has columns "
                    f"{', '.join(found_columns)}, not {', '.join(columns)}); {_ADVICE}")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _sql(self, doing: str) -> Iterator[None]:
        """A database error while ``doing`` as one line naming the store (disk full, locked,
        a page found damaged only now): what was committed before stays committed."""
        try:
            yield
        except sqlite3.Error as exc:
            raise HyperplanError(f"{self.path}: cannot {doing} ({exc})") from None

    # -- runs ------------------------------------------------------------------------------------
    def create_run(self, *, suite: str, agents: Sequence[str], llm: str, model: str,
                   command: str, config: Mapping[str, Any], run_id: str | None = None) -> str:
        rid = run_id or time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        with self._sql(f"record run {rid}"), self._db:
            self._db.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?)",
                             (rid, time.time(), suite, ",".join(agents), llm, model,
                              redact_text(command),  # a command line may hold a secret
                              redact_text(json.dumps(dict(config), default=str))))
        return rid

    def run(self, run_id: str) -> RunInfo:
        with self._sql(f"read run {run_id}"):
            row = self._db.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            known = ", ".join(r.run_id for r in self.runs()[-5:]) or "none"
            raise HyperplanError(f"{self.path}: no run {run_id!r} (latest: {known})")
        where = f"run {run_id}"
        config = self._json_object(row[7], f"{where}: config")
        if not isinstance(row[3], str):
            raise self._unreadable(f"{where}: agents", "not text")
        return RunInfo(row[0], row[1], row[2], tuple(row[3].split(",")), row[4], row[5],
                       row[6], config)

    def runs(self) -> list[RunInfo]:
        with self._sql("list runs"):
            ids = [r[0] for r in self._db.execute("SELECT run_id FROM runs ORDER BY created")]
        return [self.run(i) for i in ids]

    # -- results ---------------------------------------------------------------------------------
    def add_result(self, run_id: str, task_id: str, agent: str, *, status: str, success: bool,
                   metrics: Mapping[str, Any], trace: Sequence[Mapping[str, Any]]) -> None:
        """Record one finished (task, agent) and commit at once."""
        row = (run_id, task_id, agent, status, int(success),
               json.dumps(dict(metrics), default=str),
               redact_text("\n".join(json.dumps(dict(e), default=str) for e in trace)),
               time.time())
        with self._sql(f"store the result of task {task_id} / agent {agent}"), self._db:
            self._db.execute("INSERT OR REPLACE INTO results VALUES (?,?,?,?,?,?,?,?)", row)

    def done(self, run_id: str) -> set[tuple[str, str]]:
        """The (task_id, agent) pairs already recorded for ``run_id``."""
        with self._sql(f"read the results of run {run_id}"):
            rows = self._db.execute("SELECT task_id, agent FROM results WHERE run_id = ?",
                                    (run_id,)).fetchall()
        return {(t, a) for t, a in rows}

    def results(self, run_id: str) -> Iterator[ResultRow]:
        doing = f"read the results of run {run_id}"
        with self._sql(doing):
            rows = self._db.execute("SELECT * FROM results WHERE run_id = ? ORDER BY agent, "
                                    "task_id", (run_id,))
        while True:
            with self._sql(doing):
                batch = rows.fetchmany(256)
            if not batch:
                return
            yield from (self._result(run_id, r) for r in batch)

    def _result(self, run_id: str, r: Sequence[Any]) -> ResultRow:
        where = f"run {run_id}, task {r[1]} / agent {r[2]}"
        if not isinstance(r[6], str):
            raise self._unreadable(f"{where}: trace", "not text")
        trace = tuple(self._json_object(line, f"{where}: trace")
                      for line in r[6].splitlines() if line.strip())
        return ResultRow(r[0], r[1], r[2], r[3], bool(r[4]),
                         self._json_object(r[5], f"{where}: metrics"), trace, r[7])

    def _json_object(self, text: object, where: str) -> dict[str, Any]:
        try:
            value = json.loads(text) if isinstance(text, str) else None
        except ValueError as exc:
            raise self._unreadable(where, f"not JSON: {exc}") from None
        if not isinstance(value, dict):
            raise self._unreadable(where, "not a JSON object")
        return value

    def _unreadable(self, where: str, why: str) -> HyperplanError:
        return HyperplanError(f"{self.path}: {where} is unreadable ({why}); the store was not "
                              "written by hyperplan or is damaged")
