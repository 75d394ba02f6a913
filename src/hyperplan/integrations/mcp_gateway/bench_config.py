"""The gateway over an ``mcpServers`` file, as a user runs it:
``python -m hyperplan.integrations.mcp_gateway.bench_config --config FILE``.

It installs nothing: the servers of ``FILE`` must already be installed (the six-server setup
of issue 38 is git, fetch and time from PyPI, filesystem, memory and everything from npm; see
``docs/benchmarks.md``). With the official SDK client over stdio it measures:

* **each server's own start**, alone: spawn, ``initialize``, first ``tools/list`` (the median
  of ``--repeat`` starts), with the environment the gateway gives it (the SDK's safe default,
  the variables the gateway passes on, the entry's ``env``) and its ``cwd``; and all of them
  spawned at once by one client without the gateway (what the cores allow a cold start);
* **the gateway's start** (``hyperplan serve --config FILE``): time to the ``initialize``
  answer, to the first ``tools/list``, to the first ``find_tools`` answer that lists upstream
  tools (the first moment a client can use them) and to the graph being ready. **Cold**: an
  empty cache directory each time (no catalog cache, no graph cache: a first run); **warm**:
  the same cache directory again (what every later start of the same configuration finds:
  the upstreams' kept catalogs, :mod:`.catalog_cache`, and the built graph);
* **per-call overhead**: ``--calls`` calls of each ``--call SERVER:TOOL:JSON`` (after
  ``--warmup`` unmeasured ones), directly on the server and through the gateway's
  ``call_tool`` (search mode); p50 and p99, and the gateway's p50 minus the direct p50;
* **selection**, when ``--requests FILE`` is given (``{"requests": [{"request", "gold"}]}``,
  gold as slots of acceptable tool names, ``WORK`` in a request replaced by ``--work``): with
  the graph ready, ``find_tools(request, budget=B)`` for each budget; the share of gold slots
  with a selected tool (recall) and the requests with every slot covered (complete). A tool
  served as ``server__tool`` counts as ``tool``.

The load average is printed with the figures: on a shared machine every figure grows with it.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyperplan.integrations.mcp_gateway.bench import _ok, _timed
from hyperplan.integrations.mcp_gateway.config import NAMESPACE_SEPARATOR
from hyperplan.integrations.mcp_gateway.mcp_config import ServerEntry, ServerKind, load_mcp_config

READY_TIMEOUT = 600.0  # seconds for a gateway's tools or graph
BUDGETS = (3, 5, 10)
#: Cheap read-only calls measured by default, for the servers of the six-server setup present.
DEFAULT_CALLS = ("time:get_current_time:{\"timezone\": \"UTC\"}",
                 "memory:read_graph:{}",
                 "everything:echo:{\"message\": \"hello\"}")


@dataclass(frozen=True)
class CallSpec:
    """One measured call: ``tool`` of server ``server`` with ``arguments``."""

    server: str
    tool: str
    arguments: dict[str, Any]

    @classmethod
    def parse(cls, text: str) -> CallSpec:
        server, _, rest = text.partition(":")
        tool, _, arguments = rest.partition(":")
        if not server or not tool:
            raise ValueError(f"--call {text!r}: expected SERVER:TOOL[:JSON]")
        parsed = json.loads(arguments) if arguments.strip() else {}
        if not isinstance(parsed, dict):
            raise ValueError(f"--call {text!r}: the arguments must be a JSON object")
        return cls(server, tool, parsed)


def _params(entry: ServerEntry) -> Any:
    """The SDK's stdio parameters of ``entry``, with the environment the gateway gives it."""
    from mcp import StdioServerParameters
    from mcp.client.stdio import get_default_environment

    from hyperplan.execute.runtimes.mcp_transport import server_environment

    return StdioServerParameters(command=entry.command, args=list(entry.args),
                                 env=server_environment(get_default_environment(), entry.env),
                                 cwd=entry.cwd)


def _client(entry: ServerEntry) -> Any:
    from mcp import Client

    if entry.kind is ServerKind.HTTP:
        from hyperplan.execute.runtimes.mcp_transport import HttpLink

        return Client(HttpLink(url=entry.url, headers=entry.headers).open(),
                      read_timeout_seconds=READY_TIMEOUT)
    return Client(_params(entry), read_timeout_seconds=READY_TIMEOUT)


async def server_alone(entry: ServerEntry) -> tuple[float, int]:
    """Seconds from spawning ``entry`` to its first ``tools/list`` answer, and its tools."""
    started = time.perf_counter()
    async with _client(entry) as client:
        tools = (await client.list_tools()).tools
    return time.perf_counter() - started, len(tools)


async def servers_alone(entries: Sequence[ServerEntry], repeat: int) -> dict[str, Any]:
    """Each server's own start (module doc), the median of ``repeat``, one at a time."""
    out: dict[str, Any] = {}
    for entry in entries:
        seconds, tools = [], 0
        for _ in range(repeat):
            took, tools = await server_alone(entry)
            seconds.append(took)
        out[entry.name] = {"start_s": round(statistics.median(seconds), 3), "tools": tools,
                           "runs_s": [round(s, 3) for s in seconds]}
    return out


async def servers_together(entries: Sequence[ServerEntry], repeat: int) -> float:
    """Seconds until every server, all spawned at once by this client (no gateway), has
    answered its first ``tools/list``: the median of ``repeat``. What the machine's cores
    allow a cold gateway at best."""
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        await asyncio.gather(*(server_alone(e) for e in entries))
        runs.append(time.perf_counter() - started)
    return round(statistics.median(runs), 3)


def _gateway_params(config: Path, mode: str, embedder: str, cache: Path,
                    extra: Sequence[str]) -> Any:
    from mcp import StdioServerParameters

    args = ["-m", "hyperplan", "serve", "--config", str(config), "--mode", mode,
            "--embedder", embedder, "--cache-dir", str(cache), *extra]
    env = {**os.environ, "HYPERPLAN_CACHE_DIR": str(cache)}
    return StdioServerParameters(command=sys.executable, args=args, env=env)


async def _find(client: Any, request: str, budget: int | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"request": request}
    if budget is not None:
        args["budget"] = budget
    found = await client.call_tool("find_tools", args)
    _ok(found)
    data: dict[str, Any] = json.loads(found.content[0].text)
    return data


async def _until(client: Any, request: str, done: Callable[[dict[str, Any]], bool],
                 started: float) -> dict[str, Any]:
    """``find_tools(request)`` until ``done`` says its answer is the one waited for."""
    while True:
        data = await _find(client, request)
        if done(data):
            return data
        if any("failed" in note for note in data.get("notes", [])) or \
                time.perf_counter() - started > READY_TIMEOUT:
            raise RuntimeError(f"the gateway did not get ready: {data.get('notes')}")
        await asyncio.sleep(0.05)


async def gateway_start(config: Path, embedder: str, cache: Path, request: str,
                        mode: str = "search",
                        then: Callable[[Any], Awaitable[dict[str, Any]]] | None = None,
                        extra: Sequence[str] = ()) -> dict[str, Any]:
    """One start of ``hyperplan serve --config`` (module doc); ``then(client)`` runs once the
    graph is ready and its answer is added."""
    from mcp import Client

    started = time.perf_counter()
    async with Client(_gateway_params(config, mode, embedder, cache, extra),
                      read_timeout_seconds=READY_TIMEOUT) as client:
        out: dict[str, Any] = {"initialize_s": time.perf_counter() - started}
        await client.list_tools()
        out["tools_list_s"] = time.perf_counter() - started
        first = await _until(client, request, lambda d: bool(d.get("tools")), started)
        out["find_tools_s"] = time.perf_counter() - started
        out["find_tools_method"] = first.get("method")
        await _until(client, request, lambda d: bool(d.get("ready")), started)
        out["ready_s"] = time.perf_counter() - started
        out = {k: round(v, 3) if isinstance(v, float) else v for k, v in out.items()}
        if then is not None:
            out.update(await then(client))
        return out


async def starts(config: Path, embedder: str, request: str, runs: int, mode: str,
                 workdir: Path) -> dict[str, Any]:
    """``runs`` cold starts (a new cache directory each) then ``runs`` warm ones (the last
    cold run's cache directory)."""
    cold, warm = [], []
    cache = workdir
    for i in range(runs):
        cache = workdir / f"cold-{i}"
        cold.append(await gateway_start(config, embedder, cache, request, mode))
    for _ in range(runs):
        warm.append(await gateway_start(config, embedder, cache, request, mode))
    return {"cold": cold, "warm": warm}


async def call_overhead(entries: dict[str, ServerEntry], calls: Sequence[CallSpec],
                        config: Path, embedder: str, cache: Path, request: str, count: int,
                        warmup: int) -> dict[str, Any]:
    """Each call directly and through the gateway's ``call_tool`` (module doc)."""
    out: dict[str, Any] = {}
    for spec in calls:
        entry = entries[spec.server]
        async with _client(entry) as client:
            await client.list_tools()
            direct = await _timed(functools.partial(client.call_tool, spec.tool,
                                                    spec.arguments), count, warmup, _ok)
        out[f"{spec.server}:{spec.tool}"] = {"direct": direct}

    async def through(client: Any) -> dict[str, Any]:
        names = {_plain(n, entries): n for n in await _all_names(client, request)}
        for spec in calls:
            name = names.get(spec.tool, spec.tool)
            row = out[f"{spec.server}:{spec.tool}"]
            row["gateway"] = await _timed(functools.partial(
                client.call_tool, "call_tool", {"name": name, "arguments": spec.arguments}),
                count, warmup, _ok)
            row["added_p50_ms"] = round(row["gateway"]["p50"] - row["direct"]["p50"], 3)
            row["added_p99_ms"] = round(row["gateway"]["p99"] - row["direct"]["p99"], 3)
        return {}

    await gateway_start(config, embedder, cache, request, then=through)
    return out


async def _all_names(client: Any, request: str) -> list[str]:
    data = await _find(client, request, 100)
    return [str(t["name"]) for t in data.get("tools", [])]


def _plain(name: str, entries: dict[str, ServerEntry]) -> str:
    """``server__tool`` -> ``tool`` when ``server`` is a server of the file."""
    head, sep, tail = name.partition(NAMESPACE_SEPARATOR)
    return tail if sep and head in entries else name


def read_requests(path: Path, work: str | None) -> list[dict[str, Any]]:
    """The requests of ``path`` (module doc), ``WORK`` replaced by ``work``."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for item in data["requests"]:
        text = str(item["request"])
        out.append({"id": item.get("id"), "request": text.replace("WORK", work) if work
                    else text, "gold": [list(map(str, slot)) for slot in item["gold"]]})
    return out


def score(selected: Sequence[Sequence[str]], requests: Sequence[dict[str, Any]]
          ) -> dict[str, Any]:
    """Gold slots covered (recall) and requests complete, given each request's selection."""
    slots = covered = complete = 0
    for names, item in zip(selected, requests, strict=True):
        hits = [any(g in names for g in slot) for slot in item["gold"]]
        slots += len(hits)
        covered += sum(hits)
        complete += all(hits)
    return {"slots": slots, "covered": covered, "recall": round(covered / max(slots, 1), 3),
            "complete": complete, "requests": len(requests)}


async def selection(entries: dict[str, ServerEntry], requests: Sequence[dict[str, Any]],
                    budgets: Sequence[int], config: Path, embedder: str, cache: Path,
                    ) -> dict[str, Any]:
    """The gateway's own ``find_tools`` over ``requests`` at each budget (module doc)."""

    async def measure(client: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for budget in budgets:
            selected = []
            for item in requests:
                data = await _find(client, item["request"], budget)
                selected.append([_plain(str(t["name"]), entries) for t in data["tools"]])
            out[str(budget)] = score(selected, requests)
        return {"selection": out}

    first = requests[0]["request"] if requests else "list the tools"
    result = await gateway_start(config, embedder, cache, first, then=measure)
    return dict(result["selection"])


async def run(config: Path, *, embedder: str = "auto", runs: int = 3, repeat: int = 3,
              calls: Sequence[str] | None = None, count: int = 200, warmup: int = 20,
              requests: Path | None = None, work: str | None = None,
              budgets: Sequence[int] = BUDGETS, mode: str = "search",
              request: str = "read a file and commit it to git",
              parts: Sequence[str] = ("alone", "start", "calls", "selection"),
              ) -> dict[str, Any]:
    """Every measurement of the module doc, as a dict."""
    entries = {e.name: e for e in load_mcp_config(config)}
    specs = [CallSpec.parse(c) for c in (calls if calls is not None else DEFAULT_CALLS)]
    specs = [s for s in specs if s.server in entries]
    out: dict[str, Any] = {"config": str(config), "servers": list(entries),
                           "embedder": embedder, "mode": mode,
                           "load_average_before": [round(x, 2) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory(prefix="hyperplan-bench-config-") as tmp:
        workdir = Path(tmp)
        if "alone" in parts:
            out["alone"] = await servers_alone(list(entries.values()), repeat)
            out["slowest_alone_s"] = max(v["start_s"] for v in out["alone"].values())
            out["together_s"] = await servers_together(list(entries.values()), repeat)
        if "start" in parts:
            out["start"] = await starts(config, embedder, request, runs, mode, workdir)
        shared = workdir / "shared"
        if "calls" in parts and specs:
            out["calls"] = await call_overhead(entries, specs, config, embedder, shared,
                                               request, count, warmup)
        if "selection" in parts and requests is not None:
            out["selection"] = await selection(entries, read_requests(requests, work),
                                               budgets, config, embedder, shared)
    out["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    return out


def _start_lines(out: dict[str, Any]) -> list[str]:
    lines = []
    for kind in ("cold", "warm"):
        runs = out["start"][kind]
        lines.append(f"{kind}: " + "; ".join(
            f"initialize {r['initialize_s']:.2f}, tools/list {r['tools_list_s']:.2f}, "
            f"find_tools with tools {r['find_tools_s']:.2f} ({r['find_tools_method']}), "
            f"graph ready {r['ready_s']:.2f}" for r in runs) + " s")
        for key in ("tools_list_s", "find_tools_s"):
            lines.append(f"  {kind} {key} median {statistics.median(r[key] for r in runs):.2f} s")
    return lines


def report(out: dict[str, Any]) -> str:
    """The figures as text."""
    lines = [f"config {out['config']}: {', '.join(out['servers'])}; embedder {out['embedder']}, "
             f"{out['mode']} mode; load average {out['load_average_before']} before, "
             f"{out['load_average_after']} after"]
    if "alone" in out:
        lines.append("each server alone (spawn to first tools/list, median): " + ", ".join(
            f"{k} {v['start_s']:.2f} s ({v['tools']} tools)" for k, v in out["alone"].items()))
        lines.append(f"slowest alone {out['slowest_alone_s']:.2f} s; target for the gateway's "
                     f"first tools/list {out['slowest_alone_s'] + 1:.2f} s; all servers "
                     f"started at once by one client, no gateway: {out['together_s']:.2f} s")
    if "start" in out:
        lines.extend(_start_lines(out))
    for name, row in out.get("calls", {}).items():
        d, g = row["direct"], row.get("gateway", {})
        lines.append(f"{name}: direct p50 {d['p50']:.2f} / p99 {d['p99']:.2f} ms; gateway "
                     f"call_tool p50 {g.get('p50', 0):.2f} / p99 {g.get('p99', 0):.2f} ms; "
                     f"added p50 {row.get('added_p50_ms', 0):+.2f} ms, p99 "
                     f"{row.get('added_p99_ms', 0):+.2f} ms")
    for budget, s in out.get("selection", {}).items():
        lines.append(f"budget {budget}: gold slots {s['covered']}/{s['slots']} "
                     f"({100 * s['recall']:.0f}%), complete {s['complete']}/{s['requests']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--config", type=Path, required=True, help="an mcpServers file")
    parser.add_argument("--embedder", default="auto")
    parser.add_argument("--mode", default="search", choices=("search", "narrow"),
                        help="the gateway's mode for the start figures")
    parser.add_argument("--runs", type=int, default=3, help="cold and warm gateway starts")
    parser.add_argument("--repeat", type=int, default=3, help="starts of each server alone")
    parser.add_argument("--call", action="append", dest="calls", metavar="SERVER:TOOL:JSON",
                        help="a call to measure (repeatable; default: "
                        + ", ".join(DEFAULT_CALLS) + ", for the servers present)")
    parser.add_argument("--calls", type=int, default=200, dest="count")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--requests", type=Path, help="requests with gold slots (e.g. "
                        "../shared/data/mcp-six/requests.json)")
    parser.add_argument("--work", help="replaces WORK in the requests (the fixture folder)")
    parser.add_argument("--budgets", default="3,5,10")
    parser.add_argument("--only", default="alone,start,calls,selection",
                        help="which parts to run (comma-separated)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    opts = parser.parse_args(argv)
    out = asyncio.run(run(opts.config, embedder=opts.embedder, runs=opts.runs,
                          repeat=opts.repeat, calls=opts.calls, count=opts.count,
                          warmup=opts.warmup, requests=opts.requests, work=opts.work,
                          budgets=[int(b) for b in opts.budgets.split(",")], mode=opts.mode,
                          parts=opts.only.split(",")))
    print(json.dumps(out, indent=2) if opts.json else report(out))


if __name__ == "__main__":
    main()


__all__ = ["CallSpec", "main", "read_requests", "run", "score", "server_alone"]
