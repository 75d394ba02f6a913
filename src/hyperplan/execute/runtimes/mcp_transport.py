"""A bounded stdio client transport for the MCP SDK's ``mcp.Client`` (used by
:class:`hyperplan.execute.runtimes.mcp.MCPRuntime` instead of ``mcp.client.stdio``).

It starts the server in a session (process group) of its own, like the SDK's transport, and
differs where a gateway needs guarantees:

* **Bounded reads.** The server's stdout is read in chunks and cut into lines by
  :class:`LineAssembler`; a line longer than ``max_line_bytes`` is never held whole: its first
  bytes (at most :data:`PREVIEW_BYTES`) are kept, the rest is discarded as it arrives. When the
  line is a response whose id can be read from its start (or its end), the waiting request is
  answered at once with a synthetic JSON-RPC error (:data:`OVERSIZE_CODE`) and the line is
  recorded in :attr:`StdioLink.oversize`; the link is then :attr:`~StdioLink.fault`-y and is
  to be replaced before the next call. Any other over-long line breaks the session.
* **Strict lines.** A line that is not UTF-8 or not JSON-RPC is passed to the session as an
  exception (:class:`BadLine` or the parser's), which the runtime turns into a protocol break;
  blank lines are skipped.
* **Knowing what was sent.** Messages are written to the server's stdin by the sending task
  itself (under a lock), so a call can record in its :class:`CallState` (a context variable)
  whether its request was written at all, and under which ids. A write is refused before it
  starts when the server has already exited or closed its stdout (nothing is sent).
* **The process handle.** :attr:`StdioLink.pid` (also its process group) and
  :meth:`StdioLink.alive` replace any PID file; the server's stderr goes to the file
  descriptor the caller gives (an unnamed temporary file: nothing is left behind).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import threading
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import anyio
from anyio.abc import ByteReceiveStream, ObjectSendStream, Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

if TYPE_CHECKING:
    from mcp.shared.message import SessionMessage
    from mcp_types import RequestId

from contextvars import ContextVar

OVERSIZE_CODE = -32099  # the synthetic error answering a request whose response was too large
PREVIEW_BYTES = 1024 * 1024  # at most this much of an over-long line is kept
_CHUNK = 64 * 1024
_TAIL_BYTES = 256  # the end of an over-long line kept to find its id
_QUOTED_BYTES = 4096  # of a bad line kept for the error (redacted, then cut shorter)
_EXIT_GRACE = 2.0  # a server told to stop (stdin closed) gets this long to exit by itself
_KILL_GRACE = 0.3  # between SIGTERM and SIGKILL of the server's process group
_POLL = 0.01

_ID = rb'(-?\d{1,30}|"(?:[^"\\]|\\.){0,200}")'
_HEAD_ID = re.compile(rb'\A\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*' + _ID
                      + rb'\s*,\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"(?:result|error)"')
_HEAD_RESPONSE = re.compile(rb'\A\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?'
                            rb'"(?:result|error)"\s*:')
_TAIL_ID = re.compile(rb',\s*"id"\s*:\s*' + _ID + rb'\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*\Z')


class CallState:
    """What one call's task wrote to the server (set as :data:`CALL_STATE` while it runs).

    ``sent`` turns true when a request write *starts* (a started write may have been read);
    ``ids`` are those of its ``tools/call`` requests; :meth:`abandon`, called by the thread
    that gave up waiting, stops any later write."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.sent = False
        self.abandoned = False
        self.ids: list[RequestId] = []

    def begin_write(self, request_id: RequestId | None, method: str) -> bool:
        """Record a request write about to start; False when the call was abandoned."""
        with self._lock:
            if self.abandoned:
                return False
            if request_id is not None:
                self.sent = True
                if method == "tools/call":
                    self.ids.append(request_id)
            return True

    def unsent(self) -> None:
        """The write failed before the server could read anything (broken pipe)."""
        with self._lock:
            self.sent = False

    def abandon(self) -> bool:
        """No more writes for this call; whether a request was (or may have been) sent."""
        with self._lock:
            self.abandoned = True
            return self.sent


CALL_STATE: ContextVar[CallState | None] = ContextVar("hyperplan_mcp_call", default=None)


@dataclass(frozen=True)
class Oversize:
    """A response line longer than the limit: its first bytes, kept for a preview."""

    limit: int
    head: bytes


@dataclass
class _Over:
    head: bytes
    tail: bytes = b""
    size: int = 0


@dataclass
class LineAssembler:
    """Cuts a byte stream into lines, holding at most ``limit`` bytes of one line (in one
    buffer, which is handed over with the line, so its memory is released with it).

    :meth:`feed` yields ``("line", bytearray)`` for a complete line, ``("over", head)`` once
    when the current line passes ``limit`` (``head``: its first ``min(limit, PREVIEW_BYTES)``
    bytes) and ``("end", _Over)`` when such a line ends (its head, its last bytes, its size)."""

    limit: int
    _buf: bytearray = field(default_factory=bytearray)
    _over: _Over | None = None

    def feed(self, chunk: bytes) -> Iterator[tuple[str, Any]]:
        start = 0
        while start < len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            yield from self._add(piece)
            if end < 0:
                return
            yield from self._finish()
            start = end + 1

    def _add(self, piece: bytes) -> Iterator[tuple[str, Any]]:
        if self._over is not None:
            self._over.size += len(piece)
            self._over.tail = (self._over.tail + piece[-_TAIL_BYTES:])[-_TAIL_BYTES:]
            return
        if len(self._buf) + len(piece) <= self.limit:
            self._buf += piece
            return
        keep = min(self.limit, PREVIEW_BYTES)
        head = bytes(self._buf[:keep])
        head += piece[:keep - len(head)]
        tail = (bytes(self._buf[-_TAIL_BYTES:]) + piece[-_TAIL_BYTES:])[-_TAIL_BYTES:]
        self._over = _Over(head, tail, len(self._buf) + len(piece))
        self._buf = bytearray()
        yield "over", head

    def _finish(self) -> Iterator[tuple[str, Any]]:
        if self._over is not None:
            over, self._over = self._over, None
            yield "end", over
            return
        line, self._buf = self._buf, bytearray()
        yield "line", line


class BadLine(ValueError):
    """A stdout line that cannot be a JSON-RPC message (not UTF-8, or over the limit)."""

    def __init__(self, message: str, line: bytes) -> None:
        super().__init__(message)
        self.line = line


def response_id(head: bytes, tail: bytes) -> RequestId | None:
    """The id of a JSON-RPC response from the start of its line (``{"jsonrpc", "id",
    "result"...``) or its end (``..."id": 7}``), else None."""
    found = _HEAD_ID.match(head)
    if found is None and _HEAD_RESPONSE.match(head):
        found = _TAIL_ID.search(tail)
    if found is None:
        return None
    token = found.group(1)
    try:
        value = json.loads(token)
    except ValueError:
        return None
    return value if isinstance(value, int | str) else None


class _Writer:
    """The session's write stream: each message is written to the server's stdin by the
    sending task itself, so the task knows whether it went out (:class:`CallState`)."""

    def __init__(self, link: StdioLink) -> None:
        self._link = link

    async def send(self, item: SessionMessage, /) -> None:
        from mcp_types import JSONRPCRequest

        link, message = self._link, item.message
        request = message if isinstance(message, JSONRPCRequest) else None
        request_id = request.id if request is not None else None
        data = (message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode()
        state = CALL_STATE.get()
        async with link.write_lock:
            if link.closing or not link.alive():
                raise anyio.BrokenResourceError("the MCP server is gone: nothing was sent")
            if state is not None and not state.begin_write(
                    request_id, request.method if request is not None else ""):
                raise anyio.ClosedResourceError("the call was abandoned: nothing was sent")
            try:
                await link.stdin_send(data)
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
                if state is not None and request_id is not None:
                    state.unsent()  # a broken pipe: the server reads nothing more
                raise anyio.BrokenResourceError(f"cannot write to the MCP server: {exc}") from exc

    async def aclose(self) -> None:
        """Nothing to do: the link closes the pipe when it shuts down."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc_val: BaseException | None, exc_tb: TracebackType | None) -> None:
        return None


@dataclass
class StdioLink:
    """One server process and the streams the SDK's ``Client`` talks through
    (:meth:`open` is the transport: ``Client(link.open(), ...)``)."""

    command: str
    args: Sequence[str]
    env: Mapping[str, str] | None
    cwd: str | Path | None
    stderr_fd: int
    max_line_bytes: int
    pid: int | None = None
    eof: bool = False  # the server's stdout ended
    closing: bool = False
    fast_stop: bool = False  # stop by signal at once instead of waiting for a clean exit
    fault: str | None = None  # why this link must not take another call
    oversize: dict[RequestId, Oversize] = field(default_factory=dict)
    _process: Process | None = None
    write_lock: anyio.Lock = field(default_factory=anyio.Lock)

    def alive(self) -> bool:
        """The server has not exited and its stdout is open (cheap: no I/O)."""
        process = self._process
        return process is not None and process.returncode is None and not self.eof

    async def stdin_send(self, data: bytes) -> None:
        assert self._process is not None and self._process.stdin is not None
        await self._process.stdin.send(data)

    @asynccontextmanager
    async def open(self) -> AsyncIterator[tuple[MemoryObjectReceiveStream[Any], _Writer]]:
        """Start the server; yield the (read, write) streams; stop the server on exit."""
        from mcp.client.stdio import get_default_environment

        process = await anyio.open_process(
            [self.command, *self.args], env=server_environment(get_default_environment(),
                                                               self.env),
            stderr=self.stderr_fd, cwd=self.cwd, start_new_session=True)
        self._process, self.pid = process, process.pid
        send, receive = anyio.create_memory_object_stream[Any](0)
        async with anyio.create_task_group() as tasks:
            assert process.stdout is not None
            tasks.start_soon(self._read, process.stdout, send)
            try:
                yield receive, _Writer(self)
            finally:
                with anyio.CancelScope(shield=True):
                    await self._shutdown(process)
                    await receive.aclose()
                tasks.cancel_scope.cancel()

    async def _read(self, stdout: ByteReceiveStream,
                    send: MemoryObjectSendStream[Any]) -> None:
        """Pass every stdout line to the session (bounded, see the module doc); keep
        draining after the session is gone so a server writing its last output can exit."""
        lines = LineAssembler(self.max_line_bytes)
        pending: Oversize | None = None
        async with send:
            while True:
                try:
                    chunk = await stdout.receive(_CHUNK)
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError,
                        OSError):
                    break
                for kind, value in lines.feed(chunk):
                    item, pending = self._item(kind, value, pending)
                    if item is not None:
                        await _deliver(send, item)
            self.eof = True

    def _item(self, kind: str, value: Any,
              pending: Oversize | None) -> tuple[Any, Oversize | None]:
        """The session item for one assembler event (None: nothing to deliver), and the
        over-long line still waiting for its end."""
        if kind == "line":
            return (_parse(value) if value.strip() else None), None
        if kind == "over":
            found = response_id(value, b"")
            if found is not None:
                return self._answer_oversize(found, value), None
            return None, Oversize(self.max_line_bytes, value)
        over: _Over = value
        if pending is None:  # answered when the limit was passed
            return None, None
        found = response_id(over.head, over.tail)
        if found is not None:
            return self._answer_oversize(found, over.head), None
        self.fault = "oversize"
        return BadLine(f"a line of {over.size} bytes, over the limit of "
                       f"{self.max_line_bytes} bytes", over.head[:_QUOTED_BYTES]), None

    def _answer_oversize(self, request_id: RequestId, head: bytes) -> SessionMessage:
        from mcp.shared.message import SessionMessage
        from mcp_types import ErrorData, JSONRPCError

        self.fault = "oversize"
        self.oversize[request_id] = Oversize(self.max_line_bytes, head)
        error = ErrorData(code=OVERSIZE_CODE,
                          message=f"the result exceeded {self.max_line_bytes} bytes")
        return SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=error))

    async def _shutdown(self, process: Process) -> None:
        """Close stdin, let the server exit (at once by signal when :attr:`fast_stop`),
        SIGTERM then SIGKILL its process group, close stdout."""
        self.closing = True  # no write starts from now on; one stuck in a full pipe fails
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            if process.stdin is not None:
                await process.stdin.aclose()
        if not self.fast_stop:
            await _wait_exit(process, _EXIT_GRACE)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if process.returncode is not None:
                break
            kill_group(process.pid, sig)
            await _wait_exit(process, _KILL_GRACE if sig == signal.SIGTERM else 2.0)
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            if process.stdout is not None:
                await process.stdout.aclose()


#: Passed on to stdio servers besides the SDK's safe default (HOME, PATH, USER ...): where
#: the CA certificates are (without them ``uvx`` / ``npx`` cannot download a server behind a
#: TLS-inspecting proxy), the locale and the temporary directory. None of them is a secret.
PASSED_ENV_VARS = ("SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
                   "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ")


def server_environment(base: Mapping[str, str],
                       extra: Mapping[str, str] | None) -> dict[str, str]:
    """A stdio server's environment: ``base`` (the SDK's safe default), the
    :data:`PASSED_ENV_VARS` that are set, then the server's own ``extra`` over them."""
    passed = {k: os.environ[k] for k in PASSED_ENV_VARS if os.environ.get(k)}
    return {**base, **passed, **dict(extra or {})}


@dataclass
class HttpLink:
    """A remote MCP server over streamable HTTP (the official SDK's client transport, with
    ``headers`` on every request); the same surface as :class:`StdioLink` for
    :class:`~hyperplan.execute.runtimes.mcp_connection.Connection` (no process: ``pid`` stays
    None, nothing to signal)."""

    url: str
    headers: Mapping[str, str] | None
    pid: int | None = None
    fast_stop: bool = False
    fault: str | None = None
    oversize: dict[RequestId, Oversize] = field(default_factory=dict)
    closed: bool = False

    def alive(self) -> bool:
        return not self.closed

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Any]:
        """Connect; yield the SDK transport's (read, write) streams; disconnect on exit."""
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        async with create_mcp_http_client(headers=dict(self.headers or {})) as client, \
                streamable_http_client(self.url, http_client=client) as streams:
            try:
                yield streams
            finally:
                self.closed = True


def kill_group(pid: int, sig: int) -> bool:
    """Signal the process group ``pid``; False when it is gone (or not ours)."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


async def _wait_exit(process: Process, seconds: float) -> bool:
    """Whether the process exited within ``seconds`` (polls its return code)."""
    with anyio.move_on_after(seconds):
        while process.returncode is None:
            await anyio.sleep(_POLL)
    return process.returncode is not None


async def _deliver(send: ObjectSendStream[Any], item: Any) -> None:
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        await send.send(item)


def _parse(line: bytearray) -> Any:
    """A ``SessionMessage`` for a JSON-RPC line, else the exception saying why not."""
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter

    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return BadLine("the line is not UTF-8", bytes(line[:_QUOTED_BYTES]))
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(text, by_name=False))
    except ValueError as exc:
        return exc


_RESULT_START = re.compile(rb'\A\s*\{[^\[\]{}]{0,400}?"result"\s*:\s*')
_TEXT_START = re.compile(rb'"text"\s*:\s*"')
_STRING_BODY = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*')
_CUT_ESCAPE = re.compile(r'\\u(?:[dD][89abAB][0-9a-fA-F]{2}|[0-9a-fA-F]{0,3})\Z')


def is_result(head: bytes) -> bool:
    """Whether an over-long response line starts as a result (not an error response)."""
    return _RESULT_START.match(head) is not None


def preview_text(head: bytes) -> str:
    """The readable start of an over-long response line: the characters of its result's
    first ``"text"`` string (a tool result's text content), else the raw JSON from the
    result on, else the line's start."""
    result = _RESULT_START.match(head)
    if result is None:
        return head.decode("utf-8", "replace")
    text = _TEXT_START.search(head, result.end())
    if text is None:
        return head[result.end():].decode("utf-8", "replace")
    body = _STRING_BODY.match(head, text.end())
    raw = (body.group(0) if body is not None else b"").decode("utf-8", "ignore")
    cut = _CUT_ESCAPE.search(raw)
    if cut is not None and (cut.start() - len(raw[:cut.start()].rstrip("\\"))) % 2 == 0:
        raw = raw[:cut.start()]  # an escape cut short (or half a surrogate pair)
    try:
        value = json.loads('"' + raw + '"', strict=False)
    except ValueError:
        return raw
    return value if isinstance(value, str) else raw
