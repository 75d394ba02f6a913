"""Conversations of a selection host: the agent state S of Definition 4 (HyperAgent paper,
"Agent State") as what happened in a conversation, and the table that keeps them apart.

A :class:`Conversation` is its history: the user turns (:class:`Turn`) and the tool calls
(:class:`Call`) in the order they happened, plus the values the client said it holds
(``known``). A selection session (:class:`~hyperplan.select.Session`) is opened from that
history for whichever selector serves the conversation (:func:`open_session` replays it) and
kept while the same selector serves it, so a call is observed once, and a selector that
arrives late (the gateway's background build) or changes (an agent that now sends other
tools) sees the whole conversation.

A new request starts a new turn (:meth:`Conversation.turn`, :meth:`Session.new_turn`): the
calls made so far stop counting as this turn's, and when the request names a value the
conversation has not seen, the values held so far (``known`` included) stop grounding the
selection, so the producer of a new one is offered again.

The :class:`ConversationTable` keeps conversations by key, never shares one, and bounds them
(:class:`ConversationLimits`): a conversation idle for ``idle_seconds`` is forgotten; one client
holds at most ``per_client`` and the table at most ``total``. :meth:`~ConversationTable.open`
(the gateway: one conversation per client under an unguessable token) *refuses* when a bound
is reached rather than evict a live conversation, so no client's traffic can make the host
forget another client's state; :meth:`~ConversationTable.ensure` (an adapter inside one agent
process, keyed by the framework's own session or run id) drops the least recently used one.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

if TYPE_CHECKING:
    from hyperplan.select import Selection, Selector
    from hyperplan.select.session import Session

#: Calls and turns remembered per conversation (the oldest dropped first).
MAX_HISTORY = 1_000
_TOKEN_BYTES = 24
_MAX_TOKEN_CHARS = 128


@dataclass(frozen=True)
class Call:
    """One tool call a conversation made and what it returned (``result`` None when it
    failed, ``ok`` False)."""

    tool: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    result: Any = None
    ok: bool = True


@dataclass(frozen=True)
class Turn:
    """A new user request in a conversation's history (replayed as
    :meth:`~hyperplan.select.Session.new_turn`)."""

    request: str


def open_session(selector: Selector, history: Sequence[Call | Turn],
                 request: str = "") -> Session:
    """A session over ``selector`` that has seen ``history`` in order: the first
    :class:`Turn`'s request opens it (else ``request``), each later turn re-conditions it
    (:meth:`Session.new_turn`), each :class:`Call` is observed as it is: the state of
    Definition 4 of a conversation."""
    turns = [i for i, item in enumerate(history) if isinstance(item, Turn)]
    first = turns[0] if turns else -1
    opening = history[first] if first >= 0 else None
    session = selector.session(opening.request if isinstance(opening, Turn) else request)
    for i, item in enumerate(history):
        if isinstance(item, Turn):
            if i != first:
                session.new_turn(item.request)
        else:
            session.observe(item.tool, item.arguments, item.result, ok=item.ok)
    return session


def session_of(selector: Selector, request: str, calls: Iterable[Call],
               earlier: Iterable[Call] = (), *,
               parse: Callable[[Call], Call] | None = None) -> Session:
    """A session over ``selector`` that has seen ``earlier`` (the calls of the conversation's
    earlier user turns), then a new turn for ``request``, then ``calls`` (this turn's): what
    an adapter that reads the history from the messages it is given selects with. ``parse``
    turns each call's result into JSON-like data first."""
    def parsed(call: Call) -> Call:
        return parse(call) if parse is not None else call

    before = [parsed(c) for c in earlier]
    opening = [Turn(""), *before, Turn(request)] if before else [Turn(request)]
    return open_session(selector, [*opening, *(parsed(c) for c in calls)])


@dataclass
class Conversation:
    """One conversation's state (module doc). ``key``: its key in the table (the gateway's
    token, an adapter's session id); ``request``: its latest user request. Thread-safe."""

    key: str = ""
    request: str = ""
    known: set[str] = field(default_factory=set)
    history: list[Call | Turn] = field(default_factory=list)
    _live: tuple[Selector, Session] | None = None
    _lock: threading.RLock = field(default_factory=threading.RLock)

    def turn(self, request: str) -> None:
        """Start a new turn when ``request`` differs from the last one (module doc)."""
        with self._lock:
            if request == self.request:
                return
            first = not self.request
            self.request = request
            self._append(Turn(request))
            if self._live is not None and not first and self._live[1].new_turn(request):
                self.known.clear()

    def observe(self, call: Call) -> None:
        """Record ``call`` (and show it to the live session, if any)."""
        with self._lock:
            self._append(call)
            if self._live is not None:
                self._live[1].observe(call.tool, call.arguments, call.result, ok=call.ok)

    def calls(self) -> list[Call]:
        """The calls recorded so far, oldest first."""
        with self._lock:
            return [c for c in self.history if isinstance(c, Call)]

    def session(self, selector: Selector) -> Session:
        """The session of ``selector`` over this conversation: the live one when ``selector``
        served it last, else opened by replaying the history."""
        with self._lock:
            if self._live is None or self._live[0] is not selector:
                self._live = (selector, open_session(selector, self.history, self.request))
            return self._live[1]

    def select(self, selector: Selector, budget: int | None = None) -> Selection:
        """Select for the latest request from the state, ``known`` values held."""
        with self._lock:
            session = self.session(selector)
            session.held.update(self.known)
            return session.select(self.request, budget=budget)

    def state(self) -> dict[str, Any]:
        """The state as JSON-ready data (the live session's when there is one)."""
        with self._lock:
            if self._live is not None:
                return self._live[1].state()
            return {"request": self.request, "held": sorted(self.known),
                    "calls": [{"tool": c.tool, "arguments": sorted(c.arguments), "ok": c.ok}
                              for c in self.calls()]}

    def _append(self, item: Call | Turn) -> None:
        self.history.append(item)
        if len(self.history) > MAX_HISTORY:
            del self.history[: len(self.history) - MAX_HISTORY]


@dataclass(frozen=True)
class ConversationLimits:
    """How long and how many conversations are kept (module doc): forgotten after
    ``idle_seconds`` unused; at most ``per_client`` per client and ``total`` in all."""

    idle_seconds: float = 3600.0
    per_client: int = 256
    total: int = 10_000


C = TypeVar("C")


def _new_conversation(key: str) -> Any:
    return Conversation(key=key)


@dataclass
class _Entry(Generic[C]):
    conversation: C
    client: str
    used: float


class ConversationTable(Generic[C]):
    """Conversations by key, bounded (module doc). Thread-safe. ``make(key)`` makes the
    conversation of a new key (default: a :class:`Conversation`; a host that keeps more per
    conversation, the gateway's narrow mode, holds a :class:`Conversation` in its own)."""

    @overload
    def __init__(self: ConversationTable[Conversation],
                 limits: ConversationLimits | None = None, *,
                 clock: Callable[[], float] = time.monotonic) -> None: ...

    @overload
    def __init__(self, limits: ConversationLimits | None = None, *,
                 clock: Callable[[], float] = time.monotonic,
                 make: Callable[[str], C]) -> None: ...

    def __init__(self, limits: ConversationLimits | None = None, *,
                 clock: Callable[[], float] = time.monotonic,
                 make: Callable[[str], Any] | None = None) -> None:
        self.limits = limits or ConversationLimits()
        self._clock = clock
        self._make: Callable[[str], C] = make if make is not None else _new_conversation
        self._entries: OrderedDict[str, _Entry[C]] = OrderedDict()  # least recently used first
        self._per_client: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def get(self, key: object) -> C | None:
        """The live conversation of ``key`` (marked as used now), else None: a key the table
        does not hold, an expired one, or not a key at all."""
        if not isinstance(key, str) or not key or len(key) > _MAX_TOKEN_CHARS:
            return None
        with self._lock:
            now = self._clock()
            self._expire(now)
            entry = self._entries.get(key)
            if entry is None:
                return None
            entry.used = now
            self._entries.move_to_end(key)
            return entry.conversation

    def open(self, client: str) -> C | None:
        """A fresh, empty conversation of ``client`` under a new unguessable key (192 bits);
        None when ``client`` or the table is at its bound (nothing is evicted)."""
        with self._lock:
            now = self._clock()
            self._expire(now)
            if (self._per_client[client] >= self.limits.per_client
                    or len(self._entries) >= self.limits.total):
                return None
            return self._add(secrets.token_urlsafe(_TOKEN_BYTES), client, now)

    def ensure(self, key: str, client: str = "") -> C:
        """The conversation of ``key``, opened when new; at the bound the least recently
        used conversation is dropped (for a host whose keys come from one agent process)."""
        with self._lock:
            now = self._clock()
            self._expire(now)
            entry = self._entries.get(key)
            if entry is not None:
                entry.used = now
                self._entries.move_to_end(key)
                return entry.conversation
            while self._entries and len(self._entries) >= self.limits.total:
                _, oldest = self._entries.popitem(last=False)
                self._forget_client(oldest.client)
            return self._add(key, client, now)

    def drop(self, key: str) -> None:
        """Forget the conversation of ``key``."""
        with self._lock:
            entry = self._entries.pop(key, None)
            if entry is not None:
                self._forget_client(entry.client)

    def items(self) -> list[tuple[str, C]]:
        """The live conversations, least recently used first."""
        with self._lock:
            self._expire(self._clock())
            return [(k, e.conversation) for k, e in self._entries.items()]

    def counts(self) -> Mapping[str, Any]:
        """How many conversations are open, in all and for the busiest client."""
        with self._lock:
            busiest = max(self._per_client.values(), default=0)
            return {"open": len(self._entries), "busiest_client": busiest}

    def _add(self, key: str, client: str, now: float) -> C:
        conversation = self._make(key)
        self._entries[key] = _Entry(conversation, client, now)
        self._per_client[client] += 1
        return conversation

    def _expire(self, now: float) -> None:
        """Forget the conversations idle longer than ``idle_seconds`` (oldest first)."""
        cutoff = now - self.limits.idle_seconds
        while self._entries:
            key, entry = next(iter(self._entries.items()))
            if entry.used > cutoff:
                return
            del self._entries[key]
            self._forget_client(entry.client)

    def _forget_client(self, client: str) -> None:
        self._per_client[client] -= 1
        if self._per_client[client] <= 0:
            del self._per_client[client]
