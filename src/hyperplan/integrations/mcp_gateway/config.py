"""The gateway's settings and the ``--http [HOST:]PORT`` address (loopback unless allowed)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from hyperplan.errors import HyperplanError

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


@dataclass(frozen=True)
class GatewayConfig:
    """What ``hyperplan serve`` was asked for (its options, see :mod:`hyperplan.cli.serve_cmd`).

    ``cache_dir``: where the built graph is kept ("default": the selection cache,
    :func:`hyperplan.select.cache.default_cache_dir`; None: not kept)."""

    mode: Mode = Mode.SEARCH
    budget: int = DEFAULT_BUDGET
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    embedder: str = "auto"
    cache_dir: str | Path | None = "default"
    max_request_chars: int = DEFAULT_MAX_REQUEST_CHARS
    max_argument_bytes: int = DEFAULT_MAX_ARGUMENT_BYTES

    def __post_init__(self) -> None:
        if not 1 <= self.budget <= MAX_BUDGET:
            raise HyperplanError(f"--budget must be between 1 and {MAX_BUDGET}, got {self.budget}")
        if not self.call_timeout > 0:
            raise HyperplanError(f"--call-timeout must be positive, got {self.call_timeout:g}")
        if self.max_request_chars < 1 or self.max_argument_bytes < 1:
            raise HyperplanError("--max-request-chars and --max-argument-bytes must be positive")


@dataclass(frozen=True)
class HttpAddress:
    host: str
    port: int

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/mcp"


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_http_address(text: str, *, allow_remote: bool = False) -> HttpAddress:
    """``PORT``, ``HOST:PORT`` or ``[V6]:PORT`` (host 127.0.0.1 when left out). A host that is
    not loopback is refused unless ``allow_remote``: the gateway forwards tool calls, so
    anyone who can reach it can act with the upstream's rights."""
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
                             "(the default), or pass --allow-remote and put authentication "
                             "in front of it")
    return HttpAddress(host, port)
