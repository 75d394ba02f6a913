"""The gateway section of ``hyperplan bench faults``, items 3 and 4 of issue 36: secrets
redacted before every cut (schemas, error texts, stderr tails), no command line sent or stored,
private cache files; one client's slow calls never stall another, an in-process tool's overrun
costs nothing after its deadline. Items 5 and 6 are in
:mod:`~hyperplan_bench.faults.gateway_faults`,
which shares the helpers here.

Each case runs the real ``hyperplan serve`` against the misbehaving MCP server or tool module
of :mod:`~hyperplan_bench.faults.gateway_servers`, over stdio (the SDK client on the step's pipes,
or raw JSON-RPC lines) or ``--http``; a case registered with :func:`both_transports` runs as
two cases, ``gw-stdio-NAME`` and ``gw-http-NAME``. The secret is in the gateway's environment
under a credential name (``GATEWAY_TEST_TOKEN``) and registered as a *fragment* secret: no 6
consecutive characters of it may reach a client or the console.
"""

from __future__ import annotations

import asyncio
import secrets
import shlex
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from statistics import median

from mcp import Client

from hyperplan_bench.faults.common import line_count, write
from hyperplan_bench.faults.gateway_cases import (
    gateway_case,
    not_listening,
    random_secret,
    run_http,
)
from hyperplan_bench.faults.gateway_drive import (
    SECRET_ENV,
    Answer,
    Seen,
    StdioPipe,
    call,
    http_client,
    list_names,
    run_async,
    serve_args,
    start_http,
    start_stdio,
    stdio_client,
    tree_cpu,
)
from hyperplan_bench.faults.gateway_servers import TOOLS, TOOLS_MODULE, UPSTREAM_MCP
from hyperplan_bench.faults.runner import CaseContext
from hyperplan_bench.faults.verdict import Check, one_line

TOLERANCE_S = 2.0  # past a call's deadline, as for every hard deadline of the benchmark
FIND_LIMIT_S = 3.0  # find_tools of a client while another floods slow calls
FLOOD_CALLS = 41  # one more than the SDK's worker threads


def upstream(ctx: CaseContext, *extra: str) -> str:
    """The misbehaving MCP server as a ``mcp-server:`` source (it logs in the case's
    directory)."""
    server = write(ctx, "upstream.py", UPSTREAM_MCP)
    return "mcp-server:" + shlex.join([sys.executable, str(server), str(ctx.work), *extra])


def with_secret(ctx: CaseContext) -> dict[str, str]:
    """A fresh fragment secret, given to the upstream (``secret.txt``) and to the gateway
    (``GATEWAY_TEST_TOKEN``); the gateway's extra environment."""
    value = ctx.secret(random_secret(), fragments=True)
    write(ctx, "secret.txt", value)
    return {SECRET_ENV: value}


def run_stdio(ctx: CaseContext, args: Sequence[str], env: dict[str, str] | None,
              scenario: Callable[[Client], Awaitable[Check]]) -> Check:
    """``serve ARGS`` over stdio, the SDK client (default mode) on its pipes running
    ``scenario``, then the gateway stopped (its stdin closed)."""
    pipe = start_stdio(ctx, args, env)

    async def connected() -> Check:
        async with stdio_client(pipe) as client:
            return await scenario(client)

    return guarded(ctx, pipe, lambda: run_async(connected))


Scenario = Callable[[Client, Seen], Awaitable[Check]]
TRANSPORTS = ("stdio", "http")


def run_client(ctx: CaseContext, transport: str, args: Sequence[str],
               env: dict[str, str] | None, scenario: Scenario) -> Check:
    """``serve ARGS`` over ``transport`` (stdio, or ``--http`` on 127.0.0.1), the SDK client
    in its default mode running ``scenario``, then the gateway stopped. What the client
    received is searched for secrets (over stdio: the step's stdout)."""
    seen = Seen()
    if transport == "stdio":
        return run_stdio(ctx, args, env, lambda client: scenario(client, seen))
    gw = start_http(ctx, args, env=env)
    if gw.running is None:
        return not_listening(gw)

    async def over_http() -> Check:
        async with http_client(gw.url) as client:
            return await scenario(client, seen)

    return run_http(ctx, gw, seen, over_http)


def both_transports(name: str, item: int, *, timed: bool = False
                    ) -> Callable[[Callable[[CaseContext, str], Check]],
                                  Callable[[CaseContext, str], Check]]:
    """Register ``make(ctx, transport)`` as two cases of fault item ``item``:
    ``gw-stdio-NAME`` and ``gw-http-NAME`` (their summary: ``make``'s docstring)."""
    def register(make: Callable[[CaseContext, str], Check]
                 ) -> Callable[[CaseContext, str], Check]:
        for transport in TRANSPORTS:
            def run(ctx: CaseContext, transport: str = transport) -> Check:
                return make(ctx, transport)
            run.__doc__ = make.__doc__
            run.__name__ = f"{make.__name__}_{transport}"
            gateway_case(f"gw-{transport}-{name}", item, timed=timed)(run)
        return make
    return register


def guarded(ctx: CaseContext, pipe: StdioPipe, body: Callable[[], Check]) -> Check:
    try:
        check = body()
    except TimeoutError:
        check = Check(False, "the gateway did not answer", late="a client waited 40 s")
    except Exception as exc:  # the client failed: reported, never hidden
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]  # type: ignore[assignment]
        check = Check(False, f"the client failed: {one_line(f'{type(exc).__name__}: {exc}')}")
    finally:
        ctx.stop(pipe.running)
    return check


def kind(answer: Answer) -> str:
    """The error kind of an answer, ``tool_error`` for an error without one, else ``ok``."""
    return answer.kind or ("tool_error" if answer.is_error else "ok")


# -- item 3: redact, then cut ----------------------------------------------------------------------

@both_transports("secret-in-schema-default", 3)
def secret_in_schema_default(ctx: CaseContext, transport: str) -> Check:
    """Narrow mode: an upstream puts a credential-named environment value as a parameter
    default in its ``inputSchema``; neither ``find_tools`` nor ``tools/list`` sends it
    (gateway item 3; before the fix narrow ``tools/list`` sent it whole)."""
    env = with_secret(ctx)
    args = serve_args(ctx, upstream(ctx), mode="narrow")

    async def scenario(client: Client, seen: Seen) -> Check:
        found = await call(client, seen, "find_tools", {"request": "look up a customer record "
                                                        "by its id"})
        names = await list_names(client, seen, found.token)
        listed = "lookup_record" in names
        return Check(listed, f"lookup_record {'listed' if listed else 'NOT listed'} with its "
                     "schema" + ("" if listed else f" ({names})"))

    return run_client(ctx, transport, args, env, scenario)


@both_transports("secret-error-text-cut", 3)
def secret_error_text_cut(ctx: CaseContext, transport: str) -> Check:
    """An upstream's long error text with copies of the secret around the 500-character cut
    (two offsets, so that one cut falls inside a copy): nothing of it reaches the client or
    the console (gateway item 3; before the fix texts were cut, then redacted)."""
    env = with_secret(ctx)

    async def scenario(client: Client, seen: Seen) -> Check:
        answers = [await call(client, seen, "call_tool", {
            "name": "fail_long", "arguments": {"offset": offset}}) for offset in (0, 20)]
        return Check(all(a.is_error for a in answers), f"errors {[kind(a) for a in answers]}, "
                     f"{[len(a.text) for a in answers]} characters")

    return run_client(ctx, transport, serve_args(ctx, upstream(ctx)), env, scenario)


@both_transports("secret-stderr-tail", 3)
def secret_stderr_tail(ctx: CaseContext, transport: str) -> Check:
    """An upstream that prints copies of the secret to stderr around the 800-character tail
    and exits mid-call (twice, two offsets): the error quoting its stderr tail holds nothing
    of the secret (gateway item 3; before the fix the tail was cut, then redacted)."""
    env = with_secret(ctx)

    async def scenario(client: Client, seen: Seen) -> Check:
        answers = [await call(client, seen, "call_tool", {
            "name": "crash_stderr", "arguments": {"offset": offset}}) for offset in (0, 20)]
        quoted = sum("stderr" in a.text for a in answers)
        return Check(all(a.is_error for a in answers), f"errors {[kind(a) for a in answers]}, "
                     f"{quoted} quoting the stderr tail")

    return run_client(ctx, transport, serve_args(ctx, upstream(ctx)), env, scenario)


def _cache_modes(cache: Path) -> list[str]:
    """Cache files not 0600 and directories not 0700 (relative paths with their modes)."""
    wrong = []
    for path in [cache, *cache.rglob("*")] if cache.exists() else []:
        mode = path.stat().st_mode & 0o777
        want = 0o700 if path.is_dir() else 0o600
        if mode != want:
            wrong.append(f"{path.relative_to(cache.parent)} {mode:o}")
    return wrong


@gateway_case("gw-stdio-command-line-private", 3)
def command_line_private(ctx: CaseContext) -> Check:
    """An upstream whose command line names a private path: neither ``find_tools`` nor the
    error of a call during which the upstream exits sends it, and the selection cache never
    stores it; the cache's files are 0600 in 0700 directories (gateway item 3; before the fix
    ``tools[].source``, error texts and graph.json held the command line, mode 0644)."""
    marker = ctx.secret(f"/srv/private-{secrets.token_hex(8)}")
    args = serve_args(ctx, upstream(ctx, f"--db={marker}"))

    async def scenario(client: Client) -> Check:
        seen = Seen()
        found = await call(client, seen, "find_tools", {"request": "look up a customer record"})
        end = time.monotonic() + 20
        while (found.data or {}).get("method") == "bm25" and time.monotonic() < end:
            await asyncio.sleep(0.3)  # until the graph is built (and cached)
            found = await call(client, seen, "find_tools", {"request": "look up a record"})
        crashed = await call(client, seen, "call_tool", {"name": "crash_stderr",
                                                         "arguments": {}})
        wrong = _cache_modes(ctx.work / "cache")
        built = (found.data or {}).get("method") != "bm25"
        files = sum(1 for p in (ctx.work / "cache").rglob("*") if p.is_file())
        return Check(built and files > 0 and not wrong and crashed.is_error,
                     f"graph {'built' if built else 'NOT built'}, {files} cache file(s)"
                     + (f"; not private: {', '.join(wrong[:4])}" if wrong else ", all private"))

    return run_stdio(ctx, args, None, scenario)


# -- item 4: one client never stalls the others ----------------------------------------------------

def _slow_flood(url: str, seen: Seen, results: list[tuple[float, str]]) -> Awaitable[None]:
    async def one() -> None:
        async with http_client(url) as client:
            started = time.monotonic()
            answer = await call(client, seen, "call_tool", {"name": "slow_report",
                                                            "arguments": {}})
            results.append((time.monotonic() - started, kind(answer)))

    async def flood() -> None:
        await asyncio.gather(*(one() for _ in range(FLOOD_CALLS)), return_exceptions=True)
    return flood()


@gateway_case("gw-http-slow-flood-find-fast", 4, timed=True)
def slow_flood_find_fast(ctx: CaseContext) -> Check:
    """One client sends 41 concurrent calls of a tool that takes 30 s (``--call-timeout 4``);
    another client's ``find_tools`` answers within 3 s, every call ends within its deadline
    + 2 s, and a call never sent is ``busy``, never ``outcome_unknown`` (gateway item 4;
    before the fix find_tools waited 17 s and queued calls overran)."""
    timeout = 4.0
    gw = start_http(ctx, serve_args(ctx, upstream(ctx), call_timeout=timeout))
    if gw.running is None:
        return not_listening(gw)
    seen = Seen()
    results: list[tuple[float, str]] = []

    async def scenario() -> Check:
        flood = asyncio.ensure_future(_slow_flood(gw.url, seen, results))
        await asyncio.sleep(1.0)
        async with http_client(gw.url) as other:
            started = time.monotonic()
            await call(other, seen, "find_tools", {"request": "build a report"})
            waited = time.monotonic() - started
        await flood
        sent = line_count(ctx, "calls.log")
        unknown = sum(kind == "outcome_unknown" for _, kind in results)
        worst = max((s for s, _ in results), default=0.0)
        late = [f"find_tools waited {waited:.1f} s"] if waited > FIND_LIMIT_S else []
        if worst > timeout + TOLERANCE_S:
            late.append(f"a call ended after {worst:.1f} s (--call-timeout {timeout:g})")
        kinds = sorted({kind for _, kind in results})
        return Check(unknown <= sent and len(results) == FLOOD_CALLS,
                     f"find_tools {waited:.1f} s; {len(results)} calls, kinds {kinds}, "
                     f"{sent} sent, {unknown} outcome_unknown, slowest {worst:.1f} s",
                     late="; ".join(late) or None)

    return run_http(ctx, gw, seen, scenario)


async def _pings(client: Client, seen: Seen, count: int = 10) -> float:
    """The median seconds of ``count`` calls of the quick tool."""
    times = []
    for i in range(count):
        started = time.monotonic()
        await call(client, seen, "call_tool", {"name": "ping", "arguments": {"text": str(i)}})
        times.append(time.monotonic() - started)
    return median(times)


@gateway_case("gw-stdio-python-overrun-costs-nothing", 4, timed=True)
def python_overrun(ctx: CaseContext) -> Check:
    """A ``python:`` tool that loops for a minute ignoring its 2 s deadline: the call ends
    at the deadline, and afterwards the gateway burns no CPU for it and other calls are as
    fast as before (gateway item 4; before the fix the thread kept its CPU, p50 9 -> 345 ms)."""
    write(ctx, f"{TOOLS}.py", TOOLS_MODULE)
    args = serve_args(ctx, f"python:{TOOLS}", call_timeout=2.0)

    async def scenario(client: Client) -> Check:
        seen = Seen()
        gateway = ctx.running_pids()[0]
        before = await _pings(client, seen)
        started = time.monotonic()
        overrun = await call(client, seen, "call_tool", {"name": "crunch_numbers",
                                                         "arguments": {"rounds": 1}})
        took = time.monotonic() - started
        await asyncio.sleep(0.5)
        cpu = tree_cpu(gateway)
        await asyncio.sleep(2.0)
        rate = (tree_cpu(gateway) - cpu) / 2.0
        after = await _pings(client, seen)
        late = []
        if took > 2.0 + TOLERANCE_S:
            late.append(f"the overrunning call ended after {took:.1f} s")
        if rate > 0.3 or after > 3 * before + 0.05:
            late.append(f"after its deadline the tool still costs {rate:.2f} CPU s/s")
        return Check(overrun.is_error, f"call {kind(overrun)} after {took:.1f} s; ping p50 "
                     f"{before * 1000:.0f} -> {after * 1000:.0f} ms; {rate:.2f} CPU s/s after",
                     late="; ".join(late) or None)

    return run_stdio(ctx, args, None, scenario)
