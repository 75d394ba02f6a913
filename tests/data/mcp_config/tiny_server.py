"""A tiny MCP server for tests/test_mcp_gateway_config.py (the official SDK's MCPServer).

    python tiny_server.py                 # stdio
    python tiny_server.py http PORT       # streamable HTTP at http://127.0.0.1:PORT/mcp

TINY_START_DELAY (seconds) makes it sleep before it serves (a slow upstream); TINY_FAIL set
makes it exit at once with a message on stderr (an upstream that cannot start).
"""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import Context, MCPServer

if os.environ.get("TINY_FAIL"):
    print(f"tiny_server: refusing to start ({os.environ['TINY_FAIL']})", file=sys.stderr)
    sys.exit(3)
time.sleep(float(os.environ.get("TINY_START_DELAY", "0")))

server = MCPServer("tiny")


@server.tool()
def read_env(variable: str) -> str:
    """Return the value of an environment variable of the server process ('' when unset)."""
    return os.environ.get(variable, "")


@server.tool()
def working_directory() -> str:
    """Return the server process's current working directory."""
    return os.getcwd()


@server.tool()
def request_header(header: str, ctx: Context) -> str:
    """Return the value of an HTTP request header this call came with ('' over stdio)."""
    request = getattr(ctx.request_context, "request", None)
    headers = getattr(request, "headers", None)
    return str(headers.get(header, "")) if headers is not None else ""


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
