"""Run tools that are plain Python callables, in this process.

:class:`PythonRuntime` maps tool names to callables. A call validates the arguments against
the tool's input schema (invalid arguments never reach the function), calls the function with
keyword arguments and converts the return value to JSON-like data with
``pydantic_core.to_jsonable_python`` (pydantic models, dataclasses, enums, dates, sets ...;
anything else falls back to ``str``). A coroutine function (or a returned awaitable) is run to
completion with ``asyncio.run`` in the worker thread.

Timeouts: each call runs in a fresh daemon thread (the current ``contextvars`` context is
copied) and the caller waits for at most ``timeout`` seconds (default 30; a per-call timeout
never exceeds the runtime's). On expiry the result is ``OUTCOME_UNKNOWN`` (the tool may have
done its work; :mod:`hyperplan.execute.repeat` decides whether it may be sent again, and for
Python tools it may not unless marked ``idempotent``, then it is ``TIMEOUT``), but **the thread
cannot be killed**: the function keeps running in the background until it returns, and its
result is discarded. Being a daemon thread, it does not keep the interpreter alive at exit.
``timeout=None`` on the runtime (and no per-call timeout) calls the function directly in the
caller's thread.

A tool cannot end the run: every exception it raises - ``SystemExit``,
``KeyboardInterrupt``, ``GeneratorExit`` and other ``BaseException`` subclasses included -
is a ``TOOL_ERROR`` observation ``"SystemExit: 3"``. (The exception is handed back as a
value, never re-raised, so a real Ctrl-C while the caller waits still interrupts the run;
with ``timeout=None`` a tool's own ``KeyboardInterrupt`` and a real Ctrl-C during the call
cannot be told apart and both become the observation.) What the tool writes to
``sys.stdout`` / ``sys.stderr`` while it runs is captured per thread (:mod:`hyperplan.streams`,
at most :data:`MAX_CAPTURED_CHARS` characters per stream) into ``metadata["stdout"]`` /
``["stderr"]``, which the trace keeps; it never reaches the command's own output, so
``--json`` stays valid JSON. Not captured in-process: writes to file descriptor 1 itself
(``os.write(1, ...)``, C extensions, subprocesses) and from threads the tool starts; a tool
that calls ``os._exit`` or signals this process still ends it. ``--sandbox subprocess``
(:mod:`hyperplan.execute.runtimes.sandbox`) covers those.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic_core import to_jsonable_python

from hyperplan.catalog import Catalog, ToolSpec
from hyperplan.errors import CatalogError
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
from hyperplan.importers.python_callables import get_callable
from hyperplan.streams import MAX_CAPTURED_CHARS, Capture, capturing

DEFAULT_TIMEOUT = 30.0
__all__ = ["DEFAULT_TIMEOUT", "MAX_CAPTURED_CHARS", "PythonRuntime", "describe_exception"]


class PythonRuntime(ClosingRuntime):
    """Executes tools by calling the Python callable registered under the tool's name."""

    def __init__(self, callables: Mapping[str, Callable[..., Any]], *,
                 timeout: float | None = DEFAULT_TIMEOUT,
                 max_captured_chars: int = MAX_CAPTURED_CHARS) -> None:
        self.callables: dict[str, Callable[..., Any]] = dict(callables)
        self.timeout = timeout
        self.max_captured_chars = max_captured_chars

    @classmethod
    def from_catalog(cls, catalog: Catalog, *, timeout: float | None = DEFAULT_TIMEOUT,
                     allow_unsafe: bool = False) -> PythonRuntime:
        """The callables of ``catalog``'s tools (see
        :func:`hyperplan.importers.python_callables.get_callable`, which refuses host-acting
        ones it has to import unless ``allow_unsafe``); tools without one (e.g. OpenAPI tools
        in a merged catalog) are left out, so ``can_run`` is false for them."""
        found: dict[str, Callable[..., Any]] = {}
        for tool in catalog.tools:
            try:
                found[tool.name] = get_callable(tool, allow_unsafe=allow_unsafe)
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
        kwargs = dict(arguments)
        outcome = (_invoke(func, kwargs, self.max_captured_chars) if limit is None
                   else _invoke_in_thread(func, kwargs, limit, self.max_captured_chars))
        if outcome is None:
            return not_finished(tool, arguments, limit or 0.0, clock,
                                "the call keeps running in a background thread")
        if outcome.error is not None:
            result = fail_result(tool, arguments, ErrorKind.TOOL_ERROR,
                                 describe_exception(outcome.error), clock)
        else:
            result = ok_result(tool, arguments, outcome.value, clock)
        return with_printed(result, outcome.printed)


def not_finished(tool: ToolSpec, arguments: Mapping[str, Any], limit: float, clock: Clock,
                 why: str) -> ToolResult:
    """The result of a call that gave no answer within ``limit`` seconds: ``TIMEOUT`` when the
    tool may be repeated (:func:`~hyperplan.execute.repeat.may_repeat`), else
    ``OUTCOME_UNKNOWN`` (it may have done its work; never re-sent)."""
    if may_repeat(tool):
        return fail_result(tool, arguments, ErrorKind.TIMEOUT,
                           f"{tool.name}: no result after {limit:g} s ({why})", clock)
    return fail_result(tool, arguments, ErrorKind.OUTCOME_UNKNOWN,
                       f"{tool.name}: no result after {limit:g} s; outcome unknown ({why}): "
                       "not re-sent", clock)


def with_printed(result: ToolResult, printed: Mapping[str, Any]) -> ToolResult:
    """``result`` with what the tool printed (``stdout`` / ``stderr``) in its metadata."""
    if not printed:
        return result
    return replace(result, metadata={**result.metadata, **printed})


@dataclass(frozen=True)
class _Outcome:
    """How one call ended: a JSON-like value, or the exception it raised (never re-raised),
    and what it printed."""

    value: Any = None
    error: BaseException | None = None
    printed: Mapping[str, str] = field(default_factory=dict)


def _invoke(func: Callable[..., Any], kwargs: dict[str, Any], chars: int) -> _Outcome:
    """Call ``func(**kwargs)`` with the current thread's prints captured; any exception,
    ``BaseException`` included, becomes the outcome's ``error``."""
    capture = Capture.bounded(chars)
    with capturing(capture):
        try:
            value, error = _run(func, kwargs), None
        except BaseException as exc:  # a tool never ends the run (module doc)
            value, error = None, exc
    return _Outcome(value, error, capture.printed())


def _run(func: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """Call ``func(**kwargs)``, finish a returned awaitable, convert to JSON-like data."""
    result = func(**kwargs)
    if inspect.isawaitable(result):
        result = asyncio.run(_await(result))
    return to_jsonable_python(result, fallback=str)


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _invoke_in_thread(func: Callable[..., Any], kwargs: dict[str, Any], timeout: float,
                      chars: int) -> _Outcome | None:
    """:func:`_invoke` in a daemon thread; None when ``timeout`` expires first (a
    ``TimeoutError`` raised by the tool itself stays a tool error). A thread left running
    keeps capturing its own prints, so they never reach the real stdout."""
    box: list[_Outcome] = []
    done = threading.Event()
    context = contextvars.copy_context()

    def work() -> None:
        try:
            box.append(context.run(_invoke, func, kwargs, chars))
        except BaseException as exc:  # only if capturing itself failed: still an outcome
            box.append(_Outcome(error=exc))
        finally:
            done.set()

    name = f"hyperplan-tool-{getattr(func, '__name__', 'call')}"
    threading.Thread(target=work, name=name, daemon=True).start()
    return box[0] if done.wait(timeout) else None


def describe_exception(exc: BaseException) -> str:
    """``"ExcType: message"`` (cut to a bound), even for an exception whose ``str`` fails."""
    try:
        message = str(exc)
    except Exception:
        message = "(message could not be printed)"
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return truncate(text)
