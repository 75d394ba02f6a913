"""What one oversized MCP result costs the process that calls it (issue 36, item 5).

    python scripts/dev/mcp_result_memory.py SIZE_BYTES [--cap BYTES]

Writes a raw JSON-RPC stdio MCP server (tools ``big(size)``: a text result of ``size``
characters, and ``ping``) to a temporary folder, calls ``big`` once through
:class:`~hyperplan.execute.runtimes.MCPRuntime` and then ``ping``, and prints one JSON line:
the rise of peak RSS during the big call, the RSS still held after it, its seconds, how the
result came back (truncated or not) and whether the next call worked. Linux (``/proc``).
"""

from __future__ import annotations

import argparse
import gc
import inspect
import json
import resource
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from hyperplan.execute.runtimes.mcp import MCPRuntime

SERVER = textwrap.dedent('''
    import json, sys
    TOOLS = [{"name": "big", "description": "A long text.", "inputSchema": {"type": "object",
              "properties": {"size": {"type": "integer"}}, "required": ["size"]}},
             {"name": "ping", "description": "pong", "inputSchema": {"type": "object"}}]
    for line in sys.stdin:
        request = json.loads(line)
        if "id" not in request:
            continue
        method, params = request.get("method"), request.get("params") or {}
        if method == "initialize":
            result = {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "big", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif params.get("name") == "big":
            result = {"content": [{"type": "text", "text": "x" * params["arguments"]["size"]}]}
        else:
            result = {"content": [{"type": "text", "text": "pong"}]}
        reply = {"jsonrpc": "2.0", "id": request["id"], "result": result}
        sys.stdout.write(json.dumps(reply) + "\\n")
        sys.stdout.flush()
''')


def rss_mb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS"):
            return int(line.split()[1]) // 1024
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("size", type=int)
    parser.add_argument("--cap", type=int, default=10 * 1024 * 1024)
    parser.add_argument("--timeout", type=float, default=30.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = Path(tmp) / "big_server.py"
        server.write_text(SERVER, encoding="utf-8")
        capped = "max_response_bytes" in inspect.signature(MCPRuntime).parameters
        extra = {"max_response_bytes": args.cap} if capped else {}  # an older checkout: no cap
        with MCPRuntime(sys.executable, [str(server)], timeout=args.timeout,
                        **extra) as runtime:
            tools = runtime.catalog()
            runtime.call(tools.get("big"), {"size": 100_000})
            gc.collect()
            base = rss_mb()
            peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
            started = time.perf_counter()
            big = runtime.call(tools.get("big"), {"size": args.size})
            seconds = time.perf_counter() - started
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
            gc.collect()
            kept = rss_mb() - base
            started = time.perf_counter()
            ping = runtime.call(tools.get("ping"), {})
            next_s = time.perf_counter() - started
    print(json.dumps({"size_mb": args.size / 1e6, "peak_rise_mb": peak - max(base, peak_before),
                      "kept_mb": kept, "call_s": round(seconds, 2), "ok": big.ok,
                      "error_kind": big.error_kind and big.error_kind.value,
                      "value_chars": len(str(big.value)),
                      "truncated": bool(big.metadata.get("truncated")),
                      "next_ok": ping.ok, "next_s": round(next_s, 2)}))


if __name__ == "__main__":
    main()
