"""The gateway's conversations: one agent state (Definition 4) per client, never shared,
never readable or writable by another client, never evicted by another client's traffic.

The state is the selection host's :class:`~hyperplan.integrations.host.Conversation` (the
request, the values the client said it holds, the calls forwarded with their results, replayed
into the session of the selector once it is ready); a gateway :class:`Conversation` holds one
and adds what narrow mode shows its client. The table is the host's
:class:`~hyperplan.integrations.host.ConversationTable`, whose ``open`` refuses at a bound.

Which conversation a request belongs to (:mod:`.binding` resolves it):

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

Bounds (:class:`~hyperplan.integrations.host.ConversationLimits`): a conversation idle for
``idle_seconds`` is forgotten; one client (an address and its credential, or one transport
session) holds at most ``per_client`` conversations and the gateway at most ``total``. A full
table refuses to *open* a conversation (the request is then served stateless and told why)
rather than evict a live one, so no client's traffic can make the gateway forget another
client's state.

MCP has no notion of a user turn: the gateway learns of a new user request from
``find_tools``, which its description tells the model to call first and again when the task
changes. A ``find_tools`` request other than the conversation's last one starts a new turn
(:meth:`~hyperplan.integrations.host.Conversation.turn`): the calls made so far stop counting
as this turn's, and when the request names a value the conversation has not seen (another
record's title), the values held so far stop grounding the selection, so the producer of a
new one is offered again; a request that refers back ("now close it") keeps them grounding.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hyperplan.integrations.host.conversation import Call, ConversationLimits, ConversationTable
from hyperplan.integrations.host.conversation import Conversation as HostConversation

if TYPE_CHECKING:
    from hyperplan.integrations.mcp_gateway.selection import SelectionService
    from hyperplan.select import Selection, Session

#: The ``_meta`` key of a request (or result) that carries the conversation token.
CONVERSATION_META = "io.hyperplan/conversation"

__all__ = ["CONVERSATION_META", "Conversation", "ConversationTable", "conversation_table",
           "token_from_meta"]


@dataclass
class Conversation:
    """One client's conversation (module doc): ``host`` the state, served by ``service``'s
    selector once it is ready (its keyword search before). Narrow mode's part: ``listed``, the
    tools currently selected (what ``tools/list`` shows besides ``find_tools``); ``offered``,
    every tool ever selected for it; ``bound``, bound to a transport session (its tools/list
    shows its selection); ``budget``, the last ``find_tools`` budget; ``last``, the last
    answer. Thread-safe (selection runs in worker threads)."""

    service: SelectionService
    host: HostConversation = field(default_factory=HostConversation)
    bound: bool = False
    budget: int | None = None  # None: the gateway's
    listed: tuple[str, ...] = ()
    offered: set[str] = field(default_factory=set)
    last: Selection | None = None
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    @property
    def token(self) -> str:
        """The conversation token ("" for a throwaway state)."""
        return self.host.key

    @property
    def request(self) -> str:
        return self.host.request

    @property
    def known(self) -> set[str]:
        return self.host.known

    def session(self) -> Session | None:
        """The selection session once the selector is ready (the calls seen before replayed
        into it), else None."""
        selector = self.service.selector
        return self.host.session(selector) if selector is not None else None

    def find(self, request: str, known: Iterable[str] = (),
             budget: int | None = None) -> Selection:
        """Select for ``request`` given the state plus ``known`` (held from now on). A
        request other than the conversation's last one starts a new turn (module doc)."""
        with self._lock:
            self.session()  # live first, so that a new turn re-conditions it
            self.host.turn(request)
            self.budget = budget or self.budget
            self.host.known.update(known)
            return self._select(budget)

    def reselect(self, budget: int | None = None) -> Selection | None:
        """Select again for the conversation's request from the current state (None when no
        request was made yet)."""
        with self._lock:
            return self._select(budget) if self.host.request else None

    def observe(self, tool: str, arguments: Mapping[str, Any], value: Any, ok: bool) -> None:
        """Record a forwarded call and its result (value None for a failed call)."""
        with self._lock:
            self.session()
            self.host.observe(Call(tool, dict(arguments), value, ok))

    def state(self) -> dict[str, Any]:
        """The state as JSON-ready data."""
        with self._lock:
            self.session()
            return self.host.state()

    def _select(self, budget: int | None) -> Selection:
        k = budget or self.budget or self.service.budget
        selector = self.service.selector
        found = self.service.keyword(self.host.request, k) if selector is None \
            else self.host.select(selector, k)
        self.last = found
        return found


def conversation_table(service: SelectionService, limits: ConversationLimits | None = None
                       ) -> ConversationTable[Conversation]:
    """The gateway's table: the host's, each conversation a gateway :class:`Conversation`
    over ``service``."""
    return ConversationTable(limits, make=lambda key: Conversation(
        service, HostConversation(key=key)))


def token_from_meta(meta: Mapping[str, Any] | None) -> str | None:
    """The conversation token a request's ``_meta`` carries, if any."""
    if not meta:
        return None
    token = meta.get(CONVERSATION_META)
    return token if isinstance(token, str) else None
