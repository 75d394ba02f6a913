"""Run tools on a Model Context Protocol server started as a subprocess (stdio transport).

Uses the official ``mcp`` SDK (2.x), an optional dependency: ``pip install 'hyperplan[mcp]'``.
The SDK is async; :class:`MCPRuntime` is a synchronous wrapper that owns one background thread
running an asyncio event loop and keeps **one** ``mcp.Client`` session open for many calls. The
server is started lazily (first :meth:`~MCPRuntime.call` or :meth:`~MCPRuntime.list_tools`)
and stopped by :meth:`~MCPRuntime.close` (the SDK closes the server's stdin, waits 2 s, then
terminates the process tree). The loop thread is a daemon, so a forgotten ``close`` never
blocks interpreter exit; the server then sees end-of-file on stdin and exits.

Protocol negotiation is the SDK's ``mode="auto"`` (``server/discover``, falling back to the
``initialize`` handshake for pre-2026 servers). The environment given to the server is the
SDK's safe default (``HOME``, ``PATH``, ``USER`` ...) with ``env`` merged over it. The server's
stderr goes to a temporary file whose tail is quoted in ``TRANSPORT`` errors.

Result mapping: ``isError`` -> ``TOOL_ERROR`` with the text content; otherwise the value is the
structured content when present (note that ``MCPServer`` tools returning a scalar wrap it as
``{"result": value}``, matching their ``outputSchema``), else the text content JSON-decoded when
it parses, else the text; non-text content blocks are returned as a list of content dicts.
A JSON-RPC error response -> ``TOOL_ERROR``; the per-call timeout (the SDK's request timeout,
with a 5 s safety margin on the wait) -> ``TIMEOUT``; a server that cannot start, exits or
closes the connection -> ``TRANSPORT`` with the stderr tail, after which the next call starts
a fresh server.

Trust: the caller waits at most the call's timeout (the smaller of the runtime's and
the caller's, which the agent sets to the time left in the run) plus
:data:`_WAIT_MARGIN`; the first call of a session also spends its handshake inside that
deadline. A call that did not finish (timeout, lost connection) is ``OUTCOME_UNKNOWN`` and is
not sent again unless the server annotates the tool ``readOnlyHint`` or ``idempotentHint``
(:func:`hyperplan.execute.repeat.may_repeat`). The MCP stdio transport allows nothing but
JSON-RPC messages on the server's stdout: a line that is not one (or is not UTF-8) ends the
session at once with a ``TRANSPORT`` error quoting the line, instead of a traceback and a wait
for the timeout.

``can_run`` is true for tools whose ``source`` is ``"mcp"`` (what
:func:`hyperplan.importers.mcp.load_mcp_tools` sets) and, once the runtime knows the server's
tool names (``tool_names`` or a :meth:`~MCPRuntime.list_tools` call), whose name the server
lists.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from hyperplan.catalog import Catalog, ToolSpec
from hyperplan.errors import HyperplanError
from hyperplan.execute.repeat import may_repeat
from hyperplan.execute.results import ErrorKind, ToolResult
from hyperplan.execute.runtimes.base import (
    Clock,
    ClosingRuntime,
    fail_result,
    ok_result,
    truncate,
)
from hyperplan.execute.runtimes.validation import rejected
from hyperplan.importers.mcp import SOURCE, load_mcp_tools

if TYPE_CHECKING:
    from mcp import Client, StdioServerParameters
    from mcp_types import CallToolResult

DEFAULT_TIMEOUT = 30.0
_WAIT_MARGIN = 0.5  # extra seconds the caller waits beyond the SDK's own request timeout
# The server is started through this one-line shim, which writes its PID to a file and then
# becomes the server (exec: same process, same PID). The SDK starts it in a session of its own,
# so the PID is also its process group: what :meth:`_Connection.close` stops when the server
# cannot be expected to exit by itself (a call abandoned at its deadline, a handshake that
# never completed), instead of waiting the SDK's seconds of grace for it.
_PID_SHIM = ("import os, sys; open(sys.argv[1], 'w').write(str(os.getpid())); "
             "os.execvp(sys.argv[2], sys.argv[2:])")
_STOP_GRACE = 0.3  # seconds between SIGTERM and SIGKILL of an abandoned server's group
_STDERR_TAIL = 1500
_T = TypeVar("_T")
_PARSE_NOISE = "Failed to parse JSONRPC message"


class _QuietParseErrors(logging.Filter):
    """Drops the SDK's traceback for a server line that is not JSON-RPC: the runtime reports
    it itself, as one line quoting the offending output."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(_PARSE_NOISE)


logging.getLogger("mcp.client.stdio").addFilter(_QuietParseErrors())


class MCPRuntimeError(HyperplanError):
    """The MCP SDK is missing, or the server could not be reached by :meth:`list_tools`."""


def require_mcp() -> None:
    """Raise :class:`MCPRuntimeError` with install advice when the ``mcp`` SDK is missing."""
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        raise MCPRuntimeError(
            "MCPRuntime needs the MCP Python SDK: pip install 'hyperplan[mcp]'"
        ) from exc


class MCPRuntime(ClosingRuntime):
    """Executes tools on one stdio MCP server (``command *args``), one session for all calls."""

    def __init__(self, command: str, args: Sequence[str] = (), env: Mapping[str, str] | None = None,
                 cwd: str | Path | None = None, *, timeout: float = DEFAULT_TIMEOUT,
                 tool_names: Iterable[str] | None = None) -> None:
        require_mcp()
        self.command = command
        self.args = list(args)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.timeout = timeout
        self.tool_names: frozenset[str] | None = (
            frozenset(tool_names) if tool_names is not None else None)
        self._lock = threading.Lock()
        self._connection: _Connection | None = None

    def can_run(self, tool: ToolSpec) -> bool:
        if tool.source != SOURCE:
            return False
        return self.tool_names is None or tool.name in self.tool_names

    def list_tools(self) -> list[dict[str, Any]]:
        """The server's ``tools/list`` entries (all pages) as JSON dicts (``inputSchema`` ...);
        also records the tool names for :meth:`can_run`. Raises :class:`MCPRuntimeError`."""
        try:
            connection = self._connect()
            tools = connection.run(_list_all, self.timeout + _WAIT_MARGIN)
        except Exception as exc:
            stderr = exc.stderr if isinstance(exc, _ConnectFailed) else self._drop_connection()
            raise MCPRuntimeError(_transport_message("tools/list", exc, stderr)) from exc
        self.tool_names = frozenset(str(t["name"]) for t in tools if "name" in t)
        return tools

    def catalog(self) -> Catalog:
        """The server's tools as a :class:`Catalog` (via the ``mcp`` importer)."""
        return load_mcp_tools({"tools": self.list_tools()})

    def call(self, tool: ToolSpec, arguments: Mapping[str, Any], *,
             timeout: float | None = None) -> ToolResult:
        clock = Clock()
        refused = rejected(tool, arguments, None if self.can_run(tool) else
                           "not a tool of this MCP server", clock)
        if refused is not None:
            return refused
        limit = min(timeout, self.timeout) if timeout is not None else self.timeout
        try:
            connection = self._connect(limit)
            left = max(0.01, limit - clock.seconds())
            call = _caller(tool.name, dict(arguments), left)
            result = connection.run(call, left + _WAIT_MARGIN)
        except Exception as exc:
            return self._failure(tool, arguments, exc, limit, clock)
        if result.is_error:
            text = _text_content(result) or "the tool reported an error"
            return fail_result(tool, arguments, ErrorKind.TOOL_ERROR,
                               truncate(f"{tool.name}: {text}"), clock)
        return ok_result(tool, arguments, _value(result), clock)

    def close(self) -> None:
        """Stop the server and the loop thread; a later call starts a new server."""
        self._drop_connection()

    def _connect(self, limit: float | None = None) -> _Connection:
        """The open session, started when there is none; the handshake must complete within
        ``limit`` (default: the runtime's timeout)."""
        with self._lock:
            if self._connection is None:
                from mcp import StdioServerParameters

                pid_file = _pid_file() if shutil.which(self.command) else None
                command, args = ((sys.executable, ["-c", _PID_SHIM, pid_file, self.command,
                                                   *self.args])
                                 if pid_file else (self.command, list(self.args)))
                params = StdioServerParameters(command=command, args=args,
                                               env=self.env, cwd=self.cwd,
                                               encoding_error_handler="replace")
                handshake = self.timeout if limit is None else min(limit, self.timeout)
                self._connection = _Connection(params, self.timeout, handshake, pid_file)
            return self._connection

    def _drop_connection(self) -> str:
        """Close the current connection (if any); returns its stderr tail."""
        with self._lock:
            connection, self._connection = self._connection, None
        return connection.close() if connection is not None else ""

    def _failure(self, tool: ToolSpec, arguments: Mapping[str, Any], exc: Exception,
                 limit: float, clock: Clock) -> ToolResult:
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        exc = _leaf(exc)
        unknown = ("; outcome unknown (the call was sent and may have taken effect): not "
                   "re-sent") if not may_repeat(tool) else ""
        if isinstance(exc, _NoResult) or (isinstance(exc, MCPError)
                                          and exc.code == REQUEST_TIMEOUT):
            with self._lock:
                if self._connection is not None:  # the server may still be in that call
                    self._connection.abandoned = True
            kind = ErrorKind.OUTCOME_UNKNOWN if unknown else ErrorKind.TIMEOUT
            return fail_result(tool, arguments, kind,
                               f"{tool.name}: no result after {limit:g} s{unknown}", clock)
        if isinstance(exc, MCPError) and exc.code != CONNECTION_CLOSED:
            return fail_result(tool, arguments, ErrorKind.TOOL_ERROR,
                               truncate(f"{tool.name}: MCP error {exc.code}: {exc.message}"),
                               clock)
        if isinstance(exc, RuntimeError):
            # the SDK's check of structured content against the tool's outputSchema
            return fail_result(tool, arguments, ErrorKind.TOOL_ERROR,
                               truncate(f"{tool.name}: {exc}"), clock)
        stderr = exc.stderr if isinstance(exc, _ConnectFailed) else self._drop_connection()
        message = _transport_message(tool.name, exc, stderr)
        if unknown and not isinstance(exc, _ConnectFailed):  # the request may have been read
            return fail_result(tool, arguments, ErrorKind.OUTCOME_UNKNOWN,
                               truncate(message + unknown, 1200), clock)
        return fail_result(tool, arguments, ErrorKind.TRANSPORT, message, clock)


class _NoResult(Exception):
    """The caller's wait for a coroutine on the loop thread expired."""


class _ProtocolBroken(Exception):
    """The server wrote something on stdout that is not a JSON-RPC message."""


class _ConnectFailed(Exception):
    """The server could not be started or did not complete the MCP handshake."""

    def __init__(self, cause: BaseException, stderr: str) -> None:
        leaf = _leaf(cause)
        super().__init__(f"cannot connect: {type(leaf).__name__}: {leaf}")
        self.stderr = stderr


class _Connection:
    """A connected ``mcp.Client`` held open by a keeper task on a background event loop."""

    def __init__(self, params: StdioServerParameters, timeout: float,
                 handshake: float | None = None, pid_file: str | None = None) -> None:
        self.pid_file = pid_file
        self.abandoned = False  # a call was given up on: the server may never exit by itself
        fd, self.stderr_path = tempfile.mkstemp(prefix="hyperplan-mcp-", suffix=".stderr")
        self._stderr: TextIO = os.fdopen(fd, "a", encoding="utf-8", errors="replace")
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="hyperplan-mcp",
                                        daemon=True)
        self._thread.start()
        self._ready: concurrent.futures.Future[Client] = concurrent.futures.Future()
        self._broken: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._stop: asyncio.Event | None = None
        self._keeper = asyncio.run_coroutine_threadsafe(self._keep(params, timeout), self.loop)
        try:
            self.client = self._wait_ready((timeout if handshake is None else handshake)
                                           + _WAIT_MARGIN)
        except Exception as exc:
            raise _ConnectFailed(exc, self.close()) from exc

    def _wait_ready(self, timeout: float) -> Client:
        waits: list[concurrent.futures.Future[Any]] = [self._ready, self._broken]
        done, _ = concurrent.futures.wait(waits, timeout=timeout,
                                          return_when=concurrent.futures.FIRST_COMPLETED)
        if self._broken.done():
            raise self._broken.exception() or _ProtocolBroken("protocol error")
        if not done:
            raise TimeoutError(f"no MCP handshake within {timeout:g} s")
        return self._ready.result()

    async def _on_message(self, message: Any) -> None:
        """The session's message handler: a line that is not JSON-RPC breaks the session."""
        if isinstance(message, Exception) and not self._broken.done():
            self._broken.set_exception(_ProtocolBroken(
                "the server wrote a line that is not a JSON-RPC message on stdout (the MCP "
                f"stdio transport allows nothing else): {_offending_line(message)}"))

    async def _keep(self, params: StdioServerParameters, timeout: float) -> None:
        from mcp import Client
        from mcp.client.stdio import stdio_client

        self._stop = asyncio.Event()
        transport = stdio_client(params, errlog=self._stderr)
        try:
            async with Client(transport, read_timeout_seconds=timeout, cache=None,
                              message_handler=self._on_message) as client:
                self._ready.set_result(client)
                await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
            raise

    def run(self, make: Callable[[Client], Awaitable[_T]], timeout: float) -> _T:
        """Run ``make(client)`` on the loop; :class:`_NoResult` when ``timeout`` expires."""
        if self._broken.done():
            raise self._broken.exception() or _ProtocolBroken("protocol error")
        future = asyncio.run_coroutine_threadsafe(_as_coroutine(make(self.client)), self.loop)
        waits: list[concurrent.futures.Future[Any]] = [future, self._broken]
        done, _ = concurrent.futures.wait(waits, timeout=timeout,
                                          return_when=concurrent.futures.FIRST_COMPLETED)
        if future not in done:
            future.cancel()
            self.abandoned = True
            if self._broken.done():
                raise self._broken.exception() or _ProtocolBroken("protocol error")
            raise _NoResult
        return future.result()

    def close(self) -> str:
        """Leave the client context (stopping the server), stop the loop; the stderr tail."""
        connected = self._ready.done() and self._ready.exception() is None
        if self.abandoned or not connected:
            self._stop_server()  # it would keep the SDK's exit grace waiting for seconds
        if connected and self._stop is not None:
            self.loop.call_soon_threadsafe(self._stop.set)
            concurrent.futures.wait([self._keeper], timeout=15)
        if not self._keeper.done():  # still connecting (or a stuck exit): cancel it
            self._keeper.cancel()
            concurrent.futures.wait([self._keeper], timeout=10)
        if not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive() and not self.loop.is_closed():
            self.loop.close()
        self._stderr.close()
        tail = _tail(self.stderr_path)
        with contextlib.suppress(OSError):
            os.unlink(self.stderr_path)
            if self.pid_file:
                os.unlink(self.pid_file)
        return tail

    def _stop_server(self) -> None:
        """SIGTERM the process group of the server this connection started (its PID, from
        the shim's file), SIGKILL what is left after :data:`_STOP_GRACE`."""
        pid = _read_pid(self.pid_file)
        if pid is None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(pid, sig)
            except (ProcessLookupError, PermissionError):
                return
            until = time.monotonic() + _STOP_GRACE
            while time.monotonic() < until:
                if not _group_alive(pid):
                    return
                time.sleep(0.02)


def _pid_file() -> str:
    fd, path = tempfile.mkstemp(prefix="hyperplan-mcp-", suffix=".pid")
    os.close(fd)
    return path


def _read_pid(path: str | None) -> int | None:
    """The PID the shim wrote (None before it ran, or when the file is gone or garbled)."""
    if not path:
        return None
    try:
        text = Path(path).read_text(encoding="ascii").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() and int(text) > 1 else None


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _offending_line(exc: Exception) -> str:
    """The start of the line a parse error is about (pydantic's ``input``), shown as a Python
    literal so control characters print as escapes, else the error's own text."""
    errors = getattr(exc, "errors", None)
    try:
        line = errors()[0].get("input") if callable(errors) else None
    except (TypeError, IndexError, AttributeError):
        line = None
    if isinstance(line, str | bytes):
        return repr(line[:120]) + (" ..." if len(line) > 120 else "")
    return " ".join(str(exc).split())[:200]


async def _as_coroutine(awaitable: Awaitable[_T]) -> _T:
    return await awaitable


def _caller(name: str, arguments: dict[str, Any],
            timeout: float) -> Callable[[Client], Awaitable[CallToolResult]]:
    def make(client: Client) -> Awaitable[CallToolResult]:
        return client.call_tool(name, arguments, read_timeout_seconds=timeout)
    return make


async def _list_all(client: Client) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(1000):
        page = await client.list_tools(cursor=cursor)
        tools += [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in page.tools]
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def _text_content(result: CallToolResult) -> str:
    from mcp_types import TextContent

    return "\n".join(b.text for b in result.content if isinstance(b, TextContent))


def _value(result: CallToolResult) -> Any:
    if result.structured_content is not None:
        return result.structured_content
    if not result.content:
        return None
    from mcp_types import TextContent

    if not all(isinstance(block, TextContent) for block in result.content):
        return [block.model_dump(by_alias=True, mode="json", exclude_none=True)
                for block in result.content]
    text = _text_content(result)
    try:
        return json.loads(text)
    except ValueError:
        return text


def _leaf(exc: BaseException) -> Exception:
    """The first non-group exception inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc if isinstance(exc, Exception) else ConnectionAbortedError(repr(exc))


def _transport_message(what: str, exc: BaseException, stderr: str) -> str:
    leaf = _leaf(exc)
    if isinstance(leaf, _ConnectFailed):
        message = f"{what}: MCP server failure ({leaf})"
    else:
        detail = str(leaf) or "connection lost"
        message = f"{what}: MCP server failure ({type(leaf).__name__}: {detail})"
    if stderr:
        message += "; server stderr (tail): " + stderr[-800:]
    return message


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - _STDERR_TAIL))
            return handle.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""
