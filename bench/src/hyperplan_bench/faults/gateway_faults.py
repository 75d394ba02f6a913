"""The gateway section of ``hyperplan bench faults``, items 5 and 6 of issue 36: results of MCP
upstreams capped, an upstream that broke the protocol, died while idle or wedged started again
before the next call (which is not blamed for it), a write past its deadline never repeated,
non-finite numbers refused, every malformed request with an id answered, nothing left behind
after a kill. The helpers are those of :mod:`~hyperplan_bench.faults.gateway_calls`.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from mcp import Client

from hyperplan_bench.faults.common import line_count
from hyperplan_bench.faults.gateway_calls import (
    TOLERANCE_S,
    both_transports,
    guarded,
    kind,
    run_client,
    upstream,
    with_secret,
)
from hyperplan_bench.faults.gateway_cases import gateway_case, not_listening, run_http
from hyperplan_bench.faults.gateway_drive import (
    SECRET_ENV,
    Answer,
    Seen,
    StdioPipe,
    call,
    modern_body,
    raw_post,
    run_async,
    serve_args,
    start_http,
    start_stdio,
    stdio_client,
)
from hyperplan_bench.faults.runner import CaseContext
from hyperplan_bench.faults.verdict import Check, one_line

# -- item 5: bounded results, restarted upstreams --------------------------------------------------

@both_transports("mcp-result-capped", 5)
def mcp_result_capped(ctx: CaseContext, transport: str) -> Check:
    """An MCP upstream returns 20 MB; with ``--max-response-bytes 1000000`` the client gets
    at most about 1 MB with a truncation marker (or a clear error naming the limit), and the
    next call works (gateway item 5; before the fix it was forwarded whole)."""
    args = serve_args(ctx, upstream(ctx), call_timeout=30.0,
                      extra=["--max-response-bytes", "1000000"])

    async def scenario(client: Client, seen: Seen) -> Check:
        big = await call(client, seen, "call_tool", {"name": "big_result",
                                                     "arguments": {"megabytes": 20}})
        ping = await call(client, seen, "call_tool", {"name": "ping", "arguments": {"text": "x"}})
        size = len(big.text.encode())
        marked = "truncat" in big.text.lower() or "max-response-bytes" in big.text
        capped = size <= 1_200_000 and marked
        return Check(capped and not ping.is_error, f"the client got {size:,} bytes "
                     f"({'with' if marked else 'WITHOUT'} a truncation marker; "
                     f"{kind(big)}); next call {kind(ping)}")

    return run_client(ctx, transport, args, None, scenario)


@both_transports("wedged-upstream-restarted", 5)
def wedged_upstream_restarted(ctx: CaseContext, transport: str) -> Check:
    """An upstream that stops reading requests for a minute, ``--call-timeout 3``: the call
    ends at its deadline, and the next call goes to an upstream started again and is answered
    (gateway item 5; before the fix an upstream that kept timing out was never restarted, so
    the next call failed too, and the wedged server outlived the gateway)."""
    async def scenario(client: Client, seen: Seen) -> Check:
        started = time.monotonic()
        wedged = await call(client, seen, "call_tool", {"name": "wedge", "arguments": {}})
        took = time.monotonic() - started
        ping = await call(client, seen, "call_tool", {"name": "ping", "arguments": {"text": "w"}})
        return Check(wedged.is_error and not ping.is_error,
                     f"wedged call {kind(wedged)} after {took:.1f} s; next call {kind(ping)}"
                     + ("" if not ping.is_error else f": {one_line(ping.text, 100)}"),
                     late=f"the wedged call ended after {took:.1f} s"
                     if took > 3 + TOLERANCE_S else None)

    return run_client(ctx, transport, serve_args(ctx, upstream(ctx), call_timeout=3.0), None,
                      scenario)


# -- item 6: faults booked right -------------------------------------------------------------------

def _calls(ctx: CaseContext) -> list[str]:
    path = ctx.work / "calls.log"
    return path.read_text().split() if path.exists() else []


def _next_write(ctx: CaseContext, answer: Answer, what: str) -> Check:
    """The check of the write called after a fault: sent and answered."""
    sent = "save_note" in _calls(ctx)
    return Check(not answer.is_error, f"{what}; the next call (a write) {kind(answer)} "
                 f"({'sent' if sent else 'NEVER sent'})"
                 + ("" if not answer.is_error else f": {one_line(answer.text, 100)}"))


@both_transports("protocol-break-not-blamed", 6)
def protocol_break_not_blamed(ctx: CaseContext, transport: str) -> Check:
    """An upstream answers, then writes a line that is not JSON-RPC while idle: the next
    call - a write - is not blamed for it; it is sent (to the upstream started again) and
    answered (gateway item 6; before the fix it was reported outcome_unknown though never
    sent)."""
    async def scenario(client: Client, seen: Seen) -> Check:
        broken = await call(client, seen, "call_tool", {"name": "garble", "arguments": {}})
        await asyncio.sleep(0.8)
        note = await call(client, seen, "call_tool", {"name": "save_note",
                                                      "arguments": {"text": "a"}})
        return _next_write(ctx, note, f"garble {kind(broken)}")

    return run_client(ctx, transport, serve_args(ctx, upstream(ctx), call_timeout=4.0), None,
                      scenario)


@both_transports("idle-upstream-died", 6)
def idle_upstream_died(ctx: CaseContext, transport: str) -> Check:
    """An upstream that exits while idle: the next call (a write) starts it again before
    sending and is answered (gateway item 6; before the fix it failed outcome_unknown,
    never sent)."""
    async def scenario(client: Client, seen: Seen) -> Check:
        died = await call(client, seen, "call_tool", {"name": "die_idle", "arguments": {}})
        await asyncio.sleep(1.0)
        note = await call(client, seen, "call_tool", {"name": "save_note",
                                                      "arguments": {"text": "b"}})
        return _next_write(ctx, note, f"die_idle {kind(died)}")

    return run_client(ctx, transport, serve_args(ctx, upstream(ctx)), None, scenario)


@both_transports("write-timeout-not-repeated", 6)
def write_timeout_not_repeated(ctx: CaseContext, transport: str) -> Check:
    """A write that takes effect and then sits for a minute, ``--call-timeout 3``: it ends at
    its deadline as ``outcome_unknown``, is never sent again, and the next call works
    (gateway item 6)."""
    async def scenario(client: Client, seen: Seen) -> Check:
        started = time.monotonic()
        paid = await call(client, seen, "call_tool", {"name": "send_payment",
                                                      "arguments": {"amount": 5}})
        took = time.monotonic() - started
        ping = await call(client, seen, "call_tool", {"name": "ping", "arguments": {"text": "c"}})
        await asyncio.sleep(1.0)
        writes = line_count(ctx, "writes.log")
        ok = paid.kind == "outcome_unknown" and not ping.is_error and writes == 1
        return Check(ok, f"write {kind(paid)} after {took:.1f} s, applied {writes} time(s); "
                     f"next call {kind(ping)}", writes=writes,
                     late=f"the write ended after {took:.1f} s" if took > 3 + TOLERANCE_S
                     else None)

    return run_client(ctx, transport, serve_args(ctx, upstream(ctx), call_timeout=3.0), None,
                      scenario)


NONFINITE = ("NaN", "Infinity", "-Infinity", "1e999")  # JSON literals Python's json reads
CONTROL = "1.5"  # a finite number, sent first the same way: it must be forwarded


def _echo_line(request_id: int, literal: str) -> str:
    return (f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", "params": '
            f'{{"name": "call_tool", "arguments": {{"name": "echo", "arguments": '
            f'{{"value": {literal}}}}}}}}}')


def _nonfinite_stdio(pipe: StdioPipe) -> tuple[list[str], list[str]]:
    """Each non-finite literal in a raw call over stdio: (accepted, unanswered)."""
    if not pipe.handshake():
        return [], ["initialize"]
    accepted, unanswered = [], []
    for i, literal in enumerate((CONTROL, *NONFINITE), start=10):
        pipe.send((_echo_line(i, literal) + "\n").encode())
        reply = pipe.reply(i, 10.0)
        if reply is None:
            unanswered.append(literal)
        elif "result" in reply and not reply["result"].get("isError"):
            accepted.append(literal)
    return accepted, unanswered


def _nonfinite_http(host: str, port: int, seen: Seen) -> tuple[list[str], list[str]]:
    """The same as 2026-07-28 requests over HTTP."""
    accepted, unanswered = [], []
    for i, literal in enumerate((CONTROL, *NONFINITE), start=10):
        body = modern_body(i, "tools/call", {"name": "call_tool", "arguments": {
            "name": "echo", "arguments": {"value": "@VALUE@"}}})
        data = json.dumps(body).encode().replace(b'"@VALUE@"', literal.encode())
        reply = raw_post(host, port, data, None, 20.0, seen)
        result = reply.result(i)
        if reply.status == 599:
            unanswered.append(literal)
        elif result is not None and not result.get("isError"):
            accepted.append(literal)
    return accepted, unanswered


def _nonfinite_check(ctx: CaseContext, accepted: list[str], unanswered: list[str]) -> Check:
    """Only the finite control accepted and forwarded; every request answered."""
    echoed = line_count(ctx, "echo.log")
    wrong = [x for x in accepted if x != CONTROL]
    control = CONTROL in accepted
    return Check(control and not wrong and not unanswered and echoed == 1,
                 (f"accepted {wrong}" if wrong else "every non-finite number refused")
                 + ("" if control else f"; the finite control {CONTROL} was NOT accepted")
                 + (f"; no answer to {unanswered}" if unanswered else "")
                 + f"; {echoed} call(s) forwarded to the upstream (1 expected: the control)",
                 late=f"no answer to {unanswered}" if unanswered else None)


@gateway_case("gw-stdio-nonfinite-arguments", 6)
def nonfinite_arguments_stdio(ctx: CaseContext) -> Check:
    """Raw JSON-RPC over stdio: ``NaN``, ``Infinity``, ``-Infinity`` and ``1e999`` in call
    arguments are refused, never forwarded (gateway item 6; before the fix they were
    forwarded as null)."""
    pipe = start_stdio(ctx, serve_args(ctx, upstream(ctx)))
    return guarded(ctx, pipe, lambda: _nonfinite_check(ctx, *_nonfinite_stdio(pipe)))


@gateway_case("gw-http-nonfinite-arguments", 6)
def nonfinite_arguments_http(ctx: CaseContext) -> Check:
    """Raw 2026-07-28 requests over ``--http``: ``NaN``, ``Infinity``, ``-Infinity`` and
    ``1e999`` in call arguments are refused, never forwarded (gateway item 6)."""
    gw = start_http(ctx, serve_args(ctx, upstream(ctx)))
    if gw.running is None:
        return not_listening(gw)
    seen = Seen()

    async def scenario() -> Check:
        found = await asyncio.to_thread(_nonfinite_http, gw.host, gw.port, seen)
        return _nonfinite_check(ctx, *found)

    return run_http(ctx, gw, seen, scenario)


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

    return guarded(ctx, pipe, body)


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
    return Check(not ping.is_error and not left, f"ping {kind(ping)}; "
                 + (f"left behind: {', '.join(left[:3])}" if left else "nothing left behind"))
