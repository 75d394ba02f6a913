"""Run tools on a Model Context Protocol server started as a subprocess (stdio transport).

Uses the official ``mcp`` SDK (2.x), an optional dependency: ``pip install 'hyperplan[mcp]'``.
The SDK is async; :class:`MCPRuntime` is a synchronous wrapper that keeps **one**
``mcp.Client`` session open for many calls, on a background thread running an asyncio event
loop (:mod:`hyperplan.execute.runtimes.mcp_connection`), over a bounded stdio transport of its
own (:mod:`hyperplan.execute.runtimes.mcp_transport`). The server is started lazily (first
:meth:`~MCPRuntime.call` or :meth:`~MCPRuntime.list_tools`) and stopped by
:meth:`~MCPRuntime.close` (stdin closed, 2 s to exit, then its process group is terminated).
The loop thread is a daemon, so a forgotten ``close`` never blocks interpreter exit; the
server then sees end-of-file on stdin and exits.

Protocol negotiation is the SDK's ``mode="auto"`` (``server/discover``, falling back to the
``initialize`` handshake for pre-2026 servers). The environment given to the server is the
SDK's safe default (``HOME``, ``PATH``, ``USER`` ...) with ``env`` merged over it. The server's
stderr goes to an unnamed temporary file whose tail, redacted and then cut, is quoted in
``TRANSPORT`` errors; nothing is left on disk, even when the process using the runtime is
killed.

Result mapping: ``isError`` -> ``TOOL_ERROR`` with the text content; otherwise the value is the
structured content when present (note that ``MCPServer`` tools returning a scalar wrap it as
``{"result": value}``, matching their ``outputSchema``), else the text content JSON-decoded when
it parses, else the text; non-text content blocks are returned as a list of content dicts.
A JSON-RPC error response -> ``TOOL_ERROR``; the per-call timeout (the SDK's request timeout,
with a 0.5 s safety margin on the wait) -> ``TIMEOUT``; a server that cannot start, exits or
closes the connection -> ``TRANSPORT`` with the stderr tail.

Bounded results: a response line longer than ``max_response_bytes`` (default 10 MiB, as for
HTTP tools) is never held whole (the transport keeps its first bytes, at most 1 MiB, and
discards the rest as it arrives). The call is ``ok`` with the start of the result's text
followed by a truncation marker (``metadata["truncated"]`` is true), the same shape as
:mod:`hyperplan.execute.runtimes.http` gives a body cut at its cap.

Trust: the caller waits at most the call's timeout (the smaller of the runtime's and
the caller's, which the agent sets to the time left in the run) plus
:data:`~hyperplan.execute.runtimes.mcp_connection.WAIT_MARGIN`; the first call of a session
also spends its handshake inside that deadline. A call that did not finish (timeout, lost
connection) is ``OUTCOME_UNKNOWN`` and is not sent again unless the server annotates the tool
``readOnlyHint`` or ``idempotentHint`` (:func:`hyperplan.execute.repeat.may_repeat`). Faults
are booked on the call they happened to:

* a server that overran a call's deadline, broke the protocol or sent an over-long result
  takes no further call: the next call starts a fresh server, and the old one is stopped by
  its process group once the calls still using it are done (a server that keeps timing out
  is thus restarted every time; no call queues behind a stuck one);
* a server that exited (or closed stdout) while idle is noticed on the process handle before
  anything is sent, and replaced; a request whose write was refused or hit a broken pipe was
  not sent, so it is sent once on a fresh server (it is not a repeat), and a call that was
  never sent is never ``OUTCOME_UNKNOWN``;
* the MCP stdio transport allows nothing but JSON-RPC messages on the server's stdout: a line
  that is not one (or is not UTF-8) ends the session at once with a ``TRANSPORT`` error
  quoting the line, booked on the call in flight.

``can_run`` is true for tools whose ``source`` is ``"mcp"`` (what
:func:`hyperplan.importers.mcp.load_mcp_tools` sets) and, once the runtime knows the server's
tool names (``tool_names`` or a :meth:`~MCPRuntime.list_tools` call), whose name the server
lists.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hyperplan.catalog import Catalog, ToolSpec
from hyperplan.errors import HyperplanError
from hyperplan.execute.repeat import may_repeat
from hyperplan.execute.results import ErrorKind, ToolResult
from hyperplan.execute.runtimes.base import (
    MAX_ERROR_CHARS,
    Clock,
    ClosingRuntime,
    fail_result,
    ok_result,
)
from hyperplan.execute.runtimes.mcp_connection import (
    WAIT_MARGIN,
    ConnectFailed,
    Connection,
    NoResult,
    NotSent,
    leaf,
)
from hyperplan.execute.runtimes.mcp_transport import (
    CALL_STATE,
    OVERSIZE_CODE,
    BadLine,
    CallState,
    Oversize,
    is_result,
    preview_text,
)
from hyperplan.execute.runtimes.validation import rejected
from hyperplan.importers.mcp import SOURCE, load_mcp_tools
from hyperplan.secrets import redact_cut, redact_text

if TYPE_CHECKING:
    from mcp import Client
    from mcp_types import CallToolResult

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024  # as hyperplan.execute.runtimes.http's
_STDERR_CHARS = 800  # of the server's stderr tail quoted in an error
_MIN_RETRY_SECONDS = 0.05  # time left needed to send a never-sent call on a fresh server


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
    """Executes tools on one stdio MCP server (``command *args``, started with ``env`` over
    the safe default environment, in ``cwd``) or, given ``url``, on a remote streamable-HTTP
    server (``headers`` on every request); one session for all calls."""

    def __init__(self, command: str, args: Sequence[str] = (), env: Mapping[str, str] | None = None,
                 cwd: str | Path | None = None, *, timeout: float = DEFAULT_TIMEOUT,
                 tool_names: Iterable[str] | None = None,
                 max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
                 url: str | None = None, headers: Mapping[str, str] | None = None) -> None:
        require_mcp()
        if max_response_bytes < 1:
            raise ValueError("max_response_bytes must be at least 1")
        self.command = command
        self.url = url  # a remote server (streamable HTTP) instead of ``command``
        self.headers = dict(headers) if headers is not None else None
        self.args = list(args)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes
        self.tool_names: frozenset[str] | None = (
            frozenset(tool_names) if tool_names is not None else None)
        self._lock = threading.Lock()
        self._connection: Connection | None = None
        self._retired: set[Connection] = set()  # replaced, closed once no call uses them

    def can_run(self, tool: ToolSpec) -> bool:
        if tool.source != SOURCE:
            return False
        return self.tool_names is None or tool.name in self.tool_names

    def list_tools(self) -> list[dict[str, Any]]:
        """The server's ``tools/list`` entries (all pages) as JSON dicts (``inputSchema`` ...);
        also records the tool names for :meth:`can_run`. Raises :class:`MCPRuntimeError`."""
        try:
            connection = self._acquire()
        except ConnectFailed as exc:
            raise MCPRuntimeError(_transport_message("tools/list", exc, exc.stderr)) from exc
        try:
            tools = connection.run(_list_all, self.timeout + WAIT_MARGIN)
        except Exception as exc:
            connection.spoiled = True
            connection.wait_exit(0.5)
            raise MCPRuntimeError(_transport_message(
                "tools/list", exc, connection.stderr_tail())) from exc
        finally:
            self._release(connection)
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
        retried = False
        while True:
            try:
                connection = self._acquire(max(0.01, limit - clock.seconds()))
            except ConnectFailed as exc:
                return fail_result(tool, arguments, ErrorKind.TRANSPORT,
                                   _transport_message(tool.name, exc, exc.stderr), clock)
            state = CallState()
            try:
                left = max(0.01, limit - clock.seconds())
                result = connection.run(_caller(tool.name, dict(arguments), left, state),
                                        left + WAIT_MARGIN, state)
            except Exception as exc:
                failed = self._failure(tool, arguments, exc, limit, clock, connection, state)
                if failed is not None:
                    return failed
                if retried or limit - clock.seconds() < _MIN_RETRY_SECONDS:
                    return fail_result(tool, arguments, ErrorKind.TRANSPORT, _not_sent(
                        tool.name, exc, connection.stderr_tail()), clock)
                retried = True
                continue
            finally:
                self._release(connection)
            return _mapped(tool, arguments, result, clock)

    def close(self) -> None:
        """Stop the server(s) and the loop thread(s); a later call starts a new server."""
        with self._lock:
            closing = [*self._retired, *([self._connection] if self._connection else [])]
            self._connection = None
            self._retired.clear()
        for connection in closing:
            connection.close()

    def _acquire(self, limit: float | None = None) -> Connection:
        """A usable connection for one more call, started when there is none (or the current
        one cannot take calls: it is retired); the handshake must complete within ``limit``
        (default: the runtime's timeout). Raises :class:`ConnectFailed`."""
        with self._lock:
            current = self._connection
            if current is not None and not current.usable():
                self._retire(current)
                current = None
            if current is None:
                handshake = self.timeout if limit is None else min(limit, self.timeout)
                link = ({"url": self.url, "headers": self.headers} if self.url else
                        {"command": self.command, "args": self.args, "env": self.env,
                         "cwd": self.cwd, "max_line_bytes": self.max_response_bytes})
                current = Connection.start(link, self.timeout, handshake, _broken_message)
                self._connection = current
            current.users += 1
            return current

    def _release(self, connection: Connection) -> None:
        """One call less on ``connection``; one that cannot take calls is retired."""
        with self._lock:
            connection.users -= 1
            if not connection.usable():
                self._retire(connection)

    def _retire(self, connection: Connection) -> None:
        """(Lock held.) No new calls on ``connection``; stop its server in the background
        once no call uses it."""
        if self._connection is connection:
            self._connection = None
        self._retired.add(connection)
        if connection.users == 0:
            self._retired.discard(connection)
            threading.Thread(target=connection.close, name="hyperplan-mcp-stop",
                             daemon=True).start()

    def _failure(self, tool: ToolSpec, arguments: Mapping[str, Any], exc: Exception,
                 limit: float, clock: Clock, connection: Connection,
                 state: CallState) -> ToolResult | None:
        """The result of a call that raised, or None when nothing was sent (the caller may
        send it on a fresh server)."""
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        exc = leaf(exc)
        unknown = ("; outcome unknown (the call was sent and may have taken effect): not "
                   "re-sent") if not may_repeat(tool) else ""
        if isinstance(exc, MCPError) and exc.code == OVERSIZE_CODE:
            over = connection.oversize(state)
            if over is not None:
                return _truncated(tool, arguments, over, clock)
        if isinstance(exc, NoResult) or (isinstance(exc, MCPError)
                                         and exc.code == REQUEST_TIMEOUT):
            connection.spoiled = True  # the server may still be in that call: replaced
            if not state.abandon():
                return fail_result(tool, arguments, ErrorKind.TIMEOUT,
                                   f"{tool.name}: not sent within {limit:g} s", clock)
            kind = ErrorKind.OUTCOME_UNKNOWN if unknown else ErrorKind.TIMEOUT
            return fail_result(tool, arguments, kind,
                               f"{tool.name}: no result after {limit:g} s{unknown}", clock)
        if isinstance(exc, MCPError) and exc.code != CONNECTION_CLOSED:
            return fail_result(tool, arguments, ErrorKind.TOOL_ERROR, redact_cut(
                f"{tool.name}: MCP error {exc.code}: {exc.message}", MAX_ERROR_CHARS), clock)
        if isinstance(exc, RuntimeError):
            # the SDK's check of structured content against the tool's outputSchema
            return fail_result(tool, arguments, ErrorKind.TOOL_ERROR,
                               redact_cut(f"{tool.name}: {exc}", MAX_ERROR_CHARS), clock)
        connection.spoiled = True
        if isinstance(exc, NotSent) or not state.abandon():
            return None
        connection.wait_exit(0.5)  # a crash: let its last stderr lines land
        message = _transport_message(tool.name, exc, connection.stderr_tail())
        if unknown:  # the request may have been read
            return fail_result(tool, arguments, ErrorKind.OUTCOME_UNKNOWN,
                               redact_cut(message + unknown, 1200), clock)
        return fail_result(tool, arguments, ErrorKind.TRANSPORT, message, clock)


def _mapped(tool: ToolSpec, arguments: Mapping[str, Any], result: CallToolResult,
            clock: Clock) -> ToolResult:
    if result.is_error:
        text = _text_content(result) or "the tool reported an error"
        return fail_result(tool, arguments, ErrorKind.TOOL_ERROR,
                           redact_cut(f"{tool.name}: {text}", MAX_ERROR_CHARS), clock)
    return ok_result(tool, arguments, _value(result), clock)


def _truncated(tool: ToolSpec, arguments: Mapping[str, Any], over: Oversize,
               clock: Clock) -> ToolResult:
    """An over-long result: the start of its text and a truncation marker (as HTTP's); an
    over-long error response: a ``TOOL_ERROR`` quoting its start."""
    marker = f"... [truncated: the result exceeded {over.limit} bytes]"
    if not is_result(over.head):
        return fail_result(tool, arguments, ErrorKind.TOOL_ERROR, redact_cut(
            f"{tool.name}: {preview_text(over.head)}", MAX_ERROR_CHARS) + marker, clock)
    value = preview_text(over.head) + marker
    return ok_result(tool, arguments, value, clock,
                     {"truncated": True, "max_response_bytes": over.limit})


def _broken_message(exc: Exception) -> str:
    return ("the server wrote a line that is not a JSON-RPC message on stdout (the MCP "
            f"stdio transport allows nothing else): {_offending_line(exc)}")


def _offending_line(exc: Exception) -> str:
    """The start of the line a parse error is about (the transport's or pydantic's
    ``input``), redacted, then cut and shown as a Python literal so control characters print
    as escapes, else the error's own text (redacted, then cut)."""
    if isinstance(exc, BadLine):
        return f"{exc}: {_quoted(exc.line)}"
    errors = getattr(exc, "errors", None)
    try:
        line = errors()[0].get("input") if callable(errors) else None
    except (TypeError, IndexError, AttributeError):
        line = None
    if isinstance(line, str | bytes):
        return _quoted(line)
    return redact_cut(" ".join(str(exc).split()), 200)


def _quoted(line: str | bytes, limit: int = 120) -> str:
    """``line`` redacted by value, then cut to ``limit`` (characters, or bytes for bytes),
    as a Python literal."""
    if isinstance(line, bytes):
        text = redact_text(line.decode("utf-8", "surrogateescape"))
        shown: str | bytes = text.encode("utf-8", "surrogateescape")
    else:
        shown = redact_text(line)
    return repr(shown[:limit]) + (" ..." if len(shown) > limit else "")


def _caller(name: str, arguments: dict[str, Any], timeout: float,
            state: CallState) -> Callable[[Client], Awaitable[CallToolResult]]:
    def make(client: Client) -> Awaitable[CallToolResult]:
        return _tracked(client.call_tool(name, arguments, read_timeout_seconds=timeout), state)
    return make


async def _tracked(call: Awaitable[CallToolResult], state: CallState) -> CallToolResult:
    """Await ``call`` with ``state`` as the task's :data:`CALL_STATE` (its writes record)."""
    CALL_STATE.set(state)  # the task's own context: nothing to reset
    return await call


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


def _transport_message(what: str, exc: BaseException, stderr: str) -> str:
    """``what: MCP server failure (...)`` with the server's stderr tail, redacted, then cut."""
    found = leaf(exc)
    if isinstance(found, ConnectFailed):
        message = f"{what}: MCP server failure ({found})"
    else:
        detail = str(found) or "connection lost"
        message = f"{what}: MCP server failure ({type(found).__name__}: {detail})"
    message = redact_cut(message, MAX_ERROR_CHARS)
    if stderr:
        message += "; server stderr (tail): " + redact_cut(stderr, _STDERR_CHARS, tail=True)
    return message


def _not_sent(what: str, exc: BaseException, stderr: str) -> str:
    return _transport_message(what, exc, stderr) + "; nothing was sent"
