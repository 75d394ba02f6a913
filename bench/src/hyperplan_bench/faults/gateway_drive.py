"""How the gateway section of ``hyperplan bench faults`` drives ``hyperplan serve`` (issue 36):
the real command as a step of the case (:meth:`~hyperplan_bench.faults.runner.CaseContext.spawn`),
talked to over its stdin and stdout (:class:`StdioPipe`, and :func:`pipe_transport` for the
official SDK client) or over ``--http`` on a loopback address (:func:`start_http`; the SDK
client in its default mode, or raw requests with any header, :func:`raw_post`).

Everything a client receives is recorded: over stdio the step's stdout is what the client
read; over HTTP the case keeps the texts in :class:`Seen` and hands them to the verdict as
places to search for secrets.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import queue
import socket
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage

from hyperplan.integrations.mcp_gateway.load_process import free_port
from hyperplan_bench.faults.runner import CaseContext, Running
from hyperplan_bench.faults.verdict import Step

SECRET_ENV = "GATEWAY_TEST_TOKEN"  # the credential-named variable the gateway registers
CONVERSATION_META = "io.hyperplan/conversation"
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
START_S = 40.0  # a gateway's time to listen (the interpreter, the SDK, the upstream's start)
CLIENT_S = 40.0  # a whole client scenario
_T = TypeVar("_T")


def serve_args(ctx: CaseContext, *sources: str, mode: str = "search",
               call_timeout: float = 5.0, extra: Sequence[str] = ()) -> list[str]:
    """``serve`` with the hashing embedder, a cache in the case's directory, ``extra``."""
    return ["serve", "--embedder", "hashing", "--call-timeout", f"{call_timeout:g}",
            "--cache-dir", str(ctx.work / "cache"), "--mode", mode, *extra, *sources]


def run_async(make: Callable[[], Awaitable[_T]], limit: float = CLIENT_S) -> _T:
    """Run a client scenario to its end, at most ``limit`` seconds."""
    async def bounded() -> _T:
        return await asyncio.wait_for(make(), limit)
    return asyncio.run(bounded())


# -- what the clients received ---------------------------------------------------------------

@dataclass
class Seen:
    """Every text a client of the case received (searched for secrets by the verdict)."""

    texts: list[str] = field(default_factory=list)

    def add(self, text: str) -> str:
        self.texts.append(text)
        return text

    def places(self) -> dict[str, str]:
        return {"what the clients received": "\n".join(self.texts)}


@dataclass(frozen=True)
class Answer:
    """A ``tools/call`` result as the client saw it."""

    text: str
    is_error: bool
    data: dict[str, Any] | None  # the text as a JSON object, else the structured content
    token: str | None  # the conversation token it carried (JSON ``conversation`` or _meta)

    @property
    def kind(self) -> str | None:
        value = (self.data or {}).get("error_kind")
        return value if isinstance(value, str) else None


def answer_of(result: types.CallToolResult, seen: Seen) -> Answer:
    text = "\n".join(getattr(block, "text", "") or "" for block in result.content)
    seen.add(result.model_dump_json(by_alias=True))
    data: Any = None
    with suppress(ValueError):
        data = json.loads(text)
    if not isinstance(data, dict):
        data = result.structured_content if isinstance(result.structured_content, dict) else None
    token = data.get("conversation") if data else None
    meta = result.meta or {}
    token = token if isinstance(token, str) else meta.get(CONVERSATION_META)
    return Answer(text, bool(result.is_error), data,
                  token if isinstance(token, str) and token else None)


async def call(client: Client, seen: Seen, name: str, arguments: dict[str, Any],
               token: str | None = None) -> Answer:
    """``tools/call`` through the SDK client, the conversation token (if any) in _meta."""
    meta = {CONVERSATION_META: token} if token else None
    result = await client.call_tool(name, arguments, meta=meta)  # type: ignore[arg-type]
    return answer_of(result, seen)


async def list_names(client: Client, seen: Seen, token: str | None = None) -> list[str]:
    meta = {CONVERSATION_META: token} if token else None
    listed = await client.list_tools(meta=meta)  # type: ignore[arg-type]
    seen.add(listed.model_dump_json(by_alias=True))
    return [tool.name for tool in listed.tools]


async def graph_ready(client: Client, seen: Seen, limit: float = 20.0) -> bool:
    """Wait until ``find_tools`` answers from the built graph (before, it is a BM25 search
    that uses no state): asked by a client of its own, with no token."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        found = await call(client, seen, "find_tools", {"request": "warm up"})
        if (found.data or {}).get("method") not in ("bm25", None):
            return True
        await asyncio.sleep(0.2)
    return False


def held(answer: Answer) -> list[str]:
    """The ``held`` values a ``find_tools`` answer reports."""
    values = (answer.data or {}).get("held") or []
    return [str(v) for v in values] if isinstance(values, list) else [str(values)]


# -- HTTP ------------------------------------------------------------------------------------

@dataclass
class HttpGateway:
    """A gateway listening on ``host:port`` (``None`` running: it never listened)."""

    running: Running | None
    host: str
    port: int
    step: Step | None = None  # the recorded step when it ended before listening

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/mcp"


def start_http(ctx: CaseContext, args: Sequence[str], *, host: str = "127.0.0.1",
               spelling: str | None = None, env: Mapping[str, str] | None = None,
               expect: Sequence[int] = (0,)) -> HttpGateway:
    """``serve ARGS --http SPELLING:PORT`` until it listens on ``host`` (or ends)."""
    port = free_port(host)
    address = f"{spelling or host}:{port}"
    running = ctx.spawn(*args, "--http", address, env=env, expect=expect)
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if running.proc.poll() is not None:
            return HttpGateway(None, host, port, ctx.finish(running))
        with suppress(OSError), socket.create_connection((host, port), timeout=0.5):
            return HttpGateway(running, host, port)
        time.sleep(0.05)
    return HttpGateway(None, host, port, ctx.stop(running))


@asynccontextmanager
async def http_client(url: str, headers: Mapping[str, str] | None = None,
                      mode: str = "auto") -> AsyncIterator[Client]:
    """The SDK client over streamable HTTP (its default mode unless ``mode``), with extra
    ``headers`` on every request if given."""
    if headers:
        transport = streamable_http_client(url, http_client=httpx2.AsyncClient(
            headers=dict(headers), timeout=httpx2.Timeout(CLIENT_S)))
        async with Client(transport, mode=mode, read_timeout_seconds=CLIENT_S) as client:
            yield client
        return
    async with Client(url, mode=mode, read_timeout_seconds=CLIENT_S) as client:
        yield client


@dataclass(frozen=True)
class RawReply:
    status: int
    headers: dict[str, str]
    body: str
    messages: list[dict[str, Any]]  # the JSON-RPC messages of the body (JSON or SSE)

    def result(self, request_id: Any) -> dict[str, Any] | None:
        for message in self.messages:
            if message.get("id") == request_id and isinstance(message.get("result"), dict):
                result: dict[str, Any] = message["result"]
                return result
        return None


def modern_body(request_id: Any, method: str, params: dict[str, Any] | None = None,
                meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A 2026-07-28 request as the SDK client sends it (its envelope in ``_meta``)."""
    envelope = {"io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientInfo": {"name": "faults", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {}, **(meta or {})}
    return {"jsonrpc": "2.0", "id": request_id, "method": method,
            "params": {**(params or {}), "_meta": envelope}}


def raw_post(host: str, port: int, body: Any, headers: Mapping[str, str] | None = None,
             timeout: float = 20.0, seen: Seen | None = None) -> RawReply:
    """POST ``body`` (JSON) to ``/mcp`` with exactly these extra ``headers`` (a ``Host`` among
    them replaces the right one); 599 when the connection failed or timed out."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    if isinstance(body, bytes):  # its method and tool name for the headers, if it has them
        with suppress(ValueError):
            body = json.loads(body)
    method = body.get("method", "") if isinstance(body, dict) else ""
    sent = {"content-type": "application/json", "accept": "application/json, text/event-stream",
            "mcp-protocol-version": MODERN, "mcp-method": str(method),
            "host": f"{host if ':' not in host else f'[{host}]'}:{port}"}
    params = body.get("params") if isinstance(body, dict) else None
    if method == "tools/call" and isinstance(params, dict) and isinstance(params.get("name"), str):
        sent["mcp-name"] = params["name"]
    sent.update({k.lower(): v for k, v in (headers or {}).items()})
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        connection.putrequest("POST", "/mcp", skip_host=True, skip_accept_encoding=True)
        for name, value in sent.items():
            connection.putheader(name, value)
        connection.putheader("content-length", str(len(data)))
        connection.endheaders(data)
        response = connection.getresponse()
        text = response.read().decode("utf-8", "replace")
        reply = RawReply(response.status, {k.lower(): v for k, v in response.getheaders()},
                         text, _messages(text))
    except (OSError, http.client.HTTPException) as exc:
        reply = RawReply(599, {}, f"{type(exc).__name__}: {exc}", [])
    finally:
        connection.close()
    if seen is not None:
        seen.add(reply.body)
    return reply


def _messages(text: str) -> list[dict[str, Any]]:
    chunks = [text] if not text.lstrip().startswith(("event:", "data:", "id:", ":")) else [
        line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    found: list[dict[str, Any]] = []
    for chunk in chunks:
        with suppress(ValueError):
            value = json.loads(chunk)
            found.extend(v for v in (value if isinstance(value, list) else [value])
                         if isinstance(v, dict))
    return found


def tool_text(result: Mapping[str, Any] | None) -> str:
    """The text content of a raw ``tools/call`` result."""
    if not result:
        return ""
    return "\n".join(str(b.get("text", "")) for b in result.get("content") or []
                     if isinstance(b, dict))


# -- stdio -----------------------------------------------------------------------------------

class StdioPipe:
    """The stdin and stdout of a gateway started with ``pipes=True``: lines read in a thread
    (each written to the step's stdout file as it arrives), lines written as given."""

    def __init__(self, running: Running) -> None:
        assert running.proc.stdin is not None and running.proc.stdout is not None
        self.running = running
        self.lines: queue.Queue[bytes] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        running.drain = lambda: self._reader.join(5.0)

    def _read(self) -> None:
        stdout = self.running.proc.stdout
        assert stdout is not None
        with open(self.running.out_path, "ab") as tee:
            for line in iter(stdout.readline, b""):
                tee.write(line)
                tee.flush()
                self.lines.put(line)
        self.lines.put(b"")  # the end

    def send(self, data: bytes) -> bool:
        """Write ``data`` (a line or more); False when the gateway stopped reading."""
        stdin = self.running.proc.stdin
        assert stdin is not None
        try:
            stdin.write(data)
            stdin.flush()
        except (OSError, ValueError):
            return False
        return True

    def line(self, timeout: float) -> bytes | None:
        """The next line; ``b""`` at the end of the output, None after ``timeout``."""
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def reply(self, request_id: Any, timeout: float) -> dict[str, Any] | None:
        """The next message answering ``request_id`` (other lines are skipped)."""
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            line = self.line(left)
            if not line:
                return None
            with suppress(ValueError):
                message = json.loads(line)
                if isinstance(message, dict) and message.get("id") == request_id and (
                        "result" in message or "error" in message):
                    return message
        return None

    def request(self, request_id: Any, method: str, params: dict[str, Any],
                timeout: float = 20.0) -> dict[str, Any] | None:
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        if not self.send(json.dumps(body).encode() + b"\n"):
            return None
        return self.reply(request_id, timeout)

    def handshake(self) -> bool:
        """The handshake-era ``initialize`` and ``notifications/initialized``."""
        reply = self.request(0, "initialize", {
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": {"name": "faults", "version": "1"}}, timeout=START_S)
        sent = self.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        return bool(reply and "result" in reply and sent)


@asynccontextmanager
async def pipe_transport(pipe: StdioPipe) -> AsyncIterator[
        tuple[Any, Any]]:
    """An MCP client transport over a :class:`StdioPipe` (what the SDK's ``stdio_client`` does
    for a process it starts itself)."""
    read_in, read_out = anyio.create_memory_object_stream[SessionMessage | Exception](100)
    write_in, write_out = anyio.create_memory_object_stream[SessionMessage](100)

    async def reader() -> None:
        async with read_in:
            while True:
                line = await anyio.to_thread.run_sync(pipe.line, 0.2)
                if line == b"":
                    return
                if line is None:
                    continue
                try:
                    message: SessionMessage | Exception = SessionMessage(
                        types.jsonrpc_message_adapter.validate_json(line, by_name=False))
                except ValueError as exc:
                    message = exc
                await read_in.send(message)

    async def writer() -> None:
        async with write_out:
            async for message in write_out:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                if not pipe.send(data.encode() + b"\n"):
                    return

    async with anyio.create_task_group() as group:
        group.start_soon(reader)
        group.start_soon(writer)
        try:
            yield read_out, write_in
        finally:
            group.cancel_scope.cancel()


@asynccontextmanager
async def stdio_client(pipe: StdioPipe) -> AsyncIterator[Client]:
    """The SDK client, default mode, over the gateway's stdin and stdout."""
    async with Client(pipe_transport(pipe), read_timeout_seconds=CLIENT_S) as client:
        yield client


def start_stdio(ctx: CaseContext, args: Sequence[str],
                env: Mapping[str, str] | None = None) -> StdioPipe:
    """``serve ARGS`` over stdio, its pipes held by the case."""
    return StdioPipe(ctx.spawn(*args, env=env, expect=(0,), pipes=True))


def tree_cpu(pid: int) -> float:
    """CPU seconds used so far by ``pid`` and its live descendants."""
    from hyperplan_bench.faults.runner import children, cpu_seconds

    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        total += cpu_seconds(current)
        todo.extend(children(current))
    return total
