"""What every agent suite implements: its tasks (:class:`EvalTask`), a per-worker session
(:class:`SuiteSession`: catalog, hypergraph, retrieval index; reset, runtime, checker) and the
suite itself (:class:`AgentSuite`). The suites (:mod:`.agent_suites`, :mod:`.tau2_suite`,
:mod:`.replay_suite`, :mod:`.appworld_suite`) import this module, never one another; which
class implements which suite is written in :mod:`hyperplan_bench.eval.registry`.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from hyperplan.catalog import Catalog
from hyperplan.embed.base import Embedder
from hyperplan.execute.goal import StructuredGoal
from hyperplan.execute.results import ToolRuntime
from hyperplan.graph.model import Hypergraph
from hyperplan.retrieve.context_graph import GraphIndex

__all__ = ["AgentSuite", "EvalTask", "SuiteSession", "data_root", "data_variable"]


DATA_VARIABLE = "HYPERPLAN_DATA"
OLD_DATA_VARIABLE = "HYPERPLAN_SHARED_DATA"  # deprecated: read when DATA_VARIABLE is unset


def data_root() -> Path:
    """Where suites read benchmark data by default: ``$HYPERPLAN_DATA``, else
    ``../shared/data`` (relative to the working directory)."""
    return data_variable() or Path("../shared/data")


def data_variable() -> Path | None:
    """The benchmark data folder the environment names: ``$HYPERPLAN_DATA``; the old
    ``$HYPERPLAN_SHARED_DATA`` still works when it is unset, with one ``warning: ... is
    deprecated`` line on stderr (docs/data.md)."""
    value = os.environ.get(DATA_VARIABLE)
    if value:
        return Path(value)
    old = os.environ.get(OLD_DATA_VARIABLE)
    if not old:
        return None
    _warn_old_variable()
    return Path(old)


@functools.cache
def _warn_old_variable() -> None:
    print(f"warning: {OLD_DATA_VARIABLE} is deprecated; use {DATA_VARIABLE}", file=sys.stderr,
          flush=True)


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
