"""Agents compared under one harness: HyperAgent (:mod:`hyperplan.execute.agent`) and the
baselines ReAct and Plan-and-Execute (:mod:`hyperplan.agents.baselines`) and the paper's
ablations Variant 1 and 2 (:mod:`hyperplan.agents.variants`)."""

from hyperplan.agents.baselines import run_plan_and_execute, run_react
from hyperplan.agents.variants import run_variant1, run_variant2

__all__ = ["run_plan_and_execute", "run_react", "run_variant1", "run_variant2"]
