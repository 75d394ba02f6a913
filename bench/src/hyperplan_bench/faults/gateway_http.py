"""The gateway section of ``hyperplan bench faults``, item 2 of issue 36 and the HTTP side of
item 6: an HTTP gateway serves only the requests it should (Host and Origin checked on every
loopback spelling, a bearer token, no remote gateway without one), answers every request with
an id, and bounds the handshake-era sessions of a client (the oldest closed, idle ones
expired). The helpers are those of :mod:`~hyperplan_bench.faults.gateway_cases`.

An authentication bypass counts when a request that had to be refused got a result; every
case also sends the request that must be served (the right Host, no Origin, the right token),
so that a gateway refusing everything is not mistaken for one that checks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from hyperplan_bench.faults.common import expect_error
from hyperplan_bench.faults.gateway_cases import (
    BOOKSTORE,
    REQUEST,
    find_request,
    gateway_case,
    legacy_session,
    not_listening,
    random_secret,
    run_http,
)
from hyperplan_bench.faults.gateway_drive import (
    LEGACY,
    HttpGateway,
    RawReply,
    Seen,
    call,
    http_client,
    modern_body,
    raw_post,
    serve_args,
    start_http,
)
from hyperplan_bench.faults.runner import CaseContext
from hyperplan_bench.faults.verdict import Check

# -- item 2: who may call --------------------------------------------------------------------------

def _served(reply: RawReply) -> bool:
    """Whether a request got a tool result (it ran)."""
    return reply.status < 300 and reply.result(9) is not None


def _count_served(gw: HttpGateway, seen: Seen,
                  attempts: dict[str, dict[str, str]]) -> list[str]:
    return [what for what, headers in attempts.items() if _served(find_request(gw, seen, headers))]


def _rebinding(ctx: CaseContext, host: str, spelling: str, right_hosts: Sequence[str]) -> Check:
    """``--http SPELLING:PORT`` without ``--allow-remote``: refused at start (a clear error)
    or, if served, requests with a foreign Host or Origin refused."""
    gw = start_http(ctx, serve_args(ctx, BOOKSTORE), host=host, spelling=spelling,
                    expect=(0, 1))
    if gw.running is None:
        if gw.step is not None and gw.step.returncode == 1:
            return expect_error(gw.step, spelling, note="refused at start")
        return not_listening(gw)
    seen = Seen()
    evil = {"host": "evil.example", "origin": "http://evil.example"}
    attempts = {"Host and Origin evil.example": evil,
                "Host evil.example": {"host": "evil.example"},
                "Origin http://evil.example": {"origin": "http://evil.example"}}

    async def scenario() -> Check:
        served = await asyncio.to_thread(_count_served, gw, seen, attempts)
        right = [h for h in right_hosts if _served(await asyncio.to_thread(
            find_request, gw, seen, {"host": f"{h}:{gw.port}"}))]
        return Check(bool(right), (f"served: {', '.join(served)}" if served else
                                   "every foreign Host/Origin refused") +
                     ("" if right else "; the right Host was refused too"),
                     auth_bypasses=len(served))

    return run_http(ctx, gw, seen, scenario)


@gateway_case("gw-http-rebinding-127-0-0-2", 2)
def rebinding_127_0_0_2(ctx: CaseContext) -> Check:
    """``--http 127.0.0.2:PORT`` (loopback, another spelling): a request with ``Host:
    evil.example`` and ``Origin: http://evil.example`` must not run the tool (gateway
    item 2; before the fix rebinding protection was off)."""
    return _rebinding(ctx, "127.0.0.2", "127.0.0.2", ["127.0.0.2"])


@gateway_case("gw-http-rebinding-uppercase-localhost", 2)
def rebinding_localhost(ctx: CaseContext) -> Check:
    """``--http LOCALHOST:PORT``: foreign Host and Origin refused, or the spelling refused
    at start (gateway item 2)."""
    return _rebinding(ctx, "127.0.0.1", "LOCALHOST", ["localhost", "LOCALHOST", "127.0.0.1"])


@gateway_case("gw-http-rebinding-ipv6-long", 2)
def rebinding_ipv6(ctx: CaseContext) -> Check:
    """``--http [0:0:0:0:0:0:0:1]:PORT``: foreign Host and Origin refused, or the spelling
    refused at start (gateway item 2)."""
    return _rebinding(ctx, "::1", "[0:0:0:0:0:0:0:1]", ["[::1]", "[0:0:0:0:0:0:0:1]"])


@gateway_case("gw-http-foreign-origins", 2)
def foreign_origins(ctx: CaseContext) -> Check:
    """``--http 127.0.0.1:PORT`` with the right Host: a page of another origin - another
    port of localhost or 127.0.0.1, or evil.example - must not run the tool; no Origin (a
    non-browser client) is served (gateway item 2; before the fix any http://localhost:*
    origin was accepted)."""
    gw = start_http(ctx, serve_args(ctx, BOOKSTORE))
    if gw.running is None:
        return not_listening(gw)
    seen = Seen()
    attempts = {f"Origin {o}": {"origin": o} for o in
                ("http://localhost:1", "http://127.0.0.1:1", "http://evil.example")}

    async def scenario() -> Check:
        served = await asyncio.to_thread(_count_served, gw, seen, attempts)
        plain = _served(await asyncio.to_thread(find_request, gw, seen))
        return Check(plain, (f"served: {', '.join(served)}" if served else
                             "every foreign Origin refused") +
                     ("" if plain else "; a request without Origin was refused too"),
                     auth_bypasses=len(served))

    return run_http(ctx, gw, seen, scenario)


@gateway_case("gw-http-bearer-token", 2)
def bearer_token(ctx: CaseContext) -> Check:
    """``--auth-token-env GATEWAY_AUTH_TOKEN``: requests without a token, with a wrong one or
    a prefix of the right one are refused; the SDK client with the right one is served; the
    token is printed nowhere (gateway item 2; before the fix there was no authentication)."""
    token = ctx.secret(random_secret(), fragments=True)
    gw = start_http(ctx, serve_args(ctx, BOOKSTORE,
                                    extra=["--auth-token-env", "GATEWAY_AUTH_TOKEN"]),
                    env={"GATEWAY_AUTH_TOKEN": token})
    if gw.running is None:
        return not_listening(gw)
    seen = Seen()
    attempts = {"no token": {}, "a wrong token": {"authorization": "Bearer wrong-token-123"},
                "a prefix of the token": {"authorization": f"Bearer {token[:-1]}"},
                "the token as Basic": {"authorization": f"Basic {token}"}}

    async def scenario() -> Check:
        served = await asyncio.to_thread(_count_served, gw, seen, attempts)
        async with http_client(gw.url, {"authorization": f"Bearer {token}"}) as client:
            right = await call(client, seen, "find_tools", {"request": REQUEST})
        return Check(not right.is_error, (f"served: {', '.join(served)}" if served else
                                          "every request without the right token refused") +
                     ("" if not right.is_error else "; the right token was refused too"),
                     auth_bypasses=len(served))

    return run_http(ctx, gw, seen, scenario)


@gateway_case("gw-http-remote-needs-token", 2)
def remote_needs_token(ctx: CaseContext) -> Check:
    """``--http 0.0.0.0:PORT --allow-remote`` without a token is refused at start with one
    clear error line naming the token option (gateway item 2; before the fix it served
    anyone). If it listens, one request is tried and the gateway stopped at once."""
    gw = start_http(ctx, serve_args(ctx, BOOKSTORE, extra=["--allow-remote"]),
                    host="0.0.0.0", expect=(1,))
    if gw.running is None:
        if gw.step is None:
            return Check(False, "the gateway never started")
        return expect_error(gw.step, "token")
    seen = Seen()
    served = _served(find_request(HttpGateway(None, "127.0.0.1", gw.port), seen))
    ctx.stop(gw.running)
    return Check(False, "it listened on every interface without a token"
                 + (" and served a request without one" if served else ""),
                 auth_bypasses=int(served), places=seen.places())


def _odd_ids(gw: HttpGateway, seen: Seen) -> tuple[list[str], int, int]:
    """Requests with odd ids, 2026-07-28 and in a handshake-era session: the silent ones,
    how many were tried, and how many of the same with a plain id (the controls) got a
    result."""
    legacy = legacy_session(gw, seen)
    silent, tried = [], 0
    plain = raw_post(gw.host, gw.port, modern_body(7, "tools/list"), None, 20.0, seen)
    controls = int(plain.result(7) is not None)
    if legacy is not None:
        plain = raw_post(gw.host, gw.port, {"jsonrpc": "2.0", "id": 7, "method": "tools/list"},
                         legacy, 20.0, seen)
        controls += int(plain.result(7) is not None)
    for what, request_id in {"an object id": {"x": 1}, "an array id": [1],
                             "a boolean id": True, "a fractional id": 1.5}.items():
        bodies: list[tuple[str, dict[str, Any], dict[str, str] | None]] = [
            ("2026-07-28", modern_body(request_id, "tools/list"), None)]
        if legacy is not None:
            bodies.append(("session", {"jsonrpc": "2.0", "id": request_id,
                                       "method": "tools/list"}, legacy))
        for protocol, body, headers in bodies:
            tried += 1
            reply = raw_post(gw.host, gw.port, body, headers, 20.0, seen)
            if reply.status < 400 and not any("error" in m for m in reply.messages):
                silent.append(f"{what} ({protocol}: {reply.status})")
    return silent, tried, controls


@gateway_case("gw-http-odd-ids-answered", 2)
def odd_ids_answered(ctx: CaseContext) -> Check:
    """Raw requests over ``--http`` whose ``id`` is an object, an array, a boolean or a
    fraction - 2026-07-28 ones and in a handshake-era session - each get an answer (an HTTP
    or JSON-RPC error), never a silent ``202 Accepted`` that leaves the client waiting
    (gateway item 2, the HTTP side of item 6; before the fix an object id got a 202)."""
    gw = start_http(ctx, serve_args(ctx, BOOKSTORE))
    if gw.running is None:
        return not_listening(gw)
    seen = Seen()

    async def scenario() -> Check:
        silent, tried, controls = await asyncio.to_thread(_odd_ids, gw, seen)
        note = "" if controls == 2 else f"; only {controls} of 2 plain-id controls served"
        return Check(not silent and tried == 8 and controls == 2,
                     (f"no answer to {', '.join(silent)}" if silent
                      else f"all {tried} requests with odd ids answered with an error") + note,
                     late="a client left waiting" if silent else None)

    return run_http(ctx, gw, seen, scenario)


ABANDONED = 100  # handshake-era sessions opened and never closed (default bound: 64)


def _abandon_sessions(gw: HttpGateway, count: int) -> list[str]:
    """``count`` handshake-era sessions opened (initialize) and never closed: their ids."""
    seen, ids = Seen(), []
    for _ in range(count):
        headers = legacy_session(gw, seen)
        if headers is not None:
            ids.append(headers["mcp-session-id"])
    return ids


def _alive(gw: HttpGateway, session: str) -> bool:
    """Whether a handshake-era session still answers a request."""
    headers = {"mcp-protocol-version": LEGACY, "mcp-session-id": session}
    reply = raw_post(gw.host, gw.port, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
                     headers)
    return reply.result(3) is not None


@gateway_case("gw-http-abandoned-sessions-bounded", 6)
def abandoned_sessions_bounded(ctx: CaseContext) -> Check:
    """One client opens 100 handshake-era sessions and abandons them, default options: the
    gateway keeps a bounded number per client (the oldest closed), and a new client is still
    served (gateway item 6; before the fix nothing was bounded per client: 10,000 abandoned
    sessions made every new client get 503)."""
    gw = start_http(ctx, serve_args(ctx, BOOKSTORE))
    if gw.running is None:
        return not_listening(gw)
    seen = Seen()

    async def scenario() -> Check:
        ids = await asyncio.to_thread(_abandon_sessions, gw, ABANDONED)
        if len(ids) < ABANDONED:
            return Check(False, f"only {len(ids)} of {ABANDONED} sessions opened")
        first = await asyncio.to_thread(_alive, gw, ids[0])
        last = await asyncio.to_thread(_alive, gw, ids[-1])
        async with http_client(gw.url, mode="legacy") as fresh:
            served = not (await call(fresh, seen, "find_tools", {"request": REQUEST})).is_error
        return Check(not first and last and served,
                     f"after {ABANDONED} abandoned sessions the first is "
                     f"{'STILL OPEN' if first else 'closed'}, the last "
                     f"{'open' if last else 'CLOSED'}; a new client "
                     f"{'served' if served else 'NOT served'}")

    return run_http(ctx, gw, seen, scenario)


@gateway_case("gw-http-idle-session-expires", 6)
def idle_session_expires(ctx: CaseContext) -> Check:
    """``--session-idle-timeout 1``: a handshake-era session left idle is closed after it,
    one in use is not (gateway item 6; before the fix abandoned sessions were kept for 30
    minutes)."""
    gw = start_http(ctx, serve_args(ctx, BOOKSTORE, extra=["--session-idle-timeout", "1"]))
    if gw.running is None:
        return not_listening(gw)
    seen = Seen()

    async def scenario() -> Check:
        idle, busy = await asyncio.to_thread(_abandon_sessions, gw, 2)
        kept = []
        for _ in range(6):  # 3 s: the busy one used every half second
            await asyncio.sleep(0.5)
            kept.append(await asyncio.to_thread(_alive, gw, busy))
        expired = not await asyncio.to_thread(_alive, gw, idle)
        return Check(expired and all(kept), f"the idle session "
                     f"{'closed' if expired else 'STILL OPEN'} after 3 s; the busy one "
                     f"{'kept' if all(kept) else 'CLOSED while in use'}")

    return run_http(ctx, gw, seen, scenario)
