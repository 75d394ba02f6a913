"""``hyperplan serve``, the MCP gateway (issue 23, item 2): the real command as a subprocess,
driven by the official MCP SDK client over stdio and streamable HTTP, in search and narrow
mode, with the bookstore, a real third-party upstream (``mcp-server-git``) and an upstream
that crashes mid-session; plus in-process checks of the modes, the limits and the options."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
from mcp import Client, StdioServerParameters
from mcp_types import ToolListChangedNotification

from gateway_helpers import free_port as _free_port
from gateway_helpers import result_data as _data
from gateway_helpers import result_text as _text
from gateway_helpers import run_bounded
from hyperplan.errors import HyperplanError
from hyperplan.integrations.mcp_gateway import GatewayConfig, Mode, build_gateway
from hyperplan.integrations.mcp_gateway.config import parse_http_address
from hyperplan.integrations.mcp_gateway.upstream import check_sources

BOOKSTORE = "python:hyperplan.examples.bookstore"
SECRET = "b-secret-4711"
TIMEOUT = 40.0
_T = TypeVar("_T")

CRASHY = textwrap.dedent('''
    """A tiny MCP server over stdio, raw JSON-RPC (starts in milliseconds): ping echoes,
    crash exits the process in the middle of the call."""
    import json, os, sys, time

    TOOLS = [
        {"name": "ping", "description": "Echo the text back.",
         "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                         "required": ["text"]},
         "annotations": {"readOnlyHint": True}},
        {"name": "crash", "description": "Exit the server process at once.",
         "inputSchema": {"type": "object", "properties": {"reason": {"type": "string"}}}},
        {"name": "slow", "description": "Take a minute to answer.",
         "inputSchema": {"type": "object", "properties": {}}},
    ]

    def answer(request, result=None, error=None):
        reply = {"jsonrpc": "2.0", "id": request["id"]}
        reply.update({"error": error} if error else {"result": result})
        sys.stdout.write(json.dumps(reply) + "\\n")
        sys.stdout.flush()

    for line in sys.stdin:
        request = json.loads(line)
        method = request.get("method")
        if "id" not in request:
            continue  # a notification
        if method == "initialize":
            answer(request, {"protocolVersion": request["params"]["protocolVersion"],
                             "capabilities": {"tools": {}},
                             "serverInfo": {"name": "crashy", "version": "1"}})
        elif method == "tools/list":
            answer(request, {"tools": TOOLS})
        elif method == "tools/call" and request["params"]["name"] == "ping":
            text = f"pong {request['params']['arguments']['text']} from {os.getpid()}"
            answer(request, {"content": [{"type": "text", "text": text}]})
        elif method == "tools/call" and request["params"]["name"] == "slow":
            time.sleep(60)
        elif method == "tools/call":
            os._exit(3)
        else:
            answer(request, error={"code": -32601, "message": f"no method {method}"})
''')


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One graph and embedding cache for the module: the bookstore's graph is built once."""
    return tmp_path_factory.mktemp("gateway-cache")


def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, "HYPERPLAN_CACHE_DIR": str(cache), "GATEWAY_TEST_SECRET": SECRET}


def _serve_args(*args: str) -> list[str]:
    return ["-m", "hyperplan", "serve", "--embedder", "hashing", "--call-timeout", "20", *args]


def _gateway(cache: Path, *args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=_serve_args(*args),
                                 env=_env(cache))


def _run(make: Callable[[], Awaitable[_T]]) -> _T:
    return run_bounded(make, TIMEOUT)


async def _ready_find(client: Client, request: str, **extra: Any) -> dict[str, Any]:
    """find_tools, repeated until the graph is ready (the first answers may be BM25)."""
    deadline = time.monotonic() + 30
    while True:
        data = _data(await client.call_tool("find_tools", {"request": request, **extra}))
        if data["method"] == "context-graph+doe" or time.monotonic() > deadline:
            assert data["ready"], data["notes"]
            return data
        assert data["method"] == "bm25" and "BM25" in data["notes"][0]  # says so
        assert "failed" not in data["notes"][0], data["notes"][0]
        await asyncio.sleep(0.2)


def test_search_mode_end_to_end(cache: Path) -> None:
    """find_tools returns MCP definitions with reasons, chain and tokens; call_tool forwards
    and feeds the state; bad input is a clear tool error and the gateway keeps serving."""

    async def scenario() -> None:
        async with Client(_gateway(cache, BOOKSTORE), read_timeout_seconds=TIMEOUT) as client:
            assert {t.name for t in (await client.list_tools()).tools} == {"find_tools",
                                                                           "call_tool"}
            found = await _ready_find(client, "log in, add the book Dune to a cart and pay")
            names = [t["name"] for t in found["tools"]]
            assert {"login", "add_to_cart", "checkout"} <= set(names)
            tool = found["tools"][names.index("add_to_cart")]
            assert tool["inputSchema"]["required"] == ["book_id", "access_token"]
            assert tool["why"] and tool["tokens"] > 0 and found["tokens"] > 0
            assert found["all_tokens"] >= found["tokens"] and found["chain"]
            assert any(r["input"] == "book_id" and r["from"] == "search_books"
                       for step in found["chain"] for r in step["reads"])
            # a known value: no tool is proposed as its producer any more
            held = _data(await client.call_tool("find_tools", {
                "request": "log in, add the book Dune to a cart and pay", "known": ["book_id"]}))
            assert not any("supplies book_id" in t["why"] for t in held["tools"])
            assert not any(r["input"] == "book_id" for step in held["chain"]
                           for r in step["reads"])

            login = await client.call_tool("call_tool", {
                "name": "login", "arguments": {"username": "alice", "password": "open sesame"}})
            token = _data(login)["access_token"]
            after = _data(await client.call_tool("find_tools", {
                "request": "add the book Dune to a cart"}))
            # its output is held: login is no producer any more, at most a place of the
            # budget filled by similarity, after every tool the request needs
            after_names = [t["name"] for t in after["tools"]]
            assert "login" not in after_names or (
                after_names[-1] == "login"
                and after["tools"][-1]["why"] == "similar to the request")
            assert any("access_token" in h for h in after["held"])

            bad = await client.call_tool("call_tool", {"name": "add_to_cart",
                                                       "arguments": {"book_id": 7}})
            assert bad.is_error and "add_to_cart" in _text(bad)
            assert "access_token" in _text(bad) or "string" in _text(bad)
            unknown = await client.call_tool("call_tool", {"name": "add_to_basket",
                                                           "arguments": {}})
            assert unknown.is_error and "add_to_basket" in _text(unknown)
            assert "find_tools" in _text(unknown)
            not_ours = await client.call_tool("login", {"username": "a", "password": "b"})
            assert not_ours.is_error and "call_tool" in _text(not_ours)

            big = "x" * (1 << 20)  # 1 MB requests
            too_long = await client.call_tool("find_tools", {"request": big})
            assert too_long.is_error and "limit" in _text(too_long)
            too_big = await client.call_tool("call_tool", {"name": "search_books",
                                                           "arguments": {"query": big}})
            assert too_big.is_error and "not forwarded" in _text(too_big)

            leaked = await client.call_tool("call_tool", {
                "name": "add_to_cart", "arguments": {"book_id": SECRET, "access_token": token}})
            assert leaked.is_error and SECRET not in _text(leaked) and "***" in _text(leaked)

            still = await client.call_tool("call_tool", {"name": "search_books",
                                                         "arguments": {"query": "dune"}})
            assert not still.is_error and json.loads(_text(still)) == ["b1", "b3"]

    _run(scenario)


def test_narrow_mode_announces_list_changes(cache: Path) -> None:
    """narrow, 2026-07-28 client (what the SDK speaks by default): tools/list is find_tools
    plus the selection, list_changed arrives on the subscriptions/listen stream after
    find_tools and after a call that changes the state, a tool not selected is refused."""

    async def scenario() -> None:
        async with Client(_gateway(cache, "--mode", "narrow", BOOKSTORE),
                          read_timeout_seconds=TIMEOUT) as client:
            assert client.protocol_version == "2026-07-28"
            events: asyncio.Queue[object] = asyncio.Queue()
            async with _listening(client, events):
                assert [t.name for t in (await client.list_tools()).tools] == ["find_tools"]
                refused = await client.call_tool("checkout", {"cart_id": "c1",
                                                              "access_token": "t"})
                assert refused.is_error and "checkout" in _text(refused)
                assert "find_tools" in _text(refused) and "not forwarded" in _text(refused)

                found = await _ready_find(client, "add the book Dune to a cart")
                await asyncio.wait_for(events.get(), 10)  # list_changed
                listed = [t.name for t in (await client.list_tools()).tools]
                assert listed[0] == "find_tools" and "login" in listed
                assert listed[1:] == found["listed"]
                login = next(t for t in (await client.list_tools()).tools
                             if t.name == "login")
                assert login.input_schema["required"] == ["username", "password"]
                _drain(events)

                ok = await client.call_tool("login", {"username": "alice",
                                                      "password": "open sesame"})
                assert not ok.is_error and "tok-alice" in _text(ok)
                await asyncio.wait_for(events.get(), 10)  # login's output is held now
                assert "login" not in [t.name for t in (await client.list_tools()).tools]

                bad = await client.call_tool("add_to_cart", {"book_id": ["b1"]})
                assert bad.is_error and "add_to_cart" in _text(bad)

    _run(scenario)


def test_narrow_mode_handshake_client_gets_the_notification(cache: Path) -> None:
    """A client on the older handshake protocol (initialize, like Hermes' pinned mcp 1.26)
    receives notifications/tools/list_changed on its connection."""

    async def scenario() -> None:
        changed = asyncio.Event()

        async def on_message(message: object) -> None:
            if isinstance(message, ToolListChangedNotification):
                changed.set()

        async with Client(_gateway(cache, "--mode", "narrow", BOOKSTORE), mode="legacy",
                          message_handler=on_message, read_timeout_seconds=TIMEOUT) as client:
            assert client.protocol_version != "2026-07-28"
            tools_cap = client.server_capabilities.tools
            assert tools_cap is not None and tools_cap.list_changed
            await _ready_find(client, "add the book Dune to a cart")
            await asyncio.wait_for(changed.wait(), 10)
            assert "login" in [t.name for t in (await client.list_tools()).tools]
            changed.clear()  # after a call: sent on the connection once selected again
            ok = await client.call_tool("login", {"username": "bo", "password": "open sesame"})
            assert not ok.is_error, _text(ok)
            await asyncio.wait_for(changed.wait(), 10)
            assert "login" not in [t.name for t in (await client.list_tools()).tools]

    _run(scenario)


@asynccontextmanager
async def _listening(client: Client, events: asyncio.Queue[object]) -> AsyncIterator[None]:
    """A subscriptions/listen stream for tools/list_changed, its events put on ``events``."""
    ready = asyncio.Event()

    async def listen() -> None:
        async with client.listen(tools_list_changed=True) as subscription:
            ready.set()
            async for event in subscription:
                events.put_nowait(event)

    task = asyncio.ensure_future(listen())
    await asyncio.wait_for(ready.wait(), 10)
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def _drain(events: asyncio.Queue[object]) -> None:
    while not events.empty():
        events.get_nowait()


def _git_python() -> str | None:
    """An interpreter with mcp-server-git: $HYPERPLAN_GIT_MCP_PYTHON, this one, or the
    separate venv docs/benchmarks.md used."""
    for candidate in (os.environ.get("HYPERPLAN_GIT_MCP_PYTHON"),):
        if candidate:
            return candidate
    if importlib.util.find_spec("mcp_server_git") is not None:
        return sys.executable
    venv = Path("/tmp/gitmcp-venv/bin/python")
    return str(venv) if venv.exists() else None


def test_third_party_upstream_mcp_server_git(tmp_path: Path, cache: Path) -> None:
    """The reference Git MCP server behind the gateway: its tools are found with their real
    schemas, a call runs on a real repository, a schema violation is not forwarded."""
    python = _git_python()
    if python is None:
        message = "mcp-server-git is not installed (pip install mcp-server-git==2026.10.19)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.txt").write_text("hello\n")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True)
    (repo / "b.txt").write_text("new\n")
    source = f"mcp-server:{python} -m mcp_server_git"

    async def scenario() -> None:
        async with Client(_gateway(cache, source),
                          read_timeout_seconds=TIMEOUT) as client:
            found = await _ready_find(client, "show the working tree status of the repository")
            names = [t["name"] for t in found["tools"]]
            assert "git_status" in names
            status = found["tools"][names.index("git_status")]
            assert "repo_path" in status["inputSchema"]["properties"]
            result = await client.call_tool("call_tool", {"name": "git_status",
                                                          "arguments": {"repo_path": str(repo)}})
            assert not result.is_error, _text(result)
            assert "b.txt" in _text(result)
            log = await client.call_tool("call_tool", {"name": "git_log",
                                                       "arguments": {"repo_path": str(repo)}})
            assert not log.is_error and "first" in _text(log)
            bad = await client.call_tool("call_tool", {"name": "git_status", "arguments": {}})
            assert bad.is_error and "repo_path" in _text(bad)

    _run(scenario)


def test_upstream_crash_mid_session(tmp_path: Path, cache: Path) -> None:
    """An upstream that exits mid-call: that call is a tool error saying so (not repeated),
    the gateway keeps serving and the next call starts the upstream again. A call past the
    deadline (--call-timeout) is an error at the deadline: outcome unknown, not re-sent."""
    server = tmp_path / "crashy.py"
    server.write_text(CRASHY)
    source = f"mcp-server:{sys.executable} {server}"

    async def scenario() -> None:
        async with Client(_gateway(cache, "--call-timeout", "3", source),
                          read_timeout_seconds=TIMEOUT) as client:
            first = _text(await client.call_tool("call_tool", {
                "name": "ping", "arguments": {"text": "a"}}))
            crashed = await client.call_tool("call_tool", {"name": "crash",
                                                           "arguments": {"reason": "test"}})
            assert crashed.is_error
            assert "exited or closed the connection" in _text(crashed)
            assert "starts it again" in _text(crashed)
            again = _text(await client.call_tool("call_tool", {
                "name": "ping", "arguments": {"text": "b"}}))
            assert again.startswith("pong b")
            assert again.split()[-1] != first.split()[-1]  # a new process
            assert {t.name for t in (await client.list_tools()).tools} == {"find_tools",
                                                                           "call_tool"}
            started = time.monotonic()
            slow = await client.call_tool("call_tool", {"name": "slow", "arguments": {}})
            assert slow.is_error and "no result after 3 s" in _text(slow)
            assert "not re-sent" in _text(slow) and time.monotonic() - started < 15

    _run(scenario)


def test_unknown_upstream_command_fails_at_start(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, *_serve_args("mcp-server:no-such-server-xyz")],
                            capture_output=True, text=True, timeout=60, env=_env(tmp_path),
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "no-such-server-xyz" in lines[0], result.stderr
    assert result.stdout == ""


def test_streamable_http_both_client_generations(cache: Path) -> None:
    """--http: loopback, both protocol generations, list_changed to a handshake client."""
    port = _free_port()
    process = subprocess.Popen([sys.executable, *_serve_args("--http", str(port), "--mode",
                                                             "narrow", BOOKSTORE)],
                               env=_env(cache), stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/mcp"

    async def scenario() -> None:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert process.poll() is None, process.communicate()[1]
                assert time.monotonic() < deadline
                await asyncio.sleep(0.2)
        changed = asyncio.Event()

        async def on_message(message: object) -> None:
            if isinstance(message, ToolListChangedNotification):
                changed.set()

        async with Client(url, mode="legacy", message_handler=on_message,
                          read_timeout_seconds=TIMEOUT) as legacy:
            await _ready_find(legacy, "log in to the bookstore")
            await asyncio.wait_for(changed.wait(), 10)
            assert "login" in [t.name for t in (await legacy.list_tools()).tools]
        async with Client(url, read_timeout_seconds=TIMEOUT) as modern:
            assert modern.protocol_version == "2026-07-28"
            found = _data(await modern.call_tool("find_tools", {"request": "pay for my cart"}))
            assert "checkout" in found["listed"]

    try:
        _run(scenario)
    finally:
        process.terminate()
        process.communicate(timeout=20)


# in-process: options, checks and the modes without a server ---------------------------


def test_http_address_is_loopback_unless_allowed() -> None:
    assert parse_http_address("8765").url == "http://127.0.0.1:8765/mcp"
    assert parse_http_address("[::1]:80").host == "::1"
    assert parse_http_address("localhost:1").host == "localhost"
    with pytest.raises(HyperplanError, match="not a loopback address"):
        parse_http_address("0.0.0.0:8765")
    assert parse_http_address("0.0.0.0:8765", allow_remote=True).host == "0.0.0.0"
    for bad in ("x", "host:port", "[::1]", "1:99999"):
        with pytest.raises(HyperplanError):
            parse_http_address(bad)


def test_sources_checked_before_serving() -> None:
    with pytest.raises(HyperplanError, match="no command 'nope-xyz'"):
        check_sources(["mcp-server:nope-xyz --flag"])
    with pytest.raises(HyperplanError, match="no module named"):
        check_sources(["python:hyperplan.no_such_module"])
    with pytest.raises(HyperplanError, match="acts on the host"):
        check_sources(["python:shutil"])
    with pytest.raises(HyperplanError, match="no such file"):
        check_sources(["openapi:/no/such/file.yaml"])
    with pytest.raises(HyperplanError, match="unknown tool source"):
        check_sources(["bogus:thing"])
    check_sources([BOOKSTORE, "demo"])


def test_modes_before_the_graph_is_ready() -> None:
    """Until the background build is done, find_tools is a BM25 search that says so; narrow
    mode lists what it found; limits and wrong argument types are clear errors."""
    gateway = build_gateway([BOOKSTORE], GatewayConfig(mode=Mode.NARROW, embedder="hashing",
                                                       cache_dir=None))
    try:
        assert not gateway.service.ready  # never started here
        conv = gateway.table.open("test")
        assert conv is not None
        conv.bound = True  # as a stdio connection's conversation
        reply = gateway.call(conv, "find_tools", {"request": "search books by title"})
        data = json.loads(reply.text)
        assert data["method"] == "bm25" and not data["ready"] and reply.list_changed
        assert "BM25" in data["notes"][0] and data["tools"][0]["name"] == "search_books"
        assert data["notes"][0].endswith("(call find_tools again in a moment)")
        assert data["tools"][0]["reason"] == "keyword"  # the host's Reason.KEYWORD
        assert [d["name"] for d in gateway.list_tools(conv)][:2] == ["find_tools",
                                                                      "search_books"]
        hit = gateway.call(conv, "search_books", {"query": "emma"})
        assert not hit.is_error and json.loads(hit.text) == ["b2"]
        assert conv.state()["calls"][0]["tool"] == "search_books"  # kept for the session
        for args, needle in (({"request": 3}, "non-empty string"),
                             ({"request": "x", "budget": 0}, "budget"),
                             ({"request": "x", "known": "id"}, "list of strings"),
                             ({"request": "x", "extra": 1}, "unknown argument")):
            bad = gateway.call(conv, "find_tools", args)
            assert bad.is_error and needle in bad.text, bad.text
    finally:
        gateway.upstream.close()


def test_large_catalogs_build_in_a_child_process(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A big catalog's graph is built in a child process into the cache, then read here."""
    from hyperplan.integrations.mcp_gateway import selection
    from hyperplan.integrations.mcp_gateway.upstream import load_upstream

    monkeypatch.setattr(selection, "CHILD_BUILD_TOOLS", 1)
    upstream = load_upstream([BOOKSTORE])
    try:
        service = selection.SelectionService(upstream.catalog, embedder="hashing",
                                             cache_dir=tmp_path)
        service.start()
        assert service.wait(60) and service.ready, service.status()
        assert not service.from_cache and list(tmp_path.glob("*/graph.json"))
        found = selection.Conversation(service).find("add the book Dune to a cart")
        assert found.method == "context-graph+doe" and "add_to_cart" in found.names
    finally:
        upstream.close()


def test_a_one_tool_catalog_gets_its_graph_and_the_old_names_warn() -> None:
    """The gateway builds even one tool's graph (the host's pool, min_tools=1), and the names
    its selection module had before it answered with hyperplan.select.Selection still import,
    with a DeprecationWarning."""
    from hyperplan.catalog import ToolSpec, build_catalog
    from hyperplan.integrations.mcp_gateway import selection
    from hyperplan.select import Selection

    catalog = build_catalog([ToolSpec(name="echo", description="Echo a text back.",
                                      input_schema={"type": "object", "properties": {
                                          "text": {"type": "string"}}})], source="test")
    service = selection.SelectionService(catalog, embedder="hashing", cache_dir=None)
    service.start()
    assert service.wait(60) and service.ready, service.status()
    found = selection.Conversation(service).find("echo some text")
    assert found.method == "context-graph+doe" and found.names == ["echo"]
    with pytest.warns(DeprecationWarning, match="hyperplan.select.Selection"):
        assert selection.Found is Selection
