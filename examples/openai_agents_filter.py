"""The OpenAI Agents SDK with hyperplan's tool selection, offline: the SDK's real ``Runner`` with
its ``ScriptedModel`` (``agents.testing``), which records the tools each model call was given.

    pip install 'hyperplan[openai-agents]'
    python examples/openai_agents_filter.py [--tools 140] [--budget 8]

Function tools get an ``is_enabled`` from ``selection.narrow``; an MCP server would take
``tool_filter=selection.tool_filter`` (``MCPServerStdio(params, tool_filter=...)``). The run's
``hooks`` feed each result back, so the next turn's selection knows what is held.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from agents import Agent, FunctionTool, Runner, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

from hyperplan.integrations.openai_agents import ToolSelection

REQUEST = "Set the status of the support ticket titled 'Login page broken' to resolved."
KINDS = ("ticket order invoice project document meeting employee vendor contract shipment "
         "payment refund customer account subscription device license report budget "
         "campaign").split()


def definitions(n: int) -> list[dict[str, Any]]:
    """``n`` tools over kinds of records (see examples/hermes_plugin.py)."""
    out = []
    for kind in KINDS:
        idp = {f"{kind}_id": {"type": "string", "description": f"Id of the {kind}."}}
        for name, desc, props in [
            (f"find_{kind}", f"Search {kind}s by title; returns the {kind} id of the best match.",
             {"title": {"type": "string"}}),
            (f"create_{kind}", f"Create a {kind} with a title; returns the new {kind} id.",
             {"title": {"type": "string"}}),
            (f"show_{kind}", f"Show every field of a {kind}.", idp),
            (f"update_{kind}_status", f"Set the status of a {kind} (open, resolved...).",
             {**idp, "status": {"type": "string"}}),
            (f"delete_{kind}", f"Delete a {kind} for good.", idp),
            (f"comment_on_{kind}", f"Add a comment to a {kind}.",
             {**idp, "text": {"type": "string"}}),
            (f"list_{kind}_history", f"List the change history of a {kind}.", idp)]:
            out.append({"name": name, "description": desc, "parameters": {
                "type": "object", "properties": props, "required": list(props),
                "additionalProperties": False}})
    return out[:n]


def function_tools(n: int) -> list[FunctionTool]:
    def invoker(name: str) -> Any:
        async def invoke(ctx: Any, arguments: str) -> str:
            return json.dumps({"ticket_id": "T-17"} if name == "find_ticket" else {"ok": True})
        return invoke

    return [FunctionTool(name=d["name"], description=d["description"],
                         params_json_schema=d["parameters"], on_invoke_tool=invoker(d["name"]))
            for d in definitions(n)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=140)
    parser.add_argument("--budget", type=int, default=8)
    args = parser.parse_args()
    set_tracing_disabled(True)  # offline: no trace export
    selection = ToolSelection(budget=args.budget)
    model = ScriptedModel([
        [function_call("find_ticket", {"title": "Login page broken"}, call_id="c1")],
        [function_call("update_ticket_status", {"ticket_id": "T-17", "status": "resolved"},
                       call_id="c2")],
        [assistant_message("Done: ticket T-17 is resolved.")],
    ])
    tools = function_tools(args.tools)
    agent = Agent(name="desk", instructions="Help with the workspace.", model=model,
                  tools=selection.narrow(tools))
    result = asyncio.run(Runner.run(agent, REQUEST, hooks=selection.hooks))
    print(f"{len(tools)} function tools; final output: {result.final_output}")
    for i, call in enumerate(model.calls, 1):
        print(f"model call {i}: {', '.join(t.name for t in call.tools)}")
    last = selection.host.last
    if last is not None:
        held = ", ".join(last.selection.held)
        print(f"last selection ({last.selection.tokens} of {last.selection.all_tokens} "
              f"definition tokens), holding {held}:")
        for tool in last.selection.tools:
            print(f"  {tool.name}: {tool.why()}")


if __name__ == "__main__":
    main()
