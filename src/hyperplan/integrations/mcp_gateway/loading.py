"""Loading the gateway behind its MCP server, and replacing it when the upstreams list other
tools than were kept (for :class:`~.server.GatewayServer`).

The server answers the handshake while the upstream tools load in a background thread
(importing a ``python:`` module, starting an ``mcp-server:`` process and listing its tools),
so ``initialize`` does not wait for them; ``tools/list`` and ``tools/call`` do
(:meth:`GatewayLoader.gateway`). Once loaded, the graph build starts (in the background too,
:mod:`.selection`). On a warm start (MCP upstreams whose tools an earlier run kept in the
catalog cache, :mod:`.catalog_cache`) the load takes the kept tools and does not wait for the
upstream processes; once all are up, an upstream whose live listing differs from the kept one
makes the gateway serve the new catalog (:meth:`GatewayLoader.replace`: conversations start
afresh, the server tells each its list changed), and one that did not start is left out and
reported, as at a cold start. A source that fails while loading goes to ``on_failure`` (the
server's default: one line on stderr and exit status 1, as a failure at start).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

import anyio
import anyio.to_thread
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR

from hyperplan.integrations.mcp_gateway.config import GatewayConfig
from hyperplan.integrations.mcp_gateway.modes import Gateway
from hyperplan.integrations.mcp_gateway.passthrough import Passthrough

FALLBACK_WAIT = 10.0  # seconds the first find_tools waits for the build's BM25 and tokens


class GatewayLoader:
    """The gateway ``load`` makes, loaded in a background thread (module doc).
    ``may_pass``: whether the sources may offer resources and prompts (what is advertised
    before they loaded); ``on_ready``: the graph-ready hook of every gateway served;
    ``on_replace(old)``: called when ``old`` was replaced (the new one serves)."""

    def __init__(self, config: GatewayConfig, load: Callable[[], Gateway], *,
                 on_failure: Callable[[str], None], may_pass: bool,
                 on_ready: Callable[[str | None], None],
                 on_replace: Callable[[Gateway], None]) -> None:
        self.config = config
        self.gateway: Gateway | None = None
        self.failure: str | None = None
        self.passthrough: Passthrough | None = None
        self.may_pass = may_pass
        self._load = load
        self._on_failure = on_failure
        self._on_ready = on_ready
        self._on_replace = on_replace
        self._loaded = threading.Event()
        self._warmed = threading.Event()  # the keyword fallback is ready (_warm_fallback)
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Load in a background thread (once), then start the graph build."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, daemon=True,
                                            name="hyperplan-gateway-load")
            self._thread.start()

    def wait_loaded(self, timeout: float | None = None) -> Gateway | None:
        self._loaded.wait(timeout)
        return self.gateway

    async def gateway_now(self) -> Gateway:
        """The loaded gateway (waiting for the loader when it is not done yet)."""
        if not self._loaded.is_set():
            await anyio.to_thread.run_sync(self._loaded.wait, abandon_on_cancel=True)
        if self.gateway is None:
            raise MCPError(INTERNAL_ERROR, f"the upstream tools could not be loaded: "
                                           f"{self.failure}")
        return self.gateway

    async def warmed(self) -> None:
        """Wait until the first ``find_tools`` may run (:meth:`_warm_fallback`)."""
        if not self._warmed.is_set():
            await anyio.to_thread.run_sync(self._warmed.wait, abandon_on_cancel=True)

    async def passthrough_now(self) -> tuple[Gateway, Passthrough]:
        """The gateway and its passthrough of resources and prompts."""
        gateway = await self.gateway_now()
        passthrough = self.passthrough
        if passthrough is None:  # loaded by a test's own loader; built on first use
            passthrough = self.passthrough = Passthrough(gateway.upstream, self.config)
        return gateway, passthrough

    def offers(self, capability: str) -> bool:
        """Whether the gateway advertises ``capability`` (``resources`` / ``prompts``): some
        upstream has it; before the sources loaded, whether they may (``may_pass``)."""
        if not self._loaded.is_set():
            return self.may_pass
        passthrough = self.passthrough
        known = passthrough.known_offers(capability) if passthrough is not None else False
        return self.may_pass if known is None else known

    def _run(self) -> None:
        warm = False
        try:
            gateway = self._load()
            gateway.service.on_ready = self._on_ready
            passthrough = Passthrough(gateway.upstream, self.config)
            warm = gateway.upstream.starting
            if not warm:  # a warm start asks once the upstreams are up (_settle_upstreams)
                passthrough.warm()
            self.passthrough = passthrough
            self.gateway = gateway
            gateway.service.start()
        except BaseException as exc:
            self.failure = " ".join(str(exc).split()) or type(exc).__name__
        finally:
            self._loaded.set()
        if self.failure is not None:
            self._warmed.set()
            self._on_failure(self.failure)
            return
        self._warm_fallback(gateway)
        if warm:
            self._settle_upstreams(gateway)

    def _warm_fallback(self, gateway: Gateway) -> None:
        """Wait (at most :data:`FALLBACK_WAIT` s) until the build thread has what the first
        ``find_tools`` needs before the graph is ready: the BM25 index and the token counts
        (tiktoken's encoding: about a second of CPU), which it makes first. A ``find_tools``
        that came meanwhile would make a second copy of both at once, on the same two cores
        (the server's ``find_tools`` waits for this instead)."""
        try:
            gateway.service.fallback.wait(FALLBACK_WAIT)
        finally:
            self._warmed.set()

    def _settle_upstreams(self, gateway: Gateway) -> None:
        """A warm start (module doc): once the upstreams served from the catalog cache are
        up, serve what they list when it is not what was kept (an upstream that did not
        start is left out), then ask them for their capabilities."""
        from hyperplan.integrations.mcp_gateway import gateway_over
        from hyperplan.integrations.mcp_gateway.catalog_cache import CatalogCache

        try:
            upstream = gateway.upstream.settle(CatalogCache.beside(self.config.cache_dir))
            if upstream is not None:
                self.replace(gateway, gateway_over(upstream, self.config))
            passthrough = self.passthrough
            if passthrough is not None:
                passthrough.warm()
        except Exception as exc:  # never fatal: the kept catalog is still served
            from hyperplan.secrets import redact_text

            print(f"hyperplan serve: warning: checking the upstreams' tools failed: "
                  f"{redact_text(' '.join(str(exc).split()))}", file=sys.stderr, flush=True)

    def replace(self, old: Gateway, new: Gateway) -> None:
        """Serve ``new`` (the tools the upstreams list now) instead of ``old`` (module
        doc)."""
        new.service.on_ready = self._on_ready
        self.passthrough = Passthrough(new.upstream, self.config)
        self.gateway = new
        self._on_replace(old)
        new.service.start()
