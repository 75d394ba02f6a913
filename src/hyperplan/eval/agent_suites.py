"""Agent suites: tasks with an executable environment and a checker, behind one interface
(issue 6, "Suites registry").

A :class:`AgentSuite` lists its :class:`EvalTask` s and opens a :class:`SuiteSession` per worker
process; a session owns the catalog, the hypergraph and its retrieval index (built once) and,
for each task, resets the environment, hands out a tool runtime, and checks the end state.
Registered suites: ``demo`` (the shipped demo world), ``tau2`` (:mod:`.tau2_suite`),
``nestools`` and ``nestful`` (gold calls on a symbolic environment, :mod:`.replay_suite`) and
``appworld`` (:mod:`.appworld_suite`, needs AppWorld's own package and data).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from hyperplan.catalog import Catalog
from hyperplan.embed import get_embedder
from hyperplan.embed.base import Embedder
from hyperplan.errors import HyperplanError
from hyperplan.execute.goal import StructuredGoal
from hyperplan.execute.results import ToolRuntime
from hyperplan.graph.build import build_graph
from hyperplan.graph.model import Hypergraph
from hyperplan.retrieve.context_graph import GraphIndex


def data_root() -> Path:
    """Where suites read benchmark data by default: ``$HYPERPLAN_DATA``, else
    ``../shared/data`` (relative to the working directory)."""
    return Path(os.environ.get("HYPERPLAN_DATA", "../shared/data"))


@dataclass(frozen=True)
class EvalTask:
    id: str
    request: str
    goal: StructuredGoal | None = None
    min_calls: int | None = None
    scenario: str = ""  # tasks of one scenario count together for SGC
    ambiguous: bool = False


class SuiteSession(Protocol):
    catalog: Catalog
    graph: Hypergraph
    embedder: Embedder
    index: GraphIndex

    def start(self, task: EvalTask) -> ToolRuntime:
        """Reset the environment for ``task`` and return the runtime its tools run on."""
        ...

    def check(self, task: EvalTask) -> bool:
        """Whether the environment's end state satisfies ``task``."""
        ...


class AgentSuite(Protocol):
    name: str

    def tasks(self) -> list[EvalTask]: ...

    def open(self, embedder: str) -> SuiteSession: ...


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


SUITES: dict[str, Callable[[], Any]] = {"demo": DemoSuite}


def _tau2_suite(domain: str = "retail", solo: bool | None = None) -> Any:
    from hyperplan.eval.tau2_suite import Tau2Suite

    return Tau2Suite(domain=domain, solo=solo)


SUITES["tau2"] = _tau2_suite


def _replay_suite(name: str) -> Callable[..., Any]:
    def factory(data: str | None = None) -> Any:
        from hyperplan.eval.replay_suite import ReplaySuite

        return ReplaySuite(name, data)

    return factory


def _appworld_suite(data: str | None = None) -> Any:
    from hyperplan.eval.appworld_suite import AppWorldSuite

    return AppWorldSuite(data)


SUITES["appworld"] = _appworld_suite
SUITES["nestools"] = _replay_suite("nestools")
SUITES["nestful"] = _replay_suite("nestful")


def get_suite(name: str, **options: Any) -> AgentSuite:
    """The suite registered as ``name``."""
    factory = SUITES.get(name)
    if factory is None:
        raise HyperplanError(f"unknown suite {name!r}; known: {', '.join(sorted(SUITES))}")
    suite: AgentSuite = factory(**options)
    return suite
