"""Fair, bounded tool calls (issue 36, item 4): no client can stall the others.

* **Per upstream:** at most ``per_source`` calls run on one source at a time (one for a
  ``python:`` source in the subprocess sandbox, whose one child serves calls in turn); the
  others queue.
* **Per client:** at most ``per_client`` calls of one client (a conversation; a call that
  names none: its address and credential) run or queue for a slot at a time, so one
  client's flood leaves slots for everybody else.
* **Inside the deadline:** the time a call waits for its slots counts against its
  ``call_timeout``. A call that gets none in time, or gets them with less than a second (a
  quarter of the deadline) left, is answered ``busy`` and was never sent (it is never
  ``outcome_unknown``); the one that gets them runs with what is left.
* **Selection apart:** ``find_tools``, ``tools/list`` and the selection after a call run on
  worker threads of their own (:attr:`CallSlots.selection_threads`), never behind tool calls.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio

from hyperplan.integrations.mcp_gateway.config import CallLimits

SELECTION_THREADS = 4
_NO_WAIT = 0.01
_MIN_LEFT = 1.0  # seconds (or a quarter of the deadline) a call needs left to be sent


class CallSlots:
    """The slots of :class:`CallLimits` (module doc). Create and use on the server's event
    loop. ``source_slots(i)``: the slots of source ``i`` when it has its own bound."""

    def __init__(self, sources: int, limits: CallLimits | None = None,
                 source_slots: Callable[[int], int | None] = lambda _i: None) -> None:
        self.limits = limits or CallLimits()
        sizes = [source_slots(i) or self.limits.per_source for i in range(sources)]
        self._sources = [anyio.CapacityLimiter(max(1, n)) for n in sizes]
        self._clients: dict[str, anyio.CapacityLimiter] = {}
        # threads: every call that holds its slots has one; selection has its own
        self.call_threads = anyio.CapacityLimiter(max(1, sum(sizes)) + 1)
        self.selection_threads = anyio.CapacityLimiter(SELECTION_THREADS)

    @asynccontextmanager
    async def slot(self, source: int | None, client: str,
                   seconds: float) -> AsyncIterator[float | None]:
        """Hold a slot of ``client`` and of ``source`` (None: no upstream runs this call),
        waiting at most ``seconds`` in all; yields the seconds left, or None when no slot
        came free in time (nothing may be sent then)."""
        started = time.monotonic()
        client_slots = self._clients.get(client)
        if client_slots is None:
            client_slots = self._clients[client] = anyio.CapacityLimiter(
                self.limits.per_client)
        source_slots = self._sources[source] if source is not None else None
        held: list[anyio.CapacityLimiter] = []
        try:
            with anyio.move_on_after(seconds):
                await client_slots.acquire()
                held.append(client_slots)
                if source_slots is not None:
                    await source_slots.acquire()
                    held.append(source_slots)
            complete = len(held) == (2 if source_slots is not None else 1)
            waited = time.monotonic() - started
            # a wait under _NO_WAIT seconds is no wait: the call keeps its whole deadline
            left = seconds if waited < _NO_WAIT else max(0.0, seconds - waited)
            # a call left too little time to finish is not sent: it would end unknown
            yield left if complete and left >= min(_MIN_LEFT, seconds / 4) else None
        finally:
            for limiter in reversed(held):
                limiter.release()
            if client_slots.borrowed_tokens == 0 and self._clients.get(client) is client_slots \
                    and client_slots.statistics().tasks_waiting == 0:
                del self._clients[client]

    def in_flight(self) -> dict[str, int]:
        """Calls holding a slot now, per source index (for status and tests)."""
        return {str(i): int(s.borrowed_tokens) for i, s in enumerate(self._sources)}
