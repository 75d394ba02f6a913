"""What every agent suite implements: its tasks (:class:`EvalTask`), a per-worker session
(:class:`SuiteSession`: catalog, hypergraph, retrieval index; reset, runtime, checker) and the
suite itself (:class:`AgentSuite`). The suites (:mod:`.agent_suites`, :mod:`.tau2_suite`,
:mod:`.replay_suite`, :mod:`.appworld_suite`) import this module, never one another; which
class implements which suite is written in :mod:`hyperplan.eval.registry`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from hyperplan.catalog import Catalog
from hyperplan.embed.base import Embedder
from hyperplan.execute.goal import StructuredGoal
from hyperplan.execute.results import ToolRuntime
from hyperplan.graph.model import Hypergraph
from hyperplan.retrieve.context_graph import GraphIndex

__all__ = ["AgentSuite", "EvalTask", "SuiteSession", "data_root"]


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
