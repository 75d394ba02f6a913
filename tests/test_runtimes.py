"""Tool runtimes: argument validation, Python callables, a real HTTP service described by an
OpenAPI document, and a real stdio MCP server (tests/data/runtimes/mcp_server.py)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from hyperplan.catalog import Catalog, ToolSpec, merge_catalogs
from hyperplan.execute.results import ErrorKind, ToolRuntime
from hyperplan.execute.runtimes import (
    CompositeRuntime,
    MCPRuntime,
    MCPRuntimeError,
    OpenAPIRuntime,
    PythonRuntime,
    build_request,
    validate_arguments,
)
from hyperplan.execute.runtimes.mcp import require_mcp
from hyperplan.importers.mcp import load_mcp_tools
from hyperplan.importers.openapi import load_openapi
from hyperplan.importers.python_callables import load_python_callables

DATA = Path(__file__).parent / "data" / "runtimes"
SECRET = "s3cr3t-token-value"
API_KEY = "k3y-abcdef-123456"


def tool(name: str, properties: dict[str, Any], required: list[str] | None = None,
         **extra: Any) -> ToolSpec:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return ToolSpec(name=name, input_schema=schema, **extra)


# --------------------------------------------------------------------------- validation


def test_validation_messages_name_tool_and_field() -> None:
    play = tool("music.play", {"song_id": {"type": "integer"}, "limit": {"type": "integer"}},
                ["song_id"])
    assert validate_arguments(play, {"song_id": 3}) is None
    assert validate_arguments(play, {}) == "music.play: 'song_id' is a required property"
    assert validate_arguments(play, {"song_id": 1, "limit": "abc"}) == (
        "music.play: at 'limit': 'abc' is not of type 'integer'")
    message = validate_arguments(play, {"limit": "abc"})
    assert message is not None and message.endswith("(+1 more error)")
    assert validate_arguments(play, ["x"]) == "music.play: arguments must be an object, got list"


def test_validation_nested_path_formats_off_and_draft_from_schema() -> None:
    nested = tool("t", {"items": {"type": "array", "items": {
        "type": "object", "properties": {"n": {"type": "integer"}}}}})
    assert validate_arguments(nested, {"items": [{"n": 1}, {"n": "x"}]}) == (
        "t: at 'items[1].n': 'x' is not of type 'integer'")
    dated = tool("d", {"day": {"type": "string", "format": "date"}})
    assert validate_arguments(dated, {"day": "not a date"}) is None
    draft4 = ToolSpec(name="old", input_schema={
        "$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
        "properties": {"x": {"type": "number", "minimum": 0, "exclusiveMinimum": True}}})
    assert validate_arguments(draft4, {"x": 0}) is not None
    assert validate_arguments(draft4, {"x": 1}) is None


def test_invalid_schema_is_a_message_not_a_crash() -> None:
    broken = tool("broken", {"x": {"type": "nonsense"}})
    message = validate_arguments(broken, {"x": 1})
    assert message is not None and message.startswith("broken: invalid input schema")
    result = PythonRuntime({"broken": lambda x: x}).call(broken, {"x": 1})
    assert result.error_kind is ErrorKind.INVALID_ARGUMENTS
    dangling = tool("dangling", {"x": {"$ref": "#/$defs/missing"}})
    message = validate_arguments(dangling, {"x": 1})
    assert message is not None and message.startswith("dangling:")


# --------------------------------------------------------------------------- Python


@dataclass
class Song:
    id: int
    title: str


CALLS: list[str] = []


def find_song(title: str, limit: int = 1) -> list[Song]:
    """Find songs by title."""
    CALLS.append(title)
    return [Song(i, title) for i in range(limit)]


def explode(reason: str) -> str:
    """Always fails."""
    raise ValueError(f"cannot {reason}")


def wait_for(seconds: float) -> str:
    """Sleep."""
    time.sleep(seconds)
    return "woke"


def own_timeout() -> str:
    """Raises the builtin TimeoutError itself."""
    raise TimeoutError("upstream timed out")


async def fetch_async(x: int) -> int:
    """An async tool."""
    await asyncio.sleep(0.01)
    return x * 2


@pytest.fixture(scope="module")
def py_catalog() -> Catalog:
    funcs = [find_song, explode, wait_for, own_timeout, fetch_async]
    return load_python_callables(funcs, source="test-runtimes")


def test_python_runtime_valid_call_converts_result(py_catalog: Catalog) -> None:
    runtime = PythonRuntime.from_catalog(py_catalog)
    result = runtime.call(py_catalog.get("find_song"), {"title": "Hey", "limit": 2})
    assert result.ok and result.error_kind is None
    assert result.value == [{"id": 0, "title": "Hey"}, {"id": 1, "title": "Hey"}]
    assert result.seconds > 0
    assert runtime.call(py_catalog.get("fetch_async"), {"x": 21}).value == 42


def test_python_runtime_invalid_arguments_never_call(py_catalog: Catalog) -> None:
    runtime = PythonRuntime.from_catalog(py_catalog)
    CALLS.clear()
    result = runtime.call(py_catalog.get("find_song"), {"title": 5})
    assert result.error_kind is ErrorKind.INVALID_ARGUMENTS and not result.ok
    assert result.error == "find_song: at 'title': 5 is not of type 'string'"
    assert CALLS == []


def test_python_runtime_exceptions_and_unknown(py_catalog: Catalog) -> None:
    runtime = PythonRuntime.from_catalog(py_catalog)
    result = runtime.call(py_catalog.get("explode"), {"reason": "fly"})
    assert result.error_kind is ErrorKind.TOOL_ERROR and result.error == "ValueError: cannot fly"
    result = runtime.call(py_catalog.get("own_timeout"), {})
    assert result.error_kind is ErrorKind.TOOL_ERROR
    assert result.error == "TimeoutError: upstream timed out"
    other = tool("elsewhere", {})
    assert not runtime.can_run(other)
    assert runtime.call(other, {}).error_kind is ErrorKind.UNKNOWN_TOOL


def test_python_runtime_timeout(py_catalog: Catalog) -> None:
    runtime = PythonRuntime.from_catalog(py_catalog, timeout=5)
    start = time.perf_counter()
    result = runtime.call(py_catalog.get("wait_for"), {"seconds": 2.0}, timeout=0.2)
    assert time.perf_counter() - start < 1.0
    # it may have run: outcome unknown, never re-sent (issue 22, item 1)
    assert result.error_kind is ErrorKind.OUTCOME_UNKNOWN and "0.2 s" in result.error
    inline = PythonRuntime.from_catalog(py_catalog, timeout=None)
    assert inline.call(py_catalog.get("wait_for"), {"seconds": 0.01}).value == "woke"


# --------------------------------------------------------------------------- HTTP

OPENAPI: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "shop", "version": "1"},
    "servers": [{"url": "/api"}],
    "paths": {
        "/items/{item_id}": {
            "get": {
                "operationId": "get_item",
                "parameters": [
                    {"name": "item_id", "in": "path", "required": True,
                     "schema": {"type": "string"}},
                    {"name": "verbose", "in": "query", "schema": {"type": "boolean"}},
                    {"name": "fields", "in": "query",
                     "schema": {"type": "array", "items": {"type": "string"}}},
                    {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                    {"name": "session", "in": "cookie", "schema": {"type": "string"}},
                ],
                "responses": {"200": {"description": "ok", "content": {
                    "application/json": {"schema": {"type": "object"}}}}},
            },
            "put": {
                "operationId": "tag_item",
                "parameters": [{"name": "item_id", "in": "path", "required": True,
                                "schema": {"type": "integer"}}],
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": {"type": "array", "items": {"type": "string"}}}}},
                "responses": {"200": {"description": "ok"}},
            },
        },
        "/items": {
            "post": {
                "operationId": "create_item",
                "parameters": [{"name": "dry_run", "in": "query",
                                "schema": {"type": "boolean"}}],
                "requestBody": {"required": True, "content": {"application/json": {"schema": {
                    "type": "object", "required": ["name"],
                    "properties": {"name": {"type": "string"},
                                   "tags": {"type": "array", "items": {"type": "string"}}},
                }}}},
                "responses": {"201": {"description": "created"}},
            },
        },
        "/missing": {"get": {"operationId": "missing", "responses": {"200": {
            "description": "never"}}}},
        "/slow": {"get": {"operationId": "slow_http", "responses": {"200": {
            "description": "late"}}}},
        "/text": {"get": {"operationId": "text", "responses": {"200": {"description": "t"}}}},
        "/leak": {"get": {"operationId": "leak", "responses": {"200": {"description": "l"}}}},
    },
}


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def _handle(self) -> None:
        url = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else None
        if url.path == "/api/missing":
            self._send(404, "text/plain", b"no such thing here")
        elif url.path == "/api/slow":
            time.sleep(1.5)
            self._send(200, "application/json", b"{}")
        elif url.path == "/api/text":
            self._send(200, "text/plain; charset=utf-8", b"plain words")
        elif url.path == "/api/leak":
            auth, key = self.headers.get("Authorization"), self.headers.get("X-Api-Key")
            echoed = f"denied for {auth} (key {key})"
            self._send(401, "text/plain", echoed.encode())
        else:
            echo = {
                "method": self.command,
                "raw_path": url.path,
                "query": parse_qs(url.query),
                "trace": self.headers.get("X-Trace"),
                "cookie": self.headers.get("Cookie"),
                "auth": self.headers.get("Authorization"),
                "body": json.loads(body) if body else None,
            }
            self._send(201 if self.command == "POST" else 200, "application/json",
                       json.dumps(echo).encode())

    def _send(self, status: int, ctype: str, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture(scope="module")
def http_base() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def shop() -> Catalog:
    return load_openapi(OPENAPI)


@pytest.fixture
def http_runtime(http_base: str) -> Iterator[OpenAPIRuntime]:
    with OpenAPIRuntime(http_base, headers={"Authorization": f"Bearer {SECRET}",
                                            "X-Api-Key": API_KEY}) as runtime:
        yield runtime


def test_http_path_query_header_cookie(shop: Catalog, http_runtime: OpenAPIRuntime) -> None:
    get_item = shop.get("get_item")
    assert http_runtime.can_run(get_item)
    result = http_runtime.call(get_item, {"item_id": "a b/c", "verbose": True,
                                          "fields": ["x", "y"], "X-Trace": "t-1",
                                          "session": "abc123"})
    assert result.ok, result.error
    assert result.metadata["status"] == 200
    echo = result.value
    assert echo["method"] == "GET" and echo["raw_path"] == "/api/items/a%20b%2Fc"
    assert echo["query"] == {"verbose": ["true"], "fields": ["x", "y"]}
    assert echo["trace"] == "t-1" and echo["cookie"] == "session=abc123"
    assert echo["auth"] == f"Bearer {SECRET}"


def test_http_object_body_and_whole_body(shop: Catalog, http_runtime: OpenAPIRuntime) -> None:
    created = http_runtime.call(shop.get("create_item"),
                                {"name": "lamp", "tags": ["home"], "dry_run": False})
    assert created.ok and created.metadata["status"] == 201
    assert created.value["body"] == {"name": "lamp", "tags": ["home"]}
    assert created.value["query"] == {"dry_run": ["false"]}
    tag_item = shop.get("tag_item")
    assert tag_item.metadata["params"]["body"] == {"in": "body", "name": "body"}
    tagged = http_runtime.call(tag_item, {"item_id": 7, "body": ["red", "new"]})
    assert tagged.ok and tagged.value["method"] == "PUT"
    assert tagged.value["raw_path"] == "/api/items/7" and tagged.value["body"] == ["red", "new"]
    invalid = http_runtime.call(shop.get("create_item"), {"tags": ["x"]})
    assert invalid.error_kind is ErrorKind.INVALID_ARGUMENTS
    assert invalid.error == "create_item: 'name' is a required property"


def test_http_body_property_named_body_is_wrapped() -> None:
    doc = {"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": {"/notes": {
        "post": {"operationId": "note", "requestBody": {"content": {"application/json": {
            "schema": {"type": "object", "properties": {"body": {
                "type": "object", "properties": {"text": {"type": "string"}}}}}}}},
            "responses": {"200": {"description": "ok"}}}}}}
    note = load_openapi(doc).get("note")
    request = build_request(note, {"body": {"text": "hi"}}, "http://h")
    assert request.json_body == {"body": {"text": "hi"}} and request.url == "http://h/notes"


def test_http_text_and_errors(shop: Catalog, http_runtime: OpenAPIRuntime) -> None:
    text = http_runtime.call(shop.get("text"), {})
    assert text.ok and text.value == "plain words"
    missing = http_runtime.call(shop.get("missing"), {})
    assert missing.error_kind is ErrorKind.TOOL_ERROR
    assert "HTTP 404" in missing.error and "no such thing here" in missing.error
    assert missing.metadata["status"] == 404
    leak = http_runtime.call(shop.get("leak"), {})
    assert leak.error_kind is ErrorKind.TOOL_ERROR and "HTTP 401" in leak.error
    assert SECRET not in leak.error and API_KEY not in leak.error and "***" in leak.error


def test_http_timeout(shop: Catalog, http_runtime: OpenAPIRuntime) -> None:
    start = time.perf_counter()
    result = http_runtime.call(shop.get("slow_http"), {}, timeout=0.3)
    assert time.perf_counter() - start < 1.2
    assert result.error_kind is ErrorKind.TIMEOUT and "0.3 s" in result.error


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_http_server_down_and_missing_url(shop: Catalog) -> None:
    down = f"http://127.0.0.1:{_free_port()}"
    with OpenAPIRuntime(down, headers={"Authorization": f"Bearer {SECRET}"}) as runtime:
        result = runtime.call(shop.get("get_item"), {"item_id": "1", "session": API_KEY})
    assert result.error_kind is ErrorKind.TRANSPORT and "ConnectError" in result.error
    assert SECRET not in result.error and API_KEY not in result.error
    assert "GET " + down + "/api/items/{item_id}" in result.error
    relative = OpenAPIRuntime().call(shop.get("text"), {})
    assert relative.error_kind is ErrorKind.TRANSPORT and "'/api' is relative" in relative.error
    bare = ToolSpec(name="bare", metadata={"method": "GET", "path": "/x", "server": None})
    result = OpenAPIRuntime().call(bare, {})
    assert result.error_kind is ErrorKind.TRANSPORT and "no server URL" in result.error
    assert OpenAPIRuntime().call(tool("plain", {}), {}).error_kind is ErrorKind.UNKNOWN_TOOL


def test_http_base_url_resolution() -> None:
    def base(server: str | None, explicit: str | None) -> str | None:
        spec = ToolSpec(name="t", metadata={"method": "GET", "path": "/p", "server": server})
        return OpenAPIRuntime(explicit).resolve_base_url(spec)

    assert base("https://api.example.com/v2", None) == "https://api.example.com/v2"
    assert base("https://api.example.com/v2", "http://localhost:9") == "http://localhost:9"
    assert base("/v1", "http://localhost:9") == "http://localhost:9/v1"
    assert base("v1", "http://localhost:9/api/") == "http://localhost:9/api/v1"
    assert base(None, "http://localhost:9") == "http://localhost:9"
    assert base("/v1", None) is None and base(None, None) is None


# --------------------------------------------------------------------------- MCP

SERVER_SCRIPT = DATA / "mcp_server.py"


@pytest.fixture(scope="module")
def mcp_runtime() -> Iterator[MCPRuntime]:
    pytest.importorskip("mcp")
    with MCPRuntime(sys.executable, [str(SERVER_SCRIPT)], timeout=15) as runtime:
        yield runtime


@pytest.fixture(scope="module")
def mcp_catalog(mcp_runtime: MCPRuntime) -> Catalog:
    return mcp_runtime.catalog()


def test_mcp_list_tools_builds_a_catalog(mcp_runtime: MCPRuntime, mcp_catalog: Catalog) -> None:
    raw = mcp_runtime.list_tools()
    assert {"add", "fail", "slow", "crash"} <= {t["name"] for t in raw}
    assert load_mcp_tools({"tools": raw}).names() == mcp_catalog.names()
    add = mcp_catalog.get("add")
    assert add.input_schema["required"] == ["a", "b"] and add.source == "mcp"
    assert mcp_runtime.can_run(add)
    assert not mcp_runtime.can_run(ToolSpec(name="add"))
    assert not mcp_runtime.can_run(ToolSpec(name="ghost", source="mcp"))


def test_mcp_calls_and_result_mapping(mcp_runtime: MCPRuntime, mcp_catalog: Catalog) -> None:
    add = mcp_runtime.call(mcp_catalog.get("add"), {"a": 2, "b": 3})
    assert add.ok and add.value == {"result": 5}
    info = mcp_runtime.call(mcp_catalog.get("info"), {"name": "abc"})
    assert info.value == {"name": "abc", "length": 3}
    assert mcp_runtime.call(mcp_catalog.get("raw_json"), {}).value == {"a": 1, "b": [True, None]}
    assert mcp_runtime.call(mcp_catalog.get("plain_text"), {}).value == "hello there"


def test_mcp_errors(mcp_runtime: MCPRuntime, mcp_catalog: Catalog) -> None:
    failed = mcp_runtime.call(mcp_catalog.get("fail"), {"message": "it broke"})
    assert failed.error_kind is ErrorKind.TOOL_ERROR and "it broke" in failed.error
    invalid = mcp_runtime.call(mcp_catalog.get("add"), {"a": "x", "b": 1})
    assert invalid.error_kind is ErrorKind.INVALID_ARGUMENTS
    assert invalid.error == "add: at 'a': 'x' is not of type 'integer'"


def test_mcp_timeout_keeps_the_session(mcp_runtime: MCPRuntime, mcp_catalog: Catalog) -> None:
    start = time.perf_counter()
    slow = mcp_runtime.call(mcp_catalog.get("slow"), {"seconds": 3}, timeout=0.4)
    assert time.perf_counter() - start < 2.0
    # an unannotated tool that did not finish may have run: never re-sent (issue 22, item 1)
    assert slow.error_kind is ErrorKind.OUTCOME_UNKNOWN and "0.4 s" in slow.error
    assert "not re-sent" in slow.error
    assert mcp_runtime.call(mcp_catalog.get("add"), {"a": 1, "b": 1}).value == {"result": 2}


def _wait_gone(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_mcp_crash_is_transport_then_restarts(mcp_catalog: Catalog) -> None:
    with MCPRuntime(sys.executable, [str(SERVER_SCRIPT)], timeout=15) as runtime:
        crashed = runtime.call(mcp_catalog.get("crash"), {})
        assert crashed.error_kind is ErrorKind.OUTCOME_UNKNOWN  # it died during the call
        assert "crashing on purpose" in crashed.error
        again = runtime.call(mcp_catalog.get("pid"), {})
        assert again.ok, again.error
        pid = again.value["result"]
    assert _wait_gone(pid), "close() left the server process running"


def test_mcp_startup_failures() -> None:
    pytest.importorskip("mcp")
    spec = ToolSpec(name="anything", source="mcp")
    script = "import sys; print('bad config: no token', file=sys.stderr); sys.exit(2)"
    with MCPRuntime(sys.executable, ["-c", script], timeout=5) as runtime:
        result = runtime.call(spec, {})
        assert result.error_kind is ErrorKind.TRANSPORT and "bad config: no token" in result.error
        with pytest.raises(MCPRuntimeError, match="bad config"):
            runtime.list_tools()
    missing = MCPRuntime("/nonexistent/mcp-server-binary", timeout=5)
    result = missing.call(spec, {})
    assert result.error_kind is ErrorKind.TRANSPORT and "FileNotFoundError" in result.error
    missing.close()


def test_mcp_server_source_lists_the_live_tools(mcp_catalog: Catalog) -> None:
    from hyperplan.errors import HyperplanError
    from hyperplan.sources import load_source

    live = load_source(f"mcp-server:{sys.executable} {SERVER_SCRIPT}")
    assert live.names() == mcp_catalog.names()  # the same tools as a running session lists
    assert live.get("add").input_schema == mcp_catalog.get("add").input_schema
    with pytest.raises(HyperplanError, match="no server command"):
        load_source("mcp-server:  ")
    with pytest.raises(HyperplanError, match="bad config"):
        load_source(f"mcp-server:{sys.executable} -c \"import sys; "
                    "print('bad config', file=sys.stderr); sys.exit(2)\"")


def test_mcp_sdk_missing_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)
    with pytest.raises(MCPRuntimeError, match=r"hyperplan\[mcp\]"):
        require_mcp()
    with pytest.raises(MCPRuntimeError):
        MCPRuntime("whatever")


# --------------------------------------------------------------------------- composite


def test_composite_dispatches_to_the_first_capable_runtime(
        py_catalog: Catalog, shop: Catalog, http_base: str, mcp_runtime: MCPRuntime,
        mcp_catalog: Catalog) -> None:
    merged = merge_catalogs([py_catalog, shop, mcp_catalog])
    python = PythonRuntime.from_catalog(merged)
    assert set(python.callables) == set(py_catalog.names())
    http = OpenAPIRuntime(http_base)
    runtime = CompositeRuntime([python, http, mcp_runtime])
    assert isinstance(runtime, ToolRuntime)
    assert runtime.call(merged.get("fetch_async"), {"x": 2}).value == 4
    assert runtime.call(merged.get("text"), {}).value == "plain words"
    assert runtime.call(merged.get("add"), {"a": 1, "b": 2}).value == {"result": 3}
    orphan = runtime.call(tool("orphan", {}, source="openai"), {})
    assert orphan.error_kind is ErrorKind.UNKNOWN_TOOL and not runtime.can_run(
        tool("orphan", {}))
    http.close()
