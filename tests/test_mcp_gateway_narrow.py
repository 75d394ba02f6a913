"""Narrow mode of ``hyperplan serve`` as a host sees it (issue 38, item 5): the real command
over stdio, the official MCP SDK client on the handshake protocol (what Hermes' and most
hosts' clients speak), the 56 workspace tools behind it as a real stdio MCP server.

``notifications/tools/list_changed`` makes a host list the tools again and drop its prompt
cache, so the gateway sends it only when the *set* of listed tools changed, keeps the order
(tools already listed keep their place, new ones are appended), and a tool ``find_tools``
returned stays callable after the list moved on; a tool never selected is refused unsent."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from mcp_types import ToolListChangedNotification

from gateway_helpers import result_data, result_text, run_bounded

WORKSPACE_SERVER = Path(__file__).parent / "data" / "gateway" / "workspace_server.py"
TIMEOUT = 90.0
TICKET = "Set the status of the support ticket titled 'Quarterly review' to closed."
INVOICE = "Add the comment 'paid' to the invoice named 'March rent'."


def _gateway(cache: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "hyperplan", "serve", "--mode", "narrow", "--embedder", "hashing",
              "--budget", "6", f"mcp-server:{sys.executable} {WORKSPACE_SERVER}"],
        env={**os.environ, "HYPERPLAN_CACHE_DIR": str(cache)})


class _Host:
    """The client plus what a host keeps: the tool list and the notifications received."""

    def __init__(self, client: Client, changes: list[float]) -> None:
        self.client = client
        self.changes = changes

    async def listed(self) -> list[str]:
        names = [t.name for t in (await self.client.list_tools()).tools]
        assert names[0] == "find_tools"
        return names[1:]

    async def find(self, request: str) -> dict[str, Any]:
        deadline = time.monotonic() + 60
        while True:
            data = result_data(await self.client.call_tool("find_tools", {"request": request}))
            if data["ready"] or time.monotonic() > deadline:
                assert data["method"] == "context-graph+doe", data["notes"]
                return data
            await asyncio.sleep(0.2)

    async def settled(self, before: int) -> int:
        """Notifications received since ``before`` once the gateway had time to select
        again after a call (it does so after sending the result)."""
        await asyncio.sleep(1.5)
        return len(self.changes) - before


def _appended(old: list[str], new: list[str]) -> bool:
    """``new`` keeps the tools of ``old`` it still lists in their order, first, and appends
    the others."""
    kept = [n for n in old if n in new]
    return new[:len(kept)] == kept


def test_narrow_lists_change_only_with_their_set_in_a_stable_order(tmp_path: Path) -> None:
    async def scenario() -> None:
        changes: list[float] = []

        async def on_message(message: object) -> None:
            if isinstance(message, ToolListChangedNotification):
                changes.append(time.monotonic())

        async with Client(_gateway(tmp_path / "cache"), mode="legacy",
                          message_handler=on_message, read_timeout_seconds=TIMEOUT) as client:
            host = _Host(client, changes)
            assert await host.listed() == []
            never = await client.call_tool("delete_vendor", {"vendor_id": "VE-1"})
            assert never.is_error and "not forwarded" in result_text(never)

            found = await host.find(TICKET)  # a new set: announced
            first = await host.listed()
            assert first == found["listed"] and {"find_ticket", "update_ticket_status"} <= \
                set(first)
            assert await host.settled(0) >= 1
            seen = len(changes)

            again = await host.find(TICKET)  # the same selection: no notification
            assert not again["list_changed"]
            assert await host.settled(seen) == 0 and await host.listed() == first

            lists, count = [first], len(changes)
            for name, arguments in (("find_ticket", {"title": "Quarterly review"}),
                                    ("update_ticket_status",
                                     {"ticket_id": "TI-1", "status": "closed"})):
                if name not in lists[-1]:
                    break
                reply = await client.call_tool(name, arguments)
                assert not reply.is_error, result_text(reply)
                got = await host.settled(count)
                now = await host.listed()
                # one notification per change of the set, none for the same set
                assert got == (set(now) != set(lists[-1])), (lists[-1], now, got)
                assert _appended(lists[-1], now), (lists[-1], now)
                lists.append(now)
                count = len(changes)

            other = await host.find(INVOICE)  # another request: the list moves on
            moved = await host.listed()
            assert other["list_changed"] and _appended(lists[-1], moved)
            assert "comment_on_invoice" in moved
            gone = [n for n in found["listed"] if n not in moved]
            assert gone, (found["listed"], moved)
            # returned by find_tools earlier, not listed now: still callable, not refused
            late = await client.call_tool(gone[0], _arguments(gone[0]))
            assert not late.is_error, result_text(late)
            refused = await client.call_tool("delete_vendor", {"vendor_id": "VE-1"})
            assert refused.is_error and "not forwarded" in result_text(refused)
            assert "not_selected" in str(refused.structured_content)

    run_bounded(scenario, 4 * TIMEOUT)


def _arguments(name: str) -> dict[str, Any]:
    """Valid arguments for a workspace tool."""
    if name.startswith(("find_", "create_")):
        return {"title": "Quarterly review"}
    kind = name.split("_")[-1] if not name.endswith(("_status", "_history")) else \
        name.split("_")[-2]
    args: dict[str, Any] = {f"{kind}_id": f"{kind[:2].upper()}-1"}
    if name.endswith("_status"):
        args["status"] = "closed"
    if name.startswith("comment_on_"):
        args["text"] = "ok"
    return args
