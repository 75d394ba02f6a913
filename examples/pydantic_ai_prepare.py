"""pydantic-ai with hyperplan's tool preselection, offline: pydantic-ai's real agent loop with its
``FunctionModel``, which here records the tool definitions each model request carried.

    pip install 'hyperplan[pydantic-ai]'
    python examples/pydantic_ai_prepare.py [--tools 140] [--budget 8]

``ToolPreselection`` is a ``prepare_tools`` function: ``capabilities=[preselect.capability()]``
(or ``toolset.prepared(preselect)``). Each step it reads the last user prompt and the tool calls
and returns in ``ctx.messages``, so what the agent already holds is not fetched again.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from pydantic_ai import Agent, Tool
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from hyperplan.integrations.pydantic_ai import ToolPreselection

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
                "type": "object", "properties": props, "required": list(props)}})
    return out[:n]


def tools(n: int) -> list[Tool[Any]]:
    def tool_for(d: dict[str, Any]) -> Tool[Any]:
        def run(**kwargs: Any) -> str:
            return json.dumps({"ticket_id": "T-17"} if d["name"] == "find_ticket" else
                              {"ok": True})
        return Tool.from_schema(run, name=d["name"], description=d["description"],
                                json_schema=d["parameters"])
    return [tool_for(d) for d in definitions(n)]


SCRIPT = [ToolCallPart("find_ticket", {"title": "Login page broken"}, tool_call_id="c1"),
          ToolCallPart("update_ticket_status", {"ticket_id": "T-17", "status": "resolved"},
                       tool_call_id="c2"),
          TextPart("Done: ticket T-17 is resolved.")]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=140)
    parser.add_argument("--budget", type=int, default=8)
    args = parser.parse_args()
    sent: list[list[str]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        sent.append([t.name for t in info.function_tools])
        return ModelResponse(parts=[SCRIPT[min(len(sent), len(SCRIPT)) - 1]])

    preselect = ToolPreselection(budget=args.budget)
    agent = Agent(FunctionModel(model), tools=tools(args.tools),
                  capabilities=[preselect.capability()])
    result = agent.run_sync(REQUEST)
    print(f"{args.tools} tools; output: {result.output}")
    for i, names in enumerate(sent, 1):
        print(f"model request {i}: {', '.join(names)}")
    if preselect.last is not None:
        chosen = preselect.last.selection
        print(f"definition tokens of the last request: {chosen.tokens} of {chosen.all_tokens}")


if __name__ == "__main__":
    main()
