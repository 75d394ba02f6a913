"""The Agent protocol: every agent the harness compares is made by name and run as
``run(ctx, task)``."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from hyperplan.agents import AGENT_NAMES, make_agent
from hyperplan.agents.protocol import LLM_FREE_AGENTS, HyperAgentGoal
from hyperplan.embed import get_embedder
from hyperplan.errors import HyperplanError
from hyperplan.execute.goal import StructuredGoal


@dataclass(frozen=True)
class _Task:
    id: str
    request: str
    goal: StructuredGoal | None = None


def test_every_agent_is_made_by_name_and_says_whether_it_needs_an_llm() -> None:
    embedder = get_embedder("hashing")
    assert set(AGENT_NAMES) == {"hyperagent", "hyperagent-goal", "react", "planexec",
                                "variant1", "variant2"}
    for name in AGENT_NAMES:
        agent = make_agent(name, embedder)
        assert agent.name == name
        assert agent.needs_llm == (name not in LLM_FREE_AGENTS)
    assert {"hyperagent-goal"} == LLM_FREE_AGENTS
    with pytest.raises(HyperplanError, match="unknown agent 'nope'; known: hyperagent"):
        make_agent("nope", embedder)


def test_the_goal_agent_refuses_a_task_without_a_goal() -> None:
    with pytest.raises(HyperplanError, match="task t1 has no structured goal"):
        HyperAgentGoal().run(None, _Task("t1", "like a song"))  # type: ignore[arg-type]
