"""A real MCP server behind the gateway, two clients at once, a planted secret (issues 36, 38).

    python scripts/dev/gateway_secret_check.py [--config]

Needs ``mcp-server-git`` (PyPI) in this environment. Makes a git repository in a temporary
folder whose commit message holds a secret, sets it as ``MY_SERVICE_TOKEN`` (a
credential-named variable) in the gateway's environment, starts ``hyperplan serve --http``
in front of ``python -m mcp_server_git`` (with ``--config``: from an ``mcpServers`` file
whose ``env`` passes the secret as ``${MY_SERVICE_TOKEN}``), and runs two default SDK
clients at once: each ``find_tools`` (until the graph is ready), a tool, and ``git_show``
with the secret as its revision. Prints each client's first tools and held values, whether
any 6 consecutive characters of the secret reached a client, the gateway's stdout/stderr,
the selection cache or the gateway's ``TMPDIR``, and any cache file that is not 0600.
Stops the gateway by PID.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from mcp import Client

SECRET = "planted-secret-7f3e9a1c"


def _repository(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    (repo / "a.txt").write_text("hi\n")
    for args in (["init", "-q"], ["add", "a.txt"],
                 ["-c", "user.email=a@b", "-c", "user.name=t", "commit", "-qm",
                  f"deploy with key {SECRET}"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    return repo


async def _client(url: str, repo: Path, request: str, tool: str, seen: list[str]) -> Any:
    async with Client(url, read_timeout_seconds=60) as client:
        for _ in range(100):
            found = await client.call_tool("find_tools", {"request": request})
            seen.append(found.model_dump_json())
            data = json.loads(found.content[0].text)  # type: ignore[union-attr]
            if data["ready"]:
                break
            await asyncio.sleep(0.3)
        token = data["conversation"]
        for name, arguments in ((tool, {"repo_path": str(repo)}),
                                ("git_show", {"repo_path": str(repo), "revision": SECRET})):
            result = await client.call_tool("call_tool", {"name": name, "arguments": arguments,
                                                          "conversation": token})
            seen.append(result.model_dump_json())
        again = await client.call_tool("find_tools", {"request": request, "conversation": token})
        seen.append(again.model_dump_json())
        held = json.loads(again.content[0].text)["held"]  # type: ignore[union-attr]
        return [t["name"] for t in data["tools"]][:5], held


def _pieces(text: str) -> list[str]:
    return [SECRET[i:i + 6] for i in range(len(SECRET) - 5) if SECRET[i:i + 6] in text]


def _sources(root: Path, repo: Path) -> list[str]:
    """The gateway's source: an ``mcp-server:`` string, or with ``--config`` an ``mcpServers``
    file passing the secret to the server through ``${MY_SERVICE_TOKEN}`` in its ``env``."""
    if "--config" not in sys.argv[1:]:
        return [f"mcp-server:{sys.executable} -m mcp_server_git --repository {repo}"]
    config = root / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"git": {
        "command": sys.executable, "args": ["-m", "mcp_server_git", "--repository", str(repo)],
        "env": {"GIT_SERVICE_TOKEN": "${MY_SERVICE_TOKEN}"}}}}))
    return ["--config", str(config)]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo, cache, gateway_tmp = _repository(root), root / "cache", root / "tmp"
        gateway_tmp.mkdir()
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        env = {**os.environ, "MY_SERVICE_TOKEN": SECRET, "HYPERPLAN_CACHE_DIR": str(cache),
               "TMPDIR": str(gateway_tmp)}
        gateway = subprocess.Popen(
            [sys.executable, "-m", "hyperplan", "serve", "--http", str(port), "--embedder",
             "hashing", *_sources(root, repo)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seen: list[str] = []
        try:
            async def both() -> list[Any]:
                for _ in range(150):
                    try:
                        socket.create_connection(("127.0.0.1", port), 1).close()
                        break
                    except OSError:
                        await asyncio.sleep(0.2)
                url = f"http://127.0.0.1:{port}/mcp"
                return list(await asyncio.gather(
                    _client(url, repo, "show the last commits of the repository", "git_log",
                            seen),
                    _client(url, repo, "show the working tree status", "git_status", seen)))

            for name, (tools, held) in zip("AB", asyncio.run(both()), strict=True):
                print(f"client {name}: first tools {tools}; held {held}")
        finally:
            gateway.terminate()
            out, err = gateway.communicate(timeout=30)
        client_text = "\n".join(seen)
        stored = [p for p in [*cache.rglob("*"), *gateway_tmp.rglob("*")] if p.is_file()]
        in_files = [str(p) for p in stored if _pieces(p.read_bytes().decode("utf-8", "replace"))]
        loose = [str(p) for p in cache.rglob("*") if p.is_file() and p.stat().st_mode & 0o077]
        print(f"secret pieces seen by clients: {_pieces(client_text)}; "
              f"'***' {client_text.count('***')} times")
        print(f"secret pieces on stdout/stderr: {_pieces(out + err)}")
        print(f"files holding a piece: {in_files}; cache files not 0600: {loose}")


if __name__ == "__main__":
    main()
