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

Start: the server answers the handshake while the upstream tools load in a background thread
(importing a ``python:`` module, starting an ``mcp-server:`` process and listing its tools), so
``initialize`` does not wait for them; ``tools/list`` and ``tools/call`` do. On a warm start
(MCP upstreams whose tools an earlier run kept in the catalog cache, :mod:`.catalog_cache`)
the load takes the kept tools and does not wait for the upstream processes: ``tools/list`` and
``find_tools`` answer while they start, a call to one waits until it is up. Once all are up,
an upstream whose live listing differs from the kept one makes the gateway serve the new
catalog (conversations start afresh; in narrow mode each is told its list changed), and one
that did not start is left out and reported, as at a cold start. The checks that
need no import (:func:`~.upstream.check_sources`: an unknown command, a missing module or file)
run before serving; a source that fails while loading ends the gateway with one line on stderr
and exit status 1, as a failure at start.

Conversations (:mod:`.conversations`): over stdio the connection is one conversation (or the
one a known token names). Over streamable HTTP a handshake-era client is one conversation per
session the SDK validated; a 2026-07-28 request carries no session, so its conversation is the
one its token names (the ``conversation`` argument or ``_meta``), ``find_tools`` without a
known token starts a new one, and anything else without one is served stateless. No client
can name, read, change or evict another's conversation.

Resources, resource templates and prompts (:mod:`.passthrough`): ``resources/list``,
``resources/templates/list`` and ``prompts/list`` are the union of the upstreams' lists (an
upstream that fails is left out and named in the result's ``_meta``), ``resources/read`` and
``prompts/get`` go to the upstream that owns the URI or name, each upstream request under the
same slots, deadline, size bound and redaction as a tool call. The ``resources`` and
``prompts`` capabilities are advertised only when some upstream has them (known once the
sources loaded; a client that initializes earlier is told what the sources may offer: any
``mcp-server:`` source may have them, when the gateway was told its sources).

Calls (:mod:`.limits`): each tool call waits for a slot of its client and of its upstream,
inside its deadline (``busy``, never sent, when none comes free); selection runs on threads of
its own, so it never waits behind tool calls.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.runner import serve_dual_era_loop
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter, ValidationError

from hyperplan.integrations.mcp_gateway.config import (
    GatewayConfig,
    HttpAddress,
    HttpSecurity,
    Mode,
)
from hyperplan.integrations.mcp_gateway.conversations import CONVERSATION_META, token_from_meta
from hyperplan.integrations.mcp_gateway.limits import CallSlots
from hyperplan.integrations.mcp_gateway.modes import (
    CALL_TOOL,
    CONVERSATION,
    FIND_TOOLS,
    Gateway,
    Reply,
    error_reply,
)
from hyperplan.integrations.mcp_gateway.passthrough import (
    Kind,
    McpSession,
    Passthrough,
    PassthroughError,
)
from hyperplan.integrations.mcp_gateway.selection import Conversation

_T = TypeVar("_T")
_V = TypeVar("_V")
BACKSTOP_MARGIN = 15.0  # seconds past the call deadline before the gateway stops waiting
FALLBACK_WAIT = 10.0  # seconds the first find_tools waits for the build's BM25 and tokens
_MAX_HINTS = 10_000  # conversations remembered for announcing (a hint, not state)
_BLOCK = TypeAdapter(types.ContentBlock)
PASSTHROUGH_ERRORS = "io.hyperplan/upstream-errors"  # _meta key: upstreams left out of a list
_LIST_RESULTS: dict[Kind, tuple[type[Any], type[Any], str]] = {
    Kind.RESOURCES: (types.ListResourcesResult, types.Resource, "resources"),
    Kind.TEMPLATES: (types.ListResourceTemplatesResult, types.ResourceTemplate,
                     "resource_templates"),
    Kind.PROMPTS: (types.ListPromptsResult, types.Prompt, "prompts"),
}

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
    :class:`~.modes.Gateway` (upstream and selection) in a background thread;
    ``on_failure`` gets the one-line message when it fails (default: print it, exit 1)."""

    def __init__(self, config: GatewayConfig, load: Callable[[], Gateway], *,
                 name: str = "hyperplan-gateway", version: str = "",
                 on_failure: Callable[[str], None] | None = None,
                 sources: Sequence[str] | None = None) -> None:
        self.config = config
        self.narrow = config.mode is Mode.NARROW
        self.gateway: Gateway | None = None
        self.failure: str | None = None
        self.terminated = False  # stdio: ended by SIGTERM (serve exits once it cleaned up)
        self._load = load
        self._on_failure = on_failure or _exit_with
        self._loaded = threading.Event()
        self._warmed = threading.Event()  # the BM25 fallback is ready (_warm_tokens)
        self._loader: threading.Thread | None = None
        self.bus = InMemorySubscriptionBus()
        self._listen = ListenHandler(self.bus)
        self._loop: asyncio.AbstractEventLoop | None = None
        # per conversation token (at most _MAX_HINTS): where to announce to a handshake-era
        # client, whether a 2026-07-28 client, the selection pending after a call
        self._legacy: OrderedDict[str, ServerSession] = OrderedDict()
        self._modern: OrderedDict[str, None] = OrderedDict()
        self._settling: OrderedDict[str, asyncio.Future[None]] = OrderedDict()
        # the conversation token of each transport session ("stdio": the one connection;
        # over HTTP the Mcp-Session-Id the SDK's session manager validated)
        self._bound: OrderedDict[str, str] = OrderedDict()
        self._slots: CallSlots | None = None
        self._tools: dict[str, types.Tool] = {}
        self.passthrough: Passthrough | None = None
        # before the sources loaded: whether they may offer resources and prompts
        self._may_pass = sources is None or any(
            s.startswith("mcp-server:") for s in sources)
        self.server = _GatewayServer(
            name, version=version, instructions=INSTRUCTIONS[config.mode],
            on_list_tools=self._list_tools, on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_resource_templates,
            on_read_resource=self._read_resource, on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
            on_subscriptions_listen=self._listen if self.narrow else None,
            tools_changed=self.narrow, offers=self.offers)
        self.deadline = config.call_timeout + BACKSTOP_MARGIN

    # loading ----------------------------------------------------------------------------

    def start_loading(self) -> None:
        """Load the upstream tools in a background thread (once), then start the graph
        build; a failure goes to ``on_failure``."""
        if self._loader is None:
            self._loader = threading.Thread(target=self._load_gateway, daemon=True,
                                            name="hyperplan-gateway-load")
            self._loader.start()

    def wait_loaded(self, timeout: float | None = None) -> Gateway | None:
        self._loaded.wait(timeout)
        return self.gateway

    def _load_gateway(self) -> None:
        warm = False
        try:
            gateway = self._load()
            gateway.service.on_ready = self.on_graph_ready
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
        self._warm_tokens(gateway)
        if warm:
            self._settle_upstreams(gateway)

    def _warm_tokens(self, gateway: Gateway) -> None:
        """Wait (at most :data:`FALLBACK_WAIT` s) until the build thread has what the
        first ``find_tools`` needs before the graph is ready: the BM25 index and the token
        counts (tiktoken's encoding: about a second of CPU), which it makes first. A
        ``find_tools`` that came meanwhile would make a second copy of both at once, on
        the same two cores (:meth:`_call_tool` waits for this instead)."""
        service = gateway.service
        until = time.monotonic() + FALLBACK_WAIT
        try:
            while time.monotonic() < until and not service.wait(0.02):
                if getattr(service, "_all_tokens", 0) is not None:
                    break  # counted: the fallback is ready
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
                self._replace(gateway, gateway_over(upstream, self.config))
            passthrough = self.passthrough
            if passthrough is not None:
                passthrough.warm()
        except Exception as exc:  # never fatal: the kept catalog is still served
            from hyperplan.secrets import redact_text

            print(f"hyperplan serve: warning: checking the upstreams' tools failed: "
                  f"{redact_text(' '.join(str(exc).split()))}", file=sys.stderr, flush=True)

    def _replace(self, old: Gateway, new: Gateway) -> None:
        """Serve ``new`` (the tools the upstreams list now) instead of ``old``. Its
        conversations start afresh; in narrow mode each of ``old``'s is told its list
        changed."""
        new.service.on_ready = self.on_graph_ready
        self.passthrough = Passthrough(new.upstream, self.config)
        self._slots = None
        self._tools = {}
        self.gateway = new
        new.service.start()
        if self.narrow and self._loop is not None:
            for key, _conv in old.table.items():
                asyncio.run_coroutine_threadsafe(self._announce(key), self._loop)

    async def _gateway(self) -> Gateway:
        """The loaded gateway (waiting for the loader when it is not done yet)."""
        if not self._loaded.is_set():
            await anyio.to_thread.run_sync(self._loaded.wait, abandon_on_cancel=True)
        if self.gateway is None:
            raise MCPError(INTERNAL_ERROR, f"the upstream tools could not be loaded: "
                                           f"{self.failure}")
        return self.gateway

    def offers(self, capability: str) -> bool:
        """Whether the gateway advertises ``capability`` (``resources`` / ``prompts``): some
        upstream has it; before the sources loaded, whether they may (module doc)."""
        if not self._loaded.is_set():
            return self._may_pass
        passthrough = self.passthrough
        known = passthrough.known_offers(capability) if passthrough is not None else False
        return self._may_pass if known is None else known

    # handlers ---------------------------------------------------------------------------

    async def _list_tools(self, ctx: ServerRequestContext[Any],
                          params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        gateway = await self._gateway()
        conv = self._conversation(ctx, gateway, None, open_new=False) if self.narrow \
            else None
        if conv is not None:
            self._enter(ctx, conv.token)
            await self._settled(conv.token)
        tools = gateway.list_tools(conv)
        return types.ListToolsResult(tools=[self._tool(d) for d in tools])

    async def _call_tool(self, ctx: ServerRequestContext[Any],
                         params: types.CallToolRequestParams) -> types.CallToolResult:
        gateway = await self._gateway()
        name, args = params.name, dict(params.arguments or {})
        token = None
        if name == FIND_TOOLS or (name == CALL_TOOL and not self.narrow):
            token = args.pop(CONVERSATION, None)
            if token is not None and not isinstance(token, str):
                return _result(error_reply(f"{name}: '{CONVERSATION}' must be the token "
                                           f"{FIND_TOOLS} returned", "invalid_arguments"))
        conv = self._conversation(ctx, gateway, token, open_new=name == FIND_TOOLS)
        if conv is not None:
            self._enter(ctx, conv.token)
            await self._settled(conv.token)
        if name == FIND_TOOLS:
            if not self._warmed.is_set():
                await anyio.to_thread.run_sync(self._warmed.wait, abandon_on_cancel=True)
            reply = await self._in_thread(self._limits(gateway).selection_threads,
                                          functools.partial(gateway.call, conv, name, args))
        else:
            reply = await self._forward(ctx, gateway, conv, name, args)
        if reply is None:
            reply = error_reply(
                f"{name}: no answer within {self.deadline:g} s; the gateway stopped "
                "waiting. The outcome is unknown and the call is not repeated.",
                "outcome_unknown")
        if conv is not None and reply.list_changed:
            await self._announce(conv.token, ctx)
        if conv is not None and reply.observed and self.narrow:
            _put(self._settling, conv.token,
                 asyncio.ensure_future(self._settle(conv.token, gateway, conv)))
        return _result(reply)

    async def _forward(self, ctx: ServerRequestContext[Any], gateway: Gateway,
                       conv: Conversation | None, name: str, args: dict[str, Any]
                       ) -> Reply | None:
        """A tool call, once it holds a slot of its client and of its upstream (waiting
        inside its deadline; :mod:`.limits`)."""
        target = args.get("name") if name == CALL_TOOL and not self.narrow else name
        source = gateway.upstream.source_index(target) if isinstance(target, str) else None
        slots = self._limits(gateway)
        # fairness between conversations (several agents behind one address share nothing);
        # a call without one counts against its address
        client = f"conversation:{conv.token}" if conv is not None else _client_of(ctx)
        async with slots.slot(source, client, self.config.call_timeout) as left:
            if left is None:
                return error_reply(
                    f"{target}: not sent: this server's calls (or yours) are all in progress "
                    f"and none finished within the {self.config.call_timeout:g} s deadline. "
                    "Nothing was sent; try again later.", "busy", tool=target,
                    forwarded=False)
            return await self._in_thread(slots.call_threads, functools.partial(
                gateway.call, conv, name, args, timeout=left))

    # resources and prompts --------------------------------------------------------------

    async def _list_resources(self, ctx: ServerRequestContext[Any],
                              params: types.PaginatedRequestParams | None
                              ) -> types.ListResourcesResult:
        result: types.ListResourcesResult = await self._pass_list(ctx, Kind.RESOURCES)
        return result

    async def _list_resource_templates(self, ctx: ServerRequestContext[Any],
                                       params: types.PaginatedRequestParams | None
                                       ) -> types.ListResourceTemplatesResult:
        result: types.ListResourceTemplatesResult = await self._pass_list(ctx, Kind.TEMPLATES)
        return result

    async def _list_prompts(self, ctx: ServerRequestContext[Any],
                            params: types.PaginatedRequestParams | None
                            ) -> types.ListPromptsResult:
        result: types.ListPromptsResult = await self._pass_list(ctx, Kind.PROMPTS)
        return result

    async def _read_resource(self, ctx: ServerRequestContext[Any],
                             params: types.ReadResourceRequestParams
                             ) -> types.ReadResourceResult:
        gateway, passthrough = await self._passthrough()
        uri = str(params.uri)
        if not passthrough.listed(Kind.RESOURCES):  # the routes come from the lists
            await self._pass_list(ctx, Kind.RESOURCES)
            await self._pass_list(ctx, Kind.TEMPLATES)
        session, upstream_uri = await self._pass_call(
            gateway, functools.partial(passthrough.route_uri, uri))
        data = await self._pass_on(ctx, gateway, session, f"resources/read {uri!r}",
                                   lambda left: passthrough.read(session, upstream_uri, left))
        return types.ReadResourceResult.model_validate(data)

    async def _get_prompt(self, ctx: ServerRequestContext[Any],
                          params: types.GetPromptRequestParams) -> types.GetPromptResult:
        gateway, passthrough = await self._passthrough()
        if not passthrough.listed(Kind.PROMPTS):
            await self._pass_list(ctx, Kind.PROMPTS)
        session, name = await self._pass_call(
            gateway, functools.partial(passthrough.route_prompt, params.name))
        arguments = dict(params.arguments) if params.arguments is not None else None
        data = await self._pass_on(
            ctx, gateway, session, f"prompts/get {params.name!r}",
            lambda left: passthrough.get_prompt(session, name, arguments, left))
        return types.GetPromptResult.model_validate(data)

    async def _passthrough(self) -> tuple[Gateway, Passthrough]:
        gateway = await self._gateway()
        passthrough = self.passthrough
        if passthrough is None:  # loaded by a test's own loader; built on first use
            passthrough = self.passthrough = Passthrough(gateway.upstream, self.config)
        return gateway, passthrough

    async def _pass_list(self, ctx: ServerRequestContext[Any], kind: Kind) -> Any:
        """The union of the upstreams' lists of ``kind`` (:meth:`.Passthrough.merge`): each
        upstream asked at once, under its slots; one that fails is left out and named in
        the result's ``_meta``."""
        gateway, passthrough = await self._passthrough()
        sessions = await self._pass_call(gateway, functools.partial(passthrough.offering, kind))
        lists: list[tuple[McpSession, list[dict[str, Any]]] | str] = [""] * len(sessions)

        async def ask(i: int, session: McpSession) -> None:
            try:
                lists[i] = (session, await self._pass_on(
                    ctx, gateway, session, kind.value,
                    lambda left: passthrough.list_from(session, kind, left)))
            except MCPError as exc:
                lists[i] = exc.error.message

        async with anyio.create_task_group() as group:
            for i, session in enumerate(sessions):
                group.start_soon(ask, i, session)
        merged = passthrough.merge(kind, [x for x in lists if not isinstance(x, str)])
        result_type, item_type, field = _LIST_RESULTS[kind]
        items = []
        for item in merged:
            try:
                items.append(item_type.model_validate(item))
            except ValidationError:  # an odd upstream entry: left out, not the whole list
                continue
        errors = [x for x in lists if isinstance(x, str)]
        meta = {PASSTHROUGH_ERRORS: errors} if errors else None
        return result_type(**{field: items}, meta=meta)

    async def _pass_call(self, gateway: Gateway, func: Callable[[], _T], *,
                         call: bool = False) -> _T:
        """``func`` in a worker thread (a routing step, which may ask an upstream for its
        capabilities, or with ``call`` an upstream request holding its slots); a
        :class:`PassthroughError` becomes the JSON-RPC error."""
        slots = self._limits(gateway)
        try:
            result = await self._in_thread(
                slots.call_threads if call else slots.selection_threads, func)
        except PassthroughError as exc:
            raise MCPError(exc.code, str(exc)) from None
        if result is None:
            raise MCPError(INTERNAL_ERROR, f"no answer within {self.deadline:g} s")
        return result

    async def _pass_on(self, ctx: ServerRequestContext[Any], gateway: Gateway,
                       session: McpSession, what: str, request: Callable[[float], _T]) -> _T:
        """``request(seconds left)`` on ``session`` once it holds a slot of its client and
        of its upstream, inside the call deadline, as a tool call (:meth:`_forward`)."""
        slots = self._limits(gateway)
        async with slots.slot(session.index, _client_of(ctx), self.config.call_timeout) as left:
            if left is None:
                raise MCPError(INTERNAL_ERROR, (
                    f"{what}: not sent: this server's calls (or yours) are all in progress "
                    f"and none finished within the {self.config.call_timeout:g} s deadline; "
                    "try again later"))
            seconds = left
            return await self._pass_call(gateway, lambda: request(seconds), call=True)

    def _limits(self, gateway: Gateway) -> CallSlots:
        if self._slots is None:
            upstream = gateway.upstream
            self._slots = CallSlots(upstream.source_count, self.config.call_limits,
                                    upstream.source_slots)
        return self._slots

    async def _settle(self, key: str, gateway: Gateway, conv: Conversation) -> None:
        """Narrow mode, after a call: select again from the new state, announce a change."""
        try:
            changed = await self._in_thread(self._limits(gateway).selection_threads,
                                            functools.partial(gateway.refresh, conv))
            if changed:
                await self._announce(key)
        except Exception as exc:  # never lost silently, never fatal
            print(f"hyperplan serve: selecting after a call failed: {exc}", file=sys.stderr)

    async def _settled(self, key: str) -> None:
        """Wait for the selection after the conversation's last call (module doc)."""
        pending = self._settling.get(key)
        if pending is not None and not pending.done():
            await asyncio.shield(pending)

    def _conversation(self, ctx: ServerRequestContext[Any], gateway: Gateway,
                      token: str | None, *, open_new: bool) -> Conversation | None:
        """The conversation of a request (module doc): the one its token names, else its
        transport session's, else (2026-07-28 over HTTP) a new one when ``open_new``."""
        table = gateway.table
        conv = table.get(token or token_from_meta(ctx.meta))
        if conv is not None:
            return conv
        session = _session_of(ctx)
        if session is not None:
            conv = table.get(self._bound.get(session))
            if conv is None:
                conv = table.open(_client_of(ctx))
                if conv is not None:
                    conv.bound = True
                    _put(self._bound, session, conv.token)
            return conv
        return table.open(_client_of(ctx)) if open_new else None

    def _enter(self, ctx: ServerRequestContext[Any], key: str) -> None:
        """Remember how to reach conversation ``key`` for announcements."""
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            _put(self._modern, key, None)
        else:
            _put(self._legacy, key, ctx.session)

    async def _in_thread(self, limiter: anyio.CapacityLimiter, func: Callable[[], _T]
                         ) -> _T | None:
        """``func()`` in a worker thread of ``limiter``; None when the backstop deadline
        passes."""
        with anyio.move_on_after(self.deadline):
            return await anyio.to_thread.run_sync(func, abandon_on_cancel=True,
                                                  limiter=limiter)
        return None

    # list changed -----------------------------------------------------------------------

    async def _announce(self, key: str, ctx: ServerRequestContext[Any] | None = None) -> None:
        """Tell the clients of conversation ``key`` that its tool list changed (module doc)."""
        if key in self._modern:
            await self.bus.publish(ToolsListChanged())
        if ctx is not None and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            await ctx.session.send_notification(types.ToolListChangedNotification(),
                                                related_request_id=ctx.request_id)
        elif ctx is None and key in self._legacy:
            try:
                await self._legacy[key].send_tool_list_changed()
            except Exception:  # the client left; nothing to tell
                self._legacy.pop(key, None)

    def on_graph_ready(self, error: str | None) -> None:
        """Called in the build thread when the selector is ready: narrow-mode conversations
        with a request are selected again, and a changed list is announced."""
        gateway = self.gateway
        if error is not None or not self.narrow or self._loop is None or gateway is None:
            return
        for key, conv in gateway.table.items():
            if gateway.refresh(conv):
                asyncio.run_coroutine_threadsafe(self._announce(key), self._loop)

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
            self._loop = asyncio.get_running_loop()
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


def _put(table: OrderedDict[str, _V], key: str, value: _V) -> None:
    """``table[key] = value`` as the newest entry, the oldest dropped past
    :data:`_MAX_HINTS`."""
    table[key] = value
    table.move_to_end(key)
    while len(table) > _MAX_HINTS:
        table.popitem(last=False)


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


def _session_of(ctx: ServerRequestContext[Any]) -> str | None:
    """The transport session of a request: ``stdio`` (the one connection), a handshake-era
    HTTP session (its ``Mcp-Session-Id``, which the SDK's session manager checked: a request
    naming no open session of that generation never reaches a handler), or None (2026-07-28
    over HTTP: no session; a session id such a request carries is ignored)."""
    request = ctx.request
    if request is None:
        return "stdio"
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return None
    headers = getattr(request, "headers", None)
    session_id = headers.get("mcp-session-id") if headers is not None else None
    return f"http:{session_id}" if session_id else None


def _client_of(ctx: ServerRequestContext[Any]) -> str:
    """Who sent a request, for per-client bounds: ``stdio``, or over HTTP the peer address
    and (hashed) the credential it presented."""
    request = ctx.request
    if request is None:
        return "stdio"
    peer = getattr(request, "client", None)
    host = getattr(peer, "host", None) or "?"
    headers = getattr(request, "headers", None)
    auth = headers.get("authorization") if headers is not None else None
    who = hashlib.sha256(auth.encode()).hexdigest()[:16] if auth else "-"
    return f"http:{host}:{who}"


def _exit_with(message: str) -> None:
    """The default end of a gateway whose tools could not be loaded: the message as one line
    on stderr, exit status 1 (at once: the stdio reader may be blocked on the client)."""
    from hyperplan.secrets import redact_text

    print(f"error: {redact_text(message)}", file=sys.stderr, flush=True)
    os._exit(1)
