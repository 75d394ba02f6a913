"""The agents that retrieve over the graph (HyperAgent, Variant 1, Variant 2) share one
``run``: their runner on the task's request with the embedder and index they were made with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from hyperplan.agents.protocol import HyperAgent, RetrievingAgent, Variant1, Variant2, make_agent
from hyperplan.agents.variants import run_variant1, run_variant2
from hyperplan.embed import get_embedder
from hyperplan.execute.agent import run_request


@dataclass(frozen=True)
class _Task:
    id: str
    request: str
    goal: None = None


@pytest.mark.parametrize(("agent_class", "runner"), [
    (HyperAgent, run_request), (Variant1, run_variant1), (Variant2, run_variant2)])
def test_a_retrieving_agent_runs_its_runner_on_the_request(
        monkeypatch: pytest.MonkeyPatch, agent_class: type[RetrievingAgent],
        runner: Any) -> None:
    assert agent_class.runner is runner
    calls: list[tuple[Any, ...]] = []

    result: Any = object()

    def recorded(*args: Any) -> Any:
        calls.append(args)
        return result

    monkeypatch.setattr(agent_class, "runner", recorded)
    embedder = get_embedder("hashing")
    index: Any = object()
    agent = make_agent(agent_class.name, embedder, index)
    assert type(agent) is agent_class and agent.needs_llm
    ctx: Any = object()
    assert agent.run(ctx, _Task("t1", "like a song")) is result
    assert calls == [(ctx, "like a song", embedder, index)]
