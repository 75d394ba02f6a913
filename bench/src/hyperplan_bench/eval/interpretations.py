"""Task interpretations for the retrieval benchmark: the deterministic rules, or an LLM.

The Tool Context Graph (HyperAgent, "Task-Level Planning") starts from a task interpretation
d_t = (d_op, d_sch) that the paper obtains from an LLM. ``hyperplan eval retrieval`` uses the
rule-based :func:`~hyperplan.retrieve.interpret_request` by default; with an endpoint it asks
the model through :func:`hyperplan.plan.planner.interpret` instead (an unusable answer falls
back to the rules, and the benchmark counts how often).

LLM answers are slow and not free, so they can be kept in a JSONL file
(:class:`InterpretationStore`): one line per task, ``{"id", "text", "source", "operations",
"schemas", "apps"}``, appended and flushed as soon as a task is interpreted, so an interrupted
run loses nothing and a second run (another budget, another embedder) re-reads them. A stored
line is reused only for the same task id *and* the same request text; for a task whose answer
was unusable, the line records that the rules were used, and the rules run again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from hyperplan.errors import HyperplanError
from hyperplan.jsonl import read_records
from hyperplan.llm.types import LLM
from hyperplan.plan.planner import interpret
from hyperplan.retrieve.interpret import (
    InterpretationError,
    TaskInterpretation,
    from_llm_json,
    interpret_request,
)

__all__ = [
    "InterpretationStore",
    "Interpreted",
    "Interpreter",
    "llm_interpreter",
    "rules_interpreter",
]


@dataclass(frozen=True)
class Interpreted:
    """One task's interpretation, where it came from (``"llm"`` or ``"rules"``), and the
    seconds it took (0 when read back from a store)."""

    task: TaskInterpretation
    source: str
    seconds: float = 0.0


Interpreter = Callable[[str, Sequence[str]], Interpreted]
"""(request text, the graph's namespaces) -> :class:`Interpreted`."""


def rules_interpreter(text: str, namespaces: Sequence[str]) -> Interpreted:
    """The deterministic interpretation (no model)."""
    t = time.perf_counter()
    return Interpreted(interpret_request(text, namespaces), "rules", time.perf_counter() - t)


def llm_interpreter(llm: LLM) -> Interpreter:
    """An interpreter that asks ``llm`` (:func:`hyperplan.plan.planner.interpret`, given the
    graph's namespaces as the known apps; the rules when its answer is unusable)."""

    def run(text: str, namespaces: Sequence[str]) -> Interpreted:
        t = time.perf_counter()
        result = interpret(llm, text, namespaces)
        return Interpreted(result.task, result.source, time.perf_counter() - t)

    return run


@dataclass
class InterpretationStore:
    """Interpretations kept in a JSONL file (module doc). Use as a context manager."""

    path: Path
    _known: dict[str, dict[str, Any]] = field(default_factory=dict, init=False)
    _out: IO[str] | None = field(default=None, init=False)

    def __enter__(self) -> InterpretationStore:
        if self.path.exists():
            self._known = _read_store(self.path)
        unterminated = _ends_without_newline(self.path)
        self._out = self.path.open("a", encoding="utf-8")
        if unterminated:
            self._out.write("\n")  # a hand-written file whose last line has no newline
        return self

    def __exit__(self, *exc: object) -> None:
        if self._out is not None:
            self._out.close()
            self._out = None

    def get(self, task_id: str, text: str, namespaces: Sequence[str] = ()) -> Interpreted | None:
        """The stored interpretation of this task and text, if any. A task the model failed
        on (source ``"rules"``) is interpreted by the rules again, given ``namespaces``: the
        store keeps the model's answers, the rules are deterministic."""
        row = self._known.get(task_id)
        if row is None or row.get("text") != text:
            return None
        if row.get("source") == "rules":
            return Interpreted(interpret_request(text, namespaces), "rules")
        try:
            task = from_llm_json({k: row[k] for k in ("operations", "schemas", "apps")})
        except (KeyError, InterpretationError) as exc:
            raise HyperplanError(f"{self.path}: task {task_id}: bad stored interpretation: "
                                 f"{exc}") from None
        return Interpreted(task, str(row.get("source", "llm")))

    def put(self, task_id: str, text: str, item: Interpreted) -> None:
        """Append (and flush) one task's interpretation."""
        row = {"id": task_id, "text": text, "source": item.source,
               "operations": list(item.task.operations), "schemas": list(item.task.schemas),
               "apps": list(item.task.apps)}
        self._known[task_id] = row
        assert self._out is not None, "use InterpretationStore as a context manager"
        self._out.write(json.dumps(row, ensure_ascii=False) + "\n")
        self._out.flush()


def _ends_without_newline(path: Path) -> bool:
    """Whether ``path`` exists, is not empty and its last byte is not a newline."""
    if not path.exists() or not path.stat().st_size:
        return False
    with path.open("rb") as f:
        f.seek(-1, 2)
        return f.read(1) != b"\n"


def _read_store(path: Path) -> dict[str, dict[str, Any]]:
    """The rows of a store by task id (a later line for the same id wins); a line that is
    not a JSON object with a string ``id`` is an error naming the file and line, except a
    torn last line (a run killed while writing it), which is cut off the file."""
    rows, torn = read_records(path, what="stored interpretation", key="id")
    if torn:
        kept = path.read_text(encoding="utf-8").rstrip("\n").rpartition("\n")[0]
        path.write_text(kept + "\n" if kept else "", encoding="utf-8")
    by_id: dict[str, dict[str, Any]] = {}
    for row in rows:
        if not isinstance(row["id"], str):
            raise HyperplanError(f"{path}: stored interpretation id {row['id']!r} is not a "
                                 "string")
        by_id[row["id"]] = row
    return by_id
