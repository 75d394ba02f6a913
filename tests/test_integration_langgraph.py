"""The LangGraph adapter in LangGraph's real loops: ``langgraph.prebuilt.create_react_agent``
(langgraph 1.x) with a dynamic model binding only the selected tools, and ``langgraph-bigtool``'s
``create_agent`` with hyperplan's ``retrieve_tools``. The chat model is a small
``BaseChatModel`` that records the tools bound to each call and answers with scripted calls.

langgraph-bigtool 0.0.3 (its latest release) calls ``ToolNode.inject_tool_args``, which
langgraph-prebuilt 1.0 made private, so it runs only on langgraph 0.6: its test runs this file as
a script with the 0.6 packages put first on the path (``$HYPERPLAN_BIGTOOL_PATH``, default
``/tmp/bigtool-langgraph``, filled by ``.ci/run`` with ``pip install --target``).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

from test_integration_catalog import REQUEST, WORKSPACE, require, workspace_functions

require("langgraph", "langgraph")
BIGTOOL_PATH = os.environ.get("HYPERPLAN_BIGTOOL_PATH", "/tmp/bigtool-langgraph")

from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.tools import StructuredTool  # noqa: E402
from langchain_core.utils.function_calling import convert_to_openai_tool  # noqa: E402
from pydantic import Field  # noqa: E402

from hyperplan.integrations.langgraph import (  # noqa: E402
    ToolNarrower,
    retrieve_tools_coroutine,
    retrieve_tools_function,
)


class RecordingChat(BaseChatModel):
    """Answers with the scripted messages in turn; ``sent`` holds the tool names bound to
    each call (what a provider would have been sent)."""

    script: list[AIMessage]
    sent: list[list[str]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "recording"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        self.sent.append([t["function"]["name"] for t in kwargs.get("tools", [])])
        message = self.script[min(len(self.sent), len(self.script)) - 1]
        return ChatResult(generations=[ChatGeneration(message=message)])


def _call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


def workspace_tools(calls: list[str]) -> list[StructuredTool]:
    def tool_for(fn: dict[str, Any]) -> StructuredTool:
        def run(**kwargs: Any) -> str:
            calls.append(fn["name"])
            if fn["name"] == "find_ticket":
                return json.dumps({"ticket_id": "T-17"})
            return json.dumps({"ok": True})
        return StructuredTool.from_function(func=run, name=fn["name"],
                                            description=fn["description"],
                                            args_schema=fn["parameters"])
    return [tool_for(fn) for fn in workspace_functions()]


FIND = _call("find_ticket", {"title": "Login page broken"}, "c1")
UPDATE = _call("update_ticket_status", {"ticket_id": "T-17", "status": "resolved"}, "c2")
DONE = AIMessage(content="T-17 is resolved.")


def run_bigtool(cache: Path) -> dict[str, Any]:
    """bigtool's agent with hyperplan's retrieval, sync and async (under langgraph 0.6)."""
    import importlib.metadata

    from langgraph.store.memory import InMemoryStore
    from langgraph_bigtool import create_agent

    calls: list[str] = []
    registry = {f"id-{t.name}": t for t in workspace_tools(calls)}
    out: dict[str, Any] = {"langgraph": importlib.metadata.version("langgraph"),
                           "calls": calls}
    for mode in ("sync", "async"):
        model = RecordingChat(script=[
            _call("retrieve_tools", {"query": "set the status of a ticket found by its title"},
                  "r1"), FIND, UPDATE, DONE])
        builder = create_agent(
            model, registry,
            retrieve_tools_function=retrieve_tools_function(registry, budget=4, cache_dir=cache),
            retrieve_tools_coroutine=retrieve_tools_coroutine(registry, budget=4,
                                                              cache_dir=cache))
        agent = builder.compile(store=InMemoryStore())
        state = {"messages": [HumanMessage(REQUEST)]}
        result = agent.invoke(state) if mode == "sync" else asyncio.run(agent.ainvoke(state))
        out[mode] = {"sent": model.sent, "final": result["messages"][-1].content,
                     "selected": result["selected_tool_ids"]}
    return out


def test_bigtool_agent_retrieves_the_target_with_its_producer(tmp_path: Path) -> None:
    import pytest

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [BIGTOOL_PATH, *filter(None, [os.environ.get("PYTHONPATH")])])}
    probe = subprocess.run([sys.executable, "-c", "import langgraph_bigtool, langgraph.prebuilt"
                            ".tool_node as t; assert hasattr(t.ToolNode, 'inject_tool_args')"],
                           env=env, capture_output=True, timeout=120)
    if probe.returncode != 0:
        message = (f"langgraph-bigtool 0.0.3 with langgraph 0.6 is not at {BIGTOOL_PATH} "
                   "(see .ci/run)")
        if os.environ.get("CI") == "true" and \
                os.environ.get("HYPERPLAN_INTEGRATIONS_REQUIRED") == "1":
            pytest.fail(message)
        pytest.skip(message)
    out = tmp_path / "bigtool.json"
    proc = subprocess.run([sys.executable, __file__, str(tmp_path / "cache"), str(out)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = json.loads(out.read_text())
    assert run["langgraph"].startswith("0.6")
    assert run["calls"] == ["find_ticket", "update_ticket_status"] * 2
    for mode in ("sync", "async"):
        got = run[mode]
        assert got["final"] == "T-17 is resolved."
        assert got["sent"][0] == ["retrieve_tools"]  # bigtool starts with retrieval only
        bound = set(got["sent"][1]) - {"retrieve_tools"}
        assert {"find_ticket", "update_ticket_status"} <= bound, got
        assert len(bound) <= 4
        assert sorted(got["selected"]) == sorted(f"id-{name}" for name in bound)
    assert sorted(run["sync"]["selected"]) == sorted(run["async"]["selected"])


def test_react_agent_binds_only_the_selected_tools_per_turn(tmp_path: Path) -> None:
    from langgraph.prebuilt import create_react_agent

    calls: list[str] = []
    tools = workspace_tools(calls)
    narrower = ToolNarrower(tools, budget=6, cache_dir=tmp_path)
    model = RecordingChat(script=[FIND, UPDATE, DONE])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # moved to langchain.agents in 1.x
        agent = create_react_agent(narrower.dynamic_model(model), tools)
    out = agent.invoke({"messages": [HumanMessage(REQUEST)]})
    assert out["messages"][-1].content == "T-17 is resolved."
    assert calls == ["find_ticket", "update_ticket_status"]
    assert len(model.sent) == 3
    first = set(model.sent[0])
    assert {"find_ticket", "update_ticket_status"} <= first
    assert len(first) <= 6 < len(WORKSPACE)
    assert "update_ticket_status" in model.sent[1]
    # the second call's selection saw find_ticket's result: the ticket id is held
    assert narrower.last is not None
    assert "ticket_id" in narrower.last.selection.held
    assert narrower.host.last is narrower.last
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        assert narrower.narrower is narrower.host  # the host's deprecated name
    assert [w.category for w in warned] == [DeprecationWarning]


TURN_TWO = "Now delete the support ticket titled 'Checkout fails'."
FIND_2 = _call("find_ticket", {"title": "Checkout fails"}, "c3")
DELETE = _call("delete_ticket", {"ticket_id": "T-17"}, "c4")
DONE_2 = AIMessage(content="Deleted.")


def _two_turns(agent: Any, model: RecordingChat, narrower: ToolNarrower,
               calls: list[str]) -> None:
    """Turn 1 resolves a ticket by title; turn 2 asks about another one by title: the new
    request re-conditions the state, so find_ticket is offered again (issue 38, item 6)."""
    out = agent.invoke({"messages": [HumanMessage(REQUEST)]})
    assert narrower.last is not None and "ticket_id" in narrower.last.selection.held
    out = agent.invoke({"messages": [*out["messages"], HumanMessage(TURN_TWO)]})
    assert out["messages"][-1].content == "Deleted."
    assert calls == ["find_ticket", "update_ticket_status", "find_ticket", "delete_ticket"]
    assert len(model.sent) == 6
    assert {"find_ticket", "delete_ticket"} <= set(model.sent[3])
    assert len(model.sent[3]) <= 6 < len(WORKSPACE)
    assert "delete_ticket" in model.sent[4]
    assert narrower.last is not None and "ticket_id" in narrower.last.selection.held


def test_react_agent_two_turns(tmp_path: Path) -> None:
    from langgraph.prebuilt import create_react_agent

    calls: list[str] = []
    tools = workspace_tools(calls)
    narrower = ToolNarrower(tools, budget=6, cache_dir=tmp_path)
    model = RecordingChat(script=[FIND, UPDATE, DONE, FIND_2, DELETE, DONE_2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        agent = create_react_agent(narrower.dynamic_model(model), tools)
    _two_turns(agent, model, narrower, calls)


def _langchain() -> Any:
    """``langchain.agents`` (LangChain 1.x): skipped when absent, failed under CI."""
    return require("langchain.agents", "langgraph")


def test_create_agent_middleware_two_turns(tmp_path: Path) -> None:
    """LangChain 1.x ``create_agent`` with the ``wrap_model_call`` middleware (item 9)."""
    agents = _langchain()
    calls: list[str] = []
    tools = workspace_tools(calls)
    narrower = ToolNarrower(tools, budget=6, cache_dir=tmp_path)
    model = RecordingChat(script=[FIND, UPDATE, DONE, FIND_2, DELETE, DONE_2])
    agent = agents.create_agent(model, tools, middleware=[narrower.middleware()])
    _two_turns(agent, model, narrower, calls)


def test_create_agent_middleware_async(tmp_path: Path) -> None:
    agents = _langchain()
    calls: list[str] = []
    tools = workspace_tools(calls)
    narrower = ToolNarrower(tools, budget=6, cache_dir=tmp_path)
    model = RecordingChat(script=[FIND, UPDATE, DONE])
    agent = agents.create_agent(model, tools, middleware=[narrower.middleware()])
    out = asyncio.run(agent.ainvoke({"messages": [HumanMessage(REQUEST)]}))
    assert out["messages"][-1].content == "T-17 is resolved."
    assert calls == ["find_ticket", "update_ticket_status"]
    assert {"find_ticket", "update_ticket_status"} <= set(model.sent[0])
    assert len(model.sent[0]) <= 6


def test_return_annotations_give_output_schemas(tmp_path: Path) -> None:
    from langchain_core.tools import tool

    from hyperplan.integrations.langgraph import tool_def

    @tool
    def lookup_ticket(title: str) -> dict[str, str]:
        """Look a ticket up by its title."""
        return {"ticket_id": title}

    found = tool_def(lookup_ticket)
    assert found.name == "lookup_ticket" and found.returns is not None
    assert found.parameters is not None and "title" in found.parameters["properties"]


if __name__ == "__main__":  # with langgraph 0.6 first on the path: python this.py CACHE OUT
    Path(sys.argv[2]).write_text(json.dumps(run_bigtool(Path(sys.argv[1]))))
