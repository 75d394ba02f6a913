"""``hyperplan serve``: an MCP gateway that puts LLM-free, dependency-aware tool pre-selection
(the Tool Context Graph with Deficit-Oriented Expansion, conditioned on the agent state of
Definition 4: :mod:`hyperplan.select`) in front of any MCP client.

    hyperplan serve python:hyperplan.examples.bookstore             # stdio, search mode
    hyperplan serve --mode narrow "mcp-server:uvx mcp-server-git" openapi:api.yaml
    hyperplan serve --http 8765 python:hyperplan.examples.bookstore  # streamable HTTP
    hyperplan serve --config ~/.cursor/mcp.json                      # an mcpServers file

Modules: :mod:`.upstream` (sources and the hardened runtimes every call is forwarded through,
MCP upstreams started together, colliding names namespaced), :mod:`.mcp_config` (the
``mcpServers`` file of ``--config``), :mod:`.selection` (the gateway's build of its selector,
in the background on the selection host's pool, :mod:`hyperplan.integrations.host`, with a
BM25 fallback until it is ready), :mod:`.conversations` (one state-conditioned conversation
per client, the host's, plus what narrow mode shows), :mod:`.modes` (search and narrow mode,
free of SDK types), :mod:`.server` (the MCP server on the official SDK's low-level ``Server``:
stdio, streamable HTTP, list-changed for both protocol generations) with its parts
:mod:`.loading`, :mod:`.binding`, :mod:`.relay` and :mod:`.workers`, :mod:`.http` (streamable
HTTP's protections: Host and Origin checks, the bearer token, sessions bounded per client),
:mod:`.catalog_cache` (the upstreams' listings kept for a warm start), :mod:`.bench` (its
added latency) and :mod:`.bench_config` (an ``mcpServers`` file's start, per-call overhead
and selection). Importing this package does not import the
MCP SDK.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from hyperplan.catalog import Catalog
from hyperplan.integrations.mcp_gateway.catalog_cache import CatalogCache
from hyperplan.integrations.mcp_gateway.config import (
    GatewayConfig,
    HttpAddress,
    HttpSecurity,
    Mode,
    check_exposure,
)
from hyperplan.integrations.mcp_gateway.modes import Gateway
from hyperplan.integrations.mcp_gateway.selection import SelectionService
from hyperplan.integrations.mcp_gateway.upstream import (
    MCP_SERVER,
    Upstream,
    UpstreamOptions,
    check_sources,
    load_upstream,
)

if TYPE_CHECKING:
    from hyperplan.integrations.mcp_gateway.mcp_config import ServerEntry

__all__ = ["Gateway", "GatewayConfig", "HttpAddress", "HttpSecurity", "Mode",
           "UpstreamOptions", "build_gateway", "check_sources", "gateway_over", "serve"]


def build_gateway(sources: Sequence[str], config: GatewayConfig | None = None,
                  options: UpstreamOptions | None = None, *,
                  servers: Sequence[ServerEntry] = (),
                  report: Callable[[str], None] | None = None,
                  warm_start: bool = False) -> Gateway:
    """Load the upstream tools of ``sources`` and ``servers`` (an ``mcpServers`` file's,
    :mod:`.mcp_config`; MCP upstreams started together, one that fails told to ``report``)
    and the selection over them; the graph is not built until ``gateway.service.start()``.
    With ``warm_start`` (what ``hyperplan serve`` does), MCP upstreams whose tools an earlier
    run with the same ``cache_dir`` listed are loaded from its catalog cache
    (:mod:`.catalog_cache`) and started in the background; the caller then owes
    :meth:`~.upstream.Upstream.settle` (the server calls it) to learn whether they started
    and still list those tools. Without it every upstream is listed before this returns."""
    cfg = config or GatewayConfig()
    upstream = load_upstream(sources, options or UpstreamOptions(call_timeout=cfg.call_timeout),
                             servers=servers, report=report,
                             catalogs=CatalogCache.beside(cfg.cache_dir) if warm_start else None)
    return gateway_over(upstream, cfg)


def gateway_over(upstream: Upstream, config: GatewayConfig) -> Gateway:
    """The gateway (and its selection, not started) over loaded ``upstream`` tools."""
    service = SelectionService(_redacted(upstream.catalog), embedder=config.embedder,
                               cache_dir=config.cache_dir, budget=config.budget,
                               annotations=config.annotations, llm=config.llm_annotate)
    return Gateway(upstream, service, config)


def _loader(sources: Sequence[str], cfg: GatewayConfig, opts: UpstreamOptions,
            servers: Sequence[ServerEntry]) -> Callable[[], Gateway]:
    """What loads the gateway's tools (warm start: :func:`build_gateway`). With only MCP
    upstreams nothing in this process prints while they load, so they start now, before
    the MCP SDK's server side is imported (:class:`_Early`); else in the server's loader
    thread, with stdout (the protocol's, over stdio) sent to stderr meanwhile."""
    if all(s.startswith(MCP_SERVER) for s in sources):
        early = _Early(lambda: build_gateway(sources, cfg, opts, servers=servers,
                                             warm_start=True))
        # the upstream processes first (see _Early); always to the end: the SDK imported
        # from two threads at once can meet a partly initialised ``mcp`` package
        early.spawning.wait()
        return early.result

    def load() -> Gateway:
        with contextlib.redirect_stdout(sys.stderr):
            return build_gateway(sources, cfg, opts, servers=servers, warm_start=True)

    return load


class _Early:
    """``make()`` started now in a thread of its own; :meth:`result` waits for it.
    ``spawning`` is set once what starting an MCP upstream needs is imported (the runtimes
    and the SDK's client): the caller waits for it before importing the SDK's server side,
    so that the upstream processes, which then start at once, are not held up by that
    import (one interpreter lock for both) and run on the other core meanwhile."""

    def __init__(self, make: Callable[[], Gateway]) -> None:
        import threading

        self._make = make
        self._value: Gateway | None = None
        self._error: BaseException | None = None
        self.spawning = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hyperplan-gateway-early",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            try:
                import mcp.client  # noqa: F401

                import hyperplan.execute.runtimes  # noqa: F401
            finally:
                self.spawning.set()
            self._value = self._make()
        except BaseException as exc:
            self._error = exc

    def result(self) -> Gateway:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._value is not None
        return self._value


def _redacted(catalog: Catalog) -> Catalog:
    """The catalog the selection (and its on-disk cache) sees: redacted by value, since an
    upstream may put a credential it was given into a description or a default."""
    from hyperplan.secrets import redact_value

    data = catalog.model_dump()
    cleaned = redact_value(data)
    return catalog if cleaned == data else Catalog.model_validate(cleaned)


def serve(sources: Sequence[str], config: GatewayConfig | None = None,
          options: UpstreamOptions | None = None, *, http: HttpAddress | None = None,
          security: HttpSecurity | None = None,
          announce: Callable[[str], None] | None = None,
          on_failure: Callable[[str], None] | None = None,
          servers: Sequence[ServerEntry] = ()) -> None:
    """Run the gateway until the client disconnects (stdio) or it is interrupted (HTTP).

    Over HTTP, ``security`` (default: Host and Origin checked on loopback, no token) is
    checked first: beyond loopback a bearer token is required
    (:func:`~.config.check_exposure`, a :class:`~hyperplan.errors.HyperplanError`), and
    ``announce`` also gets the one-line warning of what is exposed. The sources are checked
    first (:func:`~.upstream.check_sources`: a
    :class:`~hyperplan.errors.HyperplanError` before anything is served); then the server
    answers the handshake while the upstream tools load in the background, and the graph is
    built after them, also in the background. ``announce`` gets one line once the gateway
    serves (never on stdout); ``on_failure`` the one-line reason when a source fails while
    loading (default: printed, exit status 1). ``servers``: those of an ``mcpServers`` file
    (:func:`~.mcp_config.load_mcp_config`), served with ``sources``; an MCP upstream that
    does not start is reported on stderr and the others are served."""
    cfg = config or GatewayConfig()
    opts = options or UpstreamOptions(call_timeout=cfg.call_timeout)
    security = security or HttpSecurity()
    exposure = check_exposure(http, security) if http is not None else None
    check_sources(sources, opts, servers=servers)
    load = _loader(sources, cfg, opts, servers)

    import anyio

    from hyperplan import __version__
    from hyperplan.integrations.mcp_gateway.server import GatewayServer

    server = GatewayServer(cfg, load, version=__version__, on_failure=on_failure)
    head = f"hyperplan serve: {len(sources) + len(servers)} source(s), {cfg.mode.value} mode"
    auth = ", bearer token required" if security.token is not None else ""
    try:
        if http is not None:
            if exposure is not None and announce is not None:
                announce(exposure)
            server.serve_http(http, security=security,
                              ready=lambda url: announce and announce(f"{head}, at {url}{auth}"))
        else:
            if announce is not None:
                announce(f"{head}, on stdio")
            anyio.run(server.serve_stdio)
    finally:
        gateway = server.wait_loaded(timeout=0)
        if gateway is not None:
            gateway.upstream.close()
        if server.terminated:  # SIGTERM: cleaned up; the stdin reader thread never ends
            sys.stderr.flush()
            os._exit(143)
