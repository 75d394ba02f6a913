"""Tests for hyperplan.llm: scripted double, budgets, accounting, redaction and the OpenAI client
against a real local HTTP server (stdlib http.server on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from hyperplan.llm import (
    LLM,
    Accounting,
    Budget,
    BudgetExceeded,
    ContextLengthError,
    LLMError,
    Message,
    OfferedTool,
    OpenAICompatibleLLM,
    ScriptedLLM,
    ScriptedRule,
    StructuredOutputError,
    ToolCall,
    Usage,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"steps": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
    "required": ["steps"],
    "additionalProperties": False,
}
SECRET = "sk-test-SECRET-0123456789abcdef"


# --------------------------------------------------------------------------------------------
# A small OpenAI-compatible server
# --------------------------------------------------------------------------------------------
def completion_body(content: str | None = "ok", tool_calls: list[Any] | None = None) -> Any:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "fake",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


@dataclass
class FakeServer:
    """Replies are popped from `queue` as (status, body, headers); empty queue → 200 "ok"."""

    base_url: str = ""
    queue: list[tuple[int, Any, dict[str, str]]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    reject_json_schema: bool = False
    reject_json_object: bool = False

    def push(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self.queue.append((status, body, headers or {}))

    def reply(
        self, body: dict[str, Any], headers: dict[str, str]
    ) -> tuple[int, Any, dict[str, str]]:
        fmt = (body.get("response_format") or {}).get("type")
        if fmt == "json_schema" and self.reject_json_schema:
            # What the llama.cpp server (llama-cpp-python) answers.
            detail = "Input should be 'text' or 'json_object' [type=literal_error]"
            return 500, {"error": {"message": detail, "type": "internal_server_error"}}, {}
        if fmt == "json_object" and self.reject_json_object:
            return 400, {"error": {"message": "response_format is not supported"}}, {}
        if self.queue:
            status, payload, extra = self.queue.pop(0)
            if payload == "ECHO_AUTH":
                payload = {"error": {"message": f"bad key {headers.get('authorization')}"}}
            return status, payload, extra
        return 200, completion_body(), {}


@pytest.fixture
def server() -> Iterator[FakeServer]:
    state = FakeServer()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            headers = {k.lower(): v for k, v in self.headers.items()}
            state.requests.append(body)
            state.headers.append(headers)
            status, payload, extra = state.reply(body, headers)
            data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for key, value in extra.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.base_url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def make_llm(server: FakeServer, **kwargs: Any) -> OpenAICompatibleLLM:
    kwargs.setdefault("model", f"fake-{uuid.uuid4().hex[:8]}")  # fresh structured-mode cache
    kwargs.setdefault("backoff_s", 0.0)
    return OpenAICompatibleLLM(base_url=server.base_url, api_key=SECRET, timeout=5, **kwargs)


USER = [Message.system("You are the planner."), Message.user("plan a trip")]


# --------------------------------------------------------------------------------------------
# OpenAI-compatible client against the real local server
# --------------------------------------------------------------------------------------------
def test_plain_chat_usage_and_accounting(server: FakeServer) -> None:
    acc = Accounting()
    llm = make_llm(server, accounting=acc)
    assert isinstance(llm, LLM)
    response = llm.complete(USER, component="planner")
    assert response.text == "ok"
    assert response.usage == Usage(10, 5)
    assert response.parsed is None and response.tool_calls == ()
    assert response.latency_s > 0
    assert server.requests[0]["messages"][1] == {"role": "user", "content": "plan a trip"}
    assert server.headers[0]["authorization"] == f"Bearer {SECRET}"
    stats = acc.by_component()["planner"]
    assert (stats.calls, stats.errors, stats.prompt_tokens, stats.completion_tokens) == (
        1,
        0,
        10,
        5,
    )
    assert stats.latency_s > 0


def test_retry_on_429_then_success(server: FakeServer) -> None:
    server.push(429, {"error": {"message": "slow down"}}, {"retry-after": "0"})
    acc = Accounting()
    response = make_llm(server, accounting=acc).complete(USER, component="c")
    assert response.text == "ok"
    assert len(server.requests) == 2
    totals = acc.totals()
    assert (totals.calls, totals.errors) == (2, 1)


def test_retry_backoff_uses_sleep_and_gives_up(server: FakeServer) -> None:
    for _ in range(5):
        server.push(503, {"error": {"message": "overloaded"}})
    slept: list[float] = []
    llm = make_llm(server, max_retries=2, backoff_s=0.25, sleep=slept.append)
    with pytest.raises(LLMError) as info:
        llm.complete(USER)
    assert info.value.status_code == 503
    assert len(server.requests) == 3
    assert slept == [0.25, 0.5]


def test_no_retry_on_400(server: FakeServer) -> None:
    server.push(400, {"error": {"message": "context too long"}})
    with pytest.raises(LLMError) as info:
        make_llm(server).complete(USER)
    assert info.value.status_code == 400
    assert len(server.requests) == 1


def _too_long(messages: int, completion: int, limit: int = 4096) -> dict[str, Any]:
    """What llama-cpp-python's server (and OpenAI, vLLM) answer for a request too long."""
    text = (f"This model's maximum context length is {limit} tokens. However, you requested "
            f"{messages + completion} tokens ({messages} in the messages, {completion} in the "
            "completion). Please reduce the length of the messages or completion.")
    return {"error": {"message": text, "type": "invalid_request_error", "param": "messages",
                      "code": "context_length_exceeded"}}


def test_messages_longer_than_the_context_window_raise_context_length_error(
        server: FakeServer) -> None:
    server.push(400, _too_long(4136, 1024))
    with pytest.raises(ContextLengthError) as info:
        make_llm(server, max_tokens=1024).complete(USER)
    assert (info.value.limit, info.value.prompt_tokens, info.value.completion_tokens) == (
        4096, 4136, 1024)
    assert info.value.status_code == 400 and "window 4096" in str(info.value)
    assert len(server.requests) == 1  # not retried: the same request would fail again


def test_a_completion_cap_that_does_not_fit_is_lowered_once(server: FakeServer) -> None:
    server.push(400, _too_long(3600, 1000))
    server.push(200, completion_body('{"steps": ["a"]}'))
    llm = make_llm(server, max_tokens=1000)
    assert llm.complete(USER, schema=SCHEMA).parsed == {"steps": ["a"]}
    assert [r.get("max_tokens") for r in server.requests] == [1000, 496]
    # the next exchange starts from the configured cap again
    llm.complete(USER)
    assert server.requests[-1]["max_tokens"] == 1000


def test_too_little_room_for_a_completion_is_not_retried(server: FakeServer) -> None:
    server.push(400, _too_long(3900, 1000))  # 196 tokens left: below MIN_COMPLETION_TOKENS
    with pytest.raises(ContextLengthError):
        make_llm(server, max_tokens=1000).complete(USER)
    assert len(server.requests) == 1


def test_a_reask_that_outgrows_the_window_is_a_structured_output_error(
        server: FakeServer) -> None:
    server.push(200, completion_body("not json at all"))
    server.push(400, _too_long(4300, 1024))  # the re-ask carries the bad reply: too long now
    with pytest.raises(StructuredOutputError) as info:
        make_llm(server, max_tokens=1024).complete(USER, schema=SCHEMA)
    assert not isinstance(info.value, ContextLengthError)
    assert "re-ask does not fit the context window" in str(info.value)
    assert info.value.last_text == "not json at all"
    assert len(server.requests) == 2


def test_llama_server_context_error_is_understood(server: FakeServer) -> None:
    body = {"error": {"code": 400, "type": "exceed_context_size_error",
                      "message": "request (4476 tokens) exceeds the available context size "
                                 "(4096 tokens)", "n_prompt_tokens": 4476, "n_ctx": 4096}}
    server.push(400, body)
    with pytest.raises(ContextLengthError) as info:
        make_llm(server).complete(USER)
    assert (info.value.limit, info.value.prompt_tokens) == (4096, 4476)


def test_async_complete_lowers_the_completion_cap_too(server: FakeServer) -> None:
    server.push(400, _too_long(3000, 2000))
    llm = make_llm(server, max_tokens=2000)
    response = asyncio.run(llm.acomplete(USER))
    assert response.text == "ok"
    assert [r.get("max_tokens") for r in server.requests] == [2000, 1096]


def test_json_schema_mode_when_supported(server: FakeServer) -> None:
    server.push(200, completion_body('{"steps": ["a", "b"]}'))
    llm = make_llm(server)
    response = llm.complete(USER, schema=SCHEMA)
    assert response.parsed == {"steps": ["a", "b"]}
    fmt = server.requests[0]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == SCHEMA
    assert llm.structured_mode() == "json_schema"


def test_fallback_to_json_object_on_500_and_cache(server: FakeServer) -> None:
    server.reject_json_schema = True
    server.push(200, completion_body('{"steps": ["x"]}'))
    llm = make_llm(server)
    response = llm.complete(USER, schema=SCHEMA)
    assert response.parsed == {"steps": ["x"]}
    assert [r["response_format"]["type"] for r in server.requests] == ["json_schema", "json_object"]
    assert server.requests[1]["response_format"]["schema"] == SCHEMA
    assert llm.structured_mode() == "json_object"
    # A second client for the same endpoint and model starts directly in json_object mode.
    other = OpenAICompatibleLLM(llm.model, base_url=server.base_url, api_key=SECRET)
    server.push(200, completion_body('{"steps": ["y"]}'))
    assert other.complete(USER, schema=SCHEMA).parsed == {"steps": ["y"]}
    assert server.requests[2]["response_format"]["type"] == "json_object"


def test_fallback_to_prompt_mode(server: FakeServer) -> None:
    server.reject_json_schema = True
    server.reject_json_object = True
    server.push(200, completion_body('Sure! ```json\n{"steps": ["p"]}\n```'))
    llm = make_llm(server)
    assert llm.complete(USER, schema=SCHEMA).parsed == {"steps": ["p"]}
    last = server.requests[-1]
    assert "response_format" not in last
    assert "JSON Schema" in last["messages"][0]["content"]
    assert last["messages"][0]["content"].startswith("You are the planner.")
    assert llm.structured_mode() == "prompt"


def test_reask_with_validation_error(server: FakeServer) -> None:
    server.push(200, completion_body("this is not json"))
    server.push(200, completion_body('{"steps": []}'))
    server.push(200, completion_body('{"steps": ["fixed"]}'))
    acc = Accounting()
    response = make_llm(server, accounting=acc).complete(USER, schema=SCHEMA, component="p")
    assert response.parsed == {"steps": ["fixed"]}
    assert response.usage == Usage(30, 15)
    assert acc.totals().calls == 3
    second, third = server.requests[1]["messages"], server.requests[2]["messages"]
    assert second[-2] == {"role": "assistant", "content": "this is not json"}
    assert "not valid JSON" in second[-1]["content"]
    assert "validation failed at steps" in third[-1]["content"]
    assert "should be non-empty" in third[-1]["content"]


def test_reask_is_bounded(server: FakeServer) -> None:
    for _ in range(5):
        server.push(200, completion_body('{"wrong": 1}'))
    with pytest.raises(StructuredOutputError) as info:
        make_llm(server, max_reasks=1).complete(USER, schema=SCHEMA)
    assert len(server.requests) == 2
    assert info.value.last_text == '{"wrong": 1}'
    assert "validation failed" in info.value.validation_error


def test_tool_calls_and_forced_choice(server: FakeServer) -> None:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "search", "arguments": '{"query": "hotels"}'},
    }
    server.push(200, completion_body(None, [call]))
    tool = OfferedTool(
        "search", "Search the web", {"type": "object", "properties": {"query": {"type": "string"}}}
    )
    response = make_llm(server).complete(USER, tools=[tool], tool_choice="search")
    assert response.tool_calls == (ToolCall("search", {"query": "hotels"}, "call_1"),)
    assert response.text == ""
    request = server.requests[0]
    assert request["tools"][0]["function"]["name"] == "search"
    assert request["tool_choice"] == {"type": "function", "function": {"name": "search"}}
    # The assistant tool call and the tool result round-trip into the next request.
    follow = [
        *USER,
        Message.assistant(tool_calls=response.tool_calls),
        Message.tool('{"hits": 3}', tool_call_id="call_1", name="search"),
    ]
    make_llm(server).complete(follow, tools=[tool], tool_choice="auto")
    messages = server.requests[1]["messages"]
    assert messages[2]["tool_calls"][0]["function"]["arguments"] == '{"query":"hotels"}'
    assert messages[3]["role"] == "tool" and messages[3]["tool_call_id"] == "call_1"
    assert server.requests[1]["tool_choice"] == "auto"


def test_budget_checked_before_http_call(server: FakeServer) -> None:
    acc = Accounting(Budget(max_calls=1))
    llm = make_llm(server, accounting=acc)
    llm.complete(USER)
    with pytest.raises(BudgetExceeded) as info:
        llm.complete(USER)
    assert info.value.resource == "llm_calls"
    assert len(server.requests) == 1
    assert acc.stopped is info.value


def test_async_complete_with_retry(server: FakeServer) -> None:
    server.push(500, {"error": {"message": "boom"}})
    server.push(200, completion_body('{"steps": ["async"]}'))
    acc = Accounting()
    llm = make_llm(server, accounting=acc)

    async def run() -> Any:
        try:
            return await llm.acomplete(USER, schema=SCHEMA, component="a")
        finally:
            await llm.aclose()

    response = asyncio.run(run())
    assert response.parsed == {"steps": ["async"]}
    assert acc.by_component()["a"].calls == 2


def test_configuration_from_environment(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HYPERPLAN_LLM_BASE_URL", server.base_url)
    monkeypatch.setenv("HYPERPLAN_LLM_API_KEY", SECRET)
    monkeypatch.setenv("HYPERPLAN_LLM_MODEL", "env-model")
    llm = OpenAICompatibleLLM()
    assert llm.complete(USER).text == "ok"
    assert server.requests[0]["model"] == "env-model"
    assert server.headers[0]["authorization"] == f"Bearer {SECRET}"
    monkeypatch.delenv("HYPERPLAN_LLM_MODEL")
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    with pytest.raises(LLMError, match="no model"):
        OpenAICompatibleLLM()


def test_api_key_never_leaks(server: FakeServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    server.push(401, "ECHO_AUTH")  # the server echoes the Authorization header back
    llm = make_llm(server)
    assert SECRET not in repr(llm) and SECRET not in str(llm)
    assert "***" in repr(llm)
    with pytest.raises(LLMError) as info:
        llm.complete(USER)
    assert info.value.status_code == 401
    assert "***" in str(info.value)  # the echoed key was redacted
    assert SECRET not in str(info.value) and SECRET not in repr(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert SECRET not in caplog.text
    # Connection errors too.
    dead = OpenAICompatibleLLM(
        "m", base_url="http://127.0.0.1:9/v1", api_key=SECRET, max_retries=0, timeout=2
    )
    with pytest.raises(LLMError) as dead_info:
        dead.complete(USER)
    assert SECRET not in str(dead_info.value)
    assert SECRET not in caplog.text


# --------------------------------------------------------------------------------------------
# Scripted double
# --------------------------------------------------------------------------------------------
def test_scripted_rules_match_component_role_and_regex() -> None:
    llm = ScriptedLLM(
        [
            ScriptedRule(text="after tool", role="tool"),
            ScriptedRule(json={"steps": ["critic"]}, component="critic"),
            ScriptedRule(text="first", pattern=r"trip", times=1),
            ScriptedRule(
                tool_calls=(ToolCall("search", {"q": "x"}, "c1"),), system_pattern="planner"
            ),
        ]
    )
    assert isinstance(llm, LLM)
    assert llm.complete(USER).text == "first"
    assert llm.complete(USER).tool_calls == (ToolCall("search", {"q": "x"}, "c1"),)
    critic = llm.complete([Message.user("review")], schema=SCHEMA, component="critic")
    assert critic.parsed == {"steps": ["critic"]}
    assert llm.complete([*USER, Message.tool("{}", "c1")]).text == "after tool"
    assert [c.rule_index for c in llm.calls] == [2, 3, 1, 0]
    assert llm.calls[2].schema == SCHEMA and llm.calls[2].component == "critic"
    with pytest.raises(LLMError, match="no rule matches"):
        llm.complete([Message.user("nothing")])


def test_scripted_is_deterministic_and_async() -> None:
    rules = [ScriptedRule(text="a", times=1), ScriptedRule(text="b")]
    runs = []
    for _ in range(2):
        llm = ScriptedLLM(rules)
        runs.append([llm.complete(USER) for _ in range(3)])
    assert runs[0] == runs[1]
    assert [r.text for r in runs[0]] == ["a", "b", "b"]
    async_llm = ScriptedLLM(rules)
    assert asyncio.run(async_llm.acomplete(USER)).text == "a"


def test_raw_control_characters_inside_json_strings_are_accepted() -> None:
    from hyperplan.llm.structured import parse_and_validate

    value, error = parse_and_validate('{"steps": ["first line\nsecond\tline"]}', SCHEMA)
    assert error is None and value == {"steps": ["first line\nsecond\tline"]}
    value, error = parse_and_validate('Here:\n```json\n{"steps": ["a\nb"]}\n```', SCHEMA)
    assert error is None and value == {"steps": ["a\nb"]}
    _, error = parse_and_validate('{"steps": ["a"', SCHEMA)
    assert error is not None and error.startswith("the reply is not valid JSON")


def test_scripted_validates_schema() -> None:
    llm = ScriptedLLM([ScriptedRule(json={"steps": 3})])
    with pytest.raises(StructuredOutputError, match="does not validate"):
        llm.complete(USER, schema=SCHEMA)


# --------------------------------------------------------------------------------------------
# Budgets and accounting
# --------------------------------------------------------------------------------------------
def run_loop(llm: LLM, acc: Accounting, n: int) -> list[str]:
    """A toy run: ask, then 'execute' each tool call; stop cleanly on budget exhaustion."""
    results: list[str] = []
    try:
        for i in range(n):
            response = llm.complete([Message.user(f"step {i}")], component="planner")
            for call in response.tool_calls:
                acc.charge_tool_call("executor")
                results.append(f"tool:{call.name}")
            results.append(response.text)
    except BudgetExceeded:
        pass
    return results


def test_budget_max_calls_partial_result() -> None:
    acc = Accounting(Budget(max_calls=2))
    llm = ScriptedLLM([ScriptedRule(text="done")], accounting=acc)
    assert run_loop(llm, acc, 5) == ["done", "done"]
    assert len(llm.calls) == 2  # the third call was never made
    assert acc.stopped is not None and acc.stopped.resource == "llm_calls"
    assert acc.snapshot()["stopped"].startswith("budget exhausted: llm_calls")


def test_budget_tokens_tool_calls_and_wall_time() -> None:
    acc = Accounting(Budget(max_tokens=25))
    llm = ScriptedLLM([ScriptedRule(text="x", usage=Usage(10, 2))], accounting=acc)
    assert len(run_loop(llm, acc, 10)) == 3  # 12, 24 tokens, then 36 > 25 → stop before 4th
    assert acc.stopped is not None and acc.stopped.resource == "tokens"

    acc = Accounting(Budget(max_tool_calls=3))
    rule = ScriptedRule(text="t", tool_calls=(ToolCall("a"), ToolCall("b")))
    out = run_loop(ScriptedLLM([rule], accounting=acc), acc, 10)
    assert out == ["tool:a", "tool:b", "t", "tool:a"]
    assert acc.totals().tool_calls == 3 and acc.by_component()["executor"].tool_calls == 3

    now = [0.0]
    acc = Accounting(Budget(max_wall_s=10), clock=lambda: now[0])
    llm = ScriptedLLM([ScriptedRule(text="w")], accounting=acc)
    llm.complete(USER)
    now[0] = 10.0
    with pytest.raises(BudgetExceeded, match="wall_s"):
        llm.complete(USER)
    assert len(llm.calls) == 1


def test_accounting_per_component_thread_safe() -> None:
    acc = Accounting()

    def work(component: str) -> None:
        for _ in range(500):
            acc.record_call(component, Usage(2, 1), 0.001)

    threads = [threading.Thread(target=work, args=(f"c{i % 2}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    totals = acc.totals()
    assert (totals.calls, totals.prompt_tokens, totals.completion_tokens) == (4000, 8000, 4000)
    assert acc.by_component()["c0"].calls == 2000
    snapshot = acc.snapshot()
    json.dumps(snapshot)
    assert snapshot["components"]["c1"]["total_tokens"] == 6000


def test_deterministic_core_does_not_import_llm() -> None:
    src = Path(__file__).resolve().parents[1] / "src" / "hyperplan"
    core = [*src.glob("graph/**/*.py"), *src.glob("retrieve/**/*.py"), src / "plan" / "doe.py"]
    pattern = re.compile(r"^\s*(from|import)\s+(hyperplan\.llm|\.+llm)\b", re.MULTILINE)
    offenders = [str(p) for p in core if p.exists() and pattern.search(p.read_text())]
    assert offenders == []
