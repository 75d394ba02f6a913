"""``--llm scripted``: a per-task scripted LLM for exercising the harness without a model.

It is a test double, not a model: for HyperAgent it answers the interpreter with the rule-based
interpretation and the planner with the task's own structured goal as a Task DAG (so the
plumbing from plan to checker runs end to end); for ReAct and Plan-and-Execute it answers
without calling tools. Numbers from scripted runs measure the harness, never an agent's
quality, and reports label them so.
"""

from __future__ import annotations

from typing import Any

from hyperplan.llm.budget import Accounting
from hyperplan.llm.scripted import ScriptedLLM, ScriptedRule
from hyperplan.retrieve.interpret import interpret_request
from hyperplan_bench.eval.suite_api import EvalTask


def scripted_llm(task: EvalTask, accounting: Accounting) -> ScriptedLLM:
    interp = interpret_request(task.request)
    values: dict[str, Any] = dict(task.goal.values) if task.goal else {}
    rules = [ScriptedRule(json={"operations": list(interp.operations) or [task.request],
                                "schemas": list(interp.schemas), "values": values},
                          component="interpreter")]
    if task.goal is not None:
        subtasks = [{"id": s.id, "goal": s.description or s.id,
                     "terminals": list(s.terminals), "depends_on": list(s.depends_on),
                     "inputs": dict(s.values)} for s in task.goal.subgoals]
        rules.append(ScriptedRule(json={"subtasks": subtasks}, component="planner",
                                  system_pattern="Task DAG"))
    rules += [
        ScriptedRule(json={"steps": [task.request]}, component="planner"),
        ScriptedRule(text="I cannot complete this without a real model.", component="react"),
        ScriptedRule(text="Step not carried out (scripted test double).",
                     component="executor"),
    ]
    return ScriptedLLM(rules, accounting=accounting)
