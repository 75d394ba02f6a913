"""Dispatch each tool to the first of several runtimes that can run it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from hyperplan.catalog import ToolSpec
from hyperplan.execute.results import ErrorKind, ToolResult, ToolRuntime
from hyperplan.execute.runtimes.base import ClosingRuntime


class CompositeRuntime(ClosingRuntime):
    """A :class:`~hyperplan.execute.results.ToolRuntime` over ``runtimes`` in order: a call goes
    to the first whose ``can_run`` is true; when none can, the result is ``UNKNOWN_TOOL``.
    :meth:`close` closes every runtime (all of them, even if one raises; the first error is
    re-raised afterwards)."""

    def __init__(self, runtimes: Iterable[ToolRuntime]) -> None:
        self.runtimes: tuple[ToolRuntime, ...] = tuple(runtimes)

    def runtime_for(self, tool: ToolSpec) -> ToolRuntime | None:
        return next((r for r in self.runtimes if r.can_run(tool)), None)

    def can_run(self, tool: ToolSpec) -> bool:
        return self.runtime_for(tool) is not None

    def call(self, tool: ToolSpec, arguments: Mapping[str, Any], *,
             timeout: float | None = None) -> ToolResult:
        runtime = self.runtime_for(tool)
        if runtime is None:
            return ToolResult.failure(tool.name, arguments, ErrorKind.UNKNOWN_TOOL,
                                      f"{tool.name}: no runtime can execute this tool")
        return runtime.call(tool, arguments, timeout=timeout)

    def close(self) -> None:
        first: Exception | None = None
        for runtime in self.runtimes:
            try:
                runtime.close()
            except Exception as exc:
                first = first or exc
        if first is not None:
            raise first
