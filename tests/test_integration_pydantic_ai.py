"""The pydantic-ai adapter in pydantic-ai's real agent loop, with its ``FunctionModel``
recording the tool definitions each model request carried (``AgentInfo.function_tools``) and
answering with scripted tool calls."""

from __future__ import annotations

import asyncio
import json
import warnings
from pathlib import Path
from typing import Any, TypedDict

from test_integration_catalog import REQUEST, WORKSPACE, require, workspace_functions

require("pydantic_ai", "pydantic-ai")

from pydantic import BaseModel  # noqa: E402
from pydantic_ai import Agent, Tool  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelResponse,
    ModelResponsePart,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402
from pydantic_ai.toolsets import FunctionToolset  # noqa: E402

from hyperplan.integrations.pydantic_ai import ToolPreselection, narrowed  # noqa: E402

SCRIPT: list[ModelResponsePart] = [
    ToolCallPart("find_ticket", {"title": "Login page broken"}, tool_call_id="c1"),
    ToolCallPart("update_ticket_status", {"ticket_id": "T-17", "status": "resolved"},
                 tool_call_id="c2"),
    TextPart("T-17 is resolved."),
]


def scripted(sent: list[list[str]]) -> FunctionModel:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        sent.append([t.name for t in info.function_tools])
        return ModelResponse(parts=[SCRIPT[min(len(sent), len(SCRIPT)) - 1]])
    return FunctionModel(respond)


def workspace_tools(calls: list[str]) -> list[Tool[Any]]:
    def tool_for(fn: dict[str, Any]) -> Tool[Any]:
        def run(**kwargs: Any) -> str:
            calls.append(fn["name"])
            if fn["name"] == "find_ticket":
                return json.dumps({"ticket_id": "T-17"})
            return json.dumps({"ok": True})
        return Tool.from_schema(run, name=fn["name"], description=fn["description"],
                                json_schema=fn["parameters"])
    return [tool_for(fn) for fn in workspace_functions()]


def _check(sent: list[list[str]], calls: list[str], output: str) -> None:
    assert output == "T-17 is resolved."
    assert calls == ["find_ticket", "update_ticket_status"]
    assert len(sent) == 3
    assert {"find_ticket", "update_ticket_status"} <= set(sent[0])
    assert len(sent[0]) <= 6 < len(WORKSPACE)
    assert "update_ticket_status" in sent[1]


def test_prepare_tools_capability_narrows_each_request(tmp_path: Path) -> None:
    sent: list[list[str]] = []
    calls: list[str] = []
    preselect = ToolPreselection(budget=6, cache_dir=tmp_path)
    agent = Agent(scripted(sent), tools=workspace_tools(calls),
                  capabilities=[preselect.capability()])
    result = agent.run_sync(REQUEST)
    _check(sent, calls, result.output)
    # the second request's selection had seen find_ticket's return: the ticket id is held
    assert preselect.last is not None and "ticket_id" in preselect.last.selection.held


def test_a_prepared_toolset_narrows_the_same_way(tmp_path: Path) -> None:
    sent: list[list[str]] = []
    calls: list[str] = []
    toolset = narrowed(FunctionToolset(workspace_tools(calls)), budget=6, cache_dir=tmp_path)
    agent = Agent(scripted(sent), toolsets=[toolset])
    result = asyncio.run(agent.run(REQUEST))
    _check(sent, calls, result.output)


class Found(TypedDict):  # typing's: pydantic-ai 2 derives no return schema from it on 3.11
    ticket_id: str


class Ticket(BaseModel):
    ticket_id: str


def find_ticket(title: str) -> Found:
    """Search support tickets by their title."""
    return {"ticket_id": "T-17"}


def lookup_ticket(title: str) -> Ticket:
    """Search support tickets by their title."""
    return Ticket(ticket_id="T-17")


def update_ticket_status(ticket_id: str, status: str) -> str:
    """Set the status of a support ticket."""
    return "ok"


def test_return_annotations_give_the_links(tmp_path: Path) -> None:
    """With no "returns" clause, the producer is known from its return annotation."""
    sent: list[list[str]] = []
    others = [t for t in workspace_tools([]) if t.name not in ("find_ticket",
                                                                "update_ticket_status")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # pydantic-ai's, about typing.TypedDict
        mine = [Tool(find_ticket), Tool(update_ticket_status)]
    preselect = ToolPreselection(budget=6, cache_dir=tmp_path, returns=mine)
    assert "ticket_id" in preselect.returns["find_ticket"]["properties"]
    agent = Agent(scripted(sent), tools=[*mine, *others], capabilities=[preselect.capability()])
    agent.run_sync(REQUEST)
    assert {"find_ticket", "update_ticket_status"} <= set(sent[0])
    # a BaseModel return: pydantic-ai's own return_schema is used
    sent.clear()
    lookup = [Tool(lookup_ticket), Tool(update_ticket_status)]
    preselect = ToolPreselection(budget=6, cache_dir=tmp_path)
    agent = Agent(scripted(sent), tools=[*lookup, *others], capabilities=[preselect.capability()])
    first: list[Any] = []
    narrow = preselect.narrow

    def spy(ctx: Any, tool_defs: Any) -> Any:
        out = narrow(ctx, tool_defs)
        first.append(preselect.last)
        return out

    preselect.narrow = spy  # type: ignore[method-assign]
    agent.run_sync(REQUEST)
    assert "update_ticket_status" in set(sent[0])
    # linked through its return_schema: DOE's chain reads the update's ticket_id from it (its
    # producers fill the places the context graph leaves, so at budget 6 it may be cut)
    steps = {s.tool: s for s in first[0].selection.chain}
    assert ("ticket_id", "lookup_ticket", "ticket_id") in steps["update_ticket_status"].reads


TWO_TURNS: list[ModelResponsePart] = [
    *SCRIPT,
    ToolCallPart("find_ticket", {"title": "Checkout fails"}, tool_call_id="c3"),
    ToolCallPart("delete_ticket", {"ticket_id": "T-17"}, tool_call_id="c4"),
    TextPart("Deleted."),
]


def test_a_second_user_turn_is_offered_the_producer_again(tmp_path: Path) -> None:
    """Turn 2 asks about another ticket by title: the new prompt re-conditions the state, so
    find_ticket is offered again although turn 1 holds a ticket id (issue 38, item 6)."""
    sent: list[list[str]] = []
    calls: list[str] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        sent.append([t.name for t in info.function_tools])
        return ModelResponse(parts=[TWO_TURNS[min(len(sent), len(TWO_TURNS)) - 1]])

    preselect = ToolPreselection(budget=6, cache_dir=tmp_path)
    agent = Agent(FunctionModel(respond), tools=workspace_tools(calls),
                  capabilities=[preselect.capability()])
    first = agent.run_sync(REQUEST)
    assert first.output == "T-17 is resolved."
    second = agent.run_sync("Now delete the support ticket titled 'Checkout fails'.",
                            message_history=first.all_messages())
    assert second.output == "Deleted."
    assert calls == ["find_ticket", "update_ticket_status", "find_ticket", "delete_ticket"]
    assert len(sent) == 6
    assert {"find_ticket", "delete_ticket"} <= set(sent[3])
    assert len(sent[3]) <= 6 < len(WORKSPACE)
    assert "delete_ticket" in sent[4]
    assert preselect.last is not None and "ticket_id" in preselect.last.selection.held
