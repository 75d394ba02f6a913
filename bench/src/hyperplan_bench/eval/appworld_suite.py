"""The AppWorld agent suite: AppWorld's own task worlds and evaluator, for users who
have installed AppWorld and its data.

* tasks: ``tasks_train.jsonl`` beside the API docs (``$HYPERPLAN_DATA/appworld`` by default,
  ``--data DIR`` to override); ``request`` is the instruction followed by who asks (AppWorld's
  supervisor), ``scenario`` the task id without its ``_N`` variant suffix, so the report's SGC
  is AppWorld's scenario goal completion (every variant of a scenario passes). No structured
  goal: only the LLM agents run here.
* tools: the catalog of the AppWorld API docs (``hyperplan_bench.importers.appworld``), graph and
  index built once per worker.
* runtime (:class:`AppWorldRuntime`): arguments are validated against the tool's input schema,
  then the call runs inside the task's world as AppWorld runs agent code,
  ``apis.<app>.<api>(**arguments)`` through ``world.execute``; the printed JSON is the result,
  an AppWorld traceback a ``TOOL_ERROR``.
* check: AppWorld's evaluator, ``world.evaluate().success`` (all of the task's state tests).

Running it needs ``pip install appworld``, then ``appworld install`` and ``appworld download
data`` (AppWorld's base databases, which need the internet: they cannot be had on the machines
this project is developed on, so only the adapter's plumbing is tested here, against a double
of the ``appworld`` module).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hyperplan.catalog import ToolSpec
from hyperplan.embed import get_embedder
from hyperplan.errors import HyperplanError
from hyperplan.execute.results import ErrorKind, ToolResult, ToolRuntime
from hyperplan.execute.runtimes.base import (
    Clock,
    ClosingRuntime,
    fail_result,
    ok_result,
    truncate,
)
from hyperplan.execute.runtimes.validation import rejected
from hyperplan.graph.build import build_graph
from hyperplan.importers.common import read_jsonl
from hyperplan.retrieve.context_graph import GraphIndex
from hyperplan_bench.eval.suite_api import EvalTask, SuiteSession, data_root
from hyperplan_bench.importers.appworld import load_appworld

EXPERIMENT = "hyperplan"
_FAILED = "Execution failed"


def scenario_of(task_id: str) -> str:
    """AppWorld's scenario of a task id: ``82e2fac_1`` → ``82e2fac``."""
    return task_id.rsplit("_", 1)[0] if "_" in task_id else task_id


def request_text(row: Mapping[str, Any]) -> str:
    """The instruction and who gives it (AppWorld's supervisor)."""
    who = row.get("supervisor") or {}
    if not isinstance(who, dict) or not who:
        return str(row["instruction"])
    name = " ".join(str(who.get(k, "")) for k in ("first_name", "last_name")).strip()
    contact = ", ".join(f"{k.replace('_', ' ')} {who[k]}" for k in ("email", "phone_number")
                        if who.get(k))
    return f"{row['instruction']}\n(Asked by {name}; {contact}.)"


def load_appworld_eval_tasks(directory: Path) -> list[EvalTask]:
    path = directory / "tasks_train.jsonl"
    if not path.exists():
        raise HyperplanError(f"appworld: no tasks file at {path} (pass --data DIR holding "
                             "tasks_train.jsonl and api_docs/, or set HYPERPLAN_DATA; "
                             "see docs/data.md)")
    out = []
    for row in read_jsonl(path):
        calls = row.get("gold_calls")
        out.append(EvalTask(str(row["id"]), request_text(row),
                            min_calls=len(calls) if isinstance(calls, list) else None,
                            scenario=scenario_of(str(row["id"]))))
    return out


def _appworld_class() -> Any:
    try:
        module = importlib.import_module("appworld")
    except ImportError:
        raise HyperplanError(
            "the appworld suite needs AppWorld itself: pip install appworld && appworld "
            "install && appworld download data (the data download needs the internet)"
        ) from None
    return module.AppWorld


class AppWorldRuntime(ClosingRuntime):
    """Runs catalog tools as ``apis.<app>.<api>(**arguments)`` in one AppWorld world."""

    def __init__(self, world: Any) -> None:
        self.world = world  # closed by the session after the check, not by the agent

    def can_run(self, tool: ToolSpec) -> bool:
        return "app" in tool.metadata and "api_name" in tool.metadata

    def call(self, tool: ToolSpec, arguments: Mapping[str, Any], *,
             timeout: float | None = None) -> ToolResult:
        clock = Clock()
        refused = rejected(tool, arguments, None if self.can_run(tool) else
                           "not an AppWorld API", clock)
        if refused is not None:
            return refused
        output = str(self.world.execute(api_code(tool, arguments)))
        if output.lstrip().startswith(_FAILED):
            return fail_result(tool, arguments, ErrorKind.TOOL_ERROR, truncate(output), clock)
        try:
            value: Any = json.loads(output)
        except json.JSONDecodeError:
            value = output
        return ok_result(tool, arguments, value, clock)


def api_code(tool: ToolSpec, arguments: Mapping[str, Any]) -> str:
    """The code AppWorld executes for one call; arguments travel as a JSON string literal, so
    no argument text is ever evaluated as code."""
    app, api = tool.metadata["app"], tool.metadata["api_name"]
    if not (str(app).isidentifier() and str(api).isidentifier()):
        raise HyperplanError(f"{tool.name}: app and API names must be identifiers")
    payload = json.dumps(json.dumps(dict(arguments)))
    return (f"import json\nprint(json.dumps(apis.{app}.{api}(**json.loads({payload})), "
            "default=str))")


class AppWorldSession:
    """Catalog, graph and index of the API docs; one AppWorld world per task."""

    def __init__(self, directory: Path, embedder: str) -> None:
        self._world_class = _appworld_class()
        self.catalog = load_appworld(directory / "api_docs")
        self.embedder = get_embedder(embedder)
        self.graph = build_graph(self.catalog, embedder=self.embedder)
        self.index = GraphIndex(self.graph, self.embedder)
        self._worlds: dict[str, Any] = {}

    def start(self, task: EvalTask) -> ToolRuntime:
        world = self._world_class(task_id=task.id, experiment_name=EXPERIMENT)
        self._worlds[task.id] = world
        return AppWorldRuntime(world)

    def check(self, task: EvalTask) -> bool:
        world = self._worlds.pop(task.id, None)
        if world is None:
            return False
        try:
            return bool(world.evaluate().success)
        finally:
            world.close()


class AppWorldSuite:
    name = "appworld"

    def __init__(self, data: str | None = None) -> None:
        self.directory = Path(data) if data else data_root() / "appworld"

    def tasks(self) -> list[EvalTask]:
        return load_appworld_eval_tasks(self.directory)

    def open(self, embedder: str) -> SuiteSession:
        return AppWorldSession(self.directory, embedder)
