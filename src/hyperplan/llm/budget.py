"""Run budgets and per-component accounting of LLM calls, tokens, tool calls and latency.

One `Accounting` object belongs to one run. LLM clients call `check()` *before* each request and
`record_call()` after it; agents call `charge_tool_call()` before executing a tool. When a limit
is reached `BudgetExceeded` is raised before any work is done, the exception is remembered in
`Accounting.stopped`, and the run can return whatever it has produced so far (a partial result).
All methods are thread-safe.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from hyperplan.llm.types import Usage


@dataclass(frozen=True)
class Budget:
    """Limits for one run; `None` means unlimited. Tokens are prompt + completion tokens."""

    max_calls: int | None = None
    max_tokens: int | None = None
    max_tool_calls: int | None = None
    max_wall_s: float | None = None


class BudgetExceeded(RuntimeError):
    """A budget limit was reached; raised before the call or tool execution it would prevent."""

    def __init__(self, resource: str, limit: float, used: float, component: str = "") -> None:
        where = f" (component {component!r})" if component else ""
        super().__init__(f"budget exhausted: {resource} used {used:g} of {limit:g}{where}")
        self.resource = resource
        self.limit = limit
        self.used = used
        self.component = component


@dataclass(frozen=True)
class ComponentStats:
    """Counters for one component (or the whole run)."""

    calls: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tool_calls: int = 0
    latency_s: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "total_tokens": self.total_tokens}


class Accounting:
    """Thread-safe counters per component plus an optional `Budget` checked before each call.

    `calls` counts every request sent to a provider (HTTP retries included, failures also count
    as `errors`). The wall clock starts when the object is created.
    """

    def __init__(
        self, budget: Budget | None = None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.budget = budget or Budget()
        self._clock = clock
        self._start = clock()
        self._lock = threading.Lock()
        self._stats: dict[str, ComponentStats] = {}
        self._stopped: BudgetExceeded | None = None

    # -- queries -------------------------------------------------------------------------------
    @property
    def elapsed_s(self) -> float:
        return self._clock() - self._start

    def remaining_s(self) -> float | None:
        """Seconds left before the wall-time budget runs out (``None``: no wall budget, never
        below 0). Every blocking call of a run gets at most this as its total deadline."""
        if self.budget.max_wall_s is None:
            return None
        return max(0.0, self.budget.max_wall_s - self.elapsed_s)

    def deadline(self, timeout: float | None) -> float | None:
        """The smaller of ``timeout`` and the time left (either may be ``None``: no limit)."""
        left = self.remaining_s()
        if left is None:
            return timeout
        return left if timeout is None else min(timeout, left)

    @property
    def stopped(self) -> BudgetExceeded | None:
        """The first `BudgetExceeded` raised by this run, if any."""
        with self._lock:
            return self._stopped

    def totals(self) -> ComponentStats:
        with self._lock:
            return self._total_locked()

    def by_component(self) -> dict[str, ComponentStats]:
        with self._lock:
            return dict(self._stats)

    def snapshot(self) -> dict[str, Any]:
        """A JSON-serialisable report: totals, per component, elapsed time and stop reason."""
        with self._lock:
            stopped = self._stopped
            return {
                "elapsed_s": self.elapsed_s,
                "totals": self._total_locked().as_dict(),
                "components": {k: v.as_dict() for k, v in sorted(self._stats.items())},
                "budget": asdict(self.budget),
                "stopped": None if stopped is None else str(stopped),
            }

    # -- budget checks -------------------------------------------------------------------------
    def check(self, component: str = "") -> None:
        """Raise `BudgetExceeded` if another LLM call would exceed the budget."""
        with self._lock:
            total = self._total_locked()
            b = self.budget
            if b.max_calls is not None and total.calls >= b.max_calls:
                self._stop(BudgetExceeded("llm_calls", b.max_calls, total.calls, component))
            if b.max_tokens is not None and total.total_tokens >= b.max_tokens:
                self._stop(BudgetExceeded("tokens", b.max_tokens, total.total_tokens, component))
            self._check_wall_locked(component)

    def charge_tool_call(self, component: str = "") -> None:
        """Check the tool-call and wall-time budgets, then count one tool call."""
        with self._lock:
            b = self.budget
            used = self._total_locked().tool_calls
            if b.max_tool_calls is not None and used >= b.max_tool_calls:
                self._stop(BudgetExceeded("tool_calls", b.max_tool_calls, used, component))
            self._check_wall_locked(component)
            current = self._stats.get(component, ComponentStats())
            self._stats[component] = replace(current, tool_calls=current.tool_calls + 1)

    # -- recording -----------------------------------------------------------------------------
    def record_call(
        self, component: str, usage: Usage, latency_s: float, *, error: bool = False
    ) -> None:
        """Count one request sent to a provider (successful or not)."""
        with self._lock:
            s = self._stats.get(component, ComponentStats())
            self._stats[component] = ComponentStats(
                calls=s.calls + 1,
                errors=s.errors + int(error),
                prompt_tokens=s.prompt_tokens + usage.prompt_tokens,
                completion_tokens=s.completion_tokens + usage.completion_tokens,
                tool_calls=s.tool_calls,
                latency_s=s.latency_s + latency_s,
            )

    # -- internals -----------------------------------------------------------------------------
    def _check_wall_locked(self, component: str) -> None:
        b = self.budget
        if b.max_wall_s is not None and self.elapsed_s >= b.max_wall_s:
            self._stop(BudgetExceeded("wall_s", b.max_wall_s, self.elapsed_s, component))

    def _stop(self, exc: BudgetExceeded) -> None:
        if self._stopped is None:
            self._stopped = exc
        raise exc

    def _total_locked(self) -> ComponentStats:
        total = ComponentStats()
        for s in self._stats.values():
            total = ComponentStats(
                calls=total.calls + s.calls,
                errors=total.errors + s.errors,
                prompt_tokens=total.prompt_tokens + s.prompt_tokens,
                completion_tokens=total.completion_tokens + s.completion_tokens,
                tool_calls=total.tool_calls + s.tool_calls,
                latency_s=total.latency_s + s.latency_s,
            )
        return total
