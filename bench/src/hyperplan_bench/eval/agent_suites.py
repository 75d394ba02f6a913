"""Agent suites: tasks with an executable environment and a checker, behind one interface
(:mod:`.suite_api`).

A :class:`AgentSuite` lists its :class:`EvalTask` s and opens a :class:`SuiteSession` per worker
process; a session owns the catalog, the hypergraph and its retrieval index (built once) and,
for each task, resets the environment, hands out a tool runtime, and checks the end state.
The suites with agent runs and the class behind each are rows of
:data:`hyperplan_bench.eval.registry.REGISTRY`: ``demo`` (the shipped demo world, below), ``tau2``
(:mod:`.tau2_suite`), ``nestools`` and ``nestful`` (gold calls on a symbolic environment,
:mod:`.replay_suite`) and ``appworld`` (:mod:`.appworld_suite`, needs AppWorld's own package and
data). :data:`SUITES` is derived from that table; a suite module is imported when its suite is
first made.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from hyperplan.embed import get_embedder
from hyperplan.errors import HyperplanError
from hyperplan.execute.results import ToolRuntime
from hyperplan.graph.build import build_graph
from hyperplan.retrieve.context_graph import GraphIndex
from hyperplan_bench.eval.registry import REGISTRY, Suite
from hyperplan_bench.eval.suite_api import AgentSuite, EvalTask, SuiteSession, data_root

__all__ = [
    "SUITES", "AgentSuite", "DemoSession", "DemoSuite", "EvalTask", "SuiteSession",
    "data_root", "get_suite",
]


class DemoSession:
    """The demo world in memory; one per worker."""

    def __init__(self, embedder: str) -> None:
        from hyperplan.demo_world import DemoWorld, load_tasks

        self.world = DemoWorld()
        self.catalog = self.world.catalog()
        self.embedder = get_embedder(embedder)
        self.graph = build_graph(self.catalog, embedder=self.embedder)
        self.index = GraphIndex(self.graph, self.embedder)
        self._checks = {t.id: t.check for t in load_tasks()}

    def start(self, task: EvalTask) -> ToolRuntime:
        from hyperplan.execute.runtimes import PythonRuntime

        self.world.reset()
        return PythonRuntime(self.world.callables())

    def check(self, task: EvalTask) -> bool:
        return bool(self._checks[task.id](self.world))


class DemoSuite:
    name = "demo"

    def tasks(self) -> list[EvalTask]:
        from hyperplan.demo_world import load_tasks

        return [EvalTask(t.id, t.request, t.goal, t.min_calls, scenario=t.scenario,
                         ambiguous=t.ambiguous) for t in load_tasks()]

    def open(self, embedder: str) -> SuiteSession:
        return DemoSession(embedder)


def _factory(suite: Suite) -> Callable[..., Any]:
    """A callable making ``suite`` from its row's ``agent`` (``module:attr``), imported on
    first use; gold-call replay suites get their name first."""
    module, _, attr = suite.agent.partition(":")

    def make(**options: Any) -> Any:
        target = getattr(importlib.import_module(module), attr)
        return target(suite.name, **options) if suite.replay_data else target(**options)

    return make


SUITES: dict[str, Callable[..., Any]] = {s.name: _factory(s) for s in REGISTRY if s.agent}


def get_suite(name: str, **options: Any) -> AgentSuite:
    """The suite registered as ``name``."""
    factory = SUITES.get(name)
    if factory is None:
        raise HyperplanError(f"unknown suite {name!r}; known: {', '.join(sorted(SUITES))}")
    suite: AgentSuite = factory(**options)
    return suite
