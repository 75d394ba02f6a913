"""Conversations of two user turns (issue 38, items 6 and 8): a new user request re-conditions
the session state (:meth:`hyperplan.select.Session.new_turn`, HyperAgent Definition 4), and a
tool's JSON text result grounds its fields.

The suite: 24 two-turn conversations over the workspace catalog of the adapters' tests (56
tools, input schemas only, each producer saying what it returns). Turn 1 resolves one record by
title and acts on it; turn 2 asks for another record of the same kind by title, so it needs the
producer turn 1 already called, with other arguments, then the action. At each step of turn 2
the next gold tool must be among the tools offered at budget 10, through the Session and
through each adapter's own reading of its framework's message history.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from hyperplan.catalog import build_catalog, make_tool
from hyperplan.integrations._catalog import Call, ToolDef
from hyperplan.integrations.host import SelectionHost
from hyperplan.select import build_selector
from test_integration_catalog import ENTITIES, workspace_functions

BUDGET = 10
TURN_ONE = ("Set the status of the {what} titled 'Quarterly review' to closed.",
            "update_{e}_status", {"status": "closed"})
TURN_TWO = [("Now delete the {what} called 'Kickoff notes' as well.", "delete_{e}", {}),
            ("Add the comment 'checked' to the {what} named 'Kickoff notes'.",
             "comment_on_{e}", {"text": "checked"}),
            ("Show me the change history of the {what} 'Kickoff notes'.",
             "list_{e}_history", {})]


def conversations() -> list[dict[str, Any]]:
    """24 conversations: each kind of record × each second-turn action."""
    out = []
    for e, what in ENTITIES.items():
        for request, action, extra in TURN_TWO:
            first = [Call(f"find_{e}", {"title": "Quarterly review"},
                          json.dumps({f"{e}_id": f"{e[:2].upper()}-1"})),
                     Call(TURN_ONE[1].format(e=e), {f"{e}_id": f"{e[:2].upper()}-1",
                                                     **TURN_ONE[2]}, '{"ok": true}')]
            second = [Call(f"find_{e}", {"title": "Kickoff notes"},
                           json.dumps({f"{e}_id": f"{e[:2].upper()}-2"})),
                      Call(action.format(e=e), {f"{e}_id": f"{e[:2].upper()}-2", **extra},
                           '{"ok": true}')]
            out.append({"turn1": TURN_ONE[0].format(what=what), "calls1": first,
                        "turn2": request.format(what=what), "calls2": second})
    return out


DEFS = [ToolDef(f["name"], f["description"], f["parameters"]) for f in workspace_functions()]

# An adapter's view: (turn-1 request, turn-1 calls, turn-2 request, turn-2 calls so far) ->
# the names offered.
Offer = Callable[[str, list[Call], str, list[Call]], tuple[str, ...]]


def session_offer(cache: Path) -> Offer:
    narrower = SelectionHost(budget=BUDGET, cache_dir=cache)

    def offer(r1: str, c1: list[Call], r2: str, c2: list[Call]) -> tuple[str, ...]:
        decided = narrower.narrow(DEFS, r2, c2, earlier=c1)
        assert decided is not None
        return decided.names

    return offer


def langgraph_offer(cache: Path) -> Offer:
    pytest.importorskip("langchain_core")
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.tools import StructuredTool

    from hyperplan.integrations.langgraph import ToolNarrower

    def noop(**kwargs: Any) -> str:
        return ""

    tools = [StructuredTool.from_function(noop, name=d.name, description=d.description,
                                          args_schema=dict(d.parameters or {}))
             for d in DEFS]
    narrower = ToolNarrower(tools, budget=BUDGET, cache_dir=cache)

    def history(request: str, calls: list[Call], turn: int) -> list[Any]:
        out: list[Any] = [HumanMessage(request)]
        for i, call in enumerate(calls):
            cid = f"t{turn}c{i}"
            out.append(AIMessage("", tool_calls=[{"name": call.tool, "args": dict(call.arguments),
                                                  "id": cid}]))
            out.append(ToolMessage(str(call.result), tool_call_id=cid))
        return out

    def offer(r1: str, c1: list[Call], r2: str, c2: list[Call]) -> tuple[str, ...]:
        messages = [*history(r1, c1, 1), AIMessage("Done."), *history(r2, c2, 2)]
        return tuple(t.name for t in narrower.select(messages))

    return offer


def pydantic_ai_offer(cache: Path) -> Offer:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import RunContext
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai.usage import RunUsage

    from hyperplan.integrations.pydantic_ai import ToolPreselection

    preselect = ToolPreselection(budget=BUDGET, cache_dir=cache)
    tool_defs = [ToolDefinition(name=d.name, description=d.description,
                                parameters_json_schema=dict(d.parameters or {})) for d in DEFS]

    def history(request: str, calls: list[Call], turn: int) -> list[Any]:
        out: list[Any] = [ModelRequest(parts=[UserPromptPart(request)])]
        for i, call in enumerate(calls):
            cid = f"t{turn}c{i}"
            out.append(ModelResponse(parts=[ToolCallPart(call.tool, dict(call.arguments),
                                                         tool_call_id=cid)]))
            out.append(ModelRequest(parts=[ToolReturnPart(call.tool, call.result,
                                                          tool_call_id=cid)]))
        return out

    def offer(r1: str, c1: list[Call], r2: str, c2: list[Call]) -> tuple[str, ...]:
        messages = [*history(r1, c1, 1), ModelResponse(parts=[TextPart("Done.")]),
                    *history(r2, c2, 2)]
        ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage(), messages=messages,
                         prompt=r2)
        return tuple(t.name for t in preselect.narrow(ctx, tool_defs))

    return offer


def openai_agents_offer(cache: Path) -> Offer:
    pytest.importorskip("agents")
    from agents import Agent, FunctionTool, RunContextWrapper

    from hyperplan.integrations.openai_agents import ToolSelection

    async def invoke(ctx: Any, arguments: str) -> str:
        return ""

    selection = ToolSelection(budget=BUDGET, cache_dir=cache)
    tools = selection.narrow([FunctionTool(name=d.name, description=d.description,
                                           params_json_schema=dict(d.parameters or {}),
                                           on_invoke_tool=invoke, strict_json_schema=False)
                              for d in DEFS])
    agent = Agent(name="desk", tools=tools)

    def items(request: str, calls: list[Call], turn: int) -> list[Any]:
        out: list[Any] = [{"role": "user", "content": request}]
        for i, call in enumerate(calls):
            cid = f"t{turn}c{i}"
            out.append({"type": "function_call", "call_id": cid, "name": call.tool,
                        "arguments": json.dumps(dict(call.arguments))})
            out.append({"type": "function_call_output", "call_id": cid,
                        "output": str(call.result)})
        return out

    async def enabled(wrapper: Any) -> tuple[str, ...]:
        flags = [await t.is_enabled(wrapper, agent) for t in tools  # type: ignore[misc]
                 if isinstance(t, FunctionTool) and callable(t.is_enabled)]
        return tuple(t.name for t, on in zip(tools, flags, strict=True) if on)

    def offer(r1: str, c1: list[Call], r2: str, c2: list[Call]) -> tuple[str, ...]:
        history = [*items(r1, c1, 1), {"role": "assistant", "content": "Done."}, *items(r2, c2, 2)]
        wrapper = RunContextWrapper(context=None, turn_input=history)
        return asyncio.run(enabled(wrapper))

    return offer


def hermes_offer(cache: Path) -> Offer:
    """The Hermes plugin's middleware on OpenAI chat requests of one Hermes session: its
    ``post_tool_call`` hook records every call, the messages carry both user turns."""
    from hyperplan.integrations.hermes import HermesPlugin

    tools = [{"type": "function", "function": {"name": d.name, "description": d.description,
                                               "parameters": dict(d.parameters or {})}}
             for d in DEFS]

    def history(request: str, calls: list[Call], turn: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{"role": "user", "content": request}]
        for i, call in enumerate(calls):
            cid = f"t{turn}c{i}"
            out.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": cid, "type": "function", "function": {
                    "name": call.tool, "arguments": json.dumps(dict(call.arguments))}}]})
            out.append({"role": "tool", "tool_call_id": cid, "content": str(call.result)})
        return out

    host = SelectionHost(budget=BUDGET, cache_dir=cache)

    def offer(r1: str, c1: list[Call], r2: str, c2: list[Call]) -> tuple[str, ...]:
        plugin = HermesPlugin(host=host)  # one host, its sessions forgotten after each
        for call in [*c1, *c2]:
            plugin.on_post_tool_call(tool_name=call.tool, args=dict(call.arguments),
                                     result=call.result, session_id="s")
        messages = [*history(r1, c1, 1), {"role": "assistant", "content": "Done."},
                    *history(r2, c2, 2)]
        answer = plugin.on_llm_request(request={"model": "m", "tools": tools,
                                                "messages": messages},
                                       api_mode="chat_completions", session_id="s")
        plugin.on_session_finalize(session_id="s")
        assert answer is not None
        return tuple(t["function"]["name"] for t in answer["request"]["tools"])

    return offer


WORKSPACE_SERVER = Path(__file__).parent / "data" / "gateway" / "workspace_server.py"


def gateway_offer(cache: Path, stack: ExitStack, mode: str = "narrow") -> Offer:
    """``hyperplan serve`` in process over the workspace tools as a real stdio MCP server (no
    output schemas, JSON text results): per conversation, ``find_tools`` with each user
    request (how the gateway learns of a new one) and every call forwarded (narrow mode:
    directly; search mode: through ``call_tool``). What is offered: in narrow mode the
    conversation's tool list after the gateway selected again; in search mode the answer of
    ``find_tools`` asked again with the turn's request (what its description tells the model
    to do: results are remembered, so it proposes what is still missing)."""
    from hyperplan.integrations.mcp_gateway import GatewayConfig, Mode, build_gateway

    gateway = build_gateway([f"mcp-server:{sys.executable} {WORKSPACE_SERVER}"],
                            GatewayConfig(mode=Mode(mode), budget=BUDGET, cache_dir=cache))
    stack.callback(gateway.upstream.close)
    gateway.service.start()
    assert gateway.service.wait(300) and gateway.service.ready, gateway.service.status()
    narrow = gateway.mode is Mode.NARROW

    def find(conv: Any, request: str) -> tuple[str, ...]:
        found = gateway.call(conv, "find_tools", {"request": request, "budget": BUDGET})
        assert not found.is_error and found.structured is not None, found.text
        return tuple(t["name"] for t in found.structured["tools"])

    def turn(conv: Any, request: str, calls: list[Call]) -> None:
        find(conv, request)
        for call in calls:
            reply = gateway.call(conv, call.tool, dict(call.arguments)) if narrow else \
                gateway.call(conv, "call_tool", {"name": call.tool,
                                                 "arguments": dict(call.arguments)})
            assert not reply.is_error, reply.text  # refused or failed: the suite is void
            assert json.loads(reply.text) == json.loads(call.result)
            gateway.refresh(conv)

    def offer(r1: str, c1: list[Call], r2: str, c2: list[Call]) -> tuple[str, ...]:
        conv = gateway.table.open("two-turn suite")
        assert conv is not None
        try:
            turn(conv, r1, c1)
            turn(conv, r2, c2)
            return conv.listed if narrow else find(conv, r2)
        finally:
            gateway.table.drop(conv.token)

    return offer


def gateway_search_offer(cache: Path, stack: ExitStack) -> Offer:
    return gateway_offer(cache, stack, "search")


def _plain(make: Callable[[Path], Offer]) -> Callable[[Path, ExitStack], Offer]:
    return lambda cache, _stack: make(cache)


ADAPTERS: dict[str, Callable[[Path, ExitStack], Offer]] = {
    "session": _plain(session_offer), "langgraph": _plain(langgraph_offer),
    "pydantic_ai": _plain(pydantic_ai_offer), "openai_agents": _plain(openai_agents_offer),
    "hermes": _plain(hermes_offer), "gateway": gateway_offer,
    "gateway_search": gateway_search_offer}


def next_gold_hit(offer: Offer) -> tuple[int, int]:
    """(hits, steps): turn 2's steps whose next gold tool is offered."""
    hits = steps = 0
    for conv in conversations():
        for step, gold in enumerate(conv["calls2"]):
            offered = offer(conv["turn1"], conv["calls1"], conv["turn2"], conv["calls2"][:step])
            hits += gold.tool in offered
            steps += 1
    return hits, steps


@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
def test_two_turn_suite_next_gold_tool_at_budget_10(adapter: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    with ExitStack() as stack:
        hits, steps = next_gold_hit(ADAPTERS[adapter](tmp_path, stack))
    with capsys.disabled():
        print(f"\ntwo-turn suite, {adapter}: next-gold-tool hit@{BUDGET} "
              f"{hits}/{steps} = {hits / steps:.3f} ({len(conversations())} conversations)")
    assert steps == 2 * len(conversations()) >= 40
    assert hits / steps >= 0.95


# -- the session itself ----------------------------------------------------------------------

def _tickets() -> Any:
    """find_ticket declares no output schema (its result is JSON text)."""
    return build_selector([_ticket_catalog()], embedder="hashing", cache_dir=None)


def _ticket_catalog() -> Any:
    ticket = {"type": "object", "properties": {"ticket_id": {"type": "string"}},
              "required": ["ticket_id"]}
    tools = [make_tool(name="find_ticket", description="Find a support ticket by its title.",
                       input_schema={"type": "object", "properties": {"title": {"type": "string"}},
                                     "required": ["title"]}),
             make_tool(name="delete_ticket", description="Delete a support ticket.",
                       input_schema=ticket),
             make_tool(name="close_ticket", description="Close a support ticket.",
                       input_schema=ticket),
             make_tool(name="list_invoices", description="List the invoices of a customer.",
                       input_schema={"type": "object",
                                     "properties": {"customer": {"type": "string"}}})]
    return build_catalog(tools, source="test")


def test_json_text_result_grounds_its_fields() -> None:
    selector = _tickets()
    session = selector.session("Close the ticket titled 'Login broken'.")
    session.observe("find_ticket", {"title": "Login broken"}, '{"ticket_id": "T-17"}')
    assert "ticket_id" in session.held
    chosen = session.select(budget=3)
    assert "ticket_id" in chosen.held
    steps = {s.tool: s for s in chosen.chain}
    assert all(producer != "find_ticket" for s in steps.values() for _, producer, _ in s.reads)


def test_a_new_turn_offers_the_producer_again() -> None:
    selector = _tickets()
    session = selector.session("Close the ticket titled 'Login broken'.")
    session.observe("find_ticket", {"title": "Login broken"}, '{"ticket_id": "T-17"}')
    session.observe("close_ticket", {"ticket_id": "T-17"}, {"ok": True})
    session.new_turn("Delete the ticket titled 'Checkout fails'.")
    assert "ticket_id" in session.earlier and "ticket_id" not in session.held
    assert session.turn_called == [] and session.called == ["find_ticket", "close_ticket"]
    chosen = session.select(budget=3)
    assert "ticket_id" not in chosen.held
    steps = {s.tool: s for s in chosen.chain}
    assert ("ticket_id", "find_ticket", "ticket_id") in steps["delete_ticket"].reads or \
        any(producer == "find_ticket" for _, producer, _ in steps["delete_ticket"].reads)
    assert "find_ticket" in chosen.names
    state = session.state()
    assert "ticket_id" in state["earlier"] and state["turn_start"] == 2
    # this turn's lookup holds the new value again
    session.observe("find_ticket", {"title": "Checkout fails"}, '{"ticket_id": "T-9"}')
    assert "ticket_id" in session.held and session.turn_called == ["find_ticket"]


def test_turns_in_splits_a_provider_history_at_the_last_user_message() -> None:
    from hyperplan.integrations._catalog import turns_in

    def call(cid: str, name: str) -> list[dict[str, Any]]:
        return [{"role": "assistant", "tool_calls": [
                    {"id": cid, "type": "function",
                     "function": {"name": name, "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": cid, "content": '{"ok": true}'}]

    history = [{"role": "user", "content": "first"}, *call("a", "find_ticket"),
               {"role": "assistant", "content": "done"}, {"role": "user", "content": "second"},
               *call("b", "delete_ticket")]
    now, before = turns_in(history)
    assert [c.tool for c in now] == ["delete_ticket"]
    assert [c.tool for c in before] == ["find_ticket"]
    assert turns_in([{"role": "user", "content": "only"}]) == ([], [])


@pytest.mark.parametrize(("follow_up", "fresh"), [
    ("Now close it.", False),
    ("Close T-17 as well.", False),  # the id the lookup returned: a reference, not new
    ("Now look up the other ticket.", False),
    ("Delete the ticket titled 'Checkout fails'.", True),
    ("Delete ticket T-18 too.", True)])
def test_a_follow_up_that_names_no_new_value_keeps_the_held_id(follow_up: str,
                                                                fresh: bool) -> None:
    """A new turn that refers back ("now close it", the id already returned) keeps the values
    held grounding: nothing is proposed to produce the ticket id; one that names a value not
    seen yet (another title, another id) re-offers the producer. Either way the turn's calls
    start afresh, and a request that asks for the lookup gets it."""
    selector = _tickets()
    session = selector.session("Close the ticket titled 'Login broken'.")
    session.observe("find_ticket", {"title": "Login broken"}, '{"ticket_id": "T-17"}')
    session.observe("close_ticket", {"ticket_id": "T-17"}, {"ok": True})
    assert session.new_turn(follow_up) is fresh
    assert session.turn_called == []
    chosen = session.select(budget=3)
    producers = [t.name for t in chosen.tools if "ticket_id for" in t.why()]
    if fresh:
        assert "ticket_id" not in chosen.held and "ticket_id" in session.earlier
        assert producers == ["find_ticket"], chosen.tools
    else:
        assert "ticket_id" in chosen.held and not producers, chosen.tools
    if "look up" in follow_up:
        assert "find_ticket" in chosen.names


def test_request_values_are_quoted_spans_and_words_with_digits() -> None:
    from hyperplan.select.session import request_values, scalars

    assert request_values("Delete the ticket called 'Kickoff notes' as well.") == \
        {"kickoff notes"}
    assert request_values("Also add a comment saying Fixed. to that ticket.") == set()
    assert request_values("Don't close T-17, it's the customers' order 42.") == {"t-17", "42"}
    assert request_values('Email \u201cBob\u201d at 10:30 on "2026-01-02".') == \
        {"bob", "10:30", "2026-01-02"}
    assert scalars({"a": ["X", 3, True, None, {"b": " Y  z "}]}) == {"x", "3", "y z"}


def test_the_gateway_learns_a_new_turn_from_find_tools(tmp_path: Path) -> None:
    """The gateway (narrow mode, in process): a find_tools request other than the last one
    starts a new turn; naming another record re-offers the lookup and drops the values held
    (the known ones too), repeating a request changes nothing."""
    from hyperplan.integrations.mcp_gateway import GatewayConfig, Mode, build_gateway

    gateway = build_gateway([f"mcp-server:{sys.executable} {WORKSPACE_SERVER}"],
                            GatewayConfig(mode=Mode.NARROW, budget=6, cache_dir=None,
                                          embedder="hashing"))
    try:
        gateway.service.start()
        assert gateway.service.wait(120) and gateway.service.ready
        conv = gateway.table.open("t")
        assert conv is not None
        ask = "Set the status of the support ticket titled 'Quarterly review' to closed."
        gateway.call(conv, "find_tools", {"request": ask, "known": ["order_id"]})
        assert not gateway.call(conv, "find_ticket", {"title": "Quarterly review"}).is_error
        gateway.refresh(conv)
        again = gateway.call(conv, "find_tools", {"request": ask})  # the same request
        state = conv.state()
        assert "ticket_id" in state["held"] and state["turn_start"] == 0, state
        assert again.structured is not None
        assert not [t for t in again.structured["tools"] if "ticket_id for" in t["why"]]
        follow = gateway.call(conv, "find_tools",
                              {"request": "Now delete the support ticket called 'Kickoff notes'."})
        state = conv.state()
        assert state["turn_start"] == 1 and "ticket_id" in state["earlier"], state
        assert "ticket_id" not in state["held"] and "order_id" not in state["held"]
        assert follow.structured is not None and "find_ticket" in follow.structured["listed"]
        assert [t["name"] for t in follow.structured["tools"]
                if "ticket_id for" in t["why"]] == ["find_ticket"]
    finally:
        gateway.upstream.close()


def test_turns_seen_before_the_graph_is_ready_are_replayed_in_order() -> None:
    """The gateway's conversation before its selector is ready keeps the calls and the new
    requests; once ready, the session replays them: the second request, naming another
    ticket, is a new turn and the id held moved to the earlier turns."""
    from hyperplan.integrations.mcp_gateway.selection import Conversation, SelectionService

    catalog = _ticket_catalog()
    service = SelectionService(catalog, embedder="hashing", cache_dir=None)
    conv = Conversation(service)
    assert conv.find("Close the ticket titled 'Login broken'.").method == "bm25"
    conv.observe("find_ticket", {"title": "Login broken"}, {"ticket_id": "T-17"}, True)
    conv.find("Close the ticket titled 'Login broken'.")  # the same request: no new turn
    conv.find("Now delete the ticket titled 'Checkout fails'.")
    service.start()  # the selector arrives late
    assert service.wait(60) and service.ready, service.status()
    state = conv.state()
    assert state["turn_start"] == 1 and "ticket_id" in state["earlier"], state
    assert state["request"] == "Now delete the ticket titled 'Checkout fails'."
    assert "find_ticket" in conv.find("Now delete the ticket titled 'Checkout fails'.").names
