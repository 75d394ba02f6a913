"""The LLM planner (HyperAgent, "Task-Level Planning" and "Task Execution: refinement").

* :func:`interpret` — task interpretation d_t = (d_op, d_sch) plus the values the request
  states; falls back to the deterministic :func:`~hyperplan.retrieve.interpret_request` when
  the model's answer is unusable.
* :func:`plan_dag` — Task DAG decomposition over the serialised Tool Context Graph.
* :func:`refine_dag` — a new plan for the remaining subtasks after a failure or new
  observations.

Every plan is checked by :func:`~hyperplan.plan.taskdag.validate_dag`. An invalid plan gets
exactly one re-ask listing the violations; a plan still invalid after it is rejected with a
:class:`~hyperplan.plan.taskdag.PlanError` naming every violation. Prompts are the text files in
``hyperplan/plan/prompts``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from hyperplan.graph.model import Hypergraph
from hyperplan.llm.types import LLM, ContextLengthError, LLMError, Message
from hyperplan.plan.prompts import render
from hyperplan.plan.taskdag import (
    DAG_SCHEMA,
    PlanError,
    Subtask,
    TaskDAG,
    dag_from_json,
    validate_dag,
)
from hyperplan.retrieve.interpret import (
    InterpretationError,
    TaskInterpretation,
    from_llm_json,
    interpret_request,
    match_apps,
)

INTERPRETATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["operations", "schemas"],
    "properties": {
        "operations": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "schemas": {"type": "array", "items": {"type": "string"}},
        "apps": {"type": "array", "items": {"type": "string"}},
        "values": {"type": "object"},
    },
}


@dataclass(frozen=True)
class Interpretation:
    """The task interpretation and the concrete values the request states."""

    task: TaskInterpretation
    values: Mapping[str, Any] = field(default_factory=dict)
    source: Literal["llm", "rules"] = "llm"  # "rules": the deterministic fallback


def interpret(llm: LLM | None, request: str, apps: Sequence[str] = ()) -> Interpretation:
    """Interpret ``request`` with the model, or with the deterministic rules when there is no
    model or its answer is unusable. ``apps`` are the tool namespaces: the model is shown them
    and the apps it names are matched to them (:func:`~hyperplan.retrieve.match_apps`)."""
    if llm is None:
        return Interpretation(interpret_request(request, apps), {}, "rules")
    system, user = render("interpret", request=request,
                          apps=", ".join(apps) if apps else "(not listed)")
    try:
        resp = llm.complete([Message.system(system), Message.user(user)],
                            schema=INTERPRETATION_SCHEMA, component="interpreter")
        parsed = dict(resp.parsed)
        values = parsed.pop("values", {}) or {}
        task = from_llm_json(parsed)
    except (LLMError, InterpretationError, TypeError, ValueError):
        return Interpretation(interpret_request(request, apps), {}, "rules")
    if apps:
        task = replace(task, apps=match_apps(task.apps, apps))
    return Interpretation(task, values if isinstance(values, dict) else {}, "llm")


def plan_dag(llm: LLM, request: str, context: Hypergraph, context_text: str) -> TaskDAG:
    """A validated Task DAG over the Tool Context Graph ``context`` (serialised as
    ``context_text``), repaired at most once. A request too long for the model's window raises
    :class:`~hyperplan.llm.types.ContextLengthError` (not a :class:`PlanError`), so the
    caller can shorten the context and ask again."""
    system, user = render("plan", request=request, context=context_text)
    messages = [Message.system(system), Message.user(user)]
    return _ask_valid(llm, messages, context, done=(), version=0, component="planner")


def refine_dag(llm: LLM, request: str, dag: TaskDAG, status: Mapping[str, str],
               observations: Sequence[str], context: Hypergraph,
               context_text: str) -> TaskDAG:
    """A new plan for the subtasks that are not done (done ones are kept, in front), valid
    together with the done ones; repaired at most once."""
    done = tuple(s for s in dag.subtasks if status.get(s.id) == "done")
    plan_lines = [f"{json.dumps(s.as_dict())} status={status.get(s.id, 'pending')}"
                  for s in dag.subtasks]
    system, user = render("refine", request=request, plan="\n".join(plan_lines),
                          observations="\n".join(f"- {o}" for o in observations) or "- none",
                          context=context_text)
    messages = [Message.system(system), Message.user(user)]
    return _ask_valid(llm, messages, context, done=done, version=dag.version + 1,
                      component="refiner")


def _ask_valid(llm: LLM, messages: list[Message], context: Hypergraph,
               done: tuple[Subtask, ...], version: int, component: str) -> TaskDAG:
    violations: list[str] = []
    for attempt in range(2):
        if attempt:
            _, repair = render("repair", violations="\n".join(f"- {v}" for v in violations))
            messages.append(Message.user(repair))
        try:
            resp = llm.complete(messages, schema=DAG_SCHEMA, component=component)
        except ContextLengthError as exc:
            if attempt:  # the plan came back invalid and the repair does not fit
                raise PlanError(f"the {component}'s plan is invalid and the repair does not "
                                f"fit the model's context window ({exc})", violations) from None
            raise  # the caller can shorten the context graph and ask again
        except LLMError as exc:
            raise PlanError(f"the {component} gave no usable plan: {exc}") from None
        messages.append(Message.assistant(resp.text))
        new = dag_from_json(resp.parsed, version)
        dag = TaskDAG(done + tuple(s for s in new.subtasks if s.id not in _ids(done)), version)
        violations = validate_dag(dag, context)
        if not violations:
            return dag
    raise PlanError(f"the {component}'s plan is invalid after one repair", violations)


def _ids(subtasks: Sequence[Subtask]) -> set[str]:
    return {s.id for s in subtasks}
