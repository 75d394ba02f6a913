"""The OpenAI Agents SDK adapter in the SDK's real ``Runner`` loop, with the SDK's own
``ScriptedModel`` (``agents.testing``) recording the tools each model call received: function
tools narrowed through ``is_enabled``, and the tools of a real stdio MCP server (mcp 2.x) through
``tool_filter``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from test_integration_catalog import REQUEST, WORKSPACE, require, workspace_functions

require("agents", "openai-agents")

from agents import Agent, FunctionTool, Runner  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

from hyperplan.integrations.openai_agents import ToolSelection  # noqa: E402


def _script() -> ScriptedModel:
    return ScriptedModel([
        [function_call("find_ticket", {"title": "Login page broken"}, call_id="c1")],
        [function_call("update_ticket_status", {"ticket_id": "T-17", "status": "resolved"},
                       call_id="c2")],
        [assistant_message("Done: T-17 is resolved.")],
    ])


def _function_tools(calls: list[str]) -> list[FunctionTool]:
    def invoker(name: str) -> Any:
        async def invoke(ctx: Any, arguments: str) -> str:
            calls.append(name)
            if name == "find_ticket":
                return json.dumps({"ticket_id": "T-17"})
            return json.dumps({"ok": True})
        return invoke

    return [FunctionTool(name=f["name"], description=f["description"],
                         params_json_schema={**f["parameters"], "additionalProperties": False},
                         on_invoke_tool=invoker(f["name"]), strict_json_schema=False)
            for f in workspace_functions()]


def _sent(model: ScriptedModel) -> list[list[str]]:
    return [[t.name for t in call.tools] for call in model.calls]


def test_function_tools_are_enabled_only_while_selected(tmp_path: Path) -> None:
    calls: list[str] = []
    selection = ToolSelection(budget=6, cache_dir=tmp_path)
    model = _script()
    agent = Agent(name="desk", instructions="Help with the workspace.", model=model,
                  tools=selection.narrow(_function_tools(calls)))
    result = asyncio.run(Runner.run(agent, REQUEST, hooks=selection.hooks))
    assert result.final_output == "Done: T-17 is resolved."
    assert calls == ["find_ticket", "update_ticket_status"]
    sent = _sent(model)
    assert len(sent) == 3
    assert {"find_ticket", "update_ticket_status"} <= set(sent[0])
    assert len(sent[0]) <= 6 < len(WORKSPACE)
    assert "update_ticket_status" in sent[1]
    # the hooks recorded both calls for the conversation, and the next turn saw them
    recorded = selection.conversations.ensure(
        selection.conversation(result.context_wrapper)).calls()
    assert [c.tool for c in recorded] == ["find_ticket", "update_ticket_status"]
    assert recorded[0].arguments == {"title": "Login page broken"}
    last = selection.host.last
    assert last is not None and "ticket_id" in last.selection.held


def test_an_own_is_enabled_still_applies(tmp_path: Path) -> None:
    tools = _function_tools([])
    tools = [t if t.name != "find_ticket" else FunctionTool(
        name=t.name, description=t.description, params_json_schema=t.params_json_schema,
        on_invoke_tool=t.on_invoke_tool, strict_json_schema=False, is_enabled=False)
        for t in tools]
    selection = ToolSelection(budget=6, cache_dir=tmp_path)
    model = ScriptedModel([[assistant_message("no")]])
    agent = Agent(name="desk", model=model, tools=selection.narrow(tools))
    asyncio.run(Runner.run(agent, REQUEST))
    sent = _sent(model)[0]
    assert "update_ticket_status" in sent and "find_ticket" not in sent


MCP_SERVER = textwrap.dedent('''
    import json, sys, anyio
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    FUNCTIONS = json.loads(sys.argv[1])

    def output(name):
        if name.startswith(("find_", "create_")):
            entity = name.split("_", 1)[1]
            return {"type": "object", "properties": {
                f"{entity}_id": {"type": "string", "description": f"Id of the {entity}."}}}
        return None

    TOOLS = [types.Tool(name=f["name"], description=f["description"],
                        input_schema=f["parameters"], output_schema=output(f["name"]))
             for f in FUNCTIONS]

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx, params):
        data = {"ticket_id": "T-17"} if params.name == "find_ticket" else {"ok": True}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(data))],
            structured_content=data if output(params.name) else None)

    server = Server("workspace", on_list_tools=list_tools, on_call_tool=call_tool)

    async def main():
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
''')


def test_mcp_tool_filter_narrows_a_real_stdio_server(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from agents.mcp import MCPServerStdio

    script = tmp_path / "workspace_server.py"
    script.write_text(MCP_SERVER)
    selection = ToolSelection(budget=6, cache_dir=tmp_path / "cache")
    model = _script()

    async def run() -> Any:
        server = MCPServerStdio(
            params={"command": sys.executable,
                    "args": [str(script), json.dumps(workspace_functions())]},
            tool_filter=selection.tool_filter, name="workspace",
            client_session_timeout_seconds=60)
        async with server:
            agent = Agent(name="desk", model=model, mcp_servers=[server])
            return await Runner.run(agent, REQUEST, hooks=selection.hooks)

    result = asyncio.run(run())
    assert result.final_output == "Done: T-17 is resolved."
    sent = _sent(model)
    assert len(sent) == 3
    assert {"find_ticket", "update_ticket_status"} <= set(sent[0])
    assert len(sent[0]) <= 6
    assert set(sent[0]) <= WORKSPACE
    recorded = selection.conversations.ensure(
        selection.conversation(result.context_wrapper)).calls()
    assert [c.tool for c in recorded] == ["find_ticket", "update_ticket_status"]



TURN_TWO = "Now delete the support ticket titled 'Checkout fails'."


def test_two_runs_share_no_state_and_a_second_turn_is_reconditioned(tmp_path: Path) -> None:
    """Two separate runs of the same request without ``context`` each start from nothing
    (item 7); a conversation continued with ``to_input_list()`` and a new request is offered
    the producer again for the new ticket (item 6)."""
    calls: list[str] = []
    selection = ToolSelection(budget=6, cache_dir=tmp_path)
    tools = selection.narrow(_function_tools(calls))
    first_sent: list[list[str]] = []
    result: Any = None
    for _ in range(2):
        model = _script()
        agent = Agent(name="desk", model=model, tools=tools)
        result = asyncio.run(Runner.run(agent, REQUEST, hooks=selection.hooks))
        assert result.final_output == "Done: T-17 is resolved."
        first_sent.append(_sent(model)[0])
    assert calls == ["find_ticket", "update_ticket_status"] * 2
    assert "find_ticket" in first_sent[1] and first_sent[0] == first_sent[1]
    model = ScriptedModel([
        [function_call("find_ticket", {"title": "Checkout fails"}, call_id="c3")],
        [function_call("delete_ticket", {"ticket_id": "T-17"}, call_id="c4")],
        [assistant_message("Deleted.")],
    ])
    agent = Agent(name="desk", model=model, tools=tools)
    follow = [*result.to_input_list(), {"role": "user", "content": TURN_TWO}]
    second = asyncio.run(Runner.run(agent, follow, hooks=selection.hooks))
    assert second.final_output == "Deleted."
    sent = _sent(model)
    assert {"find_ticket", "delete_ticket"} <= set(sent[0])
    assert len(sent[0]) <= 6
    assert "delete_ticket" in sent[1]


def test_one_budget_across_mcp_servers(tmp_path: Path) -> None:
    """Three real stdio MCP servers at budget 5: the model is sent at most 5 of their tools
    in all, not 5 per server (item 7)."""
    pytest.importorskip("mcp")
    from agents.mcp import MCPServerStdio

    script = tmp_path / "workspace_server.py"
    script.write_text(MCP_SERVER)
    functions = workspace_functions()
    groups = [functions[i::3] for i in range(3)]
    selection = ToolSelection(budget=5, cache_dir=tmp_path / "cache")
    model = _script()

    async def run() -> Any:
        servers = [MCPServerStdio(
            params={"command": sys.executable, "args": [str(script), json.dumps(group)]},
            tool_filter=selection.tool_filter, name=f"workspace{i}",
            client_session_timeout_seconds=60) for i, group in enumerate(groups)]
        async with contextlib.AsyncExitStack() as stack:
            for server in servers:
                await stack.enter_async_context(server)
            agent = Agent(name="desk", model=model, mcp_servers=list(servers))
            return await Runner.run(agent, REQUEST, hooks=selection.hooks)

    result = asyncio.run(run())
    assert result.final_output == "Done: T-17 is resolved."
    sent = _sent(model)
    assert {"find_ticket", "update_ticket_status"} <= set(sent[0])
    assert all(len(names) <= 5 for names in sent), sent
