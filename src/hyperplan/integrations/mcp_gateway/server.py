"""The MCP server of the gateway, on the official SDK's low-level ``Server`` (``mcp`` 2.3.0).

Handlers: ``tools/list`` and ``tools/call`` answer from :class:`~.modes.Gateway` (run in a
worker thread, so a slow upstream never stalls the connection; each call has a backstop
deadline beyond the runtime's own). In narrow mode the server also serves
``subscriptions/listen`` and announces a changed tool list to both client generations:

* clients on the handshake protocol (``initialize``, up to 2025-11-25, e.g. Hermes with its
  pinned ``mcp`` 1.26) get ``notifications/tools/list_changed`` on their connection: after
  ``find_tools`` on the stream of that request (so it also reaches a streamable-HTTP client
  without a standalone GET stream), after a call on the connection's own channel (stdio; the
  GET stream over HTTP); the ``tools.listChanged`` capability is advertised;
* 2026-07-28 clients (per-request envelope, no handshake) get it through their
  ``subscriptions/listen`` streams: the change is published to a
  :class:`~mcp.server.subscriptions.InMemorySubscriptionBus` as ``ToolsListChanged``, which the
  SDK's :class:`~mcp.server.subscriptions.ListenHandler` delivers, stamped with the
  subscription id.

The selection that follows a forwarded call (narrow mode) runs after the call's result is
sent, so the call does not wait for it; the conversation's next request waits for it first,
so what it sees is always selected from every earlier result. When the graph finishes
building after a narrow-mode conversation already has a request, the conversation is
selected again and a change is announced the same way, outside any request.

The server is this module's handlers of ``tools/list`` and ``tools/call`` over four parts:

* :mod:`.loading` (:class:`~.loading.GatewayLoader`): the handshake is answered while the
  upstream tools load in a background thread (``initialize`` does not wait for them;
  ``tools/list`` and ``tools/call`` do); a warm start serves the kept tools and replaces the
  gateway when the upstreams list others. The checks that need no import
  (:func:`~.upstream.check_sources`) run before serving; a source that fails while loading
  ends the gateway with one line on stderr and exit status 1, as a failure at start.
* :mod:`.binding` (:class:`~.binding.Binding`): which conversation a request belongs to
  (:mod:`.conversations`; no client can name, read, change or evict another's) and the
  list-changed announcements above.
* :mod:`.relay` (:class:`~.relay.Relay`): resources, resource templates and prompts passed
  through to the upstreams (:mod:`.passthrough`). The ``resources`` and ``prompts``
  capabilities are advertised only when some upstream has them (known once the sources
  loaded; a client that initializes earlier is told what the sources may offer: any
  ``mcp-server:`` source may have them, when the gateway was told its sources).
* :mod:`.workers` (:class:`~.workers.Workers`) and :mod:`.limits`: each tool call waits for a
  slot of its client and of its upstream, inside its deadline (``busy``, never sent, when
  none comes free); selection runs on threads of its own, so it never waits behind tool
  calls.
"""

from __future__ import annotations

import asyncio
import functools
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.runner import serve_dual_era_loop
from pydantic import TypeAdapter, ValidationError

from hyperplan.integrations.mcp_gateway.binding import Binding, client_of
from hyperplan.integrations.mcp_gateway.config import (
    GatewayConfig,
    HttpAddress,
    HttpSecurity,
    Mode,
)
from hyperplan.integrations.mcp_gateway.conversations import CONVERSATION_META, Conversation
from hyperplan.integrations.mcp_gateway.loading import GatewayLoader
from hyperplan.integrations.mcp_gateway.modes import (
    CALL_TOOL,
    CONVERSATION,
    FIND_TOOLS,
    Gateway,
    Reply,
    error_reply,
)
from hyperplan.integrations.mcp_gateway.relay import Relay
from hyperplan.integrations.mcp_gateway.workers import Workers

_BLOCK = TypeAdapter(types.ContentBlock)

INSTRUCTIONS = {
    Mode.SEARCH: ("This gateway fronts many tools. Call find_tools with what you want to do: "
                  "it returns the tools for it (with the tools that produce the inputs they "
                  "need, in calling order). Then call them with call_tool(name, arguments)."),
    Mode.NARROW: ("This gateway lists only the tools selected for the task. Call find_tools "
                  "with what you want to do: the tool list then holds the tools for it, and "
                  "it changes as results come in (notifications/tools/list_changed)."),
}


class _GatewayServer(Server[Any]):
    """The SDK's low-level server, advertising ``tools.listChanged`` to handshake-era
    clients in narrow mode on every transport (the streamable-HTTP manager builds its
    initialization options itself, without arguments)."""

    def __init__(self, *args: Any, tools_changed: bool = False,
                 offers: Callable[[str], bool] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tools_changed = tools_changed
        self.offers = offers

    def get_capabilities(self, notification_options: NotificationOptions | None = None,
                         experimental_capabilities: dict[str, dict[str, Any]] | None = None,
                         extensions: dict[str, dict[str, Any]] | None = None, *,
                         protocol_version: str | None = None) -> types.ServerCapabilities:
        """The SDK's capabilities, with ``resources`` / ``prompts`` only when ``offers``
        says an upstream has them (no subscriptions, no list-changed: not passed on)."""
        caps = super().get_capabilities(notification_options, experimental_capabilities,
                                        extensions, protocol_version=protocol_version)
        offers = self.offers or (lambda _capability: False)
        return caps.model_copy(update={
            "resources": types.ResourcesCapability(subscribe=False, list_changed=False)
            if offers("resources") else None,
            "prompts": types.PromptsCapability(list_changed=False)
            if offers("prompts") else None})

    def create_initialization_options(
            self, notification_options: NotificationOptions | None = None,
            experimental_capabilities: dict[str, dict[str, Any]] | None = None,
            extensions: dict[str, dict[str, Any]] | None = None) -> InitializationOptions:
        options = notification_options or NotificationOptions(tools_changed=self.tools_changed)
        return super().create_initialization_options(options, experimental_capabilities,
                                                     extensions)


class GatewayServer:
    """The gateway as an MCP server (module doc). ``load`` builds the
    :class:`~.modes.Gateway` (upstream and selection) in a background thread
    (:class:`~.loading.GatewayLoader`); ``on_failure`` gets the one-line message when it
    fails (default: print it, exit 1)."""

    def __init__(self, config: GatewayConfig, load: Callable[[], Gateway], *,
                 name: str = "hyperplan-gateway", version: str = "",
                 on_failure: Callable[[str], None] | None = None,
                 sources: Sequence[str] | None = None) -> None:
        self.config = config
        self.narrow = config.mode is Mode.NARROW
        self.terminated = False  # stdio: ended by SIGTERM (serve exits once it cleaned up)
        self.workers = Workers(config)
        self.deadline = self.workers.deadline
        self.binding = Binding(self.narrow, self.workers)
        # before the sources loaded: whether they may offer resources and prompts
        self.loader = GatewayLoader(
            config, load, on_failure=on_failure or _exit_with,
            may_pass=sources is None or any(s.startswith("mcp-server:") for s in sources),
            on_ready=self.on_graph_ready, on_replace=self._replaced)
        self.relay = Relay(self.loader, self.workers, config)
        self._tools: dict[str, types.Tool] = {}
        self.server = _GatewayServer(
            name, version=version, instructions=INSTRUCTIONS[config.mode],
            on_list_tools=self._list_tools, on_call_tool=self._call_tool,
            on_list_resources=self.relay.list_resources,
            on_list_resource_templates=self.relay.list_resource_templates,
            on_read_resource=self.relay.read_resource, on_list_prompts=self.relay.list_prompts,
            on_get_prompt=self.relay.get_prompt,
            on_subscriptions_listen=self.binding.listen if self.narrow else None,
            tools_changed=self.narrow, offers=self.loader.offers)

    def start_loading(self) -> None:
        """Load the upstream tools in a background thread (once), then start the graph
        build; a failure goes to ``on_failure``."""
        self.loader.start()

    def wait_loaded(self, timeout: float | None = None) -> Gateway | None:
        return self.loader.wait_loaded(timeout)

    def on_graph_ready(self, error: str | None) -> None:
        """Called in the build thread when the selector is ready: narrow-mode conversations
        with a request are selected again, and a changed list is announced."""
        gateway = self.loader.gateway
        if error is None and gateway is not None:
            self.binding.announce_all(gateway, refresh=True)

    def _replaced(self, old: Gateway) -> None:
        """The loader serves a new gateway instead of ``old``: its conversations start
        afresh; in narrow mode each of ``old``'s is told its list changed."""
        self.workers.reset()
        self._tools = {}
        self.binding.announce_all(old)

    # handlers ---------------------------------------------------------------------------

    async def _list_tools(self, ctx: ServerRequestContext[Any],
                          params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        gateway = await self.loader.gateway_now()
        conv = self.binding.resolve(ctx, gateway, None, open_new=False) if self.narrow \
            else None
        if conv is not None:
            await self.binding.enter(ctx, conv.token)
        tools = gateway.list_tools(conv)
        return types.ListToolsResult(tools=[self._tool(d) for d in tools])

    async def _call_tool(self, ctx: ServerRequestContext[Any],
                         params: types.CallToolRequestParams) -> types.CallToolResult:
        gateway = await self.loader.gateway_now()
        name, args = params.name, dict(params.arguments or {})
        token = None
        if name == FIND_TOOLS or (name == CALL_TOOL and not self.narrow):
            token = args.pop(CONVERSATION, None)
            if token is not None and not isinstance(token, str):
                return _result(error_reply(f"{name}: '{CONVERSATION}' must be the token "
                                           f"{FIND_TOOLS} returned", "invalid_arguments"))
        conv = self.binding.resolve(ctx, gateway, token, open_new=name == FIND_TOOLS)
        if conv is not None:
            await self.binding.enter(ctx, conv.token)
        if name == FIND_TOOLS:
            await self.loader.warmed()
            reply = await self.workers.run(self.workers.slots(gateway).selection_threads,
                                           functools.partial(gateway.call, conv, name, args))
        else:
            reply = await self._forward(ctx, gateway, conv, name, args)
        if reply is None:
            reply = error_reply(
                f"{name}: no answer within {self.deadline:g} s; the gateway stopped "
                "waiting. The outcome is unknown and the call is not repeated.",
                "outcome_unknown")
        if conv is not None:
            await self.binding.answered(ctx, gateway, conv, reply)
        return _result(reply)

    async def _forward(self, ctx: ServerRequestContext[Any], gateway: Gateway,
                       conv: Conversation | None, name: str, args: dict[str, Any]
                       ) -> Reply | None:
        """A tool call, once it holds a slot of its client and of its upstream (waiting
        inside its deadline; :mod:`.limits`)."""
        target = args.get("name") if name == CALL_TOOL and not self.narrow else name
        source = gateway.upstream.source_index(target) if isinstance(target, str) else None
        slots = self.workers.slots(gateway)
        # fairness between conversations (several agents behind one address share nothing);
        # a call without one counts against its address
        client = f"conversation:{conv.token}" if conv is not None else client_of(ctx)
        async with slots.slot(source, client, self.config.call_timeout) as left:
            if left is None:
                return error_reply(
                    f"{target}: not sent: this server's calls (or yours) are all in progress "
                    f"and none finished within the {self.config.call_timeout:g} s deadline. "
                    "Nothing was sent; try again later.", "busy", tool=target,
                    forwarded=False)
            return await self.workers.run(slots.call_threads, functools.partial(
                gateway.call, conv, name, args, timeout=left))

    # conversions ------------------------------------------------------------------------

    def _tool(self, definition: dict[str, Any]) -> types.Tool:
        name = str(definition["name"])
        tool = self._tools.get(name)
        if tool is None:
            try:
                tool = types.Tool.model_validate(definition)
            except ValidationError:  # an odd upstream field: keep what a client needs
                tool = types.Tool.model_validate(
                    {k: definition[k] for k in ("name", "description", "inputSchema")
                     if k in definition})
                for key in ("title", "annotations"):  # and the hints, when they are valid
                    try:
                        tool = types.Tool.model_validate(
                            {**tool.model_dump(by_alias=True, exclude_none=True),
                             key: definition[key]}) if key in definition else tool
                    except ValidationError:
                        continue
            self._tools[name] = tool
        return tool

    # transports -------------------------------------------------------------------------

    async def serve_stdio(self) -> None:
        """Serve one client over this process's stdin and stdout until it disconnects or
        the process gets SIGTERM (then it ends as at the end of its input: the caller stops
        the upstreams)."""
        import signal

        from hyperplan.integrations.mcp_gateway.stdio import stdio_server

        async with stdio_server() as (read_stream, write_stream), \
                anyio.create_task_group() as group:
            self.binding.loop = asyncio.get_running_loop()
            self.start_loading()

            async def stop_on_sigterm() -> None:
                with anyio.open_signal_receiver(signal.SIGTERM) as signals:
                    async for _ in signals:
                        self.terminated = True
                        group.cancel_scope.cancel()
                        return

            if threading.current_thread() is threading.main_thread():
                group.start_soon(stop_on_sigterm)
            # the initialize answer is built when it comes (capabilities known by then)
            async with self.server.lifespan(self.server) as state:
                await serve_dual_era_loop(self.server, read_stream, write_stream,
                                          lifespan_state=state, init_options=None)
            group.cancel_scope.cancel()

    def serve_http(self, address: HttpAddress, *, ready: Callable[[str], None] | None = None,
                   security: HttpSecurity | None = None) -> None:
        """Serve streamable HTTP at ``address`` (path ``/mcp``) until interrupted, protected
        as :mod:`.http` says: ``security`` is a :class:`~.config.HttpSecurity` (default: Host
        and Origin checked on loopback, no token); ``ready`` gets the URL once it listens."""
        from hyperplan.integrations.mcp_gateway.http import serve_http

        self.start_loading()
        serve_http(self.server, address, security, ready=ready)


def _result(reply: Reply) -> types.CallToolResult:
    content: list[types.ContentBlock] = []
    for block in reply.blocks:
        try:
            content.append(_BLOCK.validate_python(block))
        except ValidationError:
            content = []
            break
    if not content:
        content = [types.TextContent(type="text", text=reply.text)]
    meta = {CONVERSATION_META: reply.conversation} if reply.conversation else None
    return types.CallToolResult(content=content, structured_content=reply.structured,
                                is_error=reply.is_error, meta=meta)


def _exit_with(message: str) -> None:
    """The default end of a gateway whose tools could not be loaded: the message as one line
    on stderr, exit status 1 (at once: the stdio reader may be blocked on the client)."""
    from hyperplan.secrets import redact_text

    print(f"error: {redact_text(message)}", file=sys.stderr, flush=True)
    os._exit(1)
