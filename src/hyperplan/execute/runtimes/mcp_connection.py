"""One connected ``mcp.Client`` over a :class:`~hyperplan.execute.runtimes.mcp_transport.
StdioLink`, held open by a keeper task on a background event loop (used by
:class:`hyperplan.execute.runtimes.mcp.MCPRuntime`).

A connection counts the calls using it (:attr:`Connection.users`) and says whether it may take
another (:meth:`Connection.usable`): not after a call was given up on at its deadline
(:attr:`~Connection.spoiled`), a protocol break, an over-long line, or once the server exited
or closed its stdout (checked on the process handle: no round-trip). The server's stderr goes
to an unnamed temporary file (nothing to clean up, even after ``kill -9``) whose tail
:meth:`~Connection.stderr_tail` reads without moving the file offset the server writes at.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import signal
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from hyperplan.execute.runtimes.mcp_transport import (
    CallState,
    HttpLink,
    Oversize,
    StdioLink,
    kill_group,
)

if TYPE_CHECKING:
    from mcp import Client

WAIT_MARGIN = 0.5  # extra seconds the caller waits beyond the SDK's own request timeout
_STOP_GRACE = 0.3  # seconds between SIGTERM and SIGKILL of an abandoned server's group
_STDERR_WINDOW = 8192  # bytes of the stderr file read for its tail (redacted, then cut)
_T = TypeVar("_T")


class NoResult(Exception):
    """The caller's wait for a coroutine on the loop thread expired."""


class NotSent(Exception):
    """The connection could not take the call: nothing was sent."""


class ProtocolBroken(Exception):
    """The server wrote something on stdout that is not a JSON-RPC message."""


class ConnectFailed(Exception):
    """The server could not be started or did not complete the MCP handshake."""

    def __init__(self, cause: BaseException, stderr: str) -> None:
        found = leaf(cause)
        super().__init__(f"cannot connect: {type(found).__name__}: {found}")
        self.stderr = stderr


class Connection:
    """A connected ``mcp.Client`` on a loop thread of its own (module doc)."""

    def __init__(self, link: StdioLink | HttpLink, stderr: Any, timeout: float,
                 handshake: float, on_break: Callable[[Exception], str]) -> None:
        self.link = link
        self.users = 0  # calls using the connection now (guarded by the runtime's lock)
        self.spoiled = False  # a call was given up on: the server may still be in it
        self._stderr = stderr
        self._on_break = on_break
        self._close_lock = threading.Lock()
        self._tail: str | None = None  # set once closed
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="hyperplan-mcp",
                                        daemon=True)
        self._thread.start()
        self._ready: concurrent.futures.Future[Client] = concurrent.futures.Future()
        self._broken: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._stop: asyncio.Event | None = None
        self._keeper = asyncio.run_coroutine_threadsafe(self._keep(timeout), self.loop)
        try:
            self.client = self._wait_ready(handshake + WAIT_MARGIN)
        except Exception as exc:
            raise ConnectFailed(exc, self.close()) from exc

    @classmethod
    def start(cls, link_args: dict[str, Any], timeout: float, handshake: float,
              on_break: Callable[[Exception], str]) -> Connection:
        """Start a server (:class:`StdioLink` keywords but ``stderr_fd``) and connect; with
        a ``url`` key, connect to a remote server (:class:`HttpLink` keywords) instead."""
        stderr = tempfile.TemporaryFile(prefix="hyperplan-mcp-")  # noqa: SIM115 (kept open)
        link: StdioLink | HttpLink = (
            HttpLink(url=link_args["url"], headers=link_args.get("headers"))
            if link_args.get("url") else StdioLink(stderr_fd=stderr.fileno(), **link_args))
        try:
            return cls(link, stderr, timeout, handshake, on_break)
        except ConnectFailed:
            stderr.close()
            raise

    def usable(self) -> bool:
        """Whether a new call may be sent here (no I/O: flags and the process handle)."""
        return (not self.spoiled and not self._broken.done() and self.link.fault is None
                and self.link.alive() and self._tail is None)

    def oversize(self, state: CallState) -> Oversize | None:
        """The over-long response one of this call's requests got, if any."""
        for request_id in state.ids:
            found = self.link.oversize.pop(request_id, None)
            if found is not None:
                return found
        return None

    def _wait_ready(self, timeout: float) -> Client:
        waits: list[concurrent.futures.Future[Any]] = [self._ready, self._broken]
        done, _ = concurrent.futures.wait(waits, timeout=timeout,
                                          return_when=concurrent.futures.FIRST_COMPLETED)
        if self._broken.done():
            raise self._broken.exception() or ProtocolBroken("protocol error")
        if not done:
            raise TimeoutError(f"no MCP handshake within {timeout:g} s")
        return self._ready.result()

    async def _on_message(self, message: Any) -> None:
        """The session's message handler: a line that is not JSON-RPC breaks the session."""
        if isinstance(message, Exception) and not self._broken.done():
            self.link.fault = self.link.fault or "protocol"  # no more writes on this link
            self._broken.set_exception(ProtocolBroken(self._on_break(message)))

    async def _keep(self, timeout: float) -> None:
        from mcp import Client

        self._stop = asyncio.Event()
        try:
            async with Client(self.link.open(), read_timeout_seconds=timeout, cache=None,
                              message_handler=self._on_message) as client:
                self._ready.set_result(client)
                await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
            raise

    def run(self, make: Callable[[Client], Awaitable[_T]], timeout: float,
            state: CallState | None = None) -> _T:
        """Run ``make(client)`` on the loop; :class:`NoResult` when ``timeout`` expires
        (the call is then abandoned: ``state`` lets no later write out)."""
        if not self.usable():
            raise NotSent("the MCP server connection cannot take calls")
        future = asyncio.run_coroutine_threadsafe(_as_coroutine(make(self.client)), self.loop)
        waits: list[concurrent.futures.Future[Any]] = [future, self._broken]
        done, _ = concurrent.futures.wait(waits, timeout=timeout,
                                          return_when=concurrent.futures.FIRST_COMPLETED)
        if future not in done:
            if state is not None:
                state.abandon()
            future.cancel()
            self.spoiled = True
            if self._broken.done():
                raise self._broken.exception() or ProtocolBroken("protocol error")
            raise NoResult
        return future.result()

    def wait_exit(self, seconds: float) -> None:
        """Wait up to ``seconds`` for the server process to end (its stderr complete)."""
        until = time.monotonic() + seconds
        while self.link.alive() and time.monotonic() < until:
            time.sleep(0.01)

    def stderr_tail(self) -> str:
        """The end of what the server wrote on stderr (at most :data:`_STDERR_WINDOW`)."""
        if self._tail is not None:
            return self._tail
        try:
            fd = self._stderr.fileno()
            size = os.fstat(fd).st_size
            start = max(0, size - _STDERR_WINDOW)
            return os.pread(fd, size - start, start).decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""

    def close(self) -> str:
        """Stop the server and the loop thread (idempotent); the stderr tail."""
        with self._close_lock:
            if self._tail is None:
                self._close()
                self._tail = self.stderr_tail()
                self._stderr.close()
            return self._tail

    def _close(self) -> None:
        connected = self._ready.done() and self._ready.exception() is None
        if self.spoiled or not connected or not self.usable():
            self.link.fast_stop = True
            self._stop_server()  # it would keep the exit grace waiting for seconds
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

    def _stop_server(self) -> None:
        """SIGTERM the server's process group (its PID), SIGKILL what is left after
        :data:`_STOP_GRACE`."""
        pid = self.link.pid
        if pid is None or (not self.link.alive() and not _group_alive(pid)):
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if not kill_group(pid, sig):
                return
            until = time.monotonic() + _STOP_GRACE
            while time.monotonic() < until:
                if not _group_alive(pid):
                    return
                time.sleep(0.02)


def _group_alive(pgid: int) -> bool:
    return kill_group(pgid, 0)


async def _as_coroutine(awaitable: Awaitable[_T]) -> _T:
    return await awaitable


def leaf(exc: BaseException) -> Exception:
    """The first non-group exception inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc if isinstance(exc, Exception) else ConnectionAbortedError(repr(exc))
