"""Which conversation an MCP request belongs to, and telling a conversation's clients that its
tool list changed (narrow mode), for :class:`~.server.GatewayServer`.

Over stdio the connection is one conversation (or the one a known token names). Over
streamable HTTP a handshake-era client is one conversation per session the SDK validated; a
2026-07-28 request carries no session, so its conversation is the one its token names (the
``conversation`` argument or ``_meta``), ``find_tools`` without a known token starts a new
one, and anything else without one is served stateless (:mod:`.conversations`).

A changed list is announced to both client generations: clients on the handshake protocol get
``notifications/tools/list_changed`` on their connection (after ``find_tools`` on the stream of
that request, after a call on the connection's own channel); 2026-07-28 clients get it
through their ``subscriptions/listen`` streams (``ToolsListChanged`` published to an
:class:`~mcp.server.subscriptions.InMemorySubscriptionBus`, delivered by the SDK's
:class:`~mcp.server.subscriptions.ListenHandler`). The selection that follows a forwarded call
(narrow mode) runs after the call's result is sent; the conversation's next request waits
for it first (:meth:`Binding.enter`), so what it sees is always selected from every earlier
result.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import sys
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, TypeVar

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from hyperplan.integrations.mcp_gateway.conversations import Conversation, token_from_meta

if TYPE_CHECKING:
    from hyperplan.integrations.mcp_gateway.modes import Gateway, Reply
    from hyperplan.integrations.mcp_gateway.workers import Workers

_V = TypeVar("_V")
_MAX_HINTS = 10_000  # conversations remembered for announcing (a hint, not state)


class Binding:
    """Conversations of requests and list-changed announcements (module doc); ``narrow``:
    the gateway's mode is narrow (only then is anything announced)."""

    def __init__(self, narrow: bool, workers: Workers) -> None:
        self.narrow = narrow
        self.workers = workers
        self.bus = InMemorySubscriptionBus()
        self.listen = ListenHandler(self.bus)
        self.loop: asyncio.AbstractEventLoop | None = None
        # per conversation token (at most _MAX_HINTS): where to announce to a handshake-era
        # client, whether a 2026-07-28 client, the selection pending after a call
        self._legacy: OrderedDict[str, ServerSession] = OrderedDict()
        self._modern: OrderedDict[str, None] = OrderedDict()
        self._settling: OrderedDict[str, asyncio.Future[None]] = OrderedDict()
        # the conversation token of each transport session ("stdio": the one connection;
        # over HTTP the Mcp-Session-Id the SDK's session manager validated)
        self._bound: OrderedDict[str, str] = OrderedDict()

    def resolve(self, ctx: ServerRequestContext[Any], gateway: Gateway, token: str | None, *,
                open_new: bool) -> Conversation | None:
        """The conversation of a request (module doc): the one its token names, else its
        transport session's, else (2026-07-28 over HTTP) a new one when ``open_new``."""
        table = gateway.table
        conv = table.get(token or token_from_meta(ctx.meta))
        if conv is not None:
            return conv
        session = session_of(ctx)
        if session is not None:
            conv = table.get(self._bound.get(session))
            if conv is None:
                conv = table.open(client_of(ctx))
                if conv is not None:
                    conv.bound = True
                    _put(self._bound, session, conv.token)
            return conv
        return table.open(client_of(ctx)) if open_new else None

    async def enter(self, ctx: ServerRequestContext[Any], key: str) -> None:
        """Remember how to reach conversation ``key`` for announcements, and wait for the
        selection after its last call (module doc)."""
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            _put(self._modern, key, None)
        else:
            _put(self._legacy, key, ctx.session)
        pending = self._settling.get(key)
        if pending is not None and not pending.done():
            await asyncio.shield(pending)

    async def answered(self, ctx: ServerRequestContext[Any], gateway: Gateway,
                       conv: Conversation, reply: Reply) -> None:
        """After a ``tools/call`` of ``conv``: announce a changed list, and in narrow mode
        select again from a call's result once it is sent (:meth:`_settle`)."""
        if reply.list_changed:
            await self.announce(conv.token, ctx)
        if reply.observed and self.narrow:
            _put(self._settling, conv.token,
                 asyncio.ensure_future(self._settle(conv.token, gateway, conv)))

    async def announce(self, key: str, ctx: ServerRequestContext[Any] | None = None) -> None:
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

    def announce_all(self, gateway: Gateway, *, refresh: bool = False) -> None:
        """From any thread: tell each narrow-mode conversation of ``gateway`` that its list
        changed (with ``refresh``: those whose selection from the state changed, the graph
        being ready now; else all: the gateway was replaced)."""
        loop = self.loop
        if not self.narrow or loop is None:
            return
        for key, conv in gateway.table.items():
            if not refresh or gateway.refresh(conv):
                asyncio.run_coroutine_threadsafe(self.announce(key), loop)

    async def _settle(self, key: str, gateway: Gateway, conv: Conversation) -> None:
        """Narrow mode, after a call: select again from the new state, announce a change."""
        try:
            changed = await self.workers.run(self.workers.slots(gateway).selection_threads,
                                             functools.partial(gateway.refresh, conv))
            if changed:
                await self.announce(key)
        except Exception as exc:  # never lost silently, never fatal
            print(f"hyperplan serve: selecting after a call failed: {exc}", file=sys.stderr)


def _put(table: OrderedDict[str, _V], key: str, value: _V) -> None:
    """``table[key] = value`` as the newest entry, the oldest dropped past
    :data:`_MAX_HINTS`."""
    table[key] = value
    table.move_to_end(key)
    while len(table) > _MAX_HINTS:
        table.popitem(last=False)


def session_of(ctx: ServerRequestContext[Any]) -> str | None:
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


def client_of(ctx: ServerRequestContext[Any]) -> str:
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
