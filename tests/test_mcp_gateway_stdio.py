"""The gateway's stdio transport (``hyperplan.integrations.mcp_gateway.stdio``, issue 36 item
6): every malformed request that carries an id is answered with that id, batches and
oversized lines are refused, a line that is not UTF-8 ends the session, nothing but JSON-RPC
reaches stdout, and good traffic of both protocol generations is served as the SDK serves it.

The transport is driven in-process through OS pipes with a tiny low-level SDK server, through
a subprocess with the official SDK client (both protocol generations), and end to end with
the real ``hyperplan serve`` over raw stdin/stdout.

Also here, from the same issue (item 3): the selection cache the gateway writes is private
(0700/0600) and holds the catalog's label, nothing of the environment; error texts of the
gateway's graph build, the OpenAI-compatible LLM client and embedder are redacted *then*
cut, so a secret placed across the cut never shows, not even in part."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.server.lowlevel import Server

from hyperplan.integrations.mcp_gateway import stdio

TIMEOUT = 20.0
BLOCK_SECONDS = 1.0
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "raw", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


# -- a tiny server and a raw client over pipes ---------------------------------------------


async def _list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    return types.ListToolsResult(tools=[types.Tool(name="echo", description="Echo the text.",
                                                   input_schema=schema)])


async def _call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name == "block":  # holds a thread of anyio's default pool for a while
        await anyio.to_thread.run_sync(time.sleep, BLOCK_SECONDS)
    text = str((params.arguments or {}).get("text", ""))
    if text == "lone surrogate":
        text = "\ud800"  # cannot be written as UTF-8
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def _server() -> Server[Any]:
    return Server("echo", on_list_tools=_list_tools, on_call_tool=_call_tool)


class _Raw:
    """The client end of two pipes: bytes in, JSON lines out (with timeouts)."""

    def __init__(self, to_server: int, from_server: int) -> None:
        self.to_server, self.from_server = to_server, from_server
        self._pending = b""
        self._threads = anyio.CapacityLimiter(2)  # not the default pool the server may fill

    async def send(self, data: bytes) -> None:
        await anyio.to_thread.run_sync(_write_all, self.to_server, data, limiter=self._threads)

    async def send_json(self, message: Any) -> None:
        await self.send(json.dumps(message).encode() + b"\n")

    async def reply(self, timeout: float = 5.0) -> dict[str, Any]:
        line = await anyio.to_thread.run_sync(self._line, timeout, limiter=self._threads)
        assert line is not None, "no reply (the client would hang)"
        value = json.loads(line)  # everything on the wire is JSON
        assert isinstance(value, dict) and value.get("jsonrpc") == "2.0", line
        return value

    def _line(self, timeout: float) -> bytes | None:
        deadline = time.monotonic() + timeout
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.from_server], [], [], left)[0]:
                return None
            chunk = os.read(self.from_server, 65536)
            if not chunk:
                return None
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line

    def at_eof(self, timeout: float = 5.0) -> bool:
        """True when the server closed its output without writing more."""
        if select.select([self.from_server], [], [], timeout)[0]:
            return os.read(self.from_server, 65536) == b"" and not self._pending
        return False


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


@asynccontextmanager
async def _served(**options: Any) -> AsyncIterator[tuple[_Raw, Callable[[], bool]]]:
    """The tiny server on :func:`stdio.stdio_server` over pipes; yields the raw client and
    whether the server has returned."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    stdin, stdout = os.fdopen(in_r, "rb"), os.fdopen(out_w, "wb")
    done = anyio.Event()
    server = _server()

    async def serve() -> None:
        async with stdio.stdio_server(stdin, stdout, **options) as (read, write):
            await server.run(read, write, server.create_initialization_options())
        done.set()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve)
            yield _Raw(in_w, out_r), done.is_set
            os.close(in_w)  # end of input: the server returns
            in_w = -1
            with anyio.fail_after(TIMEOUT):
                await done.wait()
    finally:
        if in_w >= 0:
            os.close(in_w)  # a reader thread still waiting sees the end and lets go
        stdin.close()
        stdout.close()
        os.close(out_r)


def _run(scenario: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        with anyio.fail_after(TIMEOUT):
            await scenario()
    anyio.run(bounded)


async def _initialize(raw: _Raw) -> None:
    await raw.send_json(INITIALIZE)
    assert "result" in await raw.reply()
    await raw.send_json(INITIALIZED)


async def _echo(raw: _Raw, request_id: int, text: str) -> None:
    """A good tools/call is served after whatever came before."""
    await raw.send_json({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                         "params": {"name": "echo", "arguments": {"text": text}}})
    reply = await raw.reply()
    assert reply["id"] == request_id and reply["result"]["content"][0]["text"] == text, reply


def _error(reply: dict[str, Any], request_id: Any, code: int) -> None:
    assert reply["id"] == request_id and reply["error"]["code"] == code, reply


# -- in-process: malformed traffic ---------------------------------------------------------


def test_malformed_requests_with_an_id_are_answered_with_it() -> None:
    """Wrong jsonrpc, an id of another type, params not an object, an unknown shape, no JSON
    at all: each answered (its id, else null); good calls keep being served."""

    async def scenario() -> None:
        async with _served() as (raw, _):
            await _initialize(raw)
            await raw.send_json({"jsonrpc": "1.0", "id": 7, "method": "tools/list"})
            _error(await raw.reply(), 7, types.INVALID_REQUEST)
            await raw.send_json({"jsonrpc": "2.0", "id": "s-8", "method": "tools/call",
                                 "params": [1, 2]})
            _error(await raw.reply(), "s-8", types.INVALID_REQUEST)
            await raw.send_json({"jsonrpc": "2.0", "id": 9, "shape": "unknown"})
            _error(await raw.reply(), 9, types.INVALID_REQUEST)
            await raw.send_json({"jsonrpc": "2.0", "id": {"an": "object"}, "method": "x"})
            _error(await raw.reply(), None, types.INVALID_REQUEST)
            for odd_id in (1.5, None):  # the SDK reads these as notifications
                await raw.send_json({"jsonrpc": "2.0", "id": odd_id, "method": "tools/list"})
                _error(await raw.reply(), None, types.INVALID_REQUEST)
            await raw.send(b'{"jsonrpc": "2.0", "id": 10, "method": "tools/list", \n')
            _error(await raw.reply(), 10, types.PARSE_ERROR)  # cut line: id recovered
            await raw.send(b"not json at all\n")
            _error(await raw.reply(), None, types.PARSE_ERROR)
            await raw.send(b"\n   \n")  # blank lines are skipped, not answered
            await _echo(raw, 11, "still here")

    _run(scenario)


def test_a_malformed_response_is_not_answered() -> None:
    """A broken *response* (result/error, no method) is never answered (no reply loops)."""

    async def scenario() -> None:
        async with _served() as (raw, _):
            await _initialize(raw)
            await raw.send_json({"jsonrpc": "2.0", "id": 3, "result": "not an object"})
            await _echo(raw, 4, "next")  # the first reply is the echo's

    _run(scenario)


def test_deep_nesting_is_answered_with_the_recovered_id() -> None:
    """100,000-deep nesting cannot be parsed; its top-level id is recovered by a bounded
    scan (also spelled with an escape); beyond the scan window the id is null."""

    async def scenario() -> None:
        deep = "[" * 100_000 + "]" * 100_000
        async with _served() as (raw, _):
            await _initialize(raw)
            line = '{"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {"a": DEEP}}'
            await raw.send(line.replace("DEEP", deep).encode() + b"\n")
            _error(await raw.reply(), 41, types.PARSE_ERROR)
            escaped = '{"params": {"x": DEEP}, "\\u0069d": "deep-42", "method": "m"}'
            await raw.send(escaped.replace("DEEP", deep).encode() + b"\n")
            _error(await raw.reply(), None, types.PARSE_ERROR)  # id after the scan window
            await raw.send(('{"\\u0069d": "deep-43", "p": ' + deep + "}").encode() + b"\n")
            _error(await raw.reply(), "deep-43", types.PARSE_ERROR)
            await _echo(raw, 44, "after nesting")

    _run(scenario)


def test_a_batch_gets_an_error_per_request_with_an_id() -> None:
    async def scenario() -> None:
        async with _served() as (raw, _):
            await _initialize(raw)
            await raw.send_json([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                 {"jsonrpc": "2.0", "method": "notifications/x"},
                                 {"jsonrpc": "2.0", "id": "two", "method": "ping"}])
            _error(await raw.reply(), 1, types.INVALID_REQUEST)
            _error(await raw.reply(), "two", types.INVALID_REQUEST)
            await raw.send_json([1, 2])
            _error(await raw.reply(), None, types.INVALID_REQUEST)
            await _echo(raw, 5, "after batches")

    _run(scenario)


def test_an_oversized_line_is_refused_without_buffering_it() -> None:
    """A line over the cap is answered (id recovered from its head) and skipped; the next
    line is served. The cap is small here; the default is 4 MiB like the HTTP body cap."""

    async def scenario() -> None:
        async with _served(max_line_bytes=64 * 1024) as (raw, _):
            await _initialize(raw)
            huge = {"jsonrpc": "2.0", "id": 77, "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": "x" * 1_000_000}}}
            await raw.send_json(huge)
            _error(await raw.reply(), 77, types.INVALID_REQUEST)
            just_fits = "y" * (60 * 1024)
            await _echo(raw, 78, just_fits)

    assert stdio.MAX_LINE_BYTES == 4 * 1024 * 1024
    _run(scenario)


def test_a_line_that_is_not_utf8_ends_the_session() -> None:
    """One PARSE_ERROR (id recovered), then the session ends: the server returns and
    nothing more is read (a real process exits, closing its stdout: the end-to-end test)."""

    async def scenario() -> None:
        async with _served() as (raw, finished):
            await _initialize(raw)
            await raw.send(b'{"jsonrpc": "2.0", "id": 12, "method": "\xff\xfe"}\n')
            _error(await raw.reply(), 12, types.PARSE_ERROR)
            with anyio.fail_after(5):
                while not finished():  # the server returned, as at the end of input
                    await anyio.sleep(0.01)
            await raw.send_json({"jsonrpc": "2.0", "id": 13, "method": "tools/list"})
            assert await anyio.to_thread.run_sync(raw._line, 0.5) is None  # nobody reads

    _run(scenario)


def test_an_unencodable_reply_becomes_an_error_for_its_request() -> None:
    """A result holding a lone surrogate cannot be written as UTF-8 JSON: its request gets
    an internal error and the transport keeps serving (the SDK's would die)."""

    async def scenario() -> None:
        async with _served() as (raw, _):
            await _initialize(raw)
            await raw.send_json({"jsonrpc": "2.0", "id": 21, "method": "tools/call", "params":
                                 {"name": "echo", "arguments": {"text": "lone surrogate"}}})
            _error(await raw.reply(), 21, types.INTERNAL_ERROR)
            await raw.send(b'{"jsonrpc": "2.0", "id": 23, "method": "tools/call", "params": '
                           b'{"name": "echo", "arguments": {"text": "\\ud800"}}}\n')
            _error(await raw.reply(), 23, types.INVALID_REQUEST)  # the SDK refuses it
            await _echo(raw, 22, "fine")

    _run(scenario)


def test_input_is_read_while_tool_calls_fill_the_thread_pool() -> None:
    """45 blocking calls take all 40 threads of anyio's default pool; a ping sent after them
    is still read and answered at once (the transport has threads of its own)."""

    async def scenario() -> None:
        async with _served() as (raw, _):
            await _initialize(raw)
            for k in range(45):
                await raw.send_json({"jsonrpc": "2.0", "id": 100 + k, "method": "tools/call",
                                     "params": {"name": "block", "arguments": {}}})
            await anyio.sleep(0.3)  # the calls have started
            started = time.monotonic()
            await raw.send_json({"jsonrpc": "2.0", "id": 1, "method": "ping"})
            reply = await raw.reply()
            assert reply == {"jsonrpc": "2.0", "id": 1, "result": {}}
            assert time.monotonic() - started < BLOCK_SECONDS / 2
            ids = {(await raw.reply(timeout=3 * BLOCK_SECONDS))["id"] for _ in range(45)}
            assert ids == set(range(100, 145))

    _run(scenario)


def test_scan_id_is_bounded_and_exact() -> None:
    scan = stdio._scan_id
    assert scan('{"a": {"id": 1}, "id": 2, ') == 2  # only the top level counts
    assert scan('{"a": "\\"id\\": 3", "id": "x"') == "x"  # an "id" inside a string is not
    assert scan('[{"id": 1}]') is None
    assert scan('{"id": 1.5, ') is None and scan('{"id": true') is None
    assert scan('{"id": 12345678901234567890123') is None  # not an exact integer id
    slow = '{"a": "' + '\\"' * 200_000  # an open string: one token, not a quadratic scan
    started = time.perf_counter()
    assert scan(slow) is None
    assert time.perf_counter() - started < 0.5


# -- good traffic, both generations, through a real process --------------------------------

ECHO_SERVER = textwrap.dedent('''
    import anyio, mcp_types as types
    from mcp.server.lowlevel import Server
    from hyperplan.integrations.mcp_gateway.stdio import stdio_server

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=[types.Tool(
            name="echo", description="Echo.", input_schema={"type": "object"})])

    async def call_tool(ctx, params):
        print("stray output of a handler")  # must not reach the wire
        text = str((params.arguments or {}).get("text", ""))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    async def main():
        server = Server("echo", on_list_tools=list_tools, on_call_tool=call_tool)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
''')


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_sdk_client_of_both_generations_is_served(tmp_path: Path, mode: str,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    """The official client, default (2026-07-28) and handshake era, over the process's real
    stdin/stdout; a handler's print goes to stderr, not onto the wire (the client logs no
    line it could not parse)."""
    script = tmp_path / "echo_server.py"
    script.write_text(ECHO_SERVER, encoding="utf-8")

    async def scenario() -> None:
        params = StdioServerParameters(command=sys.executable, args=[str(script)])
        async with Client(params, mode=mode, read_timeout_seconds=TIMEOUT) as client:
            if mode == "auto":
                assert client.protocol_version == "2026-07-28"
            else:
                assert client.protocol_version != "2026-07-28"
            assert [t.name for t in (await client.list_tools()).tools] == ["echo"]
            result = await client.call_tool("echo", {"text": "héllo ✓"})
            assert result.content[0].text == "héllo ✓"  # type: ignore[union-attr]

    _run(scenario)
    assert not [r for r in caplog.records if "parse" in r.getMessage()], caplog.text


def test_a_handlers_stray_print_never_reaches_the_wire(tmp_path: Path) -> None:
    """Over the process's real stdout: fd 1 is claimed, a handler's print goes to stderr,
    also when it sat in ``sys.stdout``'s buffer until the session ended."""
    script = tmp_path / "echo_server.py"
    script.write_text(ECHO_SERVER, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # print buffers
    process = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert process.stdin is not None and process.stdout is not None
    try:
        raw = _Raw(process.stdin.fileno(), process.stdout.fileno())

        async def scenario() -> None:
            await _initialize(raw)
            await _echo(raw, 1, "only JSON-RPC on stdout")  # the next line is the reply

        _run(scenario)
        process.stdin.close()
        assert process.wait(timeout=TIMEOUT) == 0
        assert process.stdout.read() == b""
        assert process.stderr is not None and b"stray output" in process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()  # this test's own process, by its handle
            process.wait()


# -- end to end: the real gateway over raw stdin/stdout ------------------------------------


def test_serve_stdio_uses_this_transport() -> None:
    """``GatewayServer.serve_stdio`` serves through :func:`stdio.stdio_server` (wired by the
    gateway's server module)."""
    import inspect

    from hyperplan.integrations.mcp_gateway import server

    source = inspect.getsource(server.GatewayServer.serve_stdio)
    assert "mcp.server.stdio" not in source and "stdio_server" in source, source


def test_real_gateway_answers_malformed_requests_over_stdio(tmp_path: Path) -> None:
    """``hyperplan serve`` with the bookstore, raw bytes on its stdin: every malformed request
    with an id is answered, good ones are served, a non-UTF-8 line ends it (exit 0)."""
    env = {**os.environ, "HYPERPLAN_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "hyperplan", "serve", "--embedder", "hashing",
               "python:hyperplan.examples.bookstore"]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=env)
    assert process.stdin is not None and process.stdout is not None
    try:
        raw = _Raw(process.stdin.fileno(), process.stdout.fileno())

        async def scenario() -> None:
            await raw.send_json(INITIALIZE)
            assert "result" in await raw.reply(timeout=TIMEOUT)
            await raw.send_json(INITIALIZED)
            await raw.send_json({"jsonrpc": "1.0", "id": 1, "method": "tools/list"})
            _error(await raw.reply(), 1, types.INVALID_REQUEST)
            await raw.send_json([{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}])
            _error(await raw.reply(), 2, types.INVALID_REQUEST)
            deep = "[" * 100_000 + "]" * 100_000
            await raw.send(('{"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": '
                            '{"x": ' + deep + "}}\n").encode())
            _error(await raw.reply(), 3, types.PARSE_ERROR)
            await raw.send_json({"jsonrpc": "2.0", "id": 4, "method": "tools/list"})
            listed = await raw.reply(timeout=TIMEOUT)
            assert {t["name"] for t in listed["result"]["tools"]} == {"find_tools", "call_tool"}
            await raw.send(b'{"jsonrpc": "2.0", "id": 5, "method": "\xc3("}\n')
            _error(await raw.reply(), 5, types.PARSE_ERROR)
            assert await anyio.to_thread.run_sync(raw.at_eof, TIMEOUT)

        _run(scenario)
        assert process.wait(timeout=TIMEOUT) == 0
    finally:
        if process.poll() is None:
            process.kill()  # this test's own process, by its handle
            process.wait()


# -- the selection cache the gateway writes: private, and no command line in it ------------


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_selection_cache_is_private_and_stores_only_the_catalogs_label(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Directories it creates 0700, files 0600 (whatever the umask), written by rename; the
    catalog's ``source`` is stored as the catalog carries it and nothing of the environment;
    an older entry with wide modes is tightened when read; a killed build's leftovers go."""
    from hyperplan.embed import get_embedder
    from hyperplan.select import cache
    from hyperplan.sources import load_source

    secret = "env-secret-value-8d1f0c"
    monkeypatch.setenv("CACHE_TEST_TOKEN", secret)
    loaded = load_source("python:hyperplan.examples.bookstore")
    catalog = loaded.model_copy(update={
        "source": "bookstore-server",
        "tools": [t.model_copy(update={"source": "bookstore-server"}) for t in loaded.tools]})
    store = tmp_path / "named-by-the-user"
    store.mkdir(mode=0o755)
    store.chmod(0o755)
    stale = store / ".building-killed"
    stale.mkdir()
    os.utime(stale, (0, 0))
    fresh = tmp_path / "fresh"
    embedder = get_embedder("hashing").name
    old = os.umask(0o002)  # a permissive umask must not widen anything
    try:
        graph, hit = cache.cached_build(catalog, get_embedder("hashing"), fresh / "a" / "b")
    finally:
        os.umask(old)
    assert not hit and [t.name for t in graph.tools] == catalog.names()
    for directory in (fresh, fresh / "a", fresh / "a" / "b"):
        assert _mode(directory) == 0o700, directory
    entry = cache.entry_path(fresh / "a" / "b", catalog, embedder)
    assert _mode(entry) == 0o700
    files = sorted(entry.iterdir())
    assert files and all(_mode(f) == 0o600 for f in files), [(f, oct(_mode(f))) for f in files]
    assert not list((fresh / "a" / "b").glob(".building-*"))
    document = json.loads((entry / "graph.json").read_text(encoding="utf-8"))
    assert document["metadata"]["source"] == "bookstore-server"
    assert {t["metadata"]["source"] for t in document["tools"]} == {"bookstore-server"}
    stored = b"".join(f.read_bytes() for f in files)
    assert secret.encode() not in stored
    leaked = [k for k, v in os.environ.items() if len(v) >= 12 and v.encode() in stored]
    assert not leaked, leaked

    for f in files:  # an entry of an older version: world-readable
        f.chmod(0o644)
    entry.chmod(0o755)
    _, hit = cache.cached_build(catalog, get_embedder("hashing"), fresh / "a" / "b")
    assert hit and _mode(entry) == 0o700 and all(_mode(f) == 0o600 for f in files)

    other = catalog.model_copy(update={"tools": catalog.tools[:2]})  # a new entry beside
    cache.cached_build(other, get_embedder("hashing"), store)
    assert not stale.exists()  # a killed build's leftovers are removed
    assert _mode(store) == 0o755  # a directory the user named is never changed
    assert _mode(cache.entry_path(store, other, embedder)) == 0o700


# -- redact, then cut: no part of a secret across a cut ------------------------------------

SPLIT_SECRET = "sk-split-7d0c41e9b2a8f3"


def _leaks(text: str, secret: str = SPLIT_SECRET) -> list[str]:
    """The pieces (6 characters or more) of ``secret`` that appear in ``text``."""
    return [secret[i:i + 6] for i in range(len(secret) - 5) if secret[i:i + 6] in text]


def _straddling(limit: int, prefix: str = "") -> list[str]:
    """Texts that put the secret across the cut at ``limit`` at every offset."""
    return [prefix + "x" * (limit - len(prefix) - shift) + SPLIT_SECRET + " tail"
            for shift in range(1, len(SPLIT_SECRET))]


@pytest.fixture
def split_secret() -> Iterator[str]:
    from hyperplan.secrets import SECRETS, register_secret

    register_secret(SPLIT_SECRET)
    yield SPLIT_SECRET
    SECRETS.clear()


def test_build_failure_line_is_redacted_then_cut(split_secret: str) -> None:
    from hyperplan.integrations.mcp_gateway.build import failure_line

    for text in _straddling(500, "RuntimeError: "):
        line = failure_line(RuntimeError(text.removeprefix("RuntimeError: ")))
        assert len(line) <= 503 and not _leaks(line), line[-40:]
    assert "***" in failure_line(RuntimeError("key " + split_secret + "\nnext line"))


class _ErrorServer:
    """An HTTP server on 127.0.0.1 answering every POST with a 400 and the body queued."""

    def __init__(self) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        bodies = self.bodies = [""]

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", "0")))
                data = json.dumps({"error": {"message": bodies[0]}}).encode()
                self.send_response(400)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def error_server() -> Iterator[_ErrorServer]:
    server = _ErrorServer()
    yield server
    server.close()


def test_llm_error_text_is_redacted_then_cut(split_secret: str,
                                            error_server: _ErrorServer) -> None:
    """The server's error body, quoted in the LLMError, never shows part of a secret that
    the 500-character cut falls across (wherever the cut falls)."""
    from hyperplan.llm import LLMError, Message
    from hyperplan.llm.openai_client import OpenAICompatibleLLM

    llm = OpenAICompatibleLLM("m", base_url=error_server.url, api_key="k-test-000000",
                              max_retries=0)
    try:
        seen = 0
        for body in _straddling(500) + _straddling(450) + _straddling(400):
            error_server.bodies[0] = body
            with pytest.raises(LLMError) as info:
                llm.complete([Message.user("hello")])
            assert not _leaks(str(info.value)), str(info.value)[-80:]
            seen += "***" in str(info.value)
        assert seen  # the secret is in the quoted part for some of them, redacted
    finally:
        llm.close()


def test_embedding_error_text_is_redacted_then_cut(split_secret: str,
                                                  error_server: _ErrorServer) -> None:
    """As for the LLM: the 300-character quote of the embedding server's error body."""
    from hyperplan.embed.openai_compat import OpenAIEmbedder
    from hyperplan.errors import EmbeddingError

    embedder = OpenAIEmbedder("m", base_url=error_server.url, api_key="k-test-000000")
    seen = 0
    for body in _straddling(300) + _straddling(280):
        error_server.bodies[0] = body
        with pytest.raises(EmbeddingError) as info:
            embedder.embed(["a text"])
        assert not _leaks(str(info.value)), str(info.value)[-80:]
        seen += "***" in str(info.value)
    assert seen
