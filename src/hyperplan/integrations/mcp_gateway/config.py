"""The gateway's settings, the ``--http [HOST:]PORT`` address (loopback unless allowed) and
the HTTP security settings (bearer token, Origin allow-list, session bounds)."""

from __future__ import annotations

import ipaddress
import os
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from hyperplan.errors import HyperplanError
from hyperplan.integrations.host.conversation import ConversationLimits as ConversationLimits

if TYPE_CHECKING:
    from hyperplan.graph.annotations import Annotations

DEFAULT_BUDGET = 10
DEFAULT_CALL_TIMEOUT = 30.0
MAX_BUDGET = 100
#: The longest ``find_tools`` request text (characters): a task description, not a document.
DEFAULT_MAX_REQUEST_CHARS = 8_192
#: The largest ``call_tool`` arguments (bytes of their JSON): bigger ones are refused unsent.
DEFAULT_MAX_ARGUMENT_BYTES = 256 * 1024
MAX_KNOWN = 1_000  # entries of find_tools' ``known``


class Mode(StrEnum):
    """``search``: two fixed tools, ``find_tools`` and ``call_tool``; ``narrow``: the tools
    listed are ``find_tools`` plus the current selection, changing with the session state."""

    SEARCH = "search"
    NARROW = "narrow"


class Namespace(StrEnum):
    """``--namespace``: when an upstream tool is served as ``server__tool``. ``collisions``:
    only the names two upstreams both define (each side prefixed with its server's name);
    ``always``: every tool."""

    COLLISIONS = "collisions"
    ALWAYS = "always"


#: Between a server's name and a tool's name in a namespaced tool name.
NAMESPACE_SEPARATOR = "__"


@dataclass(frozen=True)
class CallLimits:
    """How many tool calls run at once, per upstream source and per client
    (:mod:`~hyperplan.integrations.mcp_gateway.limits`)."""

    per_source: int = 8
    per_client: int = 4


@dataclass(frozen=True)
class GatewayConfig:
    """What ``hyperplan serve`` was asked for (its options, see :mod:`hyperplan.cli.serve_cmd`).

    ``cache_dir``: where the built graph is kept ("default": the selection cache,
    :func:`hyperplan.select.cache.default_cache_dir`; None: not kept). ``annotations``:
    inferred nodes the graph is built with (``--annotations FILE``, read);
    ``llm_annotate``: the OpenAI-compatible base URL of a model that annotates every tool
    before the build (``--llm-annotate URL``, :mod:`hyperplan.llm.annotate`)."""

    mode: Mode = Mode.SEARCH
    budget: int = DEFAULT_BUDGET
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    embedder: str = "auto"
    cache_dir: str | Path | None = "default"
    max_request_chars: int = DEFAULT_MAX_REQUEST_CHARS
    max_argument_bytes: int = DEFAULT_MAX_ARGUMENT_BYTES
    call_limits: CallLimits = field(default_factory=CallLimits)
    conversation_limits: ConversationLimits = field(default_factory=ConversationLimits)
    annotations: Annotations | None = field(default=None, repr=False, compare=False)
    llm_annotate: str | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.budget <= MAX_BUDGET:
            raise HyperplanError(f"--budget must be between 1 and {MAX_BUDGET}, got {self.budget}")
        if not self.call_timeout > 0:
            raise HyperplanError(f"--call-timeout must be positive, got {self.call_timeout:g}")
        if self.max_request_chars < 1 or self.max_argument_bytes < 1:
            raise HyperplanError("--max-request-chars and --max-argument-bytes must be positive")
        if self.call_limits.per_source < 1 or self.call_limits.per_client < 1:
            raise HyperplanError("--max-calls-per-upstream and --max-calls-per-client must be "
                                 "at least 1")
        if not self.conversation_limits.idle_seconds > 0:
            raise HyperplanError("--conversation-idle must be positive")


@dataclass(frozen=True)
class HttpAddress:
    """Where ``--http`` listens; ``host`` canonical (:func:`canonical_host`)."""

    host: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{_url_host(self.host)}:{self.port}/mcp"

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1), however spelled."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def canonical_host(host: str) -> str:
    """One spelling per host: an IP address in its short form (``0:0:0:0:0:0:0:1`` is
    ``::1``), a name in lower case (``LOCALHOST`` is ``localhost``)."""
    try:
        return ipaddress.ip_address(host).compressed
    except ValueError:
        return host.lower().rstrip(".")


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def parse_http_address(text: str, *, allow_remote: bool = False) -> HttpAddress:
    """``PORT``, ``HOST:PORT`` or ``[V6]:PORT`` (host 127.0.0.1 when left out), the host
    canonical. A host that is not loopback is refused unless ``allow_remote``: the gateway
    forwards tool calls, so anyone who can reach it can act with the upstream's rights."""
    text = text.strip()
    host, port_text = "127.0.0.1", text
    if text.startswith("["):
        inside, sep, rest = text[1:].partition("]")
        if not sep or not rest.startswith(":"):
            raise HyperplanError(f"--http {text!r}: expected [ADDRESS]:PORT")
        host, port_text = inside, rest[1:]
    elif ":" in text:
        host, _, port_text = text.rpartition(":")
    try:
        port = int(port_text)
    except ValueError:
        raise HyperplanError(f"--http {text!r}: the port {port_text!r} is not a number; "
                             "expected [HOST:]PORT") from None
    if not 0 <= port <= 65535:
        raise HyperplanError(f"--http {text!r}: the port must be between 0 and 65535")
    if not host:
        raise HyperplanError(f"--http {text!r}: empty host; expected [HOST:]PORT")
    if not allow_remote and not is_loopback(host):
        raise HyperplanError(f"--http {text!r}: {host} is not a loopback address; anyone who "
                             "can reach it could call the upstream tools. Serve on 127.0.0.1 "
                             "(the default), or pass --allow-remote with a bearer token "
                             "(--auth-token-env or --auth-token-file)")
    return HttpAddress(canonical_host(host), port)


# HTTP security ---------------------------------------------------------------------------

#: Open handshake-era sessions per client address; past it the client's oldest one closes.
DEFAULT_SESSIONS_PER_CLIENT = 64
#: Seconds without a request (nor an open GET stream) after which a session is closed.
DEFAULT_SESSION_IDLE_TIMEOUT = 600.0
#: The shortest bearer token accepted (characters): a short one could be guessed.
MIN_TOKEN_CHARS = 16


@dataclass(frozen=True)
class HttpSecurity:
    """How ``--http`` is protected (module doc of :mod:`.http`).

    ``token``: the bearer token every request must carry (None: none asked; required beyond
    loopback, :func:`check_exposure`); ``allowed_origins``: browser origins accepted besides
    the gateway's own (canonical, :func:`normalize_origin`); ``sessions_per_client`` and
    ``session_idle_timeout`` bound the handshake-era sessions."""

    token: str | None = field(default=None, repr=False)
    allowed_origins: tuple[str, ...] = ()
    sessions_per_client: int = DEFAULT_SESSIONS_PER_CLIENT
    session_idle_timeout: float = DEFAULT_SESSION_IDLE_TIMEOUT

    def __post_init__(self) -> None:
        if self.token is not None:
            from hyperplan.secrets import register_secret

            register_secret(check_token(self.token, "the bearer token"))  # never printed
        object.__setattr__(self, "allowed_origins",
                           tuple(dict.fromkeys(normalize_origin(o) for o in self.allowed_origins)))
        if self.sessions_per_client < 1:
            raise HyperplanError("--sessions-per-client must be at least 1, got "
                                 f"{self.sessions_per_client}")
        if not 0 < self.session_idle_timeout < float("inf"):
            raise HyperplanError("--session-idle-timeout must be a positive number of "
                                 f"seconds, got {self.session_idle_timeout:g}")


def normalize_origin(text: str) -> str:
    """An origin as browsers send it: ``scheme://host[:port]``, lower case, the default
    port left out (``HTTP://LOCALHOST:80/`` is ``http://localhost``). Raises
    :class:`HyperplanError` for anything else (a path, a query, ``*``, ``null``)."""
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError:
        raise HyperplanError(f"--allow-origin {text!r}: not an origin "
                             "(expected scheme://host[:port])") from None
    scheme, host = parts.scheme.lower(), parts.hostname
    if (scheme not in ("http", "https") or not host or parts.username is not None
            or parts.path not in ("", "/") or parts.query or parts.fragment or "*" in host):
        raise HyperplanError(f"--allow-origin {text!r}: not an origin (expected "
                             "http[s]://host[:port], exactly; no wildcards, no path)")
    default = 80 if scheme == "http" else 443
    suffix = f":{port}" if port is not None and port != default else ""
    return f"{scheme}://{_url_host(canonical_host(host))}{suffix}"


def check_token(token: str, where: str) -> str:
    """``token`` when it can serve as a bearer token: at least :data:`MIN_TOKEN_CHARS`
    visible ASCII characters (the message never shows it)."""
    if len(token) < MIN_TOKEN_CHARS or not all("!" <= c <= "~" for c in token):
        raise HyperplanError(
            f"{where}: a bearer token must be at least {MIN_TOKEN_CHARS} visible ASCII "
            "characters without spaces (make one with: python -c \"import secrets; "
            "print(secrets.token_urlsafe(32))\")")
    return token


def read_auth_token(env: str | None = None, file: Path | None = None, *,
                    warn: Callable[[str], None] | None = None) -> str | None:
    """The bearer token of ``--auth-token-env VAR`` (that variable's value) or
    ``--auth-token-file FILE`` (its first line, stripped; ``warn`` is told when the file
    is readable by group or others); None when neither is given. The token is registered
    as a secret (:func:`hyperplan.secrets.register_secret`): it is never printed."""
    from hyperplan.secrets import register_secret

    if env is not None and file is not None:
        raise HyperplanError("give --auth-token-env or --auth-token-file, not both")
    if env is not None:
        value = os.environ.get(env)
        if not value or not value.strip():
            raise HyperplanError(f"--auth-token-env {env}: the environment variable {env} "
                                 "is not set or empty")
        token = check_token(value.strip(), f"--auth-token-env {env}")
    elif file is not None:
        token = check_token(_first_line(file), f"--auth-token-file {file}")
        mode = file.stat().st_mode
        if mode & (stat.S_IRGRP | stat.S_IROTH):
            (warn or _stderr)(f"hyperplan serve: warning: --auth-token-file {file} is "
                              f"readable by group or others (mode {stat.S_IMODE(mode):o}); "
                              f"chmod 600 {file}")
    else:
        return None
    register_secret(token)
    return token


def _first_line(file: Path) -> str:
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise HyperplanError(f"--auth-token-file {file}: cannot read it "
                             f"({type(exc).__name__})") from None
    return lines[0].strip() if lines else ""


def check_exposure(address: HttpAddress, security: HttpSecurity) -> str | None:
    """Refuse a gateway beyond loopback without a bearer token (one clear error); for one
    with a token, the one-line warning of what is exposed (None on loopback)."""
    if address.loopback:
        return None
    where = f"{_url_host(address.host)}:{address.port}"
    if security.token is None:
        raise HyperplanError(
            f"--http {where} listens beyond loopback, so a bearer token is required: pass "
            "--auth-token-env VAR or --auth-token-file FILE (clients send 'Authorization: "
            "Bearer TOKEN')")
    return (f"hyperplan serve: warning: listening beyond loopback at {address.url}: whoever "
            "reaches it with the bearer token can call every upstream tool with the gateway's "
            "credentials; the token and the calls travel in clear text unless a TLS proxy is in "
            "front")


def origins_of(address: HttpAddress, port: int) -> tuple[str, ...]:
    """The gateway's own origins at ``port`` (one per name of its host)."""
    return tuple(normalize_origin(f"http://{name}:{port}") for name in host_names(address.host))


def host_names(host: str) -> tuple[str, ...]:
    """The names a loopback ``host`` (canonical) is reached by, as a Host header spells them
    (``localhost`` also for 127.0.0.1 and ::1, which it resolves to)."""
    if host in ("localhost", "127.0.0.1", "::1"):
        return tuple(dict.fromkeys((_url_host(host), "localhost", "127.0.0.1", "[::1]")
                                   if host == "localhost" else (_url_host(host), "localhost")))
    return (_url_host(host),)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)

