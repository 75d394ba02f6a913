"""The 56 workspace tools of tests/test_integration_catalog.py as a stdio MCP server (raw
JSON-RPC, starts in milliseconds), for the gateway's two-turn suite (tests/test_two_turns.py).

The tools are listed as agents get them from MCP servers: input schemas only, no output
schema, each producer saying in its description what it returns. A call answers JSON text:
``find_E(title)`` the id of the record titled so (``XX-1`` for 'Quarterly review', ``XX-2``
for any other title, XX the kind's first two letters), every other tool ``{"ok": true}``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from test_integration_catalog import workspace_functions

TOOLS = [{"name": f["name"], "description": f["description"], "inputSchema": f["parameters"]}
         for f in workspace_functions()]
NAMES = {t["name"] for t in TOOLS}


def result_of(name: str, arguments: dict[str, object]) -> dict[str, object]:
    if name.startswith("find_"):
        kind = name[len("find_"):]
        number = 1 if arguments.get("title") == "Quarterly review" else 2
        return {f"{kind}_id": f"{kind[:2].upper()}-{number}"}
    return {"ok": True}


def answer(request: dict[str, object], result: object = None,
           error: dict[str, object] | None = None) -> None:
    reply: dict[str, object] = {"jsonrpc": "2.0", "id": request["id"]}
    reply.update({"error": error} if error else {"result": result})
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        method = request.get("method")
        if "id" not in request:
            continue  # a notification
        params = request.get("params") or {}
        if method == "initialize":
            answer(request, {"protocolVersion": params["protocolVersion"],
                             "capabilities": {"tools": {}},
                             "serverInfo": {"name": "workspace", "version": "1"}})
        elif method == "tools/list":
            answer(request, {"tools": TOOLS})
        elif method == "tools/call" and params.get("name") in NAMES:
            text = json.dumps(result_of(params["name"], params.get("arguments") or {}))
            answer(request, {"content": [{"type": "text", "text": text}]})
        elif method == "ping":
            answer(request, {})
        else:
            answer(request, error={"code": -32601, "message": f"no method {method}"})


if __name__ == "__main__":
    main()
