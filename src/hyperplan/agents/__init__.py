"""Agents compared under one harness: HyperAgent (:mod:`hyperplan.execute.agent`) and the
baselines ReAct and Plan-and-Execute (:mod:`hyperplan.agents.baselines`)."""

from hyperplan.agents.baselines import run_plan_and_execute, run_react

__all__ = ["run_plan_and_execute", "run_react"]
