"""The warm start of ``hyperplan serve`` (issue 38, the six-server start target): MCP upstreams'
listings kept in a catalog cache (:mod:`hyperplan.integrations.mcp_gateway.catalog_cache`),
served at the next start while the upstreams come up, checked once they are up.

The upstreams are tests/data/mcp_config/slow_stub.py (stdlib only, ``TINY_START_DELAY``
seconds before it answers) and tiny_server.py (the SDK's MCPServer)."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters

from gateway_helpers import result_data, result_text, run_bounded
from hyperplan.integrations.mcp_gateway.catalog_cache import (
    CatalogCache,
    entry_key,
    spec_key,
)
from hyperplan.integrations.mcp_gateway.mcp_config import parse_mcp_config
from hyperplan.integrations.mcp_gateway.upstream import UpstreamOptions, load_upstream
from hyperplan.secrets import register_secret

DATA = Path(__file__).parent / "data" / "mcp_config"
SLOW = str(DATA / "slow_stub.py")
TINY = str(DATA / "tiny_server.py")
OPTIONS = UpstreamOptions(call_timeout=20)


def _slow(delay: str = "0", fail: str = "") -> dict[str, object]:
    return {"command": sys.executable, "args": [SLOW],
            "env": {"TINY_START_DELAY": delay, "TINY_FAIL": fail}}


def test_the_key_holds_no_env_or_header_value_and_follows_the_command() -> None:
    (one,) = parse_mcp_config({"mcpServers": {"s": {"command": "x", "args": ["a"],
                                                    "env": {"TOKEN": "one-value"}}}}, "f")
    (two,) = parse_mcp_config({"mcpServers": {"s": {"command": "x", "args": ["a"],
                                                    "env": {"TOKEN": "other-value"}}}}, "f")
    (moved,) = parse_mcp_config({"mcpServers": {"s": {"command": "x", "args": ["b"],
                                                      "env": {"TOKEN": "one-value"}}}}, "f")
    assert entry_key(one) == entry_key(two) != entry_key(moved)
    assert spec_key("mcp-server:x a") != spec_key("mcp-server:x b")


def test_kept_files_are_private_and_redacted(tmp_path: Path) -> None:
    register_secret("kept-secret-value-4321")
    cache = CatalogCache(tmp_path / "c")
    tools = [{"name": "t", "description": "uses kept-secret-value-4321",
              "inputSchema": {"type": "object"}}]
    assert cache.put("k", tools)
    file = tmp_path / "c" / "k.json"
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "c").stat().st_mode) == 0o700
    assert "kept-secret-value-4321" not in file.read_text()
    kept = cache.get("k")
    assert kept is not None and kept[0]["description"] == "uses ***"
    assert cache.same(kept, tools)
    file.write_text("{broken")
    assert cache.get("k") is None and cache.get("missing") is None
    assert CatalogCache.beside(None) is None


def test_a_warm_start_serves_the_kept_tools_before_the_upstream_is_up(tmp_path: Path) -> None:
    cache = CatalogCache(tmp_path / "catalogs")
    quick = parse_mcp_config({"mcpServers": {"slow": _slow("0")}}, "f")
    first = load_upstream([], OPTIONS, servers=quick, catalogs=cache)
    try:
        assert first.names == ["wait"] and not first.starting
    finally:
        first.close()
    # the same configuration; the server now takes 3 s to start (the key ignores env values)
    slow = parse_mcp_config({"mcpServers": {"slow": _slow("3")}}, "f")
    started = time.monotonic()
    warm = load_upstream([], OPTIONS, servers=slow, catalogs=cache)
    try:
        loaded = time.monotonic() - started
        assert warm.names == ["wait"] and warm.starting
        assert loaded < 2.5, f"the warm load waited {loaded:.2f} s"
        result = warm.call("wait", {})  # waits for the server, then runs
        assert result.ok and "done" in json.dumps(result.value), result
        assert warm.settle(cache) is None  # the same tools: nothing to change
    finally:
        warm.close()


def test_a_changed_listing_is_served_and_kept(tmp_path: Path) -> None:
    cache = CatalogCache(tmp_path / "catalogs")
    servers = parse_mcp_config({"mcpServers": {"slow": _slow()}}, "f")
    ghost = {"name": "ghost", "description": "A tool the server no longer has.",
             "inputSchema": {"type": "object", "properties": {}}}
    cache.put(entry_key(servers[0]), [ghost])
    warm = load_upstream([], OPTIONS, servers=servers, catalogs=cache)
    try:
        assert warm.names == ["ghost"]
        now = warm.settle(cache)
        assert now is not None and now.names == ["wait"]
        assert [t["name"] for t in cache.get(entry_key(servers[0])) or []] == ["wait"]
        assert now.call("wait", {}).ok
    finally:
        warm.close()


def test_an_upstream_that_no_longer_starts_is_left_out_and_reported(tmp_path: Path) -> None:
    cache = CatalogCache(tmp_path / "catalogs")
    good = {"mcpServers": {"a": _slow(), "b": {"command": sys.executable, "args": [TINY],
                                               "env": {"TINY_FAIL": ""}}}}
    load_upstream([], OPTIONS, servers=parse_mcp_config(good, "f"), catalogs=cache).close()
    good["mcpServers"]["b"]["env"] = {"TINY_FAIL": "gone"}  # type: ignore[index]
    told: list[str] = []
    warm = load_upstream([], OPTIONS, servers=parse_mcp_config(good, "f"), catalogs=cache)
    try:
        assert warm.starting and "read_env" in warm.names
        now = warm.settle(cache, told.append)
        assert now is not None and now.names == ["wait"]
        assert len(told) == 1 and "'b'" in told[0] and "did not start" in told[0], told
    finally:
        warm.close()


def test_serve_warm_start_end_to_end(tmp_path: Path) -> None:
    """Two runs of ``hyperplan serve --config`` with one cache directory: the second is warm
    (its kept catalog says the server has a tool ``ghost``, planted); it answers find_tools
    at once, then serves what the server really lists (ghost gone, wait there)."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"slow": _slow()}}), encoding="utf-8")
    cache_dir = tmp_path / "cache"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hyperplan", "serve", "--embedder", "hashing", "--cache-dir",
              str(cache_dir), "--config", str(config)],
        env={**os.environ, "HYPERPLAN_CACHE_DIR": str(tmp_path / "home-cache")})

    async def first() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            found = result_data(await client.call_tool("find_tools", {"request": "wait"}))
            assert [t["name"] for t in found["tools"]] == ["wait"]

    run_bounded(first, 120)
    (kept,) = list((cache_dir / "upstream-catalogs").glob("*.json"))
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    data = json.loads(kept.read_text())
    data["tools"].append({"name": "ghost", "description": "Summon the ghost of the server.",
                          "inputSchema": {"type": "object", "properties": {}}})
    kept.write_text(json.dumps(data))

    async def second() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            found = result_data(await client.call_tool("find_tools", {
                "request": "summon the ghost", "budget": 5}))
            assert "ghost" in [t["name"] for t in found["tools"]]  # the kept catalog
            for _ in range(200):  # until the live listing replaced it
                called = await client.call_tool("call_tool", {"name": "ghost",
                                                              "arguments": {}})
                if "no upstream tool" in result_text(called) or \
                        "unknown" in result_text(called).lower():
                    break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError("the planted tool was still served")
            done = await client.call_tool("call_tool", {"name": "wait", "arguments": {}})
            assert "done" in result_text(done)

    run_bounded(second, 120)
    assert "ghost" not in kept.read_text()


def test_narrow_warm_start_announces_a_changed_catalog(tmp_path: Path) -> None:
    """Narrow mode: a conversation that was offered a tool of the kept catalog (``ghost``,
    planted) is told its list changed once the upstream is up and lists other tools; its
    tools/list then no longer holds the planted tool."""
    from mcp_types import ToolListChangedNotification

    config = tmp_path / "mcp.json"
    cache_dir = tmp_path / "cache"

    def params(delay: str) -> StdioServerParameters:
        config.write_text(json.dumps({"mcpServers": {"slow": _slow(delay)}}), encoding="utf-8")
        return StdioServerParameters(
            command=sys.executable,
            args=["-m", "hyperplan", "serve", "--embedder", "hashing", "--mode", "narrow",
                  "--cache-dir", str(cache_dir), "--config", str(config)],
            env={**os.environ, "HYPERPLAN_CACHE_DIR": str(tmp_path / "home-cache")})

    async def first() -> None:
        async with Client(params("0"), read_timeout_seconds=60) as client:
            await client.call_tool("find_tools", {"request": "wait"})

    run_bounded(first, 120)
    (kept,) = list((cache_dir / "upstream-catalogs").glob("*.json"))
    data = json.loads(kept.read_text())
    data["tools"].append({"name": "ghost", "description": "Summon the ghost of the server.",
                          "inputSchema": {"type": "object", "properties": {}}})
    kept.write_text(json.dumps(data))

    async def second() -> None:
        changes: list[float] = []

        async def on_message(message: object) -> None:
            if isinstance(message, ToolListChangedNotification):
                changes.append(time.monotonic())

        # the server now takes 6 s to start: the planted catalog is served meanwhile
        async with Client(params("6"), mode="legacy", message_handler=on_message,
                          read_timeout_seconds=60) as client:
            found = result_data(await client.call_tool("find_tools", {
                "request": "summon the ghost", "budget": 1}))
            assert found["listed"] == ["ghost"], found
            seen = len(changes)
            for _ in range(300):
                if len(changes) > seen:
                    break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError("no list_changed after the upstream came up")
            names = [t.name for t in (await client.list_tools()).tools]
            assert "ghost" not in names and "find_tools" in names

    run_bounded(second, 120)
