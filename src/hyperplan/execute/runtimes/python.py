"""Run tools that are plain Python callables.

:class:`PythonRuntime` maps tool names to callables. A call validates the arguments against
the tool's input schema (invalid arguments never reach the function), calls the function with
keyword arguments and converts the return value to JSON-like data with
``pydantic_core.to_jsonable_python`` (pydantic models, dataclasses, enums, dates, sets ...;
anything else falls back to ``str``). A coroutine function (or a returned awaitable) is run to
completion with ``asyncio.run`` in the worker thread. An exception becomes a ``TOOL_ERROR``
result ``"ExcType: message"``.

Timeouts: each call runs in a fresh daemon thread (the current ``contextvars`` context is
copied) and the caller waits on a :class:`concurrent.futures.Future` for at most ``timeout``
seconds (default 30). On expiry the result is ``TIMEOUT``, but **the thread cannot be killed**:
the function keeps running in the background until it returns, and its result is discarded.
Being a daemon thread, it does not keep the interpreter alive at exit. ``timeout=None`` on the
runtime (and no per-call timeout) calls the function directly in the caller's thread.

Trust (issue 22): a call that did not finish in time may still be running, so it is
``OUTCOME_UNKNOWN`` and never re-sent (:mod:`hyperplan.execute.repeat`); the agent gives each
call the time left in the run, so a tool that ignores its deadline is abandoned and the run
stops. Every exception a tool raises, ``SystemExit``, ``KeyboardInterrupt`` and other
``BaseException`` subclasses included, is a ``TOOL_ERROR`` observation: a tool cannot end the
run. What the tool writes to ``sys.stdout`` / ``sys.stderr`` while it runs is captured (per
thread, at most :data:`MAX_CAPTURED_CHARS` characters) into ``metadata["stdout"]`` /
``["stderr"]`` and never reaches the command's own output (``--json`` stays valid JSON).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import io
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from pydantic_core import to_jsonable_python

from hyperplan.catalog import Catalog, ToolSpec
from hyperplan.errors import CatalogError
from hyperplan.execute.results import ErrorKind, ToolResult
from hyperplan.execute.runtimes.base import (
    Clock,
    ClosingRuntime,
    fail_result,
    ok_result,
    truncate,
)
from hyperplan.execute.runtimes.validation import rejected
from hyperplan.importers.python_callables import get_callable

DEFAULT_TIMEOUT = 30.0
MAX_CAPTURED_CHARS = 10_000


class PythonRuntime(ClosingRuntime):
    """Executes tools by calling the Python callable registered under the tool's name."""

    def __init__(self, callables: Mapping[str, Callable[..., Any]], *,
                 timeout: float | None = DEFAULT_TIMEOUT) -> None:
        self.callables: dict[str, Callable[..., Any]] = dict(callables)
        self.timeout = timeout

    @classmethod
    def from_catalog(cls, catalog: Catalog, *,
                     timeout: float | None = DEFAULT_TIMEOUT) -> PythonRuntime:
        """The callables of ``catalog``'s tools (see
        :func:`hyperplan.importers.python_callables.get_callable`); tools without one (e.g.
        OpenAPI tools in a merged catalog) are left out, so ``can_run`` is false for them."""
        found: dict[str, Callable[..., Any]] = {}
        for tool in catalog.tools:
            try:
                found[tool.name] = get_callable(tool)
            except CatalogError:
                continue
        return cls(found, timeout=timeout)

    def can_run(self, tool: ToolSpec) -> bool:
        return tool.name in self.callables

    def call(self, tool: ToolSpec, arguments: Mapping[str, Any], *,
             timeout: float | None = None) -> ToolResult:
        clock = Clock()
        func = self.callables.get(tool.name)
        refused = rejected(tool, arguments, "no Python callable registered" if func is None
                           else None, clock)
        if refused is not None or func is None:
            return refused or fail_result(tool, arguments, ErrorKind.UNKNOWN_TOOL, tool.name)
        limit = timeout if timeout is not None else self.timeout
        if limit is not None and self.timeout is not None:
            limit = min(limit, self.timeout)
        captured = _Captured()
        try:
            value = _run(func, dict(arguments), captured) if limit is None else \
                _run_with_timeout(func, dict(arguments), limit, captured)
        except _NoResult:
            return fail_result(tool, arguments, ErrorKind.OUTCOME_UNKNOWN,
                               f"{tool.name}: no result after {limit:g} s; outcome unknown "
                               "(the call keeps running in a background thread): not re-sent",
                               clock)
        except BaseException as exc:  # a tool never ends the run (module doc)
            result = fail_result(tool, arguments, ErrorKind.TOOL_ERROR, _describe(exc), clock)
            return _with_output(result, captured)
        return _with_output(ok_result(tool, arguments, value, clock), captured)


class _Captured:
    """The text one call wrote to stdout and stderr."""

    def __init__(self) -> None:
        self.stdout = io.StringIO()
        self.stderr = io.StringIO()


class _ThreadStream(io.TextIOBase):
    """Stands in for ``sys.stdout`` / ``sys.stderr``: writes from a thread running a tool go
    to that call's capture, every other thread's writes to the real stream."""

    def __init__(self, real: Any, which: str) -> None:
        self.real = real
        self.which = which
        self.local = threading.local()

    def write(self, text: str) -> int:
        captured: _Captured | None = getattr(self.local, "captured", None)
        if captured is None:
            return int(self.real.write(text))
        buffer: io.StringIO = getattr(captured, self.which)
        room = MAX_CAPTURED_CHARS - buffer.tell()
        if room > 0:
            buffer.write(text[:room])
        return len(text)

    def flush(self) -> None:
        if getattr(self.local, "captured", None) is None:
            self.real.flush()

    def isatty(self) -> bool:
        return False


_INSTALL_LOCK = threading.Lock()


def _streams() -> tuple[_ThreadStream, _ThreadStream]:
    """The capturing proxies, installed over ``sys.stdout`` / ``sys.stderr`` once."""
    with _INSTALL_LOCK:
        if not isinstance(sys.stdout, _ThreadStream):
            sys.stdout = _ThreadStream(sys.stdout, "stdout")
        if not isinstance(sys.stderr, _ThreadStream):
            sys.stderr = _ThreadStream(sys.stderr, "stderr")
        return sys.stdout, sys.stderr


def _with_output(result: ToolResult, captured: _Captured) -> ToolResult:
    printed = {k: v for k, v in (("stdout", captured.stdout.getvalue()),
                                 ("stderr", captured.stderr.getvalue())) if v}
    if not printed:
        return result
    return ToolResult(result.tool, result.arguments, result.ok, result.value, result.error,
                      result.error_kind, result.seconds, {**result.metadata, **printed})


def _run(func: Callable[..., Any], kwargs: dict[str, Any],
         captured: _Captured | None = None) -> Any:
    """Call ``func(**kwargs)``, finish a returned awaitable, convert to JSON-like data; the
    call's prints go to ``captured``."""
    streams = _streams() if captured is not None else ()
    for stream in streams:
        stream.local.captured = captured
    try:
        result = func(**kwargs)
        if inspect.isawaitable(result):
            result = asyncio.run(_await(result))
        return to_jsonable_python(result, fallback=str)
    finally:
        for stream in streams:
            stream.local.captured = None


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _run_with_timeout(func: Callable[..., Any], kwargs: dict[str, Any], timeout: float,
                      captured: _Captured | None = None) -> Any:
    """:func:`_run` in a daemon thread; raises :class:`_NoResult` when ``timeout`` expires
    (a ``TimeoutError`` raised by the tool itself stays a tool error)."""
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    context = contextvars.copy_context()

    def work() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(context.run(_run, func, kwargs, captured))
        except BaseException as exc:  # delivered to the caller, never lost in the thread
            future.set_exception(exc)

    name = f"hyperplan-tool-{getattr(func, '__name__', 'call')}"
    threading.Thread(target=work, name=name, daemon=True).start()
    done, _ = concurrent.futures.wait([future], timeout=timeout)
    if not done:
        raise _NoResult
    return future.result()


class _NoResult(Exception):
    """The worker thread did not finish within the timeout."""


def _describe(exc: BaseException) -> str:
    message = str(exc)
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return truncate(text)
