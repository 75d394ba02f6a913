"""The τ² agent suite: airline, retail or telecom tasks on τ²'s own environments,
scored by τ²'s evaluator (optional extra: ``pip install 'hyperplan[tau2]'``).

* tasks: τ²'s ``base`` split of the domain; ``request`` is the user scenario (reason for the
  call and what the user knows), ``goal`` a :class:`StructuredGoal` with one sub-goal per gold
  write action (its tool as terminal, its literal arguments as values, each depending on the
  previous one) and the literal arguments of the other gold calls as shared values; ``None``
  when the task has no write action. ``min_calls`` is the number of gold actions the agent
  makes.
* runtime (:class:`Tau2Runtime`): every call is validated against the tool's input schema and
  run in the task's fresh τ² environment, as τ²'s ``Environment.get_response`` runs it; a tool
  exception becomes a ``TOOL_ERROR`` result. The calls (and their responses) are kept as the
  τ² trajectory.
* check: τ²'s reward on that trajectory restricted to the parts that do not need a
  conversation: ``DB`` (end state equals the gold replay's), ``ENV_ASSERTION`` and ``ACTION``
  (gold actions among the calls), multiplied over the task's ``reward_basis``.
  ``COMMUNICATE`` and ``NL_ASSERTION`` are left out (there is no user simulator). Reward 1.0
  passes.
* telecom runs in τ²'s solo mode by default (``solo=True``): the user's device tools are in the
  catalog and the agent runs them itself, since no simulated user performs them.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from typing import Any

from hyperplan.catalog import ToolSpec
from hyperplan.embed import get_embedder
from hyperplan.errors import HyperplanError
from hyperplan.execute.goal import StructuredGoal, SubGoal
from hyperplan.execute.results import ErrorKind, ToolResult, ToolRuntime
from hyperplan.execute.runtimes.base import Clock, ClosingRuntime, fail_result, ok_result
from hyperplan.execute.runtimes.validation import rejected
from hyperplan.graph.build import build_graph
from hyperplan.retrieve.context_graph import GraphIndex
from hyperplan_bench.eval.suite_api import EvalTask, SuiteSession
from hyperplan_bench.importers.gold import GoldTask
from hyperplan_bench.importers.tau2 import (
    DOMAINS,
    domain_module,
    execute,
    gold_task,
    load_tau2_catalog,
    load_tau2_tasks,
    new_environment,
    quiet_tau2,
    replay_gold,
    scenario_text,
    supports_solo,
    tau2_module,
    tau2_terminals,
)

CHECKED_BASES = frozenset({"DB", "ENV_ASSERTION", "ACTION"})


class Tau2Runtime(ClosingRuntime):
    """Runs the catalog's τ² tools in one environment and records the τ² trajectory."""

    def __init__(self, env: Any, tools: Mapping[str, str]) -> None:
        self.env = env
        self.tools = dict(tools)  # catalog name -> τ² tool name
        self.messages: list[Any] = []
        self._ids = itertools.count()
        self._message = tau2_module("data_model.message")

    def can_run(self, tool: ToolSpec) -> bool:
        return tool.name in self.tools

    def call(self, tool: ToolSpec, arguments: Mapping[str, Any], *,
             timeout: float | None = None) -> ToolResult:
        clock = Clock()
        name = self.tools.get(tool.name)
        refused = rejected(tool, arguments, "not a tool of this τ² environment" if name is None
                           else None, clock)
        if refused is not None or name is None:
            return refused or fail_result(tool, arguments, ErrorKind.UNKNOWN_TOOL, tool.name)
        call_id = f"call_{next(self._ids)}"
        value, content, error = execute(self.env, name, arguments)
        msg = self._message
        self.messages.append(msg.AssistantMessage(role="assistant", tool_calls=[
            msg.ToolCall(id=call_id, name=name, arguments=dict(arguments))]))
        self.messages.append(msg.ToolMessage(id=call_id, role="tool", content=content,
                                             requestor="assistant", error=error))
        if error:
            return fail_result(tool, arguments, ErrorKind.TOOL_ERROR, content, clock)
        return ok_result(tool, arguments, value, clock)


class Tau2Session:
    """One τ² domain in a worker: catalog, graph, index; a fresh environment per task."""

    def __init__(self, domain: str, embedder: str, solo: bool) -> None:
        self.domain = domain
        self.solo = solo
        self.catalog = load_tau2_catalog(domain, user_tools=solo)
        self.embedder = get_embedder(embedder)
        self.graph = build_graph(self.catalog, embedder=self.embedder)
        self.index = GraphIndex(self.graph, self.embedder)
        self._tasks = {str(t.id): t for t in load_tau2_tasks(domain)}
        self._names = {t.name: str(t.metadata["original_name"]) for t in self.catalog.tools}
        self._runtimes: dict[str, Tau2Runtime] = {}

    def start(self, task: EvalTask) -> ToolRuntime:
        env = new_environment(self.domain, self._task(task), solo_mode=self.solo)
        runtime = Tau2Runtime(env, self._names)
        self._runtimes[task.id] = runtime
        return runtime

    def check(self, task: EvalTask) -> bool:
        runtime = self._runtimes.get(task.id)
        return self.reward(task, runtime.messages if runtime else []) == 1.0

    def reward(self, task: EvalTask, messages: list[Any]) -> float:
        """τ²'s reward of the trajectory ``messages`` on ``task`` (see the module doc)."""
        t2 = self._task(task)
        criteria = t2.evaluation_criteria
        if criteria is None:
            return 1.0
        bases = {str(getattr(b, "value", b)) for b in criteria.reward_basis} & CHECKED_BASES
        history = list((t2.initial_state.message_history or []) if t2.initial_state else [])
        trajectory = history + list(messages)
        module = domain_module(self.domain)
        env_eval = tau2_module("evaluator.evaluator_env").EnvironmentEvaluator
        action_eval = tau2_module("evaluator.evaluator_action").ActionEvaluator
        reward = 1.0
        with quiet_tau2():
            if bases & {"DB", "ENV_ASSERTION"}:
                info = env_eval.calculate_reward(environment_constructor=module.get_environment,
                                                 task=t2, full_trajectory=trajectory,
                                                 solo_mode=self.solo)
                reward *= float(info.reward)
            if "ACTION" in bases:
                reward *= float(action_eval.calculate_reward(task=t2,
                                                             full_trajectory=trajectory).reward)
        return reward

    def _task(self, task: EvalTask) -> Any:
        found = self._tasks.get(task.id)
        if found is None:
            raise HyperplanError(f"unknown τ² {self.domain} task {task.id!r}")
        return found


class Tau2Suite:
    """``tau2`` suite of one domain; ``solo`` defaults to true where τ² supports it
    (telecom)."""

    name = "tau2"

    def __init__(self, domain: str = "retail", solo: bool | None = None) -> None:
        if domain not in DOMAINS:
            raise HyperplanError(f"unknown τ² domain {domain!r}; expected one of "
                                 f"{', '.join(DOMAINS)}")
        if solo and not supports_solo(domain):
            raise HyperplanError(f"τ² domain {domain!r} has no solo mode")
        self.domain = domain
        self.solo = supports_solo(domain) if solo is None else solo

    def tasks(self) -> list[EvalTask]:
        catalog = load_tau2_catalog(self.domain, user_tools=self.solo)
        schemas = {t.name: t.output_schema for t in catalog.tools}
        out = []
        for t2 in load_tau2_tasks(self.domain):
            steps = replay_gold(self.domain, t2)
            gold = gold_task(self.domain, t2, steps, schemas, user_tools=self.solo)
            out.append(EvalTask(str(t2.id), scenario_text(t2), goal_of(gold, catalog),
                                min_calls=len(gold.calls)))
        return out

    def open(self, embedder: str) -> SuiteSession:
        return Tau2Session(self.domain, embedder, self.solo)


def goal_of(gold: GoldTask, catalog: Any) -> StructuredGoal | None:
    """One sub-goal per gold write call (in order, each after the previous), its literals as
    values; the other calls' literals are the goal's shared values. ``None`` without a
    write."""
    writes = set(tau2_terminals(gold, catalog))
    subgoals: list[SubGoal] = []
    shared: dict[str, Any] = {}
    for call in gold.calls:
        values = {name: json.loads(text) for name, text in call.literals}
        if call.tool not in writes:
            for key, value in values.items():
                shared.setdefault(key, value)
            continue
        sid = f"g{len(subgoals) + 1}"
        subgoals.append(SubGoal(id=sid, terminals=(call.tool,), values=values,
                                depends_on=(subgoals[-1].id,) if subgoals else (),
                                description=f"call {call.tool}"))
    if not subgoals:
        return None
    return StructuredGoal(tuple(subgoals), shared)
