"""The one LLM call per tool that fills what deterministic binding left open (HyperAgent,
"Agent Implementation": the LLM is invoked only when semantic ambiguity remains).

Ambiguous parameters are answered with the number of a listed candidate (so the model can only
pick a value the state actually holds); parameters with no value at all are answered with a
value of the parameter's own schema.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hyperplan.catalog import ToolSpec
from hyperplan.execute.binding import ArgumentPlan, Candidate
from hyperplan.execute.trace import redact
from hyperplan.llm.types import LLM, Message
from hyperplan.plan.prompts import render


def choice_schema(tool: ToolSpec, plan: ArgumentPlan) -> dict[str, Any]:
    """JSON Schema of the answer: an index per ambiguous parameter, a value per missing one."""
    props: dict[str, Any] = {}
    for name, cands in plan.ambiguous.items():
        props[name] = {"type": "integer", "minimum": 1, "maximum": len(cands)}
    declared = tool.input_schema.get("properties", {})
    for name in plan.missing:
        schema = declared.get(name, {})
        props[name] = {k: v for k, v in schema.items() if k in ("type", "enum", "items")}
    return {"type": "object", "required": list(props), "properties": props}


def _describe(tool: ToolSpec, plan: ArgumentPlan) -> str:
    declared = tool.input_schema.get("properties", {})
    lines = []
    for name, cands in plan.ambiguous.items():
        lines.append(f"{name}: {declared.get(name, {}).get('description', '')}".rstrip(": "))
        lines += [f"  {i}. {_candidate_text(c)}" for i, c in enumerate(cands, 1)]
    for name in plan.missing:
        schema = declared.get(name, {})
        kind = schema.get("type", "any")
        lines.append(f"{name} ({kind}): {schema.get('description', '')}".rstrip(": "))
    return "\n".join(lines)


def _candidate_text(c: Candidate) -> str:
    shown = redact(dict(c.record)) if c.record is not None else redact(c.value)
    return json.dumps(shown, ensure_ascii=False, default=str)[:300]


def choose_arguments(llm: LLM, request: str, goal: str, tool: ToolSpec,
                     plan: ArgumentPlan) -> dict[str, Any]:
    """Ask the model for the open parameters of ``tool``; returns parameter -> value."""
    system, user = render(
        "bind", request=request or goal, goal=goal, tool=tool.name,
        description=tool.description or "(no description)",
        bound=json.dumps(redact(dict(plan.bound)), ensure_ascii=False, default=str),
        parameters=_describe(tool, plan),
    )
    resp = llm.complete([Message.system(system), Message.user(user)],
                        schema=choice_schema(tool, plan), component="binder")
    answer: Mapping[str, Any] = resp.parsed
    chosen = {name: cands[int(answer[name]) - 1].value for name, cands in plan.ambiguous.items()}
    chosen.update({name: answer[name] for name in plan.missing})
    return chosen
