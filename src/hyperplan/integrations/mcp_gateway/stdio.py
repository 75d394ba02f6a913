"""The gateway's stdio transport: the MCP SDK's ``stdio_server`` with every request answered.

:func:`stdio_server` has the interface of :func:`mcp.server.stdio.stdio_server` (an async
context manager yielding the ``(read_stream, write_stream)`` pair of
:class:`~mcp.shared.message.SessionMessage` that ``Server.run`` takes) and parses a good
message exactly as it does (``jsonrpc_message_adapter.validate_json``, one message a line,
both protocol generations). It claims fd 0 and 1 the same way (the SDK's own claim: handlers
and children read EOF and their stray prints go to stderr, never onto the wire).

What it adds, because the SDK drops a message it cannot validate without a word and a client
waiting for the reply hangs (fault item 6 of docs/benchmarks.md, "Runtime trust under
faults"):

* a line that is not one valid JSON-RPC message gets a JSON-RPC error: ``INVALID_REQUEST``
  with the request's id (a wrong ``"jsonrpc"``, params that are not an object, any unknown
  shape; ``"id": null`` for an id that is no string or integer, which the SDK would take for
  a notification and never answer), ``PARSE_ERROR`` when it is no JSON at all. When the line
  cannot be parsed (100k-deep nesting, a cut line) its top-level ``"id"`` is recovered by a
  bounded scan of its first :data:`ID_SCAN_CHARS` characters, else the error carries
  ``"id": null``; a malformed *response* (``result``/``error``, no ``method``) is never
  answered;
* a batch (a JSON array; MCP has none) gets one error per element that carries an id, or one
  error with ``"id": null``;
* a line longer than ``max_line_bytes`` (default 4 MiB, the HTTP body cap) is skipped
  without ever holding more than the cap in memory, and answered with ``INVALID_REQUEST``;
* a line that is not valid UTF-8 ends the session (after one ``PARSE_ERROR``): the read
  stream is closed, the server finishes what it is doing and returns, as at end of input;
* a response that cannot be serialised (a lone surrogate in a result) becomes an
  ``INTERNAL_ERROR`` for its request instead of killing the transport; a closed stdout ends
  the session instead of raising;
* reading and writing use worker threads of their own, so handlers filling anyio's default
  thread pool (40 blocking tool calls) never stop the next line from being read and
  answered (the SDK's transport waits for a free thread of that pool).

Error messages are fixed texts: nothing of the offending line is quoted back.
"""

from __future__ import annotations

import io
import json
import os
import re
import select
import stat
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any, BinaryIO

import anyio
import anyio.abc
import mcp_types as types
from mcp.server.stdio import _claim_fd, _open_stdin_diversion, _open_stdout_diversion
from mcp.shared._context_streams import (
    ContextReceiveStream,
    ContextSendStream,
    create_context_streams,
)
from mcp.shared.message import SessionMessage

INLINE_WRITE_BYTES = getattr(select, "PIPE_BUF", 512)
"""Replies up to this size are written on the event loop when the output pipe has room
(``_Wire._write_now``): a write of at most ``PIPE_BUF`` bytes to a pipe that polls writable
does not block (Linux: a free page)."""
MAX_LINE_BYTES = 4 * 1024 * 1024
"""The longest line (message) read; as the HTTP transport's body cap."""
ID_SCAN_CHARS = 64 * 1024
"""How much of a line that cannot be parsed is scanned for its top-level ``"id"``."""
_DISCARD_CHUNK = 64 * 1024

_TOKEN = re.compile(r'"(?:[^"\\]|\\[\s\S])*"?|[{}\[\]]')  # an open string runs to the end
_COLON = re.compile(r"\s*:\s*")
_ID_VALUE = re.compile(r'"(?:[^"\\]|\\.)*"|-?(?:0|[1-9][0-9]{0,18})(?![0-9.eE])')

RequestId = int | str | None
Sink = ContextSendStream[SessionMessage | Exception]


@asynccontextmanager
async def stdio_server(
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    *,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> AsyncIterator[tuple[ContextReceiveStream[SessionMessage | Exception],
                         ContextSendStream[SessionMessage]]]:
    """Serve MCP over the process's stdin and stdout (or the binary streams given), as the
    SDK's ``stdio_server`` does, with the malformed traffic answered (module doc)."""
    restore: list[Callable[[], None]] = []
    try:
        if stdin is None:
            stdin, release_in = _claim_fd(0, sys.stdin, "rb", _open_stdin_diversion)
            restore += [release_in] if release_in is not None else []
        if stdout is None:
            stdout, release_out = _claim_fd(1, sys.stdout, "wb", _open_stdout_diversion)
            restore += [release_out] if release_out is not None else []
        wire = _Wire(stdin, stdout, max_line_bytes)
        read_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
        write_stream, write_reader = create_context_streams[SessionMessage](0)
        async with anyio.create_task_group() as tg:
            tg.start_soon(wire.read_into, read_writer)
            tg.start_soon(wire.write_from, write_reader)
            yield read_stream, write_stream
            write_stream.close()  # the server is done: let the writer drain and finish
            wire.reader_scope.cancel()  # and stop waiting for input nobody will read
    finally:
        if restore:
            _flush_stray_output()  # to stderr, where fd 1 still points, not onto the wire
        for release in reversed(restore):
            release()


def _flush_stray_output() -> None:
    """Flush what handlers printed to ``sys.stdout`` while fd 1 was diverted: left in its
    buffer, it would be written onto the wire once fd 1 is restored (at exit, say)."""
    with suppress(OSError, ValueError):
        sys.stdout.flush()


class _Wire:
    """The two pumps between the byte streams and the session's message streams."""

    def __init__(self, stdin: BinaryIO, stdout: BinaryIO, max_line_bytes: int) -> None:
        self.stdin, self.stdout, self.max_line_bytes = stdin, stdout, max_line_bytes
        self.reader_scope = anyio.CancelScope()
        # own worker threads: the default pool (40) can be full of tool calls, and input
        # must still be read (find_tools, cancellations) and replies written meanwhile
        self._read_thread = anyio.CapacityLimiter(1)
        self._write_thread = anyio.CapacityLimiter(1)
        self._write_lock = anyio.Lock()
        self._broken = False

    # input ------------------------------------------------------------------------------

    async def read_into(self, sink: Sink) -> None:
        """Parse each line into the session (or answer it), until end of input, a line that
        is not UTF-8, or a closed output."""
        with self.reader_scope:
            async with sink:
                while not self._broken:
                    line = await self._next_line()
                    if line is None:
                        return
                    data, oversize = line
                    if oversize:
                        too_large = f"message too large (over {self.max_line_bytes} bytes)"
                        await self._answer([_error(_scan_id(_lenient(data)),
                                                   types.INVALID_REQUEST, too_large)])
                        continue
                    try:
                        text = data.decode("utf-8")
                    except UnicodeDecodeError:
                        await self._answer([_error(_scan_id(_lenient(data)), types.PARSE_ERROR,
                                                   "message is not valid UTF-8; session ended")])
                        return
                    if text.strip():
                        await self._take(text, sink)

    async def _take(self, text: str, sink: Sink) -> None:
        """Pass one message on as the SDK would, or answer it when it is not one."""
        try:
            message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
        except Exception as exc:  # the SDK passes the failure on; its session logs it
            await sink.send(exc)
            await self._answer(_diagnose(text))
            return
        if isinstance(message, types.JSONRPCNotification) and _has_id(text):
            await self._answer([_error(None, types.INVALID_REQUEST,
                                       "invalid request: the id must be a string or an integer")])
            return
        await sink.send(SessionMessage(message))

    async def _next_line(self) -> tuple[bytes, bool] | None:
        """The next line and whether it was too long (then only its first
        :data:`ID_SCAN_CHARS` bytes; the rest was read and dropped); None at end of input."""
        cap = self.max_line_bytes
        line = await self._read(cap + 1)
        if not line:
            return None
        if len(line) <= cap or line.endswith(b"\n"):
            return line, False
        head = line[:ID_SCAN_CHARS]
        del line
        while True:
            more = await self._read(_DISCARD_CHUNK)
            if not more or more.endswith(b"\n"):
                return head, True

    async def _read(self, limit: int) -> bytes:
        try:
            return await anyio.to_thread.run_sync(self.stdin.readline, limit,
                                                  abandon_on_cancel=True,
                                                  limiter=self._read_thread)
        except (OSError, ValueError):  # a closed or broken input is its end
            return b""

    # output -----------------------------------------------------------------------------

    async def write_from(self, source: ContextReceiveStream[SessionMessage]) -> None:
        """Write each of the session's messages as one line (drained, not written, once the
        output is broken, so the session never blocks on it)."""
        async with source:
            async for session_message in source:
                text = _serialise(session_message.message)
                if text is not None:
                    await self._write(text)

    async def _answer(self, errors: list[types.JSONRPCError]) -> None:
        for error in errors:
            await self._write(error.model_dump_json(by_alias=True, exclude_unset=True))

    async def _write(self, text: str) -> None:
        if self._broken:
            return
        data = (text + "\n").encode("utf-8")
        async with self._write_lock:
            try:
                if not self._write_now(data):
                    await anyio.to_thread.run_sync(self._write_flush, data,
                                                   limiter=self._write_thread)
            except (OSError, ValueError):  # the client is gone: end the session
                self._broken = True
                self.reader_scope.cancel()

    def _write_now(self, data: bytes) -> bool:
        """Write a short message on the event loop itself when the output can take it
        without blocking (a pipe that polls writable, a message of at most
        :data:`INLINE_WRITE_BYTES`); False when it must go through the writer thread
        (longer, or an output that is full or not a pipe). Saves two thread hops a reply."""
        if len(data) > INLINE_WRITE_BYTES:
            return False
        try:
            fd = self.stdout.fileno()
            if not stat.S_ISFIFO(os.fstat(fd).st_mode):
                return False
            _, writable, _ = select.select([], [fd], [], 0)
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            return False
        if not writable:
            return False
        self._write_flush(data)
        return True

    def _write_flush(self, data: bytes) -> None:
        self.stdout.write(data)
        self.stdout.flush()


# diagnosis ------------------------------------------------------------------------------


def _diagnose(text: str) -> list[types.JSONRPCError]:
    """The errors answering ``text``, a line the SDK could not validate (module doc)."""
    try:
        value = json.loads(text)
    except RecursionError:
        return [_error(_scan_id(text), types.PARSE_ERROR, "message nested too deeply")]
    except ValueError:
        return [_error(_scan_id(text), types.PARSE_ERROR, "parse error: not one JSON value")]
    if isinstance(value, list):
        answers = [_error(_valid_id(item.get("id")), types.INVALID_REQUEST,
                          "batches are not supported: send one message a line")
                   for item in value if isinstance(item, dict) and _expects_answer(item)
                   and "id" in item]
        return answers or [_error(None, types.INVALID_REQUEST,
                                  "batches are not supported: send one message a line")]
    if isinstance(value, dict):
        if not _expects_answer(value):
            return []
        return [_error(_valid_id(value.get("id")), types.INVALID_REQUEST,
                       "invalid request: not a JSON-RPC 2.0 message of a known shape")]
    return [_error(None, types.INVALID_REQUEST, "invalid request: not a JSON object")]


def _has_id(text: str) -> bool:
    """Whether a line the SDK read as a notification carries an ``"id"`` after all (one of
    a type it cannot echo: a float, an object, null): a request whose client waits."""
    if '"id"' not in text and "\\u" not in text:
        return False
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and "id" in value


def _expects_answer(message: dict[str, Any]) -> bool:
    """False for a (malformed) response: answering a response could start a loop."""
    return "method" in message or not ("result" in message or "error" in message)


def _valid_id(value: Any) -> RequestId:
    """``value`` when it can be echoed as a request id (an int or a string), else None."""
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None


def _scan_id(text: str) -> RequestId:
    """The top-level ``"id"`` of a JSON object that cannot be parsed whole, found by a scan
    of its first :data:`ID_SCAN_CHARS` characters (strings and brackets only), or None."""
    head = text[:ID_SCAN_CHARS]
    if not head.lstrip().startswith("{"):
        return None
    depth = 0
    for token in _TOKEN.finditer(head):
        symbol = token.group()
        if symbol in "{[":
            depth += 1
        elif symbol in "}]":
            depth -= 1
            if depth <= 0:
                return None
        elif depth == 1 and (symbol == '"id"' or _is_id_key(symbol)):
            colon = _COLON.match(head, token.end())
            if colon is not None:
                return _id_at(head, colon.end())
    return None


def _is_id_key(symbol: str) -> bool:
    """Whether a string token spells ``"id"`` with escapes (``"\\u0069d"``)."""
    if "\\" not in symbol:
        return False
    try:
        return bool(json.loads(symbol) == "id")
    except ValueError:
        return False


def _id_at(text: str, position: int) -> RequestId:
    found = _ID_VALUE.match(text, position)
    if found is None:
        return None
    try:
        return _valid_id(json.loads(found.group()))
    except ValueError:
        return None


def _lenient(data: bytes) -> str:
    return data[:ID_SCAN_CHARS].decode("utf-8", errors="replace")


def _error(request_id: RequestId, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request_id,
                              error=types.ErrorData(code=code, message=message))


def _serialise(message: types.JSONRPCMessage) -> str | None:
    """The message as one JSON line's text, as the SDK writes it. A reply that cannot be
    serialised (a lone surrogate in a result) becomes an internal error for its request;
    another message that cannot is dropped (None)."""
    try:
        return message.model_dump_json(by_alias=True, exclude_unset=True)
    except Exception:
        if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            return None
        fallback = _error(message.id, types.INTERNAL_ERROR,
                          "the reply could not be encoded as JSON")
        return fallback.model_dump_json(by_alias=True, exclude_unset=True)
