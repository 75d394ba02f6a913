"""One way to run an agent: the :class:`Agent` protocol (``run(ctx, task) -> RunResult``) and
the agents the harness compares as classes behind it.

* :class:`HyperAgent`: the paper's agent on a request (interpretation, Tool Context Graph,
  Task DAG, Deficit-Oriented Expansion per subtask; :func:`hyperplan.execute.agent.run_request`);
* :class:`HyperAgentGoal`: the same executor on a structured goal, no LLM
  (:func:`hyperplan.execute.agent.run_goal`);
* :class:`ReAct` and :class:`PlanAndExecute`: the baselines of :mod:`hyperplan.agents.baselines`;
* :class:`Variant1` and :class:`Variant2`: the paper's ablations
  (:mod:`hyperplan.agents.variants`).

An agent that retrieves over the graph is given the embedder and the graph's index when it is
made (:func:`make_agent`); the task carries only what the user says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Protocol

from hyperplan.agents.baselines import run_plan_and_execute, run_react
from hyperplan.agents.variants import run_variant1, run_variant2
from hyperplan.embed.base import Embedder
from hyperplan.errors import HyperplanError
from hyperplan.execute.agent import RunResult, run_goal, run_request
from hyperplan.execute.goal import StructuredGoal
from hyperplan.execute.subtask import RunContext
from hyperplan.retrieve.context_graph import GraphIndex


class AgentTask(Protocol):
    """What an agent is asked: the request, and a structured goal where one exists."""

    @property
    def id(self) -> str: ...

    @property
    def request(self) -> str: ...

    @property
    def goal(self) -> StructuredGoal | None: ...


class Agent(Protocol):
    """An agent the harness can run; ``needs_llm`` is False for the LLM-free ones."""

    name: ClassVar[str]
    needs_llm: ClassVar[bool]

    def run(self, ctx: RunContext, task: AgentTask) -> RunResult: ...


RequestRunner = Callable[[RunContext, str, Embedder, GraphIndex | None], RunResult]


@dataclass(frozen=True)
class RetrievingAgent:
    """An agent that retrieves over the graph: its ``runner`` is run on the task's request
    with the embedder and the graph's index the agent was made with."""

    embedder: Embedder
    index: GraphIndex | None = None
    name: ClassVar[str]
    needs_llm: ClassVar[bool] = True
    runner: ClassVar[RequestRunner]

    def run(self, ctx: RunContext, task: AgentTask) -> RunResult:
        return type(self).runner(ctx, task.request, self.embedder, self.index)


@dataclass(frozen=True)
class HyperAgent(RetrievingAgent):
    """The paper's agent on the request."""

    name: ClassVar[str] = "hyperagent"
    runner: ClassVar[RequestRunner] = run_request


@dataclass(frozen=True)
class HyperAgentGoal:
    """The executor on the task's structured goal; the request text still sets the tools'
    relevance (:attr:`RunContext.tool_relevance`)."""

    name: ClassVar[str] = "hyperagent-goal"
    needs_llm: ClassVar[bool] = False

    def run(self, ctx: RunContext, task: AgentTask) -> RunResult:
        if task.goal is None:
            raise HyperplanError(f"task {task.id} has no structured goal")
        return run_goal(ctx, task.goal)


@dataclass(frozen=True)
class ReAct:
    name: ClassVar[str] = "react"
    needs_llm: ClassVar[bool] = True

    def run(self, ctx: RunContext, task: AgentTask) -> RunResult:
        return run_react(ctx, task.request)


@dataclass(frozen=True)
class PlanAndExecute:
    name: ClassVar[str] = "planexec"
    needs_llm: ClassVar[bool] = True

    def run(self, ctx: RunContext, task: AgentTask) -> RunResult:
        return run_plan_and_execute(ctx, task.request)


@dataclass(frozen=True)
class Variant1(RetrievingAgent):
    """HyperAgent planning over the plain tool list (no links)."""

    name: ClassVar[str] = "variant1"
    runner: ClassVar[RequestRunner] = run_variant1


@dataclass(frozen=True)
class Variant2(RetrievingAgent):
    """HyperAgent's Task DAG, each subtask run by a tool loop over semantically similar tools."""

    name: ClassVar[str] = "variant2"
    runner: ClassVar[RequestRunner] = run_variant2


_MAKERS: dict[str, Callable[[Embedder, GraphIndex | None], Agent]] = {
    HyperAgent.name: HyperAgent,
    HyperAgentGoal.name: lambda _e, _i: HyperAgentGoal(),
    ReAct.name: lambda _e, _i: ReAct(),
    PlanAndExecute.name: lambda _e, _i: PlanAndExecute(),
    Variant1.name: Variant1,
    Variant2.name: Variant2,
}
AGENT_NAMES: tuple[str, ...] = tuple(_MAKERS)
LLM_FREE_AGENTS: frozenset[str] = frozenset(
    c.name for c in (HyperAgent, HyperAgentGoal, ReAct, PlanAndExecute, Variant1, Variant2)
    if not c.needs_llm)


def make_agent(name: str, embedder: Embedder, index: GraphIndex | None = None) -> Agent:
    """The agent called ``name`` (one of :data:`AGENT_NAMES`)."""
    maker = _MAKERS.get(name)
    if maker is None:
        raise HyperplanError(f"unknown agent {name!r}; known: {', '.join(AGENT_NAMES)}")
    return maker(embedder, index)
