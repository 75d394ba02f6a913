"""The agent on every demo-world task, LLM-free: each unambiguous task is solved with the
fewest calls its checker needs and zero LLM calls; each ambiguous task stops with the
candidates listed instead of guessing."""

from __future__ import annotations

import pytest

from hyperplan.demo_world import DemoTask, DemoWorld, load_tasks
from hyperplan.embed import get_embedder
from hyperplan.execute.agent import run_goal
from hyperplan.execute.runtimes import PythonRuntime
from hyperplan.execute.subtask import RunContext
from hyperplan.execute.trace import TraceWriter
from hyperplan.graph.build import build_graph
from hyperplan.graph.model import Hypergraph
from hyperplan.llm import Accounting

TASKS = load_tasks()


@pytest.fixture(scope="module")
def world() -> DemoWorld:
    return DemoWorld()


@pytest.fixture(scope="module")
def graph(world: DemoWorld) -> Hypergraph:
    return build_graph(world.catalog(), embedder=get_embedder("hashing"))


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_demo_task_llm_free(task: DemoTask, world: DemoWorld, graph: Hypergraph) -> None:
    world.reset()
    ctx = RunContext(graph=graph, catalog=world.catalog(),
                     runtime=PythonRuntime(world.callables()), accounting=Accounting(),
                     tracer=TraceWriter())
    result = run_goal(ctx, task.goal)
    assert result.llm_calls == 0
    if task.ambiguous:
        assert result.status == "blocked"
        assert not task.check(world)
        assert result.blocked and all(len(b.candidates) >= 2 for b in result.blocked)
    else:
        assert result.status == "success", result.message
        assert task.check(world)
        assert result.tool_calls == task.min_calls


def test_enough_tasks_of_each_kind() -> None:
    assert len(TASKS) >= 20
    assert sum(t.ambiguous for t in TASKS) >= 3
