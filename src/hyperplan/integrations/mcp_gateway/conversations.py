"""The gateway's conversations: one agent state (Definition 4) per client, never shared,
never readable or writable by another client, never evicted by another client's traffic.

Which conversation a request belongs to (:class:`~.server.GatewayServer` resolves it):

* a handshake-era connection (stdio, or a streamable-HTTP session whose ``Mcp-Session-Id``
  the SDK's session manager validated) is bound to one conversation for its lifetime;
* a 2026-07-28 request over HTTP carries no session, so the state travels explicitly as a
  conversation **token**: ``find_tools`` answers with ``"conversation": TOKEN`` and the
  client passes it back, as the ``conversation`` argument of ``find_tools`` / ``call_tool``
  or in any request's ``_meta`` under :data:`CONVERSATION_META`. Tokens are unguessable
  (:func:`secrets.token_urlsafe`, 192 bits); a token the table does not hold (made up,
  another gateway's, expired) never names anyone's state: ``find_tools`` then starts a fresh,
  empty conversation under a *new* token, and a call without a known token is served
  stateless (forwarded, nothing remembered).

Bounds (:class:`ConversationLimits`): a conversation idle for ``idle_seconds`` is forgotten;
one client (an address and its credential, or one transport session) holds at most
``per_client`` conversations and the gateway at most ``total``. A full table refuses to
*open* a conversation (the request is then served stateless and told why) rather than evict
a live one, so no client's traffic can make the gateway forget another client's state.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hyperplan.integrations.mcp_gateway.config import ConversationLimits
from hyperplan.integrations.mcp_gateway.selection import Conversation, SelectionService

#: The ``_meta`` key of a request (or result) that carries the conversation token.
CONVERSATION_META = "io.hyperplan/conversation"
_TOKEN_BYTES = 24
_MAX_TOKEN_CHARS = 128


@dataclass
class _Entry:
    conversation: Conversation
    client: str
    used: float


class ConversationTable:
    """Conversations by token (module doc). Thread-safe."""

    def __init__(self, service: SelectionService, limits: ConversationLimits | None = None,
                 *, clock: Callable[[], float] = time.monotonic) -> None:
        self.service = service
        self.limits = limits or ConversationLimits()
        self._clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()  # least recently used first
        self._per_client: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def get(self, token: object) -> Conversation | None:
        """The live conversation of ``token`` (marked as used now), else None: a token the
        table does not hold, an expired one, or not a token at all."""
        if not isinstance(token, str) or not token or len(token) > _MAX_TOKEN_CHARS:
            return None
        with self._lock:
            now = self._clock()
            self._expire(now)
            entry = self._entries.get(token)
            if entry is None:
                return None
            entry.used = now
            self._entries.move_to_end(token)
            return entry.conversation

    def open(self, client: str) -> Conversation | None:
        """A fresh, empty conversation of ``client`` under a new token
        (``conversation.token``); None when ``client`` or the gateway is at its bound."""
        with self._lock:
            now = self._clock()
            self._expire(now)
            if (self._per_client[client] >= self.limits.per_client
                    or len(self._entries) >= self.limits.total):
                return None
            token = secrets.token_urlsafe(_TOKEN_BYTES)
            conversation = Conversation(self.service, token=token)
            self._entries[token] = _Entry(conversation, client, now)
            self._per_client[client] += 1
            return conversation

    def drop(self, token: str) -> None:
        """Forget the conversation of ``token`` (its transport session ended)."""
        with self._lock:
            entry = self._entries.pop(token, None)
            if entry is not None:
                self._forget_client(entry.client)

    def items(self) -> list[tuple[str, Conversation]]:
        """The live conversations, least recently used first."""
        with self._lock:
            self._expire(self._clock())
            return [(t, e.conversation) for t, e in self._entries.items()]

    def counts(self) -> Mapping[str, Any]:
        """How many conversations are open, in all and for the busiest client."""
        with self._lock:
            busiest = max(self._per_client.values(), default=0)
            return {"open": len(self._entries), "busiest_client": busiest}

    def _expire(self, now: float) -> None:
        """Forget the conversations idle longer than ``idle_seconds`` (oldest first)."""
        cutoff = now - self.limits.idle_seconds
        while self._entries:
            token, entry = next(iter(self._entries.items()))
            if entry.used > cutoff:
                return
            del self._entries[token]
            self._forget_client(entry.client)

    def _forget_client(self, client: str) -> None:
        self._per_client[client] -= 1
        if self._per_client[client] <= 0:
            del self._per_client[client]


def token_from_meta(meta: Mapping[str, Any] | None) -> str | None:
    """The conversation token a request's ``_meta`` carries, if any."""
    if not meta:
        return None
    token = meta.get(CONVERSATION_META)
    return token if isinstance(token, str) else None
