"""hyperplan behind the hosts' client-side tool-search hooks (issue 38, item 12), each driven
through the host's own SDK against a local stub server that records what the SDK sends and
answers with canned responses (no network): Anthropic's ``tool_reference`` blocks, OpenAI
Responses' client-executed ``tool_search``, pydantic-ai's ``ToolSearch`` capability."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from hyperplan.integrations._catalog import Call
from hyperplan.integrations.tool_search import ToolSearch
from test_integration_catalog import REQUEST, WORKSPACE, require, workspace_functions

UNRELATED = "weather forecast for Paris tomorrow"


class Recorder:
    """A local HTTP server: records each POST body and answers with the next canned body."""

    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.answers = list(answers)
        self.requests: list[dict[str, Any]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                size = int(self.headers.get("Content-Length", 0))
                recorder.requests.append({"path": self.path,
                                          "body": json.loads(self.rfile.read(size) or b"{}")})
                step = min(len(recorder.requests), len(recorder.answers)) - 1
                body = json.dumps(recorder.answers[step]).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def __enter__(self) -> Recorder:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def search(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ToolSearch]:
    cache = tmp_path_factory.mktemp("cache")
    yield ToolSearch(workspace_functions(), limit=5, cache_dir=str(cache))


def test_search_finds_the_target_and_its_producer(search: ToolSearch) -> None:
    found = search.search(REQUEST)
    assert {"update_ticket_status", "find_ticket"} <= set(found.names), found
    assert len(found.names) <= 5 and set(found.names) <= WORKSPACE
    assert found.selection is not None
    # DOE's chain: find_ticket supplies the ticket_id update_ticket_status needs
    reads = {s.tool: s.reads for s in found.selection.chain}
    assert ("ticket_id", "find_ticket", "result") in reads["update_ticket_status"], reads


def test_search_conditions_on_the_values_held(search: ToolSearch) -> None:
    """Once ``find_ticket`` returned the id, no producer of ``ticket_id`` is offered for it."""
    held = [Call("find_ticket", {"title": "Login page broken"}, {"ticket_id": "T-17"})]
    found = search.search(REQUEST, calls=held)
    assert "update_ticket_status" in found.names
    assert found.selection is not None and "ticket_id" in found.selection.held
    assert not [t for t in found.selection.tools if "ticket_id for" in t.why()], found
    assert not [s for s in found.selection.chain if s.tool == "update_ticket_status"
                and any(r[0] == "ticket_id" for r in s.reads)], found.selection.chain


@pytest.mark.parametrize("query", [UNRELATED, "play a song by Queen", "", "   "])
def test_nothing_relevant_is_an_explicit_no_match(search: ToolSearch, query: str) -> None:
    found = search.search(query)
    assert found.names == () and not found.matched
    assert found.message.startswith("No tool matches") and "do not search again" in found.message


def test_anthropic_tool_reference_blocks_through_the_sdk(search: ToolSearch) -> None:
    """The Anthropic SDK sends the deferred tools and the search tool; the model's ``tool_use``
    of the search is answered with ``tool_reference`` blocks (producers included), or the
    no-match text."""
    anthropic = pytest.importorskip("anthropic")  # not in CI's environment (see report)

    def message(n: int, content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
        return {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": "stub",
                "content": content, "stop_reason": stop, "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1}}

    answers = [
        message(1, [{"type": "tool_use", "id": "tu_1", "name": "tool_search",
                     "input": {"query": "set a support ticket's status by its title"}}],
                "tool_use"),
        message(2, [{"type": "tool_use", "id": "tu_2", "name": "tool_search",
                     "input": {"query": UNRELATED}}], "tool_use"),
        message(3, [{"type": "text", "text": "done"}], "end_turn"),
    ]
    with Recorder(answers) as stub:
        client = anthropic.Anthropic(base_url=stub.url, api_key="stub-key", max_retries=0)
        messages: list[Any] = [{"role": "user", "content": REQUEST}]
        tools = search.anthropic_tools()
        for _ in range(3):
            reply = client.messages.create(model="stub", max_tokens=64, tools=tools,
                                           messages=messages)
            uses = [b for b in reply.content if isinstance(b, anthropic.types.ToolUseBlock)]
            if not uses:
                break
            messages += [{"role": "assistant", "content": [u.model_dump() for u in uses]},
                         {"role": "user", "content": [search.anthropic_result(u) for u in uses]}]
    sent = [r["body"] for r in stub.requests]
    assert len(sent) == 3 and all(r["path"] == "/v1/messages" for r in stub.requests)
    first_tools = {t["name"]: t for t in sent[0]["tools"]}
    assert first_tools["tool_search"]["input_schema"]["required"] == ["query"]
    assert all(t.get("defer_loading") for n, t in first_tools.items() if n != "tool_search")
    assert set(first_tools) == WORKSPACE | {"tool_search"}
    result = sent[1]["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "tu_1"
    assert all(b["type"] == "tool_reference" for b in result["content"])
    referenced = {b["tool_name"] for b in result["content"]}
    assert {"update_ticket_status", "find_ticket"} <= referenced <= WORKSPACE
    empty = sent[2]["messages"][-1]["content"][0]
    assert empty["tool_use_id"] == "tu_2"
    assert [b["type"] for b in empty["content"]] == ["text"]
    assert empty["content"][0]["text"].startswith("No tool matches")


def _response(n: int, output: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": f"resp_{n}", "object": "response", "created_at": 0, "model": "stub",
            "status": "completed", "output": output, "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": [], "usage": None}


def test_openai_client_executed_tool_search_through_the_sdk(search: ToolSearch) -> None:
    """The OpenAI SDK (Responses API) sends ``tool_search`` with ``execution: "client"`` and the
    deferred functions; each ``tool_search_call`` is answered with a ``tool_search_output``
    carrying the found functions, or none and a developer message saying nothing matches."""
    from openai import OpenAI
    from openai.types.responses import ResponseToolSearchCall

    def call(n: int, query: str) -> dict[str, Any]:
        return {"type": "tool_search_call", "id": f"ts_{n}", "call_id": f"call_{n}",
                "execution": "client", "status": "completed", "arguments": {"query": query}}

    answers = [_response(1, [call(1, "change the status of a support ticket")]),
               _response(2, [call(2, UNRELATED)]),
               _response(3, [{"type": "message", "id": "m", "role": "assistant",
                              "status": "completed", "content": [
                                  {"type": "output_text", "text": "done", "annotations": []}]}])]
    with Recorder(answers) as stub:
        client = OpenAI(base_url=stub.url + "/v1", api_key="stub-key", max_retries=0)
        items: list[Any] = [{"role": "user", "content": REQUEST}]
        searches: list[ResponseToolSearchCall] = []
        for _ in range(3):
            reply = client.responses.create(model="stub", input=items,
                                            tools=search.openai_tools())  # type: ignore[arg-type]
            calls = [o for o in reply.output if isinstance(o, ResponseToolSearchCall)]
            if not calls:
                break
            searches += calls
            for c in calls:
                items += [c.model_dump(exclude_none=True), *search.openai_items(c)]
    assert len(searches) == 2 and searches[0].execution == "client"
    sent = [r["body"] for r in stub.requests]
    assert len(sent) == 3 and all(r["path"] == "/v1/responses" for r in stub.requests)
    declared = sent[0]["tools"]
    assert declared[0] == {**search.openai_tool(), "type": "tool_search"}
    assert declared[0]["execution"] == "client"
    assert {t["name"] for t in declared[1:]} == WORKSPACE
    assert all(t["defer_loading"] for t in declared[1:])
    output = [i for i in sent[1]["input"] if i.get("type") == "tool_search_output"]
    assert len(output) == 1 and output[0]["call_id"] == "call_1"
    assert output[0]["execution"] == "client"
    loaded = {t["name"] for t in output[0]["tools"]}
    assert {"update_ticket_status", "find_ticket"} <= loaded <= WORKSPACE
    assert all(t["type"] == "function" and "parameters" in t for t in output[0]["tools"])
    last = sent[2]["input"]
    none = [i for i in last if i.get("type") == "tool_search_output"][-1]
    assert none["call_id"] == "call_2" and none["tools"] == []
    assert last[-1]["role"] == "developer" and last[-1]["content"].startswith("No tool matches")


def test_pydantic_ai_tool_search_strategy_in_its_agent_loop(tmp_path: Any) -> None:
    """pydantic-ai's own agent loop (an OpenAI chat model on the recording stub): its
    ``search_tools`` runs hyperplan; the next request carries the tools found, the producer of
    the target's id included, and a search that matches nothing gets pydantic-ai's no-match
    answer."""
    pydantic_ai = require("pydantic_ai", "pydantic-ai")
    from pydantic_ai.capabilities import ToolSearch as PydanticToolSearch
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from hyperplan.integrations.pydantic_search import hyperplan_strategy

    def tool_call(n: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
        message = {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{n}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}]}
        return {"id": f"c{n}", "object": "chat.completion", "created": 0, "model": "stub",
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}

    done = {"id": "c9", "object": "chat.completion", "created": 0, "model": "stub",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "done"}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
    answers = [tool_call(1, "search_tools", {"queries": ["update a support ticket status"]}),
               tool_call(2, "search_tools", {"queries": [UNRELATED]}), done]

    tools = [pydantic_ai.Tool.from_schema(lambda **kw: "{}", name=f["name"],
                                          description=f["description"],
                                          json_schema=f["parameters"])
             for f in workspace_functions()]
    for tool in tools:
        tool.defer_loading = True
    strategy = hyperplan_strategy(limit=5, cache_dir=str(tmp_path))
    with Recorder(answers) as stub:
        provider = OpenAIProvider(base_url=stub.url + "/v1", api_key="stub-key")
        agent = pydantic_ai.Agent(OpenAIChatModel("stub", provider=provider), tools=tools,
                                  capabilities=[PydanticToolSearch(strategy=strategy)])
        result = agent.run_sync(REQUEST)
    assert result.output == "done"
    sent = [[t["function"]["name"] for t in r["body"].get("tools", [])] for r in stub.requests]
    assert len(sent) == 3
    assert "search_tools" in sent[0] and not set(sent[0]) & WORKSPACE  # all deferred
    assert {"update_ticket_status", "find_ticket"} <= set(sent[1]), sent[1]
    assert len(set(sent[1]) & WORKSPACE) <= 5
    returned = [m for m in stub.requests[2]["body"]["messages"] if m["role"] == "tool"]
    assert "no" in returned[-1]["content"].lower() and "match" in returned[-1]["content"].lower()
    assert strategy.last is not None and not strategy.last.matched


def test_readme_tool_search_examples_run(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/adapters.md's *hyperplan as the host's tool search* examples, run with the names
    they assume (the workspace tools, a model's ``tool_use`` and ``tool_search_call``)."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "adapters.md").read_text("utf-8")
    section = page[page.index("## hyperplan as the host's tool search"):]
    end = section.find("\n## ", 1)  # the next section, if one follows
    section = section if end < 0 else section[:end]
    core, pydantic_block = (b.split("```")[0] for b in section.split("```python")[1:3])
    monkeypatch.setenv("HYPERPLAN_CACHE_DIR", str(tmp_path))
    names: dict[str, Any] = {
        "tools": workspace_functions(), "input_items": [],
        "tool_use": {"type": "tool_use", "id": "tu_1", "name": "tool_search",
                     "input": {"query": REQUEST}},
        "tool_search_call": {"type": "tool_search_call", "call_id": "c_1",
                             "execution": "client", "arguments": {"query": UNRELATED}}}
    exec(compile(core, "docs/adapters.md", "exec"), names)
    referenced = {b["tool_name"] for b in names["result_block"]["content"]}
    assert {"update_ticket_status", "find_ticket"} <= referenced
    assert [i["type"] for i in names["input_items"]] == ["tool_search_output", "message"]
    pydantic_ai = require("pydantic_ai", "pydantic-ai")
    from pydantic_ai.models.test import TestModel

    deferred = [pydantic_ai.Tool.from_schema(lambda **kw: "{}", name=f["name"],
                                             description=f["description"],
                                             json_schema=f["parameters"])
                for f in workspace_functions()[:3]]
    run: dict[str, Any] = {"Agent": pydantic_ai.Agent, "model": TestModel(),
                           "deferred_tools": deferred}
    exec(compile(pydantic_block, "docs/adapters.md", "exec"), run)
    assert isinstance(run["agent"], pydantic_ai.Agent)
