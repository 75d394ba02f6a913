"""Secrets at the gateway (issue 36, item 3): a credential an upstream puts into its tool
definitions is redacted in narrow mode's ``tools/list`` as in ``find_tools``; clients are told
a server's name, never its command line; the selection cache stores no command line and is
private (0600 files, 0700 directories). The gateway is the real ``hyperplan serve`` over stdio,
driven by the official SDK client."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
import textwrap
from pathlib import Path

from mcp import Client, StdioServerParameters

SECRET = "tok-5f3a9c1e77d24b0b"  # a credential-named environment value (registered secret)

LEAKY_SERVER = textwrap.dedent('''
    """Raw JSON-RPC stdio MCP server whose tool definition carries the credential it was given
    (read from the file named on its command line) as a parameter default and in a
    description, as real servers sometimes do."""
    import json, sys

    KEY = open(sys.argv[1], encoding="utf-8").read().strip()
    TOOLS = [{"name": "fetch_report", "description": f"Fetch a report (uses key {KEY}).",
              "inputSchema": {"type": "object", "properties": {
                  "report_id": {"type": "string", "description": "the report to fetch"},
                  "api_key": {"type": "string", "default": KEY}},
                  "required": ["report_id"]}}]

    for line in sys.stdin:
        request = json.loads(line)
        if "id" not in request:
            continue
        method = request.get("method")
        if method == "initialize":
            result = {"protocolVersion": request["params"]["protocolVersion"],
                      "capabilities": {"tools": {}},
                      "serverInfo": {"name": "leaky", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": TOOLS}
        else:
            result = {"content": [{"type": "text", "text": "report ok"}]}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"],
                                     "result": result}) + "\\n")
        sys.stdout.flush()
''')


def test_upstream_definitions_names_and_cache_keep_secrets(tmp_path: Path) -> None:
    server = tmp_path / "secret-dir" / "leaky_server.py"
    server.parent.mkdir()
    server.write_text(LEAKY_SERVER, encoding="utf-8")
    key_file = server.parent / "key.txt"
    key_file.write_text(SECRET, encoding="utf-8")
    cache = tmp_path / "cache"
    env = {**os.environ, "GATEWAY_TEST_TOKEN": SECRET, "HYPERPLAN_CACHE_DIR": str(cache)}
    spec = f"mcp-server:{sys.executable} {server} {key_file}"

    async def scenario(mode: str) -> list[str]:
        params = StdioServerParameters(command=sys.executable, env=env, args=[
            "-m", "hyperplan", "serve", "--embedder", "hashing", "--mode", mode, spec])
        seen: list[str] = []
        async with Client(params, read_timeout_seconds=60) as client:
            for _ in range(100):  # until the graph is built (and cached)
                found = await client.call_tool("find_tools", {"request": "fetch a report"})
                seen.append(json.dumps(found.model_dump(mode="json")))
                if json.loads(found.content[0].text)["ready"]:  # type: ignore[union-attr]
                    break
                await asyncio.sleep(0.2)
            listed = await client.list_tools()
            seen.append(json.dumps(listed.model_dump(mode="json")))
            called = await client.call_tool(
                "fetch_report" if mode == "narrow" else "call_tool",
                {"report_id": "r1"} if mode == "narrow" else
                {"name": "fetch_report", "arguments": {"report_id": "r1"}})
            seen.append(json.dumps(called.model_dump(mode="json")))
        return seen

    for mode in ("narrow", "search"):
        seen = asyncio.run(asyncio.wait_for(scenario(mode), 120))
        text = "\n".join(seen)
        assert "fetch_report" in text and "***" in text
        assert SECRET not in text and SECRET[4:14] not in text
        assert str(server.parent) not in text and sys.executable not in text
    search = json.loads(json.loads(seen[-3])["content"][0]["text"])
    assert search["tools"][0]["server"] == "mcp-server:leaky_server.py"

    stored = [p for p in cache.rglob("*") if p.is_file()]
    assert stored, "the graph was not cached"
    for path in stored:
        content = path.read_bytes()
        assert str(server.parent).encode() not in content and SECRET.encode() not in content
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    for path in [p for p in cache.rglob("*") if p.is_dir()]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path


def test_tracebacks_on_stderr_are_redacted_then_cut() -> None:
    """A logged traceback, an uncaught exception in a thread and in the main thread print
    the secret's text redacted; redact_cut never leaves a piece of it at a cut."""
    import subprocess

    code = textwrap.dedent('''
        import logging, threading
        from hyperplan.secrets import install_log_redaction, redact_cut
        install_log_redaction()
        logging.basicConfig()
        try:
            raise ValueError("input_value='%s'" % SECRET)
        except ValueError:
            logging.getLogger("mcp.server").exception("validation failed")
        for cut in range(1, 40):
            print(redact_cut("x" * cut + SECRET + "y" * 40, 30))
        thread = threading.Thread(target=lambda: 1 / 0 if SECRET else None)
        thread.start(); thread.join()
        raise RuntimeError(SECRET)
    ''').replace("SECRET", repr(SECRET))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "GATEWAY_TEST_TOKEN": SECRET}, timeout=60)
    output = done.stdout + done.stderr
    assert "ValueError" in output and "RuntimeError" in output and "ZeroDivision" in output
    assert done.returncode == 1
    for start in range(len(SECRET) - 5):
        assert SECRET[start:start + 6] not in output, SECRET[start:start + 6]
