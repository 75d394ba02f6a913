"""Agents compared under one harness, each behind the :class:`~hyperplan.agents.protocol.Agent`
protocol (:mod:`hyperplan.agents.protocol`): HyperAgent (:mod:`hyperplan.execute.agent`), the
baselines ReAct and Plan-and-Execute (:mod:`hyperplan.agents.baselines`) and the paper's
ablations Variant 1 and 2 (:mod:`hyperplan.agents.variants`)."""

from hyperplan.agents.baselines import run_plan_and_execute, run_react
from hyperplan.agents.protocol import AGENT_NAMES, Agent, make_agent
from hyperplan.agents.variants import run_variant1, run_variant2

__all__ = ["AGENT_NAMES", "Agent", "make_agent", "run_plan_and_execute", "run_react",
           "run_variant1", "run_variant2"]
