"""Where the gateway's server runs blocking work: worker threads under the call slots of
:mod:`.limits`, each bounded by a backstop deadline beyond the runtime's own."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import anyio
import anyio.to_thread

from hyperplan.integrations.mcp_gateway.limits import CallSlots

if TYPE_CHECKING:
    from hyperplan.integrations.mcp_gateway.config import GatewayConfig
    from hyperplan.integrations.mcp_gateway.modes import Gateway

_T = TypeVar("_T")
BACKSTOP_MARGIN = 15.0  # seconds past the call deadline before the gateway stops waiting


class Workers:
    """The call slots of the served gateway (made on first use, anew when the gateway is
    replaced) and the backstop ``deadline``."""

    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self.deadline = config.call_timeout + BACKSTOP_MARGIN
        self._slots: CallSlots | None = None

    def slots(self, gateway: Gateway) -> CallSlots:
        """The slots of ``gateway``'s upstreams and clients."""
        if self._slots is None:
            upstream = gateway.upstream
            self._slots = CallSlots(upstream.source_count, self.config.call_limits,
                                    upstream.source_slots)
        return self._slots

    def reset(self) -> None:
        """Forget the slots (the gateway was replaced: other upstreams)."""
        self._slots = None

    async def run(self, limiter: anyio.CapacityLimiter, func: Callable[[], _T]) -> _T | None:
        """``func()`` in a worker thread of ``limiter``; None when the backstop deadline
        passes."""
        with anyio.move_on_after(self.deadline):
            return await anyio.to_thread.run_sync(func, abandon_on_cancel=True,
                                                  limiter=limiter)
        return None
