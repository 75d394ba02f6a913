"""``hyperplan serve --http`` security (issue 36, item 2 and the HTTP parts of item 6): Host
and Origin checked on every loopback spelling, the bearer token (the SDK's 401), a token
required beyond loopback, handshake-era sessions bounded per client, and every request with
an id answered. In-process: the gateway's HTTP app (:mod:`hyperplan.integrations.
mcp_gateway.http`) around a one-tool SDK server that counts its calls, on uvicorn in a
thread; end to end: the real command as a subprocess (stopped by PID)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.lowlevel.server import Server

from hyperplan.errors import HyperplanError
from hyperplan.integrations.mcp_gateway.config import (
    HttpSecurity,
    check_exposure,
    normalize_origin,
    parse_http_address,
    read_auth_token,
)
from hyperplan.integrations.mcp_gateway.http import make_http_server
from hyperplan.secrets import redact_text

TOKEN = "t0ken-for-the-http-tests-4711"
MODERN = "2026-07-28"
LEGACY = "2025-06-18"
ACCEPT = "application/json, text/event-stream"
BOOKSTORE = "python:hyperplan.examples.bookstore"


# the in-process server -----------------------------------------------------------------


def _counting_server(calls: list[str]) -> Server[Any]:
    """A one-tool SDK server: ``touch`` appends to ``calls`` (so a test sees if it ran)."""
    tool = types.Tool.model_validate({"name": "touch", "inputSchema": {"type": "object"}})

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        calls.append(params.name)
        return types.CallToolResult(content=[types.TextContent(type="text", text="touched")])

    return Server("counting", on_list_tools=list_tools, on_call_tool=call_tool)


def _free_port(host: str = "127.0.0.1") -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


class Running:
    """A gateway HTTP app served in a thread: its URL, the tool's calls, its sessions."""

    def __init__(self, url: str, port: int, calls: list[str], manager: Any) -> None:
        self.url, self.port, self.calls, self.manager = url, port, calls, manager


@contextmanager
def running(spelling: str, security: HttpSecurity | None = None) -> Iterator[Running]:
    bind = spelling.strip("[]").lower()
    port = _free_port("::1" if ":" in bind else "127.0.0.1" if bind == "localhost" else bind)
    address = parse_http_address(f"{spelling}:{port}")
    calls: list[str] = []
    started = threading.Event()
    server = make_http_server(_counting_server(calls), address, security,
                              ready=lambda url: started.set())
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        assert started.wait(15), "the HTTP server did not start"
        manager = cast(Any, server.config.app).state.session_manager
        yield Running(address.url, port, calls, manager)
    finally:
        server.should_exit = True
        thread.join(15)


def _modern(url: str, method: str = "tools/call", params: dict[str, Any] | None = None, *,
            headers: dict[str, str] | None = None, request_id: Any = 1,
            client: httpx.Client | None = None) -> httpx.Response:
    """One 2026-07-28 request (no session), by default a call of ``touch``."""
    params = {"name": "touch", "arguments": {}} if params is None else params
    meta = {types.PROTOCOL_VERSION_META_KEY: MODERN, types.CLIENT_CAPABILITIES_META_KEY: {}}
    body = {"jsonrpc": "2.0", "id": request_id, "method": method,
            "params": {**params, "_meta": meta}}
    sent = {"Accept": ACCEPT, "Content-Type": "application/json",
            "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if method == "tools/call":
        sent["Mcp-Name"] = params["name"]
    sent.update(headers or {})
    return (client or httpx).post(url, content=json.dumps(body), headers=sent, timeout=10)


def _initialize(url: str, client: httpx.Client | None = None,
                headers: dict[str, str] | None = None) -> str:
    """A handshake-era session opened (and nothing else): its id."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": LEGACY, "capabilities": {},
                       "clientInfo": {"name": "test", "version": "1"}}}
    reply = (client or httpx).post(url, json=body, timeout=10,
                                   headers={"Accept": ACCEPT, **(headers or {})})
    assert reply.status_code == 200, reply.text
    return reply.headers["mcp-session-id"]


def _in_session(url: str, session: str, message: dict[str, Any],
                client: httpx.Client | None = None) -> httpx.Response:
    headers = {"Accept": ACCEPT, "Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY,
               "Content-Type": "application/json"}
    return (client or httpx).post(url, content=json.dumps(message), headers=headers,
                                  timeout=10)


def _list(request_id: Any = 2) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/list"}


# 1. DNS rebinding: Host checked on every loopback spelling -----------------------------


def _ipv6() -> bool:
    try:
        _free_port("::1")
    except OSError:
        return False
    return True


SPELLINGS = ["127.0.0.1", "127.0.0.2", "LOCALHOST",
             pytest.param("[0:0:0:0:0:0:0:1]", marks=pytest.mark.skipif(
                 not _ipv6(), reason="no IPv6 loopback"))]


def test_loopback_addresses_are_canonical() -> None:
    assert parse_http_address("LOCALHOST:1").host == "localhost"
    assert parse_http_address("[0:0:0:0:0:0:0:1]:80").url == "http://[::1]:80/mcp"
    assert parse_http_address("127.0.0.2:5").loopback
    assert not parse_http_address("0.0.0.0:5", allow_remote=True).loopback


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_rebinding_refused_on_every_loopback_spelling(spelling: str) -> None:
    """A request addressed to another name (a page whose name was rebound to this address)
    is refused before it reaches the tool, on every spelling of loopback."""
    with running(spelling) as gw:
        own = gw.url.split("/")[2]
        for host in ("evil.example", f"evil.example:{gw.port}", f"{own.rsplit(':', 1)[0]}:1",
                     "127.0.0.1.evil.example", ""):
            reply = _modern(gw.url, headers={"Host": host, "Origin": "http://evil.example"})
            assert reply.status_code == 421, (host, reply.status_code)
            assert reply.json()["id"] is None
        assert gw.calls == []
        assert _modern(gw.url, headers={"Host": own.upper()}).status_code == 200
        if spelling in ("127.0.0.1", "LOCALHOST"):
            assert _modern(gw.url, headers={"Host": f"localhost:{gw.port}"}).status_code == 200
        assert gw.calls == ["touch"] * (2 if spelling in ("127.0.0.1", "LOCALHOST") else 1)


# 2. Origin: the gateway's own, or one given exactly -----------------------------------------


def test_origin_allow_list() -> None:
    security = HttpSecurity(allowed_origins=("HTTPS://App.Example:443/",))
    with running("127.0.0.1", security) as gw:
        refused = ["http://evil.example", f"http://evil.example:{gw.port}",
                   f"http://localhost:{gw.port + 1}", "http://localhost", "null",
                   f"https://127.0.0.1:{gw.port}", "https://app.example:444"]
        for origin in refused:
            reply = _modern(gw.url, headers={"Origin": origin})
            assert reply.status_code == 403, (origin, reply.status_code)
        assert gw.calls == []
        accepted: list[str | None] = [f"http://127.0.0.1:{gw.port}",
                                      f"http://localhost:{gw.port}", "https://app.example", None]
        for allowed in accepted:
            reply = _modern(gw.url, headers={"Origin": allowed} if allowed else {})
            assert reply.status_code == 200, (allowed, reply.text)
        assert gw.calls == ["touch"] * len(accepted)
        preflight = {"Access-Control-Request-Method": "POST",
                     "Access-Control-Request-Headers": "authorization, content-type"}
        reply = httpx.options(gw.url, headers={"Origin": "https://app.example", **preflight})
        assert reply.status_code == 200
        assert reply.headers["access-control-allow-origin"] == "https://app.example"
        reply = httpx.options(gw.url, headers={"Origin": "https://evil.example", **preflight})
        assert reply.status_code == 403 and "access-control-allow-origin" not in reply.headers
        reply = _modern(gw.url, headers={"Origin": "https://app.example"})
        assert reply.headers["access-control-allow-origin"] == "https://app.example"


def test_origins_are_exact() -> None:
    assert normalize_origin("HTTP://LOCALHOST:80/") == "http://localhost"
    assert normalize_origin("http://[0:0:0:0:0:0:0:1]:8080") == "http://[::1]:8080"
    for bad in ("http://localhost:*", "*", "null", "http://a.example/path", "ftp://a.example",
                "http://user@a.example", "a.example"):
        with pytest.raises(HyperplanError, match="--allow-origin"):
            normalize_origin(bad)


# 3. authentication: the bearer token, the SDK's 401 --------------------------------------


def test_bearer_token_required_when_given() -> None:
    with running("127.0.0.1", HttpSecurity(token=TOKEN)) as gw:
        for headers in ({}, {"Authorization": f"Bearer {TOKEN}x"},
                        {"Authorization": f"Bearer {TOKEN[:-1]}"},
                        {"Authorization": f"Basic {TOKEN}"}, {"Authorization": TOKEN}):
            reply = _modern(gw.url, headers=headers)
            assert reply.status_code == 401, (headers, reply.status_code)
            assert reply.headers["www-authenticate"].startswith("Bearer ")
            assert TOKEN not in reply.text
        reply = httpx.post(gw.url, json=_list(), headers={"Accept": ACCEPT})  # handshake era
        assert reply.status_code == 401
        assert gw.calls == []
        assert _modern(gw.url, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        assert gw.calls == ["touch"]
        # the Host check comes first: a rebinding page is refused even with the token
        reply = _modern(gw.url, headers={"Authorization": f"Bearer {TOKEN}",
                                         "Host": "evil.example"})
        assert reply.status_code == 421


def test_official_client_with_and_without_token() -> None:
    """The SDK's own client, default mode (2026-07-28) and handshake mode, with the token
    as a header; without it the client fails."""
    with running("127.0.0.1", HttpSecurity(token=TOKEN)) as gw:

        async def scenario() -> None:
            for mode in ("auto", "legacy"):
                http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})
                async with http, Client(streamable_http_client(gw.url, http_client=http),
                                        mode=mode, read_timeout_seconds=10) as client:
                    assert (client.protocol_version == MODERN) == (mode == "auto")
                    result = await client.call_tool("touch", {})
                    assert not result.is_error
            with pytest.raises(Exception):  # noqa: B017 (whatever the SDK raises: no access)
                async with Client(gw.url, read_timeout_seconds=10) as client:
                    await client.call_tool("touch", {})

        asyncio.run(asyncio.wait_for(scenario(), 60))
        assert gw.calls == ["touch", "touch"]


def test_token_from_env_or_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GW_TEST_TOKEN", f"  {TOKEN}\n")
    assert read_auth_token("GW_TEST_TOKEN") == TOKEN
    assert TOKEN not in redact_text(f"the token is {TOKEN}")  # registered as a secret
    file = tmp_path / "token"
    file.write_text(f"{TOKEN}-file \nsecond line\n")
    file.chmod(0o600)
    warnings: list[str] = []
    assert read_auth_token(file=file, warn=warnings.append) == f"{TOKEN}-file"
    assert warnings == []
    file.chmod(0o644)
    assert read_auth_token(file=file, warn=warnings.append) == f"{TOKEN}-file"
    assert len(warnings) == 1 and "readable by group or others" in warnings[0]
    assert TOKEN not in warnings[0]
    assert read_auth_token() is None
    monkeypatch.setenv("GW_SHORT", "short")
    for env, path, message in (("GW_TEST_TOKEN", file, "not both"),
                               ("GW_NOT_SET_ANYWHERE", None, "not set"),
                               ("GW_SHORT", None, "at least 16"),
                               (None, tmp_path / "missing", "cannot read")):
        with pytest.raises(HyperplanError, match=message):
            read_auth_token(env, path)
    assert "t0ken" not in repr(HttpSecurity(token=TOKEN))


def test_token_required_beyond_loopback() -> None:
    remote = parse_http_address("0.0.0.0:8765", allow_remote=True)
    with pytest.raises(HyperplanError, match="bearer token is required"):
        check_exposure(remote, HttpSecurity())
    warning = check_exposure(remote, HttpSecurity(token=TOKEN))
    assert warning is not None and "beyond loopback" in warning and TOKEN not in warning
    assert check_exposure(parse_http_address("127.0.0.2:8765"), HttpSecurity()) is None


# 4. handshake-era sessions bounded per client ---------------------------------------------


def test_sessions_bounded_per_client() -> None:
    """One client opening session after session (never using them) loses its own oldest
    ones, never another client's, and never locks a new client out."""
    with running("127.0.0.1", HttpSecurity(sessions_per_client=3)) as gw:
        other = httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2"))
        with other:
            victim = _initialize(gw.url, other)
            flood = [_initialize(gw.url) for _ in range(3)]
            assert _in_session(gw.url, flood[0], _list()).status_code == 200  # used: kept
            flood += [_initialize(gw.url) for _ in range(12)]
            assert gw.manager.sessions_of("127.0.0.1") == [flood[0], flood[-2], flood[-1]]
            assert len(gw.manager._server_instances) == 4
            for closed in flood[1:-2]:
                assert _in_session(gw.url, closed, _list()).status_code == 404
            assert _in_session(gw.url, victim, _list(), other).status_code == 200
            assert _in_session(gw.url, flood[0], _list()).status_code == 200
            assert gw.manager.sessions_of("127.0.0.2") == [victim]
            _initialize(gw.url, other)  # a new client is served, not 503


def test_idle_sessions_expire() -> None:
    with running("127.0.0.1", HttpSecurity(session_idle_timeout=0.5)) as gw:
        session = _initialize(gw.url)
        assert _in_session(gw.url, session, _list()).status_code == 200
        time.sleep(1.2)
        assert _in_session(gw.url, session, _list()).status_code == 404
        assert gw.manager.sessions_of("127.0.0.1") == []


# 5. every request with an id answered --------------------------------------------------------

BAD_IDS = [{"a": 1}, [1], 1.5, None, True]


def _assert_error(reply: httpx.Response) -> dict[str, Any]:
    assert reply.status_code not in (200, 202), (reply.status_code, reply.text)
    body: dict[str, Any] = reply.json()
    assert body["jsonrpc"] == "2.0" and "error" in body and "id" in body, body
    return body


def test_request_with_an_invalid_id_is_answered() -> None:
    with running("127.0.0.1") as gw:
        session = _initialize(gw.url)
        notified = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert _in_session(gw.url, session, notified).status_code == 202
        for bad in BAD_IDS:
            call = {"jsonrpc": "2.0", "id": bad, "method": "tools/call",
                    "params": {"name": "touch", "arguments": {}}}
            body = _assert_error(_in_session(gw.url, session, call))
            assert body["id"] is None and body["error"]["code"] == types.INVALID_REQUEST
            _assert_error(_modern(gw.url, request_id=bad))
        malformed: list[Any] = [
            {"jsonrpc": "1.0", "id": 7, "method": "tools/list"},
            {"id": 7, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 7, "method": 5},
            {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": 5},
            [_list(7)], [], "text", 7,
        ]
        for message in malformed:
            _assert_error(_in_session(gw.url, session, message))
        deep = "[" * 100_000 + "]" * 100_000
        for raw in ('{"jsonrpc": "2.0", "id": 7, "meth',  # cut short
                    '{"jsonrpc": "2.0", "\\u0069d": {"a": 1}, "method": "tools/list"}',
                    '{"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"x": '
                    + deep + "}}"):
            reply = httpx.post(gw.url, content=raw.encode(), timeout=10,
                               headers={"Accept": ACCEPT, "Mcp-Session-Id": session,
                                        "Content-Type": "application/json",
                                        "MCP-Protocol-Version": LEGACY})
            _assert_error(reply)
        assert gw.calls == []
        assert _in_session(gw.url, session, _list(8)).status_code == 200  # still served


# end to end: the real command ---------------------------------------------------------------


def _serve(cache: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "hyperplan", "serve", "--embedder", "hashing",
               "--call-timeout", "20", *args, BOOKSTORE]
    return subprocess.Popen(command, env={**os.environ, "HYPERPLAN_CACHE_DIR": str(cache),
                                          **(env or {})},
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_listening(process: subprocess.Popen[str], host: str, port: int) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "the gateway did not listen"
            time.sleep(0.1)


def _stop(process: subprocess.Popen[str]) -> str:
    """Stop the gateway by its PID; its stderr."""
    if process.poll() is None:
        os.kill(process.pid, signal.SIGTERM)
    return process.communicate(timeout=20)[1]


def test_serve_refuses_remote_without_token(tmp_path: Path) -> None:
    process = _serve(tmp_path, "--http", f"0.0.0.0:{_free_port()}", "--allow-remote")
    stderr = process.communicate(timeout=30)[1]
    assert process.returncode == 1
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), stderr
    assert "bearer token is required" in lines[0]


def test_serve_http_end_to_end(tmp_path: Path) -> None:
    """The command on 127.0.0.2 with a token: rebinding refused (the bookstore's tool never
    runs), 401 without the token, an object id answered; the SDK client with the token
    works in both modes; beyond loopback (0.0.0.0) with the token: a warning, served."""
    port = _free_port("127.0.0.2")
    process = _serve(tmp_path, "--http", f"127.0.0.2:{port}", "--auth-token-env", "GW_TOKEN",
                     env={"GW_TOKEN": TOKEN})
    url, auth = f"http://127.0.0.2:{port}/mcp", {"Authorization": f"Bearer {TOKEN}"}
    try:
        _wait_listening(process, "127.0.0.2", port)
        reply = _modern(url, params={"name": "call_tool", "arguments": {
            "name": "login", "arguments": {"username": "a", "password": "b"}}},
            headers={**auth, "Host": "evil.example", "Origin": "http://evil.example"})
        assert reply.status_code == 421
        assert _modern(url, "tools/list", {}).status_code == 401
        assert _modern(url, "tools/list", {}, headers={
            **auth, "Origin": f"http://localhost:{port}"}).status_code == 403
        body = _assert_error(_modern(url, "tools/list", {}, headers=auth, request_id={"a": 1}))
        assert body["id"] is None

        async def clients() -> None:
            for mode in ("auto", "legacy"):
                http = httpx2.AsyncClient(headers=auth)
                async with http, Client(streamable_http_client(url, http_client=http),
                                        mode=mode, read_timeout_seconds=30) as client:
                    names = [t.name for t in (await client.list_tools()).tools]
                    assert "find_tools" in names

        asyncio.run(asyncio.wait_for(clients(), 60))
    finally:
        stderr = _stop(process)
    assert TOKEN not in stderr

    port = _free_port()
    process = _serve(tmp_path, "--http", f"0.0.0.0:{port}", "--allow-remote",
                     "--auth-token-env", "GW_TOKEN", env={"GW_TOKEN": TOKEN})
    try:
        _wait_listening(process, "127.0.0.1", port)
        url = f"http://127.0.0.1:{port}/mcp"
        assert _modern(url, "tools/list", {}).status_code == 401
        assert _modern(url, "tools/list", {}, headers=auth).status_code == 200
    finally:
        stderr = _stop(process)
    assert "warning: listening beyond loopback" in stderr and TOKEN not in stderr
