"""A stdlib-only MCP stdio server for the start-concurrency test: it sleeps
TINY_START_DELAY seconds, then answers ``initialize``, ``tools/list`` (one tool, ``wait``) and
``tools/call``; any other request gets "method not found". No SDK import, so its start time is
the delay, not the interpreter's import time."""

from __future__ import annotations

import json
import os
import sys
import time

time.sleep(float(os.environ.get("TINY_START_DELAY", "0")))
TOOL = {"name": "wait", "description": "Return 'done'.",
        "inputSchema": {"type": "object", "properties": {}}}


def answer(message: dict[str, object]) -> dict[str, object] | None:
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        return None  # a notification
    if method == "initialize":
        result: object = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                          "serverInfo": {"name": "slow-stub", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "done"}], "isError": False}
    else:
        return {"jsonrpc": "2.0", "id": request_id,
                "error": {"code": -32601, "message": f"Method not found: {method}"}}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


for line in sys.stdin:
    if line.strip():
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
