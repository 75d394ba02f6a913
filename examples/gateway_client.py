"""An MCP client of ``hyperplan serve``: the official MCP SDK client starts the gateway in
front of the shipped bookstore tools, asks ``find_tools`` for a task and calls the tools it
returns with ``call_tool``, in the order of the chain DOE proposes.

    python examples/gateway_client.py            # search mode: find_tools + call_tool
    python examples/gateway_client.py --narrow   # narrow mode: the tool list follows the state

Needs hyperplan installed with its ``mcp`` extra (``pip install -e '.[mcp]'``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from mcp import Client, StdioServerParameters
from mcp_types import CallToolResult

TASK = "check out a cart with the book Dune Messiah"


def _json(result: CallToolResult) -> Any:
    text = "".join(getattr(block, "text", "") for block in result.content)
    if result.is_error:
        raise SystemExit(f"tool error: {text}")
    return json.loads(text) if text[:1] in "[{\"" else text


async def _find(client: Client) -> dict[str, Any]:
    """find_tools, again until the context graph is ready (before that it is BM25)."""
    while True:
        found = _json(await client.call_tool("find_tools", {"request": TASK}))
        if found["ready"]:
            return found
        print(f"  ({found['notes'][0].split(':')[0]}; asking again)")
        await asyncio.sleep(0.5)


async def main(narrow: bool, embedder: str) -> None:
    mode = "narrow" if narrow else "search"
    server = StdioServerParameters(command=sys.executable, args=[
        "-m", "hyperplan", "serve", "--mode", mode, "--embedder", embedder,
        "python:hyperplan.examples.bookstore"])
    changes: list[str] = []

    async def on_message(message: object) -> None:
        if type(message).__name__ == "ToolListChangedNotification":
            changes.append("tools/list_changed")

    # mode="legacy": the initialize handshake, so list_changed arrives as a plain notification
    # (a 2026-07-28 client gets it through client.listen(tools_list_changed=True) instead)
    async with Client(server, mode="legacy", message_handler=on_message) as client:
        print("tools/list:", [t.name for t in (await client.list_tools()).tools])
        found = await _find(client)
        print(f"find_tools({TASK!r}): {found['tokens']} of {found['all_tokens']} "
              "definition tokens")
        for tool in found["tools"]:
            print(f"  {tool['name']:<13} {tool['why']}")
        print("  chain:", " -> ".join(step["tool"] for step in found["chain"]))
        if narrow:  # what a client does on list_changed: list again
            print("tools/list:", [t.name for t in (await client.list_tools()).tools])

        async def call(name: str, arguments: dict[str, Any]) -> Any:
            result = (await client.call_tool(name, arguments) if narrow else
                      await client.call_tool("call_tool", {"name": name,
                                                           "arguments": arguments}))
            value = _json(result)
            print(f"{name}({json.dumps(arguments)[1:-1]}) -> {json.dumps(value)}")
            if narrow:
                await asyncio.sleep(0.2)  # the list is selected again once the result is sent
                print("  tools/list:", [t.name for t in (await client.list_tools()).tools])
            return value

        token = (await call("login", {"username": "alice", "password": "open sesame"}))
        token = token["access_token"]
        books = await call("search_books", {"query": "Dune Messiah"})
        cart = await call("add_to_cart", {"book_id": books[0], "access_token": token})
        await call("checkout", {"cart_id": cart, "access_token": token})
        if narrow:
            print(f"notifications received: {len(changes)} x tools/list_changed")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--narrow", action="store_true", help="narrow mode")
    parser.add_argument("--embedder", default="auto", help="auto | minilm | hashing")
    options = parser.parse_args()
    asyncio.run(main(options.narrow, options.embedder))
