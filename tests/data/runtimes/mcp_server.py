"""A tiny stdio MCP server for tests/test_runtimes.py (mcp 2.x ``MCPServer``).

Run as ``python mcp_server.py``; it speaks MCP over stdin/stdout until stdin closes.
"""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("hyperplan-test")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged (unstructured text content)."""
    return text


@server.tool()
def info(name: str) -> dict[str, object]:
    """A structured object about ``name``."""
    return {"name": name, "length": len(name)}


@server.tool(structured_output=False)
def raw_json() -> str:
    """Unstructured text that happens to be JSON."""
    return '{"a": 1, "b": [true, null]}'


@server.tool(structured_output=False)
def plain_text() -> str:
    """Unstructured plain text."""
    return "hello there"


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def fail(message: str = "boom") -> str:
    """Always fails; ``ToolError`` keeps its message (other exceptions are masked by 2.x)."""
    raise ToolError(message)


@server.tool()
def slow(seconds: float) -> str:
    """Sleep, then answer."""
    time.sleep(seconds)
    return "done"


@server.tool()
def crash() -> str:
    """Exit the server process abruptly."""
    print("crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


if __name__ == "__main__":
    server.run("stdio")
