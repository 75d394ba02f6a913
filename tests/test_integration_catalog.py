"""What the framework adapters share (``hyperplan.integrations._catalog``): the provider tool
shapes, message histories of each provider, the catalog a framework's tools become, the
selector cache and the narrowing. Also the workspace catalog and the helpers the adapters'
tests use (this module is imported by Hermes' interpreter too, so pytest loads lazily)."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any, TypedDict

REQUEST = "Set the status of the support ticket titled 'Login page broken' to resolved."
ENTITIES = {"ticket": "support ticket", "order": "customer order", "invoice": "invoice",
            "project": "project", "document": "shared document", "meeting": "calendar meeting",
            "employee": "employee record", "vendor": "vendor account"}


def workspace_functions() -> list[dict[str, Any]]:
    """56 tools over 8 kinds of records, as agents register them: input schemas only, the
    producer of each id saying in its description that it returns it. The target of
    :data:`REQUEST` is ``update_ticket_status``, whose ``ticket_id`` only ``find_ticket`` (or
    ``create_ticket``) supplies."""
    out: list[dict[str, Any]] = []

    def fn(name: str, description: str, props: dict[str, Any], required: list[str]) -> None:
        out.append({"name": name, "description": description,
                    "parameters": {"type": "object", "properties": props,
                                   "required": required}})

    for e, what in ENTITIES.items():
        idp = {f"{e}_id": {"type": "string", "description": f"Id of the {what}."}}
        fn(f"find_{e}", f"Search {what}s by their title; returns the {e} id of the best match.",
           {"title": {"type": "string", "description": f"Title of the {what}."}}, ["title"])
        fn(f"create_{e}", f"Create a new {what} with a title; returns the new {e} id.",
           {"title": {"type": "string", "description": "Title."}}, ["title"])
        fn(f"show_{e}", f"Show every field of a {what}.", idp, [f"{e}_id"])
        fn(f"update_{e}_status", f"Set the status of a {what} (open, resolved, closed...).",
           {**idp, "status": {"type": "string", "description": "The new status."}},
           [f"{e}_id", "status"])
        fn(f"delete_{e}", f"Delete a {what} for good.", idp, [f"{e}_id"])
        fn(f"comment_on_{e}", f"Add a comment to a {what}.",
           {**idp, "text": {"type": "string", "description": "The comment."}},
           [f"{e}_id", "text"])
        fn(f"list_{e}_history", f"List the change history of a {what}.", idp, [f"{e}_id"])
    return out


WORKSPACE = frozenset(f["name"] for f in workspace_functions())


def require(module: str, extra: str) -> Any:
    """Import a framework for its adapter's test: skipped when it is missing, failed instead
    under CI with ``HYPERPLAN_INTEGRATIONS_REQUIRED=1`` (``.ci/run`` installs them all)."""
    import pytest

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        message = f"{module} is not installed (pip install 'hyperplan[{extra}]'): {exc}"
        if os.environ.get("CI") == "true" and \
                os.environ.get("HYPERPLAN_INTEGRATIONS_REQUIRED") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message, allow_module_level=True)


# -- tests of the shared helpers -------------------------------------------------------------


class _Found(TypedDict):
    ticket_id: str


def _find(title: str) -> _Found:
    """Find a ticket by its title."""
    return {"ticket_id": title}


def test_provider_tool_reads_every_shape() -> None:
    from hyperplan.integrations._catalog import provider_tool, tool_name

    params = {"type": "object", "properties": {"q": {"type": "string"}}}
    shapes = [
        {"type": "function", "function": {"name": "f", "description": "d", "parameters": params}},
        {"type": "function", "name": "f", "description": "d", "parameters": params,
         "strict": False},
        {"name": "f", "description": "d", "input_schema": params},
        {"toolSpec": {"name": "f", "description": "d", "inputSchema": {"json": params}}},
        {"name": "f", "description": "d", "parameters": params},
    ]
    for shape in shapes:
        found = provider_tool(shape)
        assert found is not None and found.name == "f" and found.description == "d", shape
        assert found.parameters == params
    for server_side in ({"type": "web_search_20250305", "name": "web_search"},
                        {"type": "web_search"}, {"type": "code_interpreter"}, "text", None):
        assert provider_tool(server_side) is None
    assert tool_name({"type": "web_search_20250305", "name": "web_search"}) == "web_search"


def test_histories_of_each_provider_give_the_same_calls() -> None:
    from hyperplan.integrations._catalog import calls_in, last_user_text

    chat = [{"role": "system", "content": "s"}, {"role": "user", "content": REQUEST},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "find_ticket", "arguments": '{"title": "x"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": '{"ticket_id": "T-17"}'}]
    anthropic = [{"role": "user", "content": [{"type": "text", "text": REQUEST}]},
                 {"role": "assistant", "content": [{"type": "tool_use", "id": "c1",
                                                    "name": "find_ticket",
                                                    "input": {"title": "x"}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1",
                                               "content": '{"ticket_id": "T-17"}'}]}]
    responses = [{"role": "user", "content": [{"type": "input_text", "text": REQUEST}]},
                 {"type": "function_call", "call_id": "c1", "name": "find_ticket",
                  "arguments": '{"title": "x"}'},
                 {"type": "function_call_output", "call_id": "c1",
                  "output": '{"ticket_id": "T-17"}'}]
    bedrock = [{"role": "user", "content": [{"text": REQUEST}]},
               {"role": "assistant", "content": [{"toolUse": {
                   "toolUseId": "c1", "name": "find_ticket", "input": {"title": "x"}}}]},
               {"role": "user", "content": [{"toolResult": {
                   "toolUseId": "c1", "content": [{"json": {"ticket_id": "T-17"}}]}}]}]
    for messages in (chat, anthropic, responses, bedrock):
        assert last_user_text(messages) == REQUEST
        calls = calls_in(messages)
        assert [(c.tool, dict(c.arguments)) for c in calls] == [("find_ticket", {"title": "x"})]
        assert calls[0].ok
    failed = [*anthropic[:2], {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "c1", "content": "boom", "is_error": True}]}]
    assert not calls_in(failed)[0].ok
    assert calls_in(chat[:3]) == []  # a call without a result yet


def test_catalog_of_framework_tools_gets_outputs_from_returns_clauses() -> None:
    from hyperplan.integrations._catalog import ToolDef, output_schema_of, to_spec

    spec = to_spec(ToolDef("find_ticket", "Search tickets; returns the ticket id.",
                           {"type": "object", "properties": {"title": {"type": "string"}}}))
    assert spec is not None and spec.output_schema is not None
    plain = to_spec(ToolDef("delete_ticket", "Delete a ticket.", None))
    assert plain is not None and plain.output_schema is None and plain.input_schema["type"]
    assert to_spec(ToolDef("bad", "", {"type": "string"})) is None  # not an object schema
    schema = output_schema_of(_find)
    assert schema is not None and "ticket_id" in schema["properties"]
    assert output_schema_of(print) is None


def test_host_narrows_to_the_producer_and_keeps_what_it_cannot_judge(tmp_path: Path) -> None:
    from hyperplan.integrations._catalog import Call, ToolDef
    from hyperplan.integrations.host import SelectionHost

    defs = [ToolDef(f["name"], f["description"], f["parameters"]) for f in workspace_functions()]
    odd = ToolDef("odd_tool", "Takes a string.", {"type": "string"})
    narrower = SelectionHost(budget=6, keep={"todo"}, cache_dir=tmp_path)
    tools = [*defs, odd, ToolDef("todo", "Keep a todo list.", None)]
    got = narrower.narrow(tools, REQUEST)
    assert got is not None
    assert {"find_ticket", "update_ticket_status", "odd_tool", "todo"} <= set(got.names)
    assert set(got.kept) == {"odd_tool", "todo"}
    assert len(set(got.names) & WORKSPACE) <= 6
    assert list(got.names) == [n for n in (t.name for t in tools) if n in got.names]
    # cached: the same tool set is not built again
    assert narrower.selector(defs) is narrower.selector(list(reversed(defs)))
    # the state moves on: once the id is held, its producers are no longer needed for it
    after = narrower.narrow(tools, REQUEST, [Call("find_ticket", {"title": "Login page broken"},
                                                  '{"ticket_id": "T-17"}')])
    assert after is not None and "update_ticket_status" in after.names
    assert "ticket_id" in after.selection.held
    assert all(t.for_tool != "update_ticket_status" for t in after.selection.tools)
    # nothing to narrow: no request, or no more tools than the budget
    assert narrower.narrow(tools, "  ") is None
    assert narrower.narrow(defs[:6], REQUEST) is None
    # a forced tool is kept this time
    forced = narrower.narrow(tools, REQUEST, also_keep={"delete_vendor"})
    assert forced is not None and "delete_vendor" in forced.names
