"""The gateway's conversations and call limits (issue 36, items 1 and 4): default SDK clients
over HTTP never share state, a made-up token reads nothing, the table's bounds never evict a
live conversation, one client's flood of slow calls neither stalls another client's
``find_tools`` nor queues a call past its deadline, and a ``python:`` tool that ignores its
deadline is killed (the subprocess sandbox is the default). Every gateway here is a real
``hyperplan serve --http`` on 127.0.0.1, stopped by its PID."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TypeVar

import pytest
from mcp import Client

from gateway_helpers import free_port, result_data, result_text, run_bounded
from hyperplan.integrations.host import Conversation as HostConversation
from hyperplan.integrations.mcp_gateway.config import ConversationLimits
from hyperplan.integrations.mcp_gateway.conversations import (
    CONVERSATION_META,
    Conversation,
    ConversationTable,
)
from hyperplan.integrations.mcp_gateway.selection import SelectionService

BOOKSTORE = "python:hyperplan.examples.bookstore"
TIMEOUT = 60.0
_T = TypeVar("_T")

SLOW_SERVER = textwrap.dedent('''
    """Raw JSON-RPC stdio MCP server: 'slow' never answers, 'ping' answers at once. Requests
    are served on threads, so a slow call does not block the others."""
    import json, sys, threading, time

    TOOLS = [{"name": "slow", "description": "Take a minute.",
              "inputSchema": {"type": "object", "properties": {}}},
             {"name": "ping", "description": "Answer pong.",
              "inputSchema": {"type": "object", "properties": {}},
              "annotations": {"readOnlyHint": True}}]
    lock = threading.Lock()

    def answer(request, result):
        with lock:
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"],
                                         "result": result}) + "\\n")
            sys.stdout.flush()

    def handle(request):
        method = request.get("method")
        if method == "initialize":
            answer(request, {"protocolVersion": request["params"]["protocolVersion"],
                             "capabilities": {"tools": {}},
                             "serverInfo": {"name": "slowpoke", "version": "1"}})
        elif method == "tools/list":
            answer(request, {"tools": TOOLS})
        elif method == "tools/call" and request["params"]["name"] == "slow":
            time.sleep(60)
        elif method == "tools/call":
            answer(request, {"content": [{"type": "text", "text": "pong"}]})
        else:
            with lock:
                sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "error":
                                             {"code": -32601, "message": "no"}}) + "\\n")
                sys.stdout.flush()

    for line in sys.stdin:
        request = json.loads(line)
        if "id" in request:
            threading.Thread(target=handle, args=(request,), daemon=True).start()
''')

RUNAWAY_TOOLS = textwrap.dedent('''
    """Tools for the sandbox test: one ignores every deadline, one answers at once."""


    def spin(rounds: int) -> int:
        """Count forever, whatever the deadline (a tool that never returns)."""
        n = 0
        while rounds >= 0:
            n += 1
        return n


    def echo(text: str) -> str:
        """Return the text."""
        return text
''')


def _run(make: Callable[[], Awaitable[_T]], limit: float = TIMEOUT) -> _T:
    return run_bounded(make, limit)


@asynccontextmanager
async def _gateway(tmp_path: Path, *args: str,
                   pythonpath: Path | None = None) -> AsyncIterator[tuple[str, int]]:
    """A real ``hyperplan serve --http`` on 127.0.0.1 (its URL and PID), stopped by PID."""
    port = free_port()
    env = {**os.environ, "HYPERPLAN_CACHE_DIR": str(tmp_path / "cache")}
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(pythonpath),
                                                           env.get("PYTHONPATH")]))
    process = subprocess.Popen(
        [sys.executable, "-m", "hyperplan", "serve", "--embedder", "hashing", "--http",
         str(port), *args], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert process.poll() is None, process.communicate()[1]
                assert time.monotonic() < deadline, "the gateway did not start"
                await asyncio.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp", process.pid
    finally:
        process.terminate()
        try:
            process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


async def _find(client: Client, request: str, **extra: Any) -> dict[str, Any]:
    return result_data(await client.call_tool("find_tools", {"request": request, **extra}))


async def _find_ready(client: Client, request: str, **extra: Any) -> dict[str, Any]:
    """``_find`` once the graph is ready (before, the BM25 answer holds no state), waiting
    at most TIMEOUT seconds for it."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        data = await _find(client, request, **extra)
        if data.get("ready") or time.monotonic() > deadline:
            return data
        await asyncio.sleep(0.2)


def test_default_http_clients_never_share_a_conversation(tmp_path: Path) -> None:
    """Two default (2026-07-28) SDK clients: B never sees A's held values, a made-up token
    starts an empty conversation under a new token, and A's state is intact after B."""

    async def scenario() -> None:
        async with _gateway(tmp_path, BOOKSTORE) as (url, _pid), \
                Client(url, read_timeout_seconds=TIMEOUT) as a, \
                Client(url, read_timeout_seconds=TIMEOUT) as b:
            assert a.protocol_version == "2026-07-28"
            first = await _find(a, "log in to the bookstore")
            token_a = first["conversation"]
            assert isinstance(token_a, str) and len(token_a) >= 32 and not first["held"]
            login = await a.call_tool("call_tool", {
                "name": "login", "arguments": {"username": "ann", "password": "open sesame"},
                "conversation": token_a})
            assert not login.is_error, result_text(login)
            assert (login.meta or {}).get(CONVERSATION_META) == token_a
            held_a = (await _find_ready(a, "add Dune to a cart", conversation=token_a))["held"]
            assert any("access_token" in h for h in held_a), held_a

            seen_b = await _find(b, "add Dune to a cart")
            assert seen_b["conversation"] not in (None, token_a) and not seen_b["held"]
            forged = "A" * 32
            made_up = await _find(b, "add Dune to a cart", conversation=forged)
            assert made_up["conversation"] not in (forged, token_a) and not made_up["held"]
            by_meta = await b.call_tool("find_tools", {"request": "add Dune to a cart"},
                                        meta={CONVERSATION_META: forged})
            assert not result_data(by_meta)["held"]
            # a call without a token is served and remembered nowhere
            stateless = await b.call_tool("call_tool", {
                "name": "login", "arguments": {"username": "bob", "password": "open sesame"}})
            assert not stateless.is_error and not (stateless.meta or {}).get(CONVERSATION_META)

            again = await _find(a, "add Dune to a cart", conversation=token_a)
            assert again["held"] == held_a and again["conversation"] == token_a
            via_meta = await a.call_tool("find_tools", {"request": "add Dune to a cart"},
                                         meta={CONVERSATION_META: token_a})
            assert result_data(via_meta)["held"] == held_a

    _run(scenario)


def test_narrow_mode_concurrent_clients_see_only_their_own_list(tmp_path: Path) -> None:
    """Ten default clients at budget 1 in narrow mode, each passing its token in _meta: no
    call is refused because another client's selection changed the list."""

    async def one(url: str, request: str, tool: str, args: dict[str, Any]) -> list[str]:
        problems: list[str] = []
        async with Client(url, read_timeout_seconds=TIMEOUT) as client:
            for _ in range(4):
                found = await _find(client, request, budget=1)
                meta = {CONVERSATION_META: found["conversation"]}
                listed = [t.name for t in (await client.list_tools(meta=meta)).tools]
                if listed != ["find_tools", found["listed"][0]]:
                    problems.append(f"listed {listed}, selected {found['listed']}")
                if found["listed"] != [tool]:
                    continue  # the selection itself is not under test here
                result = await client.call_tool(tool, args, meta=meta)
                if result.is_error:
                    problems.append(result_text(result))
        return problems

    async def scenario() -> None:
        async with _gateway(tmp_path, "--mode", "narrow", BOOKSTORE) as (url, _pid):
            jobs = [one(url, "search the catalogue for books by title", "search_books",
                        {"query": "dune"}) if i % 2 else
                    one(url, "log in to the bookstore with username and password", "login",
                        {"username": f"u{i}", "password": "open sesame"}) for i in range(10)]
            problems = [p for found in await asyncio.gather(*jobs) for p in found]
            assert problems == []

    _run(scenario, 120)


def test_conversation_table_bounds_never_evict_a_live_conversation() -> None:
    """A client at its bound is refused a new conversation (served stateless) instead of
    evicting anyone; idle conversations expire; a made-up token names nothing."""
    service = SelectionService.__new__(SelectionService)  # the table never touches it
    now = [0.0]
    table = ConversationTable(ConversationLimits(idle_seconds=10, per_client=3, total=5),
                              clock=lambda: now[0], make=lambda key: Conversation(
                                  service, HostConversation(key=key)))
    victim = table.open("victim")
    assert victim is not None and victim.token
    flood = [table.open("attacker") for _ in range(1_001)]
    assert sum(c is not None for c in flood) == 3  # its own bound, nobody evicted
    assert table.get(victim.token) is victim
    assert table.get("made-up-token") is None and table.get(None) is None
    other = table.open("other")
    assert other is not None and table.open("third") is None  # the gateway's bound: 5
    now[0] = 8.0
    assert table.get(victim.token) is victim  # used at 8: lives until 18
    now[0] = 12.0  # the attacker's and other's conversations (unused since 0) expired
    assert table.get(other.token) is None and len(table) == 1
    assert table.open("attacker") is not None
    now[0] = 30.0
    assert table.get(victim.token) is None and len(table) == 0


def test_a_modern_request_cannot_name_a_session() -> None:
    """Over HTTP a 2026-07-28 request has no session: an Mcp-Session-Id it carries (a
    victim's or a made-up one) is ignored; a handshake-era request's is the SDK-checked
    session; stdio is one connection."""
    from hyperplan.integrations.mcp_gateway.binding import client_of as _client_of
    from hyperplan.integrations.mcp_gateway.binding import session_of as _session_of

    def ctx(version: str, headers: dict[str, str] | None) -> Any:
        request = None if headers is None else SimpleNamespace(
            headers=headers, client=SimpleNamespace(host="127.0.0.1"))
        return SimpleNamespace(request=request, protocol_version=version)

    assert _session_of(ctx("2026-07-28", {"mcp-session-id": "victim"})) is None
    assert _session_of(ctx("2025-11-25", {"mcp-session-id": "s1"})) == "http:s1"
    assert _session_of(ctx("2026-07-28", None)) == "stdio"
    a = _client_of(ctx("2026-07-28", {"authorization": "Bearer one"}))
    b = _client_of(ctx("2026-07-28", {"authorization": "Bearer two"}))
    assert a != b and "one" not in a and a.startswith("http:127.0.0.1:")


def test_a_flood_of_slow_calls_stalls_nobody(tmp_path: Path) -> None:
    """One client sends 6 calls that never finish (call timeout 3 s, 2 calls per upstream
    and per client): another client's find_tools answers at once, every call ends inside
    its deadline, and the calls that never got a slot are 'busy' and were never sent."""
    server = tmp_path / "slow_server.py"
    server.write_text(SLOW_SERVER, encoding="utf-8")

    async def scenario() -> None:
        async with _gateway(tmp_path, "--call-timeout", "3", "--max-calls-per-upstream", "2",
                            "--max-calls-per-client", "2",
                            f"mcp-server:{sys.executable} {server}") as (url, _pid), \
                Client(url, read_timeout_seconds=TIMEOUT) as a, \
                Client(url, read_timeout_seconds=TIMEOUT) as b:
            await _find(b, "ping the server")  # loaded

            async def timed_call() -> tuple[float, dict[str, Any]]:
                started = time.monotonic()
                result = await a.call_tool("call_tool", {"name": "slow", "arguments": {}})
                assert result.is_error
                return time.monotonic() - started, result.structured_content or {}

            flood = asyncio.gather(*(timed_call() for _ in range(6)))
            await asyncio.sleep(0.5)
            started = time.monotonic()
            await _find(b, "ping the server")
            assert time.monotonic() - started < 2.0
            ended = await flood
            assert max(seconds for seconds, _ in ended) < 3 + 2.5
            kinds = sorted(data["error_kind"] for _, data in ended)
            # two hold the slots until their deadline; the others are never sent (a call that
            # got a slot with little time left would be sent only with a second to go)
            assert set(kinds) == {"busy", "outcome_unknown"} and kinds.count("busy") >= 3, kinds
            assert all(not data["forwarded"] for _, data in ended
                       if data["error_kind"] == "busy")

    _run(scenario)


def test_python_tool_that_ignores_its_deadline_costs_nothing_after_it(tmp_path: Path) -> None:
    """Default sandbox: a python: tool spinning past its deadline is killed there; the
    gateway's CPU goes back to idle and the next call answers at once."""
    (tmp_path / "runaway_tools.py").write_text(RUNAWAY_TOOLS, encoding="utf-8")

    def cpu_seconds(pid: int) -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    async def scenario() -> None:
        async with _gateway(tmp_path, "--call-timeout", "2", "python:runaway_tools",
                            pythonpath=tmp_path) as (url, pid), \
                Client(url, read_timeout_seconds=TIMEOUT) as client:
            started = time.monotonic()
            spun = await client.call_tool("call_tool", {"name": "spin",
                                                        "arguments": {"rounds": 1}})
            assert spun.is_error and time.monotonic() - started < 2 + 3
            assert (spun.structured_content or {})["error_kind"] == "outcome_unknown"
            before = cpu_seconds(pid)
            await asyncio.sleep(1.5)
            assert cpu_seconds(pid) - before < 0.5  # nothing left spinning in the gateway
            started = time.monotonic()
            echo = await client.call_tool("call_tool", {"name": "echo",
                                                        "arguments": {"text": "hi"}})
            assert not echo.is_error and result_text(echo) == "hi"
            assert time.monotonic() - started < 2.0

    _run(scenario)


@pytest.mark.parametrize("spec", ["mcp-server:uvx mcp-server-git --repository /srv/x",
                                  "mcp-server:env TOKEN=abc npx -y @scope/server-memory"])
def test_clients_are_told_a_server_name_never_a_command_line(spec: str) -> None:
    from hyperplan.integrations.mcp_gateway.upstream import server_name

    name = server_name(spec)
    assert name.startswith("mcp-server:") and " " not in name
    assert "/srv" not in name and "abc" not in name


def test_narrow_list_is_stable_and_what_find_tools_returned_stays_callable() -> None:
    """Narrow mode: a new order of the same tools is no change (no list_changed); new tools
    are appended; a tool find_tools returned earlier is still callable after the list moved
    on, and a tool never selected is refused unsent."""
    from hyperplan.integrations.mcp_gateway import GatewayConfig, Mode, build_gateway
    from hyperplan.select import Selection
    from hyperplan.select.model import Reason, SelectedTool

    gateway = build_gateway([BOOKSTORE], GatewayConfig(mode=Mode.NARROW, embedder="hashing",
                                                       cache_dir=None))
    try:
        conv = gateway.table.open("test")
        assert conv is not None

        def found(*names: str) -> Selection:
            return Selection("r", tuple(SelectedTool(n, Reason.ANCHORED, 1.0, 1)
                                        for n in names))

        assert gateway._relist(conv, found("login", "search_books"))
        assert not gateway._relist(conv, found("search_books", "login"))  # order only
        assert conv.listed == ("login", "search_books")
        assert gateway._relist(conv, found("search_books", "add_to_cart"))
        assert conv.listed == ("search_books", "add_to_cart")
        hit = gateway.call(conv, "login", {"username": "ann", "password": "open sesame"})
        assert not hit.is_error, hit.text  # returned earlier: still callable
        never = gateway.call(conv, "checkout", {"cart_id": "c1", "access_token": "t"})
        assert never.is_error and "not forwarded" in never.text
    finally:
        gateway.upstream.close()
