"""The gateway's added latency: ``python -m hyperplan.integrations.mcp_gateway.bench``.

One upstream MCP server (by default a one-tool echo server written to a temporary directory;
``--upstream CMD --tool NAME --arguments JSON`` for another, e.g. ``mcp-server-git``) is
measured twice with the official SDK client over stdio: directly, and behind
``hyperplan serve`` (the real command, in both modes). Reported per operation: p50 and p99
of ``--calls`` calls after ``--warmup`` unmeasured ones, and the gateway's p50 minus the
upstream's own p50 (its added latency; ``tools/list`` is answered by the gateway without
asking the upstream). Also: the time from starting ``hyperplan serve`` to the end of the
``initialize`` handshake on a warm graph cache (a first start fills it), and until the graph
is ready (``find_tools`` answers with the context graph). Narrow-mode calls include the
selection the gateway runs after each call (Definition 4 state update).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from hyperplan.secrets import redact_cut

READY_TIMEOUT = 900.0  # seconds for the graph to get ready
ECHO_SERVER = textwrap.dedent('''
    from mcp.server.mcpserver import MCPServer
    from mcp_types import ToolAnnotations

    app = MCPServer("echo")

    @app.tool(annotations=ToolAnnotations(read_only_hint=True))
    def echo(text: str) -> str:
        """Echo the given text back unchanged."""
        return text

    if __name__ == "__main__":
        app.run()
''')


def _ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {"p50": round(statistics.median(ordered) * 1000, 3), "p99": round(p99 * 1000, 3),
            "n": len(ordered)}


async def _timed(make: Callable[[], Awaitable[Any]], calls: int, warmup: int,
                 check: Callable[[Any], None] | None = None) -> dict[str, float]:
    for _ in range(warmup):
        result = await make()
        if check is not None:
            check(result)
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        await make()
        samples.append(time.perf_counter() - started)
    return _ms(samples)


def _ok(result: Any) -> None:
    if getattr(result, "is_error", False):
        text = " ".join(getattr(b, "text", "") for b in result.content)
        raise RuntimeError(f"the benchmark call failed: {text}")


async def _direct(command: list[str], tool: str, arguments: dict[str, Any], calls: int,
                  warmup: int) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(params, read_timeout_seconds=60) as client:
        await client.list_tools()
        return {"tools/list": await _timed(client.list_tools, calls, warmup),
                "tools/call": await _timed(lambda: client.call_tool(tool, arguments), calls,
                                           warmup, _ok)}


async def _gateway(upstream: str, mode: str, tool: str, arguments: dict[str, Any],
                   request: str, calls: int, warmup: int, env: dict[str, str],
                   embedder: str) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters

    args = ["-m", "hyperplan", "serve", "--mode", mode, "--embedder", embedder, upstream]
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    started = time.perf_counter()
    async with Client(params, read_timeout_seconds=60) as client:
        initialize = time.perf_counter() - started
        while True:
            found = await client.call_tool("find_tools", {"request": request})
            _ok(found)
            data = json.loads(found.content[0].text)  # type: ignore[union-attr]
            if data["ready"]:
                break
            if any("failed" in note for note in data["notes"]) or \
                    time.perf_counter() - started > READY_TIMEOUT:
                raise RuntimeError(f"the graph did not get ready: {data['notes']}")
            await asyncio.sleep(0.05)
        ready = time.perf_counter() - started
        listed = [t.name for t in (await client.list_tools()).tools]
        out: dict[str, Any] = {"initialize_s": round(initialize, 3), "ready_s": round(ready, 3),
                               "tools/list": await _timed(client.list_tools, calls, warmup)}
        if mode == "search":
            out["tools/call"] = await _timed(lambda: client.call_tool(
                "call_tool", {"name": tool, "arguments": arguments}), calls, warmup, _ok)
        else:
            if tool not in listed:
                raise RuntimeError(f"find_tools({request!r}) did not select {tool}: {listed}")
            out["tools/call"] = await _timed(lambda: client.call_tool(tool, arguments), calls,
                                             warmup, _ok)
            out["find_tools"] = await _timed(lambda: client.call_tool(
                "find_tools", {"request": request}), max(10, calls // 10), 2, _ok)
        return out


def initialize_cpu(source: str, env: dict[str, str], embedder: str) -> dict[str, float]:
    """Start ``hyperplan serve``, send ``initialize`` as a raw JSON-RPC line, and read the
    process's CPU seconds (user + system, all threads: the background loading included, so
    an upper bound) when the answer arrives: what its start costs on an idle machine, where
    wall time is about CPU time. Linux only (``/proc``); {} elsewhere."""
    import subprocess

    if not Path("/proc/self/stat").exists():
        return {}
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"}}}
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "hyperplan", "serve", "--embedder",
                                embedder, source], env=env, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write((json.dumps(request) + "\n").encode())
        process.stdin.flush()
        answer = process.stdout.readline()
        wall = time.perf_counter() - started
        fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        cpu = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
        if b'"result"' not in answer:
            raise RuntimeError(f"initialize failed: {redact_cut(repr(answer), 300)}")
        return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3)}
    finally:
        process.stdin.close()
        process.wait(timeout=60)


async def run(*, upstream: list[str] | None = None, tool: str = "echo",
              arguments: dict[str, Any] | None = None, request: str = "echo some text back",
              calls: int = 200, warmup: int = 20, embedder: str = "auto",
              cache_dir: str | None = None) -> dict[str, Any]:
    """The measurements (module doc) as a dict."""
    args = arguments if arguments is not None else {"text": "hello"}
    with tempfile.TemporaryDirectory(prefix="hyperplan-gateway-bench-") as tmp:
        if upstream is None:
            server = Path(tmp) / "echo_server.py"
            server.write_text(ECHO_SERVER, encoding="utf-8")
            upstream = [sys.executable, str(server)]
        import shlex

        source = "mcp-server:" + shlex.join(upstream)
        env = {**os.environ, "HYPERPLAN_CACHE_DIR": cache_dir or str(Path(tmp) / "cache")}
        await _gateway(source, "search", tool, args, request, 1, 0, env, embedder)  # fills cache
        results: dict[str, Any] = {
            "upstream": shlex.join(upstream), "tool": tool, "embedder": embedder,
            "calls": calls, "load_average": [round(x, 2) for x in os.getloadavg()],
            "initialize_cpu": initialize_cpu(source, env, embedder),
            "direct": await _direct(upstream, tool, args, calls, warmup)}
        for mode in ("search", "narrow"):
            results[mode] = await _gateway(source, mode, tool, args, request, calls, warmup,
                                           env, embedder)
        for mode in ("search", "narrow"):
            results[mode]["added_p50_ms"] = {
                op: round(results[mode][op]["p50"] - results["direct"][op]["p50"], 3)
                for op in ("tools/list", "tools/call")}
        return results


def _table(results: dict[str, Any]) -> str:
    lines = [f"upstream: {results['upstream']} (tool {results['tool']}, embedder "
             f"{results['embedder']}, {results['calls']} calls each, load average "
             f"{results['load_average']})", "",
             "| | tools/list p50 / p99 (ms) | tools/call p50 / p99 (ms) | added p50 list / call "
             "(ms) | initialize (s) | graph ready (s) |", "|---|---|---|---|---|---|"]
    for name in ("direct", "search", "narrow"):
        r = results[name]
        added = r.get("added_p50_ms")
        extra = "" if added is None else \
            f"{added['tools/list']:+.2f} / {added['tools/call']:+.2f}"
        lines.append(
            f"| {name if name == 'direct' else 'gateway, ' + name} "
            f"| {r['tools/list']['p50']:.2f} / {r['tools/list']['p99']:.2f} "
            f"| {r['tools/call']['p50']:.2f} / {r['tools/call']['p99']:.2f} "
            f"| {extra} | {r.get('initialize_s', '')} | {r.get('ready_s', '')} |")
    if results.get("initialize_cpu"):
        cpu = results["initialize_cpu"]
        lines.append(f"\ninitialize (raw JSON-RPC, warm cache): {cpu['wall_s']:.2f} s wall, "
                     f"{cpu['cpu_s']:.2f} s CPU of the gateway process")
    if "find_tools" in results["narrow"]:
        f = results["narrow"]["find_tools"]
        lines.append(f"\nfind_tools (narrow, graph ready): p50 {f['p50']:.2f} ms, "
                     f"p99 {f['p99']:.2f} ms")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--embedder", default="auto")
    parser.add_argument("--upstream", help="upstream MCP server command (default: an echo "
                        "server)")
    parser.add_argument("--tool", default="echo")
    parser.add_argument("--arguments", default=None, help="JSON arguments of --tool")
    parser.add_argument("--request", default="echo some text back",
                        help="the find_tools request (narrow mode must select --tool)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    opts = parser.parse_args(argv)
    import shlex

    results = asyncio.run(run(
        upstream=shlex.split(opts.upstream) if opts.upstream else None, tool=opts.tool,
        arguments=json.loads(opts.arguments) if opts.arguments else None,
        request=opts.request, calls=opts.calls, warmup=opts.warmup, embedder=opts.embedder))
    print(json.dumps(results, indent=2) if opts.json else _table(results))


if __name__ == "__main__":
    main()
