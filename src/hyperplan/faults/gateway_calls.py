"""The gateway section of ``hyperplan bench faults``, items 3-6 of issue 36: secrets redacted
before every cut (schemas, error texts, stderr tails), no command line sent or stored, private
cache files; one client's slow calls never stall another, an in-process tool's overrun costs
nothing after its deadline; MCP results capped; faults booked right (a protocol break, an
upstream that died idle, non-finite numbers, malformed requests, a write past its deadline,
temporary files after a kill).

Each case runs the real ``hyperplan serve`` against the misbehaving MCP server or tool module
of :mod:`~hyperplan.faults.gateway_servers`, over stdio (the SDK client on the step's pipes,
or raw JSON-RPC lines) or ``--http``. The secret is in the gateway's environment under a
credential name (``GATEWAY_TEST_TOKEN``) and registered as a *fragment* secret: no 6
consecutive characters of it may reach a client or the console.
"""

from __future__ import annotations

import asyncio
import secrets
import shlex
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from statistics import median
from typing import Any

from mcp import Client

from hyperplan.faults.common import line_count, write
from hyperplan.faults.gateway_cases import gateway_case, not_listening, random_secret, run_http
from hyperplan.faults.gateway_drive import (
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
from hyperplan.faults.gateway_servers import TOOLS, TOOLS_MODULE, UPSTREAM_MCP
from hyperplan.faults.runner import CaseContext
from hyperplan.faults.verdict import Check, one_line

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

    return _guarded(ctx, pipe, lambda: run_async(connected))


def _guarded(ctx: CaseContext, pipe: StdioPipe, body: Callable[[], Check]) -> Check:
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


def _kind(answer: Answer) -> str:
    return answer.kind or ("tool_error" if answer.is_error else "ok")


# -- item 3: redact, then cut ----------------------------------------------------------------------

@gateway_case("gw-stdio-secret-in-schema-default", 3)
def secret_in_schema_default(ctx: CaseContext) -> Check:
    """Narrow mode over stdio: an upstream puts a credential-named environment value as a
    parameter default in its ``inputSchema``; neither ``find_tools`` nor ``tools/list`` sends
    it (gateway item 3; before the fix narrow ``tools/list`` sent it whole)."""
    env = with_secret(ctx)
    args = serve_args(ctx, upstream(ctx), mode="narrow")

    async def scenario(client: Client) -> Check:
        seen = Seen()
        found = await call(client, seen, "find_tools", {"request": "look up a customer record "
                                                        "by its id"})
        names = await list_names(client, seen, found.token)
        listed = "lookup_record" in names
        return Check(listed, f"lookup_record {'listed' if listed else 'NOT listed'} with its "
                     "schema" + ("" if listed else f" ({names})"))

    return run_stdio(ctx, args, env, scenario)


@gateway_case("gw-http-secret-error-text-cut", 3)
def secret_error_text_cut(ctx: CaseContext) -> Check:
    """An upstream's long error text with copies of the secret around the 500-character cut
    (two offsets, so that one cut falls inside a copy): nothing of it reaches the client or
    the console (gateway item 3; before the fix texts were cut, then redacted)."""
    env = with_secret(ctx)
    gw = start_http(ctx, serve_args(ctx, upstream(ctx)), env=env)
    if gw.running is None:
        return not_listening(gw)
    seen = Seen()

    async def scenario() -> Check:
        async with http_client(gw.url) as client:
            answers = [await call(client, seen, "call_tool", {
                "name": "fail_long", "arguments": {"offset": offset}}) for offset in (0, 20)]
        failed = all(a.is_error for a in answers)
        return Check(failed, f"errors {[_kind(a) for a in answers]}, "
                     f"{[len(a.text) for a in answers]} characters")

    return run_http(ctx, gw, seen, scenario)


@gateway_case("gw-stdio-secret-stderr-tail", 3)
def secret_stderr_tail(ctx: CaseContext) -> Check:
    """An upstream that prints copies of the secret to stderr around the 800-character tail
    and exits mid-call (twice, two offsets): the error quoting its stderr tail holds nothing
    of the secret (gateway item 3)."""
    env = with_secret(ctx)
    args = serve_args(ctx, upstream(ctx))

    async def scenario(client: Client) -> Check:
        seen = Seen()
        answers = [await call(client, seen, "call_tool", {
            "name": "crash_stderr", "arguments": {"offset": offset}}) for offset in (0, 20)]
        quoted = sum("stderr" in a.text for a in answers)
        return Check(all(a.is_error for a in answers), f"errors {[_kind(a) for a in answers]}, "
                     f"{quoted} quoting the stderr tail")

    return run_stdio(ctx, args, env, scenario)


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
            results.append((time.monotonic() - started, _kind(answer)))

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
        return Check(overrun.is_error, f"call {_kind(overrun)} after {took:.1f} s; ping p50 "
                     f"{before * 1000:.0f} -> {after * 1000:.0f} ms; {rate:.2f} CPU s/s after",
                     late="; ".join(late) or None)

    return run_stdio(ctx, args, None, scenario)


# -- item 5: bounded results -----------------------------------------------------------------------

@gateway_case("gw-stdio-mcp-result-capped", 5)
def mcp_result_capped(ctx: CaseContext) -> Check:
    """An MCP upstream returns 20 MB; with ``--max-response-bytes 1000000`` the client gets
    at most about 1 MB with a truncation marker (or a clear error naming the limit), and the
    next call works (gateway item 5; before the fix it was forwarded whole)."""
    args = serve_args(ctx, upstream(ctx), call_timeout=30.0,
                      extra=["--max-response-bytes", "1000000"])

    async def scenario(client: Client) -> Check:
        seen = Seen()
        big = await call(client, seen, "call_tool", {"name": "big_result",
                                                     "arguments": {"megabytes": 20}})
        ping = await call(client, seen, "call_tool", {"name": "ping", "arguments": {"text": "x"}})
        size = len(big.text.encode())
        marked = "truncat" in big.text.lower() or "max-response-bytes" in big.text
        capped = size <= 1_200_000 and marked
        return Check(capped and not ping.is_error, f"the client got {size:,} bytes "
                     f"({'with' if marked else 'WITHOUT'} a truncation marker; "
                     f"{_kind(big)}); next call {_kind(ping)}")

    return run_stdio(ctx, args, None, scenario)


# -- item 6: faults booked right -------------------------------------------------------------------

def _calls(ctx: CaseContext) -> list[str]:
    path = ctx.work / "calls.log"
    return path.read_text().split() if path.exists() else []


def _next_write(ctx: CaseContext, answer: Answer, what: str) -> Check:
    """The check of the write called after a fault: sent and answered."""
    sent = "save_note" in _calls(ctx)
    return Check(not answer.is_error, f"{what}; the next call (a write) {_kind(answer)} "
                 f"({'sent' if sent else 'NEVER sent'})"
                 + ("" if not answer.is_error else f": {one_line(answer.text, 100)}"))


@gateway_case("gw-stdio-protocol-break-not-blamed", 6)
def protocol_break_not_blamed(ctx: CaseContext) -> Check:
    """An upstream answers, then writes a line that is not JSON-RPC while idle: the next
    call - a write - is not blamed for it; it is sent (to the upstream started again) and
    answered (gateway item 6; before the fix it was reported outcome_unknown though never
    sent)."""
    args = serve_args(ctx, upstream(ctx), call_timeout=4.0)

    async def scenario(client: Client) -> Check:
        seen = Seen()
        broken = await call(client, seen, "call_tool", {"name": "garble", "arguments": {}})
        await asyncio.sleep(0.8)
        note = await call(client, seen, "call_tool", {"name": "save_note",
                                                      "arguments": {"text": "a"}})
        return _next_write(ctx, note, f"garble {_kind(broken)}")

    return run_stdio(ctx, args, None, scenario)


@gateway_case("gw-http-idle-upstream-died", 6)
def idle_upstream_died(ctx: CaseContext) -> Check:
    """An upstream that exits while idle: the next call (a write) starts it again before
    sending and is answered (gateway item 6; before the fix it failed outcome_unknown,
    never sent)."""
    gw = start_http(ctx, serve_args(ctx, upstream(ctx)))
    if gw.running is None:
        return not_listening(gw)
    seen = Seen()

    async def scenario() -> Check:
        async with http_client(gw.url) as client:
            died = await call(client, seen, "call_tool", {"name": "die_idle", "arguments": {}})
            await asyncio.sleep(1.0)
            note = await call(client, seen, "call_tool", {"name": "save_note",
                                                          "arguments": {"text": "b"}})
        return _next_write(ctx, note, f"die_idle {_kind(died)}")

    return run_http(ctx, gw, seen, scenario)


@gateway_case("gw-http-wedged-upstream-restarted", 5)
def wedged_upstream_restarted(ctx: CaseContext) -> Check:
    """An upstream that stops reading requests for a minute, ``--call-timeout 3``: the call
    ends at its deadline, and the next call goes to an upstream started again and is answered
    (gateway item 5; before the fix an upstream that kept timing out was never restarted, so
    the next call failed too)."""
    gw = start_http(ctx, serve_args(ctx, upstream(ctx), call_timeout=3.0))
    if gw.running is None:
        return not_listening(gw)
    seen = Seen()

    async def scenario() -> Check:
        async with http_client(gw.url) as client:
            started = time.monotonic()
            wedged = await call(client, seen, "call_tool", {"name": "wedge", "arguments": {}})
            took = time.monotonic() - started
            ping = await call(client, seen, "call_tool", {"name": "ping",
                                                          "arguments": {"text": "w"}})
        return Check(wedged.is_error and not ping.is_error,
                     f"wedged call {_kind(wedged)} after {took:.1f} s; next call {_kind(ping)}"
                     + ("" if not ping.is_error else f": {one_line(ping.text, 100)}"),
                     late=f"the wedged call ended after {took:.1f} s"
                     if took > 3 + TOLERANCE_S else None)

    return run_http(ctx, gw, seen, scenario)


@gateway_case("gw-http-write-timeout-not-repeated", 6)
def write_timeout_not_repeated(ctx: CaseContext) -> Check:
    """A write that takes effect and then sits for a minute, ``--call-timeout 3``: it ends at
    its deadline as ``outcome_unknown``, is never sent again, and the next call works
    (gateway item 6)."""
    gw = start_http(ctx, serve_args(ctx, upstream(ctx), call_timeout=3.0))
    if gw.running is None:
        return not_listening(gw)
    seen = Seen()

    async def scenario() -> Check:
        async with http_client(gw.url) as client:
            started = time.monotonic()
            paid = await call(client, seen, "call_tool", {"name": "send_payment",
                                                          "arguments": {"amount": 5}})
            took = time.monotonic() - started
            ping = await call(client, seen, "call_tool", {"name": "ping",
                                                          "arguments": {"text": "c"}})
            await asyncio.sleep(1.0)
        writes = line_count(ctx, "writes.log")
        ok = paid.kind == "outcome_unknown" and not ping.is_error and writes == 1
        return Check(ok, f"write {_kind(paid)} after {took:.1f} s, applied {writes} time(s); "
                     f"next call {_kind(ping)}", writes=writes,
                     late=f"the write ended after {took:.1f} s" if took > 3 + TOLERANCE_S
                     else None)

    return run_http(ctx, gw, seen, scenario)


def _nonfinite(pipe: StdioPipe) -> Check:
    if not pipe.handshake():
        return Check(False, "no answer to initialize")
    numbers = {"NaN": "NaN", "Infinity": "Infinity", "-Infinity": "-Infinity", "1e999": "1e999"}
    unanswered, accepted = [], []
    for i, (label, literal) in enumerate(numbers.items(), start=10):
        line = (f'{{"jsonrpc": "2.0", "id": {i}, "method": "tools/call", "params": {{"name": '
                f'"call_tool", "arguments": {{"name": "echo", "arguments": {{"value": {literal}'
                '}}}}\n')
        pipe.send(line.encode())
        reply = pipe.reply(i, 10.0)
        if reply is None:
            unanswered.append(label)
        elif "result" in reply and not reply["result"].get("isError"):
            accepted.append(label)
    return Check(not accepted and not unanswered,
                 (f"accepted {accepted}" if accepted else "every non-finite number refused")
                 + (f"; no answer to {unanswered}" if unanswered else ""),
                 late=f"no answer to {unanswered}" if unanswered else None)


@gateway_case("gw-stdio-nonfinite-arguments", 6)
def nonfinite_arguments(ctx: CaseContext) -> Check:
    """Raw JSON-RPC over stdio: ``NaN``, ``Infinity``, ``-Infinity`` and ``1e999`` in call
    arguments are refused, never forwarded (gateway item 6; before the fix they were
    forwarded as null)."""
    pipe = start_stdio(ctx, serve_args(ctx, upstream(ctx)))

    def body() -> Check:
        check = _nonfinite(pipe)
        echoed = line_count(ctx, "echo.log")
        detail = f"{check.detail}; {echoed} forwarded to the upstream"
        return replace(check, ok=check.ok and echoed == 0, detail=detail)

    return _guarded(ctx, pipe, body)


def _malformed_lines(secret: str) -> dict[str, tuple[Any, bytes]]:
    """Requests with ids the gateway must answer (an error is an answer): label -> (id,
    line)."""
    deep = b"[" * 100_000 + b"]" * 100_000
    return {
        "jsonrpc 1.0": (101, b'{"jsonrpc": "1.0", "id": 101, "method": "tools/list"}\n'),
        "a batch": (102, b'[{"jsonrpc": "2.0", "id": 102, "method": "tools/list"}]\n'),
        "100k-deep nesting": (103, b'{"jsonrpc": "2.0", "id": 103, "method": "tools/call", '
                              b'"params": {"name": "find_tools", "arguments": {"request": '
                              + deep + b'}}}\n'),
        "a name that is an object": (104, b'{"jsonrpc": "2.0", "id": 104, "method": '
                                     b'"tools/call", "params": {"name": {"api_key": "'
                                     + secret.encode() + b'"}}}\n'),
        "a valid request after them": (105, b'{"jsonrpc": "2.0", "id": 105, "method": '
                                       b'"tools/list"}\n'),
    }


def _answered(pipe: StdioPipe, request_id: Any, timeout: float) -> bool:
    """An answer to ``request_id`` (or an error with a null id: the request unreadable)."""
    end = time.monotonic() + timeout
    while (left := end - time.monotonic()) > 0:
        line = pipe.line(left)
        if not line:
            return False
        text = line.decode("utf-8", "replace")
        if f'"id": {request_id}' in text or f'"id":{request_id}' in text or (
                '"error"' in text and ('"id": null' in text or '"id":null' in text)):
            return True
    return False


@gateway_case("gw-stdio-malformed-requests-answered", 6)
def malformed_requests_answered(ctx: CaseContext) -> Check:
    """Raw JSON-RPC over stdio: a request with a wrong ``jsonrpc``, a batch, 100k-deep
    nesting, a malformed one carrying the secret - each with an id - gets an answer within
    5 s (the client would wait forever), the secret is printed nowhere, and the gateway
    keeps serving (gateway item 6; before the fix they got no reply)."""
    env = with_secret(ctx)
    pipe = start_stdio(ctx, serve_args(ctx, upstream(ctx)), env)

    def body() -> Check:
        if not pipe.handshake():
            return Check(False, "no answer to initialize")
        unanswered = []
        for label, (request_id, line) in _malformed_lines(env[SECRET_ENV]).items():
            if not pipe.send(line) or not _answered(pipe, request_id, 5.0):
                unanswered.append(label)
        return Check(not unanswered, f"no answer to {', '.join(unanswered)}" if unanswered
                     else "every request answered",
                     late="a client left waiting" if unanswered else None)

    return _guarded(ctx, pipe, body)


@gateway_case("gw-stdio-kill-leaves-nothing", 6)
def kill_leaves_nothing(ctx: CaseContext) -> Check:
    """``kill -9`` of a stdio gateway with a running MCP upstream: the upstream exits and no
    temporary file is left behind in its ``TMPDIR`` (gateway item 6; before the fix the
    upstream's stderr file stayed)."""
    tmp = ctx.work / "tmp"
    tmp.mkdir()
    pipe = start_stdio(ctx, serve_args(ctx, upstream(ctx)), {"TMPDIR": str(tmp)})

    async def scenario() -> Answer:
        async with stdio_client(pipe) as client:
            return await call(client, Seen(), "call_tool", {"name": "ping",
                                                            "arguments": {"text": "k"}})

    try:
        ping = run_async(scenario)
    except Exception as exc:  # reported in the detail; the kill below happens anyway
        ping = Answer(one_line(f"{type(exc).__name__}: {exc}", 100), True, None, None)
    ctx.kill(pipe.running)
    ctx.finish(pipe.running)
    # (tiktoken keeps its encodings in $TMPDIR/data-gym-cache: a cache, meant to stay)
    left = sorted(p.name for p in tmp.iterdir() if p.name != "data-gym-cache")
    return Check(not ping.is_error and not left, f"ping {_kind(ping)}; "
                 + (f"left behind: {', '.join(left[:3])}" if left else "nothing left behind"))
