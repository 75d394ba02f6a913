"""Nothing left behind (issue 36, item 6): SIGTERM stops a stdio gateway's upstream servers
with it, and the temporary folder of a gateway killed while building is removed by the next
one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from hyperplan.integrations.mcp_gateway import selection

PID_SERVER = textwrap.dedent('''
    """Raw JSON-RPC stdio MCP server that writes its PID to the file named on its command
    line, then serves one tool."""
    import json, os, sys

    open(sys.argv[1], "w").write(str(os.getpid()))
    for line in sys.stdin:
        request = json.loads(line)
        if "id" not in request:
            continue
        if request.get("method") == "initialize":
            result = {"protocolVersion": request["params"]["protocolVersion"],
                      "capabilities": {"tools": {}}, "serverInfo": {"name": "p", "version": "1"}}
        elif request.get("method") == "tools/list":
            result = {"tools": [{"name": "ping", "description": "Answer pong.",
                                 "inputSchema": {"type": "object", "properties": {}}}]}
        else:
            result = {"content": [{"type": "text", "text": "pong"}]}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"],
                                     "result": result}) + "\\n")
        sys.stdout.flush()
''')


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


def test_sigterm_stops_the_upstream_servers_with_the_gateway(tmp_path: Path) -> None:
    server, pid_file = tmp_path / "pid_server.py", tmp_path / "server.pid"
    server.write_text(PID_SERVER, encoding="utf-8")
    env = {**os.environ, "HYPERPLAN_CACHE_DIR": str(tmp_path / "cache")}
    gateway = subprocess.Popen(
        [sys.executable, "-m", "hyperplan", "serve", "--embedder", "hashing",
         f"mcp-server:{sys.executable} {server} {pid_file}"],
        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not (pid_file.exists() and pid_file.read_text().strip()):
            assert gateway.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        upstream = int(pid_file.read_text())
        assert _alive(upstream)
        time.sleep(0.5)
        gateway.send_signal(signal.SIGTERM)
        gateway.wait(timeout=15)
        deadline = time.monotonic() + 10
        while _alive(upstream) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(upstream), "the upstream server outlived the gateway"
    finally:
        if gateway.poll() is None:
            gateway.kill()
        gateway.communicate(timeout=10)


def test_a_killed_gateways_temporary_folder_is_removed_by_the_next() -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    root = Path(tempfile.gettempdir())
    stale = root / f"hyperplan-gateway-{dead.pid}-abc"
    mine = root / f"hyperplan-gateway-{os.getpid()}-abc"
    for path in (stale, mine):
        (path / "selectors").mkdir(parents=True, exist_ok=True)
        (path / "catalog.json").write_text("{}", encoding="utf-8")
    try:
        selection._sweep_stale_tempdirs()
        assert not stale.exists() and mine.exists()
    finally:
        import shutil

        for path in (stale, mine):
            shutil.rmtree(path, ignore_errors=True)
