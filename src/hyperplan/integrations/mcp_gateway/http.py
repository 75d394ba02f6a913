"""The gateway over streamable HTTP: the SDK's transport, with what a server that forwards
tool calls on someone's behalf needs in front of it.

* **Host and Origin** (:class:`RequestGuard`, before anything else): on a loopback address,
  however spelled (``127.0.0.2``, ``LOCALHOST``, ``[0:0:0:0:0:0:0:1]``), only a Host header
  that names this server (its host in one of its spellings, and its port) is served; any
  other gets 421, so a page whose name was rebound to 127.0.0.1 cannot reach the tools. A
  request with an ``Origin`` (a browser's) is served only from the gateway's own origin or
  one given with ``--allow-origin`` (exact: no port wildcards; those also get the CORS
  headers a web app needs to read the answers); 403 otherwise. A request
  without ``Origin`` (not a browser) passes. Beyond loopback the Host is not checked (the
  server's name is not known); the bearer token, required there, is the protection, and
  ``Origin`` must be the request's own host or an allowed one.
* **Bearer token** (``--auth-token-env`` / ``--auth-token-file``): checked with the SDK's own
  hooks, a :class:`~mcp.server.auth.provider.TokenVerifier` (:class:`StaticTokenVerifier`,
  constant-time) behind its ``BearerAuthBackend`` and ``RequireAuthMiddleware``, so a
  request without the token gets the standard 401 with ``WWW-Authenticate: Bearer``; a
  handshake-era session is bound to the credential that opened it (the SDK's check).
* **Sessions** (:class:`BoundedSessionManager`): at most ``sessions_per_client`` open
  handshake-era sessions per client address; a client past it loses its own oldest one
  (one never used after ``initialize`` first), never another client's; idle sessions close
  after ``session_idle_timeout``. 2026-07-28 requests carry no session.
* **Every request answered** (:class:`AnswerEveryRequest`): a JSON-RPC request whose ``id``
  is not a string or an integer (an object, an array, a float, null) is answered with an
  ``Invalid Request`` error, ``id: null`` (the SDK took it for a notification: a silent 202).

The app is assembled here from the SDK's parts rather than by ``Server.streamable_http_app``,
which offers neither a per-client session bound nor a place after authentication for the id
check; its DNS-rebinding defaults (on for three spellings only, then any ``localhost`` port
as an origin) are replaced by the guard.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections import OrderedDict
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import (
    AuthorizationContext,
    BearerAuthBackend,
    RequireAuthMiddleware,
)
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import (
    DEFAULT_MAX_REQUEST_BODY_SIZE,
    RequestBodyLimitMiddleware,
    TransportSecuritySettings,
)
from mcp_types import INVALID_REQUEST
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hyperplan.errors import HyperplanError
from hyperplan.integrations.mcp_gateway.config import (
    HttpAddress,
    HttpSecurity,
    canonical_host,
    check_exposure,
    host_names,
    normalize_origin,
    origins_of,
)

if TYPE_CHECKING:
    import uvicorn
    from mcp.server.lowlevel.server import Server

PATH = "/mcp"
_CLIENT: ContextVar[str] = ContextVar("hyperplan_http_client", default="")


def build_http_app(server: Server[Any], address: HttpAddress,
                   security: HttpSecurity | None = None) -> Starlette:
    """The ASGI app serving ``server`` at ``/mcp`` for a gateway listening at ``address``
    (module doc); refuses (:class:`HyperplanError`) a non-loopback address without a token.
    ``app.state.session_manager`` is its :class:`BoundedSessionManager`."""
    security = security or HttpSecurity()
    check_exposure(address, security)
    manager = BoundedSessionManager(
        app=server, sessions_per_client=security.sessions_per_client,
        session_idle_timeout=security.session_idle_timeout,
        # Host and Origin are checked by the guard, before authentication; the SDK still
        # checks the Content-Type of every POST
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    endpoint: ASGIApp = RequestBodyLimitMiddleware(
        AnswerEveryRequest(StreamableHTTPASGIApp(manager)), DEFAULT_MAX_REQUEST_BODY_SIZE)
    middleware = [Middleware(RequestGuard, address=address,
                             allowed_origins=security.allowed_origins)]
    if security.allowed_origins:  # a web app allowed by --allow-origin must read the answers
        middleware.append(Middleware(
            CORSMiddleware, allow_origins=security.allowed_origins, allow_headers=["*"],
            allow_methods=["GET", "POST", "DELETE"], allow_private_network=True,
            expose_headers=[MCP_SESSION_ID_HEADER, "WWW-Authenticate"]))
    if security.token is not None:
        backend = BearerAuthBackend(StaticTokenVerifier(security.token))
        middleware += [Middleware(AuthenticationMiddleware, backend=backend),
                       Middleware(AuthContextMiddleware)]
        endpoint = RequireAuthMiddleware(endpoint, required_scopes=[])
    app = Starlette(routes=[Route(PATH, endpoint=endpoint)], middleware=middleware,
                    lifespan=lambda app: manager.run())
    app.state.session_manager = manager
    return app


def make_http_server(server: Server[Any], address: HttpAddress,
                     security: HttpSecurity | None = None, *,
                     ready: Callable[[str], None] | None = None) -> uvicorn.Server:
    """A uvicorn server for :func:`build_http_app` (``run()`` serves until interrupted,
    ``should_exit = True`` stops it); ``ready`` gets the URL (with the port actually bound)
    once it listens. Proxy headers are ignored: the client address bounds the sessions."""
    import uvicorn

    app = build_http_app(server, address, security)
    config = uvicorn.Config(app, host=address.host, port=address.port, log_level="warning",
                            lifespan="on", proxy_headers=False, server_header=False)
    http_server = uvicorn.Server(config)
    if ready is not None:
        _on_started(http_server, lambda: ready(_bound_url(http_server, address)))
    return http_server


def serve_http(server: Server[Any], address: HttpAddress, security: HttpSecurity | None = None,
               *, ready: Callable[[str], None] | None = None) -> None:
    """Serve ``server`` over streamable HTTP at ``address`` until interrupted."""
    make_http_server(server, address, security, ready=ready).run()


# Host and Origin ----------------------------------------------------------------------


class RequestGuard:
    """ASGI middleware: the Host and Origin checks of the module doc (421 / 403, a JSON-RPC
    error body with ``id: null``), before authentication and before the SDK sees the body."""

    def __init__(self, app: ASGIApp, *, address: HttpAddress,
                 allowed_origins: tuple[str, ...] = ()) -> None:
        self.app = app
        self.address = address
        self.names = frozenset(host_names(address.host)) if address.loopback else frozenset()
        self.allowed_origins = frozenset(allowed_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self.refusal(scope)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def refusal(self, scope: Scope) -> Response | None:
        """The response refusing this request, or None when it may be served."""
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        port = self.address.port or _server_port(scope)
        if self.address.loopback and not self._own_host(host, port):
            return _error_response(421, "Invalid Host header: this gateway serves only "
                                        "requests addressed to it (DNS rebinding protection)")
        origin = headers.get("origin")
        if origin is not None and not self._allowed_origin(origin, host, port):
            return _error_response(403, "Invalid Origin header: not this gateway's own origin "
                                        "nor one given with --allow-origin")
        return None

    def _own_host(self, host: str, port: int) -> bool:
        parsed = _split_host(host)
        if parsed is None or parsed[0] not in self.names:
            return False
        return parsed[1] == port or (parsed[1] is None and port == 80)

    def _allowed_origin(self, origin: str, host: str, port: int) -> bool:
        try:
            origin = normalize_origin(origin)
        except HyperplanError:  # "null", a path, garbage: never an allowed origin
            return False
        if origin in self.allowed_origins:
            return True
        if self.address.loopback:
            return origin in origins_of(self.address, port)
        own = {f"http://{host.lower()}", f"https://{host.lower()}"}
        return origin in {_normalized(o) for o in own}


def _split_host(value: str) -> tuple[str, int | None] | None:
    """A Host header as (canonical host as a Host header spells it, port or None)."""
    value = value.strip()
    if value.startswith("["):
        inside, sep, rest = value[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            return None
        name, port_text = f"[{canonical_host(inside)}]", rest[1:]
        if ":" not in name[1:-1]:  # an IPv4 address or a name in brackets
            return None
    else:
        name, _, port_text = value.partition(":")
        name = canonical_host(name) if name else ""
        if not name or ":" in name:
            return None
    if not port_text:
        return name, None
    return (name, int(port_text)) if port_text.isdigit() and len(port_text) <= 5 else None


def _normalized(origin: str) -> str:
    try:
        return normalize_origin(origin)
    except HyperplanError:
        return ""


def _server_port(scope: Scope) -> int:
    server = scope.get("server")
    return int(server[1]) if server and server[1] is not None else 0


def _error_response(status: int, message: str, code: int = INVALID_REQUEST) -> Response:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return Response(json.dumps(body), status_code=status, media_type="application/json")


# bearer token -------------------------------------------------------------------------


class StaticTokenVerifier:
    """The SDK's ``TokenVerifier`` for one bearer token: compared in constant time (as
    SHA-256 digests, so not even its length leaks)."""

    def __init__(self, token: str) -> None:
        self._digest = hashlib.sha256(token.encode()).digest()

    async def verify_token(self, token: str) -> AccessToken | None:
        digest = hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()
        if not hmac.compare_digest(digest, self._digest):
            return None
        return AccessToken(token=token, client_id="hyperplan-bearer", scopes=[])


# sessions -----------------------------------------------------------------------------


class BoundedSessionManager(StreamableHTTPSessionManager):
    """The SDK's session manager, with at most ``sessions_per_client`` open handshake-era
    sessions per client address (module doc). Hooks the manager's admission and discard
    (``mcp`` 2.3.0, pinned)."""

    def __init__(self, *args: Any, sessions_per_client: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sessions_per_client = sessions_per_client
        # per client: its session ids, least recently used first -> used after initialize?
        self._clients: dict[str, OrderedDict[str, bool]] = {}
        self._owner: dict[str, str] = {}  # session id -> client

    def sessions_of(self, client: str) -> list[str]:
        """The open session ids of ``client`` (oldest first)."""
        return list(self._clients.get(client, ()))

    async def _handle_stateful_request(self, scope: Scope, receive: Receive,
                                       send: Send) -> None:
        client = _client_key(scope)
        session_id = Headers(scope=scope).get(MCP_SESSION_ID_HEADER)
        sessions = self._clients.get(client)
        if session_id is not None and sessions is not None and session_id in sessions:
            sessions[session_id] = True
            sessions.move_to_end(session_id)
        token = _CLIENT.set(client)
        try:
            await super()._handle_stateful_request(scope, receive, send)
        finally:
            _CLIENT.reset(token)

    def _admit_session(self, requestor: AuthorizationContext | None
                       ) -> StreamableHTTPServerTransport | None:
        transport = super()._admit_session(requestor)
        if transport is None or transport.mcp_session_id is None:
            return transport
        client = _CLIENT.get()
        sessions = self._clients.setdefault(client, OrderedDict())
        sessions[transport.mcp_session_id] = False
        self._owner[transport.mcp_session_id] = client
        while len(sessions) > self.sessions_per_client:
            self._evict(sessions)
        return transport

    def _evict(self, sessions: OrderedDict[str, bool]) -> None:
        """Close the client's oldest session never used after its handshake (else its least
        recently used one), never the one just opened."""
        older = list(sessions)[:-1]
        victim = next((s for s in older if not sessions[s]), older[0])
        self._forget(victim)
        transport = self._server_instances.pop(victim, None)
        if transport is not None and self._task_group is not None:
            self._task_group.start_soon(self._discard_session, victim, transport)

    async def _discard_session(self, session_id: str,
                               transport: StreamableHTTPServerTransport) -> None:
        self._forget(session_id)
        await super()._discard_session(session_id, transport)

    def _forget(self, session_id: str) -> None:
        client = self._owner.pop(session_id, None)
        sessions = self._clients.get(client) if client is not None else None
        if sessions is not None:
            sessions.pop(session_id, None)
            if not sessions:
                del self._clients[client]  # type: ignore[arg-type]


def _client_key(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


# every request answered ---------------------------------------------------------------


class AnswerEveryRequest:
    """ASGI middleware (after the body limit): a POSTed JSON-RPC request whose ``id`` is not
    a string or an integer gets an ``Invalid Request`` error with ``id: null`` (400) instead
    of the SDK's silent 202; every other body goes on unchanged."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        first = await receive()  # the whole body: RequestBodyLimitMiddleware buffered it
        if first.get("type") == "http.request" and _has_invalid_id(first.get("body", b"")):
            await _error_response(400, "Invalid Request: a request id must be a string or an "
                                       "integer")(scope, receive, send)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return first
            return await receive()

        await self.app(scope, replay, send)


def _has_invalid_id(body: bytes) -> bool:
    """Whether ``body`` is one JSON-RPC request (an object with ``method`` and ``id``) whose
    id is neither a string nor an integer."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):  # the SDK answers a parse error
        return False
    if not isinstance(message, dict) or "id" not in message or "method" not in message:
        return False
    return type(message["id"]) not in (str, int)


# uvicorn ------------------------------------------------------------------------------


def _on_started(server: uvicorn.Server, callback: Callable[[], None]) -> None:
    """Call ``callback`` once uvicorn listens (its ``startup`` finished)."""
    startup = server.startup

    async def wrapped(*args: Any, **kwargs: Any) -> None:
        await startup(*args, **kwargs)
        if server.started:
            callback()

    server.startup = wrapped  # type: ignore[method-assign]


def _bound_url(server: uvicorn.Server, address: HttpAddress) -> str:
    """``address.url`` with the port actually bound (``--http 0`` picks one)."""
    if address.port:
        return address.url
    for listener in getattr(server, "servers", []):
        for sock in listener.sockets:
            return HttpAddress(address.host, int(sock.getsockname()[1])).url
    return address.url
