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
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
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
        try:
            value = _run(func, dict(arguments)) if limit is None else _run_with_timeout(
                func, dict(arguments), limit)
        except _NoResult:
            return fail_result(tool, arguments, ErrorKind.TIMEOUT,
                               f"{tool.name}: no result after {limit:g} s (the call keeps "
                               "running in a background thread)", clock)
        except Exception as exc:
            return fail_result(tool, arguments, ErrorKind.TOOL_ERROR, _describe(exc), clock)
        return ok_result(tool, arguments, value, clock)


def _run(func: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """Call ``func(**kwargs)``, finish a returned awaitable, convert to JSON-like data."""
    result = func(**kwargs)
    if inspect.isawaitable(result):
        result = asyncio.run(_await(result))
    return to_jsonable_python(result, fallback=str)


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _run_with_timeout(func: Callable[..., Any], kwargs: dict[str, Any], timeout: float) -> Any:
    """:func:`_run` in a daemon thread; raises :class:`_NoResult` when ``timeout`` expires
    (a ``TimeoutError`` raised by the tool itself stays a tool error)."""
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    context = contextvars.copy_context()

    def work() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(context.run(_run, func, kwargs))
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
