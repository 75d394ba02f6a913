"""Resources, resource templates and prompts of the upstream MCP servers, passed through the
gateway (issue 38, item 4). Selection is about tools only; these pass unchanged.

* **Lists are the union** of every upstream that advertises the capability
  (``resources`` / ``prompts`` in its handshake), in source order, each upstream's pages
  collected (at most :data:`MAX_PAGES` pages, :data:`MAX_ITEMS` entries in all).
* **A clash is prefixed, consistently.** When two upstreams list the same resource URI (or
  template, or prompt name), each of them is shown under its server's label: ``LABEL+URI``
  and ``LABEL__NAME`` for a prompt (the resource's ``name`` too), LABEL the word that
  prefixes the server's clashing tools. A prefixed form is always accepted on
  ``resources/read`` / ``prompts/get`` and routes to that server with the prefix removed;
  an unprefixed one routes to the upstream that listed it, else to the first upstream
  whose template matches the URI, else (one upstream with resources) to that one.
* **The same bounds as tool calls**: every upstream request waits for a slot of its client
  and of its upstream inside the call deadline (the server holds the
  :class:`~.limits.CallSlots`), runs with the hard deadline (an upstream that overran it is
  replaced, as after a tool call), an answer over ``--max-response-bytes`` is discarded while
  it is read (an error saying so), a URI or prompt arguments over the gateway's input limits
  are refused unsent, and everything returned (lists, contents, messages, errors) is
  redacted by value.
* **Nothing per client is kept**: the routing table is the upstreams' own (global) lists;
  no conversation state is read or written, so isolation between clients is unchanged.

The upstream sessions are reached through each source's MCP runtime
(:class:`~hyperplan.execute.runtimes.MCPRuntime`), as :meth:`Upstream.mcp_runtimes` lists
them (:func:`mcp_sessions`).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeVar

from hyperplan.integrations.mcp_gateway.config import GatewayConfig
from hyperplan.integrations.mcp_gateway.upstream import Upstream, prefix_word
from hyperplan.secrets import redact_cut, redact_value

if TYPE_CHECKING:
    from mcp import Client

MAX_PAGES = 100  # pages of one upstream list collected
MAX_ITEMS = 10_000  # entries of one list, over all upstreams
RESOURCE_NOT_FOUND = -32002  # the MCP spec's code for an unknown resource
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
_PREFIX = re.compile(r"^([A-Za-z0-9_-]+)\+(.+)$", re.DOTALL)
_NAME_SEP = "__"
_SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"
_T = TypeVar("_T")


class Kind(StrEnum):
    """What is passed through; the value is the upstream capability that offers it."""

    RESOURCES = "resources"
    TEMPLATES = "templates"  # resources/templates/list: part of the resources capability
    PROMPTS = "prompts"

    @property
    def capability(self) -> str:
        return "prompts" if self is Kind.PROMPTS else "resources"


class PassthroughError(Exception):
    """A request that cannot be answered: ``code`` is the JSON-RPC error code, the message
    redacted and names the URI, prompt or server."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(redact_cut(" ".join(message.split()), 1200))
        self.code = code


@dataclass(frozen=True)
class McpSession:
    """One upstream MCP server: its source index (for the call slots), the name clients are
    told, the label that prefixes its clashing entries, and its runtime."""

    index: int
    server: str
    label: str
    runtime: Any  # an MCPRuntime: _acquire(limit) -> Connection, _release(connection)


def mcp_sessions(upstream: Upstream) -> list[McpSession]:
    """The upstream sources that are MCP server sessions, each with the label that prefixes
    its clashing entries (the prefix of its clashing tools)."""
    return [McpSession(index, name, label, runtime)
            for index, name, label, runtime in upstream.mcp_runtimes()]


#: The prefix word of a server's name (``mcp-server:server-filesystem`` -> ``server-filesystem``).
server_label = prefix_word


def template_pattern(template: str) -> re.Pattern[str]:
    """A regex matching the URIs an RFC 6570 template expands to (``{var}`` one path
    segment, ``{+var}`` / ``{#var}`` anything, ``{?q}`` / ``{&q}`` an optional query)."""
    parts: list[str] = []
    for literal, expression in re.findall(r"([^{]*)(\{[^}]*\})?", template):
        parts.append(re.escape(literal))
        if expression:
            operator = expression[1:2]
            parts.append(".*" if operator in ("+", "#", "?", "&") else "[^/?#]*")
    return re.compile("".join(parts) + "$", re.DOTALL)


class Passthrough:
    """Resources, templates and prompts of ``upstream``'s MCP servers (module doc). Methods
    block (the server runs them in worker threads) and are thread-safe."""

    def __init__(self, upstream: Upstream, config: GatewayConfig) -> None:
        self.config = config
        self.sessions = mcp_sessions(upstream)
        self._by_label = {s.label: s for s in self.sessions}
        self._by_index = {s.index: s for s in self.sessions}
        self._lock = threading.Lock()
        self._capabilities: dict[int, frozenset[str]] = {}
        # what the last list showed: exposed key -> (session index, upstream key)
        self._routes: dict[Kind, dict[str, tuple[int, str]]] = {k: {} for k in Kind}
        self._templates: list[tuple[re.Pattern[str], int]] = []
        self._listed: set[Kind] = set()

    # capabilities -----------------------------------------------------------------------

    def offering(self, kind: Kind) -> list[McpSession]:
        """The upstreams that advertise ``kind``'s capability (asked once per upstream)."""
        return [s for s in self.sessions if kind.capability in self._capability(s)]

    def offers(self, capability: str) -> bool:
        """Whether any upstream advertises ``capability`` (``resources`` / ``prompts``)."""
        return any(capability in self._capability(s) for s in self.sessions)

    def warm(self) -> None:
        """Ask every upstream for its capabilities now (the load thread does, so that
        :meth:`known_offers` has an answer when a client initializes)."""
        for session in self.sessions:
            self._capability(session)

    def known_offers(self, capability: str) -> bool | None:
        """Like :meth:`offers` from what is known without asking (None: not known yet)."""
        with self._lock:
            known = [self._capabilities.get(s.index) for s in self.sessions]
        if any(caps is not None and capability in caps for caps in known):
            return True
        return None if any(caps is None for caps in known) else False

    def _capability(self, session: McpSession) -> frozenset[str]:
        with self._lock:
            known = self._capabilities.get(session.index)
        if known is not None:
            return known
        try:
            caps = self._run(session, _capabilities_of, self.config.call_timeout, "handshake")
        except PassthroughError:
            return frozenset()  # not cached: a restarted upstream is asked again
        with self._lock:
            self._capabilities[session.index] = caps
        return caps

    # lists ------------------------------------------------------------------------------

    def list_from(self, session: McpSession, kind: Kind, timeout: float) -> list[dict[str, Any]]:
        """Every entry ``session`` lists of ``kind`` (all its pages), as JSON dicts."""
        return self._run(session, _lister(kind), timeout, f"{_METHODS[kind]}")

    def merge(self, kind: Kind, lists: Sequence[tuple[McpSession, list[dict[str, Any]]]]
              ) -> list[dict[str, Any]]:
        """The union of the upstreams' lists (module doc: a clash is prefixed) and the routes
        for reading / getting them; redacted."""
        key = _KEYS[kind]
        owners: dict[str, list[int]] = {}
        for session, items in lists:
            for item in items:
                owners.setdefault(str(item.get(key, "")), []).append(session.index)
        merged: list[dict[str, Any]] = []
        routes: dict[str, tuple[int, str]] = {}
        templates: list[tuple[re.Pattern[str], int]] = []
        for session, items in lists:
            for item in items[:MAX_ITEMS - len(merged)]:
                original = str(item.get(key, ""))
                shown = dict(item)
                if len(set(owners[original])) > 1:
                    shown[key] = self.prefixed(kind, session, original)
                    if kind is not Kind.PROMPTS and isinstance(item.get("name"), str):
                        shown["name"] = f"{session.label}{_NAME_SEP}{item['name']}"
                routes.setdefault(str(shown[key]), (session.index, original))
                if kind is Kind.TEMPLATES:
                    templates.append((template_pattern(original), session.index))
                merged.append(shown)
        with self._lock:
            self._routes[kind] = routes
            if kind is Kind.TEMPLATES:
                self._templates = templates
            self._listed.add(kind)
        return [redact_value(item) for item in merged]

    def prefixed(self, kind: Kind, session: McpSession, key: str) -> str:
        sep = _NAME_SEP if kind is Kind.PROMPTS else "+"
        return f"{session.label}{sep}{key}"

    def listed(self, kind: Kind) -> bool:
        with self._lock:
            return kind in self._listed

    # routing ----------------------------------------------------------------------------

    def route_uri(self, uri: str) -> tuple[McpSession, str]:
        """The upstream that serves ``uri`` and the URI it knows (module doc)."""
        self._check_size("resources/read", uri, len(uri), self.config.max_request_chars)
        offering = self.offering(Kind.RESOURCES)
        found = self._prefixed_route(uri, _PREFIX.match(uri), offering)
        if found is not None:
            return found
        with self._lock:
            route = self._routes[Kind.RESOURCES].get(uri) or self._routes[Kind.TEMPLATES].get(uri)
            templates = list(self._templates)
        if route is None:
            route = next(((i, uri) for pattern, i in templates if pattern.match(uri)), None)
        if route is None and len(offering) == 1:
            route = (offering[0].index, uri)
        if route is None or route[0] not in self._by_index:
            names = ", ".join(s.label for s in offering) or "none"
            raise PassthroughError(RESOURCE_NOT_FOUND, (
                f"resources/read: no upstream lists the resource {uri!r} (upstreams with "
                f"resources: {names}); call resources/list, or prefix the URI with a "
                "server's label and '+'"))
        return self._by_index[route[0]], route[1]

    def route_prompt(self, name: str) -> tuple[McpSession, str]:
        """The upstream that serves prompt ``name`` and the name it knows."""
        self._check_size("prompts/get", name, len(name), self.config.max_request_chars)
        offering = self.offering(Kind.PROMPTS)
        with self._lock:
            route = self._routes[Kind.PROMPTS].get(name)
        if route is None:
            label, sep, rest = name.partition(_NAME_SEP)
            session = self._by_label.get(label) if sep and rest else None
            if session is not None and session in offering:
                return session, rest
            if len(offering) == 1:
                return offering[0], name
            names = ", ".join(s.label for s in offering) or "none"
            raise PassthroughError(INVALID_PARAMS, (
                f"prompts/get: no upstream lists the prompt {name!r} (upstreams with "
                f"prompts: {names}); call prompts/list for the names"))
        return self._by_index[route[0]], route[1]

    def _prefixed_route(self, uri: str, match: re.Match[str] | None,
                        offering: list[McpSession]) -> tuple[McpSession, str] | None:
        if match is None:
            return None
        session = self._by_label.get(match.group(1))
        with self._lock:
            listed_as_is = uri in self._routes[Kind.RESOURCES]
        if session is None or session not in offering or listed_as_is:
            return None
        return session, match.group(2)

    # read / get -------------------------------------------------------------------------

    def read(self, session: McpSession, uri: str, timeout: float) -> dict[str, Any]:
        """``resources/read`` of ``uri`` on ``session``: the result as a JSON dict,
        redacted."""
        async def read(client: Client) -> dict[str, Any]:
            result = await client.read_resource(uri)
            return result.model_dump(by_alias=True, mode="json", exclude_none=True)
        data = self._run(session, read, timeout, f"resources/read {uri!r}")
        return _redacted(data)

    def get_prompt(self, session: McpSession, name: str, arguments: dict[str, str] | None,
                   timeout: float) -> dict[str, Any]:
        """``prompts/get`` of ``name`` on ``session``: the result as a JSON dict,
        redacted."""
        size = len(json.dumps(arguments or {}, ensure_ascii=False).encode())
        self._check_size(f"prompts/get {name!r}", "arguments", size,
                         self.config.max_argument_bytes)

        async def get(client: Client) -> dict[str, Any]:
            result = await client.get_prompt(name, arguments)
            return result.model_dump(by_alias=True, mode="json", exclude_none=True)
        data = self._run(session, get, timeout, f"prompts/get {name!r}")
        return _redacted(data)

    # the upstream request ---------------------------------------------------------------

    def _run(self, session: McpSession, make: Callable[[Client], Awaitable[_T]],
             timeout: float, what: str) -> _T:
        """``make(client)`` on ``session``'s connection within ``timeout`` (never sent twice:
        a request that was not sent is sent once on a fresh server, as a tool call is)."""
        from hyperplan.execute.runtimes.mcp_connection import (
            WAIT_MARGIN,
            ConnectFailed,
            NoResult,
            NotSent,
            leaf,
        )
        from hyperplan.execute.runtimes.mcp_transport import CALL_STATE, CallState

        limit = min(timeout, self.config.call_timeout)
        where = f"{what} on {session.server}"
        for attempt in range(2):
            try:
                connection = session.runtime._acquire(limit)
            except ConnectFailed as exc:
                raise PassthroughError(INTERNAL_ERROR, f"{where}: the upstream could not be "
                                                       f"started: {exc}") from None
            state = CallState()

            async def tracked(client: Client, state: CallState = state) -> _T:
                CALL_STATE.set(state)
                return await make(client)
            try:
                return connection.run(tracked, limit + WAIT_MARGIN, state)  # type: ignore[no-any-return]
            except Exception as exc:
                failure = leaf(exc)
                if isinstance(failure, NotSent) and attempt == 0:
                    continue
                if isinstance(failure, NoResult):
                    raise PassthroughError(INTERNAL_ERROR, f"{where}: no answer within "
                                                           f"{limit:g} s") from None
                raise _upstream_error(where, failure, connection) from None
            finally:
                session.runtime._release(connection)
        raise PassthroughError(INTERNAL_ERROR, f"{where}: not sent (the upstream connection "
                                               "could not take it)")

    @staticmethod
    def _check_size(what: str, field: str, size: int, limit: int) -> None:
        if size > limit:
            raise PassthroughError(INVALID_PARAMS, (
                f"{what}: the {field} is {size:,} long; the gateway's limit is {limit:,}. "
                "Nothing was sent."))


_METHODS = {Kind.RESOURCES: "resources/list", Kind.TEMPLATES: "resources/templates/list",
            Kind.PROMPTS: "prompts/list"}
_KEYS = {Kind.RESOURCES: "uri", Kind.TEMPLATES: "uriTemplate", Kind.PROMPTS: "name"}
_FIELDS = {Kind.RESOURCES: "resources", Kind.TEMPLATES: "resource_templates",
           Kind.PROMPTS: "prompts"}


def _lister(kind: Kind) -> Callable[[Client], Awaitable[list[dict[str, Any]]]]:
    async def collect(client: Client) -> list[dict[str, Any]]:
        fetch = {Kind.RESOURCES: client.list_resources,
                 Kind.TEMPLATES: client.list_resource_templates,
                 Kind.PROMPTS: client.list_prompts}[kind]
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await fetch(cursor=cursor)
            items += [entry.model_dump(by_alias=True, mode="json", exclude_none=True)
                      for entry in getattr(page, _FIELDS[kind])]
            cursor = page.next_cursor
            if cursor is None or len(items) >= MAX_ITEMS:
                break
        return items[:MAX_ITEMS]
    return collect


async def _capabilities_of(client: Client) -> frozenset[str]:
    caps = client.server_capabilities
    return frozenset(name for name in ("resources", "prompts")
                     if getattr(caps, name, None) is not None)


def _redacted(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` redacted by value, without the upstream's own ``serverInfo`` stamp in
    ``_meta`` (the gateway stamps its own)."""
    meta = data.get("_meta")
    if isinstance(meta, dict):
        kept = {k: v for k, v in meta.items() if k != _SERVER_INFO_META}
        data = {**data, "_meta": kept} if kept else \
            {k: v for k, v in data.items() if k != "_meta"}
    cleaned: dict[str, Any] = redact_value(data)
    return cleaned


def _upstream_error(where: str, exc: Exception, connection: Any) -> PassthroughError:
    """The error of an upstream request that raised: the upstream's own JSON-RPC error
    passed on (its code kept), an over-long answer or a broken connection said as such."""
    from mcp import MCPError
    from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

    from hyperplan.execute.runtimes.mcp_transport import OVERSIZE_CODE

    if isinstance(exc, MCPError) and exc.code == OVERSIZE_CODE:
        return PassthroughError(INTERNAL_ERROR, f"{where}: the answer is over the gateway's "
                                                "--max-response-bytes; it was discarded")
    if isinstance(exc, MCPError) and exc.code == REQUEST_TIMEOUT:
        connection.spoiled = True
        return PassthroughError(INTERNAL_ERROR, f"{where}: no answer within the deadline")
    if isinstance(exc, MCPError) and exc.code != CONNECTION_CLOSED:
        return PassthroughError(exc.code, f"{where}: {exc.message}")
    connection.spoiled = True  # replaced before the next request, as after a tool call
    return PassthroughError(INTERNAL_ERROR, f"{where}: the upstream failed: "
                                            f"{type(exc).__name__}: {exc}")
