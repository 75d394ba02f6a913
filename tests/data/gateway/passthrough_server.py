"""A small stdio MCP server with resources, a resource template, prompts and annotated tools,
for tests/test_mcp_gateway_passthrough.py (mcp 2.x ``MCPServer``, the SDK's FastMCP).

Run as ``python passthrough_server.py [LABEL [SECRET [--no-tools]]]``: LABEL (default
``notes``) goes into every text, so two copies of the server with the same URIs and prompt
names can be told apart; the resource ``notes://config`` shows SECRET (to check redaction);
``notes://big`` is 50,000 characters long (to check the gateway's response bound),
``notes://slow`` takes a minute (its deadline). With
``--no-tools`` it serves no tools (two copies then clash only on resources and prompts)."""

from __future__ import annotations

import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

LABEL = sys.argv[1] if len(sys.argv) > 1 else "notes"
SECRET = sys.argv[2] if len(sys.argv) > 2 else "none"
server = MCPServer(f"passthrough-{LABEL}")


@server.resource("notes://readme", name="readme", description="What the notes are.",
                 mime_type="text/plain")
def readme() -> str:
    return f"readme of {LABEL}"


@server.resource("notes://config", name="config", mime_type="text/plain")
def config() -> str:
    return f"token={SECRET}"


@server.resource("notes://big", name="big", mime_type="text/plain")
def big() -> str:
    return "x" * 50_000


@server.resource("notes://slow", name="slow", mime_type="text/plain")
def slow() -> str:
    time.sleep(60)
    return "late"


@server.resource("notes://note/{note_id}", name="note", mime_type="text/plain")
def note(note_id: str) -> str:
    return f"note {note_id} of {LABEL}"


@server.prompt(name="summarize", description="Summarize a note.")
def summarize(note_id: str) -> str:
    return f"Summarize note {note_id} ({LABEL})."


@server.prompt(name="greet")
def greet() -> str:
    return f"Hello from {LABEL}."


def read_note(note_id: str) -> str:
    """Read the note with this id."""
    return f"note {note_id} of {LABEL}"


def delete_note(note_id: str) -> str:
    """Delete the note with this id, for good."""
    return f"deleted {note_id}"


if "--no-tools" not in sys.argv:
    server.tool(title="Read a note", annotations=ToolAnnotations(
        readOnlyHint=True, idempotentHint=True, openWorldHint=False))(read_note)
    server.tool(title="Delete a note", annotations=ToolAnnotations(
        readOnlyHint=False, destructiveHint=True, idempotentHint=False,
        openWorldHint=False))(delete_note)


if __name__ == "__main__":
    server.run("stdio")
