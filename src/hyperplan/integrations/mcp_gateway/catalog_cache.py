"""The upstream catalogs of the previous run, for a warm start of ``hyperplan serve``.

Each MCP upstream's ``tools/list`` (the tool definitions as it listed them) is kept in one
file per server configuration, so that the next start of the same configuration can load its
tools, select and answer ``tools/list`` and ``find_tools`` from them while the upstream
processes are still starting (:func:`~.upstream.load_upstream`); calls go to an upstream once
it is up, and when its live listing differs from the kept one the file is replaced and the
gateway serves the new catalog (:class:`~.server.GatewayServer`).

What is kept, and what never is:

* the file name is a SHA-256 of what identifies the configuration: the server's name, its
  command, arguments, working directory or URL, and the *names* of its ``env`` variables and
  HTTP headers, never their values (so a changed token does not make a new file, and no part
  of a credential is written, not even hashed); an ``mcp-server:CMD`` source is identified by
  its command line, hashed the same way;
* the content is the definitions redacted by value (:func:`hyperplan.secrets.redact_value`:
  a registered secret an upstream echoed into a description is ``***`` on disk, as it is to
  clients);
* the directory (and any parent it creates) is made 0700 and every file written 0600
  (written to a temporary file and renamed, so a reader never sees half of one).

A file that cannot be read or parsed is a miss (a cold start), never an error.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from hyperplan.integrations.mcp_gateway.mcp_config import ServerEntry
from hyperplan.secrets import redact_value

FORMAT = 1
FOLDER = "upstream-catalogs"


def entry_key(entry: ServerEntry) -> str:
    """The file key of a server of an ``mcpServers`` file (module doc)."""
    return _digest({"name": entry.name, "kind": entry.kind.value, "command": entry.command,
                    "args": list(entry.args), "cwd": entry.cwd, "url": entry.url,
                    "env": sorted(entry.env), "headers": sorted(entry.headers)})


def spec_key(spec: str) -> str:
    """The file key of an ``mcp-server:CMD`` source."""
    return _digest({"spec": spec})


def _digest(identity: dict[str, Any]) -> str:
    text = json.dumps(identity, sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CatalogCache:
    """The kept listings under ``folder`` (module doc)."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    @classmethod
    def beside(cls, cache_dir: str | Path | None) -> CatalogCache | None:
        """The catalog cache of a gateway whose graph cache is ``cache_dir`` ("default": the
        selection cache's default folder; None: nothing is kept, so no catalog either)."""
        if cache_dir is None:
            return None
        if cache_dir == "default":
            from hyperplan.select.cache import default_cache_dir

            return cls(default_cache_dir() / FOLDER)
        return cls(Path(cache_dir) / FOLDER)

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def get(self, key: str) -> list[dict[str, Any]] | None:
        """The kept definitions of ``key``, or None (none kept, or unreadable)."""
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        tools = data.get("tools") if isinstance(data, dict) else None
        if data.get("format") != FORMAT or not isinstance(tools, list) or \
                not all(isinstance(t, dict) and isinstance(t.get("name"), str) for t in tools):
            return None
        return tools

    def put(self, key: str, tools: list[dict[str, Any]]) -> bool:
        """Keep ``tools`` (redacted) as the listing of ``key``; False when it cannot be
        written (the gateway serves on; the next start is cold)."""
        from hyperplan.graph.safe_paths import make_private_dirs

        data = {"format": FORMAT, "tools": redact_value(tools)}
        try:
            make_private_dirs(self.folder, 0o700)
            descriptor, temporary = tempfile.mkstemp(prefix=".catalog-", dir=self.folder)
            try:
                os.fchmod(descriptor, 0o600)
                with os.fdopen(descriptor, "w", encoding="utf-8") as out:
                    json.dump(data, out, ensure_ascii=False)
                os.replace(temporary, self._path(key))
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError:
            return False
        return True

    @staticmethod
    def same(kept: list[dict[str, Any]], live: list[dict[str, Any]]) -> bool:
        """Whether a live listing is the kept one (compared redacted, as kept)."""
        return bool(redact_value(live) == kept)
