"""LangGraph with hyperplan, offline, with a scripted chat model that records the tools bound to
each call:

* ``langgraph-bigtool``'s agent with hyperplan's ``retrieve_tools`` (the tools it retrieves come
  with the producers of their inputs). bigtool 0.0.3 needs langgraph 0.6:
  ``pip install 'hyperplan[langgraph-bigtool]'``;
* a plain ``create_react_agent`` whose model gets, per call, only the selected tools
  (``ToolNarrower.dynamic_model``): ``pip install 'hyperplan[langgraph]'`` (langgraph 0.6 or 1.x).

    python examples/langgraph_bigtool_agent.py [--tools 140] [--budget 6]

Each part runs when its packages import; the other is reported as skipped. (The file is not
named langgraph_bigtool.py: run as a script, it would shadow the package.)
"""

from __future__ import annotations

import argparse
import json
import warnings
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from hyperplan.integrations.langgraph import (
    ToolNarrower,
    retrieve_tools_coroutine,
    retrieve_tools_function,
)

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


def tools(n: int) -> list[StructuredTool]:
    def tool_for(d: dict[str, Any]) -> StructuredTool:
        def run(**kwargs: Any) -> str:
            return json.dumps({"ticket_id": "T-17"} if d["name"] == "find_ticket" else
                              {"ok": True})
        return StructuredTool.from_function(func=run, name=d["name"],
                                            description=d["description"],
                                            args_schema=d["parameters"])
    return [tool_for(d) for d in definitions(n)]


class ScriptedChat(BaseChatModel):
    """Answers with ``script`` in turn; ``sent``: the tool names bound to each call."""

    script: list[AIMessage]
    sent: list[list[str]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        self.sent.append([t["function"]["name"] for t in kwargs.get("tools", [])])
        message = self.script[min(len(self.sent), len(self.script)) - 1]
        return ChatResult(generations=[ChatGeneration(message=message)])


def call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


STEPS = [call("find_ticket", {"title": "Login page broken"}, "c1"),
         call("update_ticket_status", {"ticket_id": "T-17", "status": "resolved"}, "c2"),
         AIMessage(content="Done: ticket T-17 is resolved.")]


def bigtool(all_tools: list[StructuredTool], budget: int) -> None:
    try:
        from langgraph.prebuilt import ToolNode
        from langgraph.store.memory import InMemoryStore
        from langgraph_bigtool import create_agent

        if not hasattr(ToolNode, "inject_tool_args"):
            raise ImportError("langgraph-bigtool 0.0.3 needs langgraph 0.6")
    except ImportError as exc:
        print(f"bigtool: skipped ({exc})")
        return
    registry = {t.name: t for t in all_tools}
    model = ScriptedChat(script=[call("retrieve_tools", {"query": "update a ticket's status"},
                                      "r1"), *STEPS])
    agent = create_agent(model, registry,
                         retrieve_tools_function=retrieve_tools_function(registry,
                                                                         budget=budget),
                         retrieve_tools_coroutine=retrieve_tools_coroutine(registry,
                                                                           budget=budget))
    out = agent.compile(store=InMemoryStore()).invoke({"messages": [HumanMessage(REQUEST)]})
    print(f"bigtool: {out['messages'][-1].content}")
    for i, names in enumerate(model.sent, 1):
        print(f"  model call {i}: {', '.join(names)}")


def react(all_tools: list[StructuredTool], budget: int) -> None:
    from langgraph.prebuilt import create_react_agent

    narrower = ToolNarrower(all_tools, budget=budget)
    model = ScriptedChat(script=STEPS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # langgraph 1.x: moved to langchain
        agent = create_react_agent(narrower.dynamic_model(model), all_tools)
    out = agent.invoke({"messages": [HumanMessage(REQUEST)]})
    print(f"create_react_agent: {out['messages'][-1].content}")
    for i, names in enumerate(model.sent, 1):
        print(f"  model call {i}: {', '.join(names)}")
    if narrower.last is not None:
        chosen = narrower.last.selection
        print(f"  definition tokens per call: {chosen.tokens} of {chosen.all_tokens}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=140)
    parser.add_argument("--budget", type=int, default=6)
    args = parser.parse_args()
    all_tools = tools(args.tools)
    print(f"{len(all_tools)} tools")
    bigtool(all_tools, args.budget)
    react(all_tools, args.budget)


if __name__ == "__main__":
    main()
