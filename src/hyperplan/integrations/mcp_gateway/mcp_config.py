"""The ``mcpServers`` file of ``hyperplan serve --config FILE``: the JSON Claude Desktop, Cursor,
Hermes (``mcpServers``) and VS Code (``servers``) already use::

    {"mcpServers": {
        "git":    {"command": "uvx", "args": ["mcp-server-git"], "cwd": "/repo"},
        "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"],
                   "env": {"MEMORY_FILE_PATH": "${HOME}/memory.json"}},
        "remote": {"type": "http", "url": "https://mcp.example.com/mcp",
                   "headers": {"Authorization": "Bearer ${EXAMPLE_TOKEN}"}}}}

Each entry is a stdio server (``command``, ``args``, ``env``, ``cwd``) or a remote
streamable-HTTP one (``url``, ``headers``); ``type`` (``stdio``, ``http``, also
``streamable-http``) may say which, and must agree with the fields. An entry with
``"disabled": true`` is left out. ``${VAR}`` (or VS Code's ``${env:VAR}``) in ``args``, ``env``,
``cwd``, ``url`` and ``headers`` is replaced by that environment variable; every value so
substituted (but in ``cwd``, and but ``${HOME}``, ``${USER}``, ``${TMPDIR}`` and the like,
which say where things are), and every header value, is registered as a secret
(:func:`hyperplan.secrets.register_secret`: redacted wherever hyperplan prints). A missing
variable, an unknown field or a wrong type is one :class:`~hyperplan.errors.HyperplanError`
naming the file, the server and the field. The entry's key is the upstream's name: the
gateway's ``metadata["server"]`` (:func:`hyperplan.sources.tag_server`) and the
``server__tool`` prefix of namespaced tool names.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from hyperplan.errors import HyperplanError

_REFERENCE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
#: Variables whose values say where things are, not credentials: substituted, not registered
#: as secrets (``${HOME}`` would otherwise blank every path in every message).
_PLAIN_VARIABLES = frozenset({"HOME", "USER", "LOGNAME", "PWD", "TMPDIR", "TMP", "TEMP",
                              "PATH", "SHELL", "LANG", "USERPROFILE", "APPDATA"})
_STDIO_FIELDS = frozenset({"command", "args", "env", "cwd"})
_HTTP_FIELDS = frozenset({"url", "headers"})
# accepted and ignored: what hosts add for their own use (Cursor, VS Code, Claude, Hermes)
_IGNORED_FIELDS = frozenset({"type", "transport", "disabled", "description", "timeout",
                             "alwaysAllow", "autoApprove", "envFile", "tools", "enabled",
                             "gallery", "version", "name", "note", "notes"})


class ServerKind(StrEnum):
    """How the gateway reaches an upstream: a started process (``stdio``) or a URL (``http``:
    MCP streamable HTTP)."""

    STDIO = "stdio"
    HTTP = "http"


_KIND_NAMES = {"stdio": ServerKind.STDIO, "http": ServerKind.HTTP,
               "streamable-http": ServerKind.HTTP, "streamablehttp": ServerKind.HTTP,
               "streamable_http": ServerKind.HTTP}


@dataclass(frozen=True)
class ServerEntry:
    """One server of the file, ``${VAR}`` resolved (module doc). ``env`` and ``headers`` hold
    resolved values: never print them."""

    name: str
    kind: ServerKind
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    cwd: str | None = None
    url: str = field(default="", repr=False)
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)

    @property
    def label(self) -> str:
        """What the server is called in messages: its name in the file."""
        return self.name


def load_mcp_config(path: str | Path) -> list[ServerEntry]:
    """The servers of the ``mcpServers`` (or ``servers``) file at ``path``, in file order
    (module doc). Raises :class:`HyperplanError` naming the file, the server and the field."""
    where = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise HyperplanError(f"--config {where}: cannot read it ({type(exc).__name__}: "
                             f"{exc.strerror or exc})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HyperplanError(f"--config {where}: not valid JSON ({exc})") from None
    return parse_mcp_config(data, where)


def parse_mcp_config(data: Any, where: str = "the config",
                     environ: Mapping[str, str] | None = None) -> list[ServerEntry]:
    """:func:`load_mcp_config` on parsed JSON (``where`` names it in errors; ``environ``
    defaults to ``os.environ``)."""
    env = os.environ if environ is None else environ
    if not isinstance(data, dict):
        raise HyperplanError(f"{where}: expected a JSON object with \"mcpServers\"")
    key = "mcpServers" if "mcpServers" in data else "servers" if "servers" in data else None
    if key is None:
        raise HyperplanError(f"{where}: no \"mcpServers\" (nor VS Code's \"servers\") object")
    servers = data[key]
    if not isinstance(servers, dict):
        raise HyperplanError(f"{where}: \"{key}\" must be an object of servers by name")
    entries = [_entry(name, raw, where, env) for name, raw in servers.items()
               if not (isinstance(raw, dict) and raw.get("disabled") is True)]
    if not entries:
        raise HyperplanError(f"{where}: \"{key}\" lists no (enabled) server")
    return entries


def _entry(name: str, raw: Any, where: str, env: Mapping[str, str]) -> ServerEntry:
    at = f"{where}: server {name!r}"
    if not _NAME.match(name):
        raise HyperplanError(f"{at}: a server name must be 1-64 letters, digits, '_', '.' or "
                             "'-', starting with a letter or digit")
    if not isinstance(raw, dict):
        raise HyperplanError(f"{at}: expected an object with \"command\" or \"url\"")
    unknown = sorted(set(raw) - _STDIO_FIELDS - _HTTP_FIELDS - _IGNORED_FIELDS)
    if unknown:
        raise HyperplanError(f"{at}: unknown field {unknown[0]!r} (expected command, args, env, "
                             "cwd for a stdio server; url, headers for an HTTP one)")
    kind = _kind(raw, at)
    if kind is ServerKind.HTTP:
        return ServerEntry(name, kind, url=_text(raw.get("url"), at, "url", env),
                           headers=_strings(raw.get("headers"), at, "headers", env,
                                            secret_all=True))
    cwd = raw.get("cwd")
    return ServerEntry(name, kind, command=_text(raw.get("command"), at, "command", env),
                       args=tuple(_list(raw.get("args"), at, env)),
                       env=_strings(raw.get("env"), at, "env", env, secret_all=False),
                       cwd=None if cwd is None else _text(cwd, at, "cwd", env, secret=False))


def _kind(raw: dict[str, Any], at: str) -> ServerKind:
    stated = raw.get("type", raw.get("transport"))
    has_stdio, has_http = "command" in raw, "url" in raw
    if stated is not None:
        kind = _KIND_NAMES.get(str(stated).lower())
        if kind is None:
            raise HyperplanError(f"{at}: field \"type\": {stated!r} is not supported (stdio or "
                                 "http; the older SSE transport is not)")
        if (kind is ServerKind.HTTP and not has_http) or (kind is ServerKind.STDIO
                                                          and not has_stdio):
            need = "url" if kind is ServerKind.HTTP else "command"
            raise HyperplanError(f"{at}: \"type\": {stated!r} needs the field {need!r}")
        return kind
    if has_stdio == has_http:
        raise HyperplanError(f"{at}: give either \"command\" (a stdio server) or \"url\" (a "
                             "streamable-HTTP server)")
    return ServerKind.HTTP if has_http else ServerKind.STDIO


def _resolve(value: str, at: str, what: str, env: Mapping[str, str], *,
             secret: bool = True) -> str:
    """``value`` with each ``${VAR}`` replaced (each substituted value registered as a
    secret when ``secret``)."""
    from hyperplan.secrets import register_secret

    def substitute(match: re.Match[str]) -> str:
        variable = match.group(1)
        found = env.get(variable)
        if found is None:
            raise HyperplanError(f"{at}: field {what}: the environment variable {variable} is "
                                 "not set")
        if secret and variable not in _PLAIN_VARIABLES and not variable.startswith("XDG_"):
            register_secret(found)
        return found

    return _REFERENCE.sub(substitute, value)


def _text(value: Any, at: str, what: str, env: Mapping[str, str], *,
          secret: bool = True) -> str:
    if not isinstance(value, str) or not value.strip():
        raise HyperplanError(f"{at}: field {what!r} must be a non-empty string")
    return _resolve(value, at, what, env, secret=secret)


def _list(value: Any, at: str, env: Mapping[str, str]) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str | int | float) for v in value):
        raise HyperplanError(f"{at}: field 'args' must be a list of strings")
    return [_resolve(str(v), at, f"args[{i}]", env) for i, v in enumerate(value)]


def _strings(value: Any, at: str, what: str, env: Mapping[str, str], *,
             secret_all: bool) -> dict[str, str]:
    """An object of string values (``env``, ``headers``), resolved; with ``secret_all``
    every value is registered as a secret (a header is often a credential)."""
    from hyperplan.secrets import register_secret

    if value is None:
        return {}
    if not isinstance(value, dict):
        raise HyperplanError(f"{at}: field {what!r} must be an object of strings")
    out: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(item, str | int | float) or isinstance(item, bool):
            raise HyperplanError(f"{at}: field {what}.{key}: expected a string")
        resolved = _resolve(str(item), at, f"{what}.{key}", env)
        if secret_all:
            register_secret(resolved.split(" ", 1)[-1] if resolved.lower().startswith(
                ("bearer ", "basic ", "token ")) else resolved)
        out[str(key)] = resolved
    return out
