"""The gateway section of ``hyperplan bench faults``, items 1 and 2 of issue 36: one client
never reads or changes another's conversation, and an HTTP gateway serves only the requests it
should (Host and Origin checked on every loopback spelling, a bearer token, no remote gateway
without one), every request with an id answered. Items 3-4 are in
:mod:`~hyperplan.faults.gateway_calls`, 5-6 in :mod:`~hyperplan.faults.gateway_faults`.

Every case runs the real ``python -m hyperplan serve`` as a step (stopped by the case, by PID)
and talks to it with the official SDK client in its default mode (2026-07-28, no session) or
with raw requests carrying the headers an attacker would send. An isolation break counts when
one client sees another's held values or tool list, or is refused because of another's
selection; an authentication bypass when a request that had to be refused got a result.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import string
import uuid
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from hyperplan.faults.common import case, expect_error
from hyperplan.faults.gateway_drive import (
    CONVERSATION_META,
    LEGACY,
    Answer,
    HttpGateway,
    RawReply,
    Seen,
    call,
    graph_ready,
    held,
    http_client,
    list_names,
    modern_body,
    raw_post,
    run_async,
    serve_args,
    start_http,
    tool_text,
)
from hyperplan.faults.runner import CaseContext
from hyperplan.faults.verdict import Check, one_line

BOOKSTORE = "python:hyperplan.examples.bookstore"
REQUEST = "log in, add the book Dune to a cart and pay"
ALICE = {"username": "alice", "password": "open sesame"}
GATEWAY = "gateway"
FLOOD = 1050  # requests with made-up ids (the issue: 1,001 evicted a live conversation)


def random_secret(size: int = 40) -> str:
    """A fresh secret of letters and digits (no fixed part: any 6 characters of it found
    anywhere are a leak)."""
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(size))


def gateway_case(name: str, item: int, *, timed: bool = False
                 ) -> Callable[[Callable[[CaseContext], Check]], Callable[[CaseContext], Check]]:
    """Register a case of the gateway section (fault item ``item`` of issue 36)."""
    return case(name, item, timed=timed, section=GATEWAY)


def not_listening(gw: HttpGateway) -> Check:
    """The check of a case whose gateway never listened (the step says why)."""
    stderr = one_line(gw.step.stderr, 160) if gw.step else ""
    return Check(False, f"the gateway never listened on {gw.host}:{gw.port} "
                 f"({stderr or 'no stderr'})")


def run_http(ctx: CaseContext, gw: HttpGateway, seen: Seen,
             scenario: Callable[[], Awaitable[Check]]) -> Check:
    """Run a client scenario against a listening gateway, then stop the gateway; what the
    clients received is searched for secrets, a client left waiting is a hang."""
    assert gw.running is not None
    try:
        check = run_async(scenario)
    except TimeoutError:
        check = Check(False, "the gateway did not answer", late="a client waited 40 s")
    except Exception as exc:  # the client failed: reported, never hidden
        check = Check(False, f"the client failed: {_error(exc)}")
    finally:
        ctx.stop(gw.running)
    return replace(check, places={**check.places, **seen.places()})


def _error(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return one_line(f"{type(exc).__name__}: {exc}", 160)


async def _warm(gw: HttpGateway, seen: Seen) -> bool:
    """Wait (with a client of its own) until find_tools uses the state (the graph built)."""
    async with http_client(gw.url) as client:
        return await graph_ready(client, seen)


def _shows_alice(answer: Answer) -> bool:
    return "tok-alice" in answer.text or any("access_token" in h for h in held(answer))


# -- item 1: one conversation per client ----------------------------------------------------------

@gateway_case("gw-http-two-clients-isolated", 1)
def two_clients_isolated(ctx: CaseContext) -> Check:
    """Two official SDK clients in their default mode (2026-07-28, no session) on one
    ``serve --http``: A logs in, then B's ``find_tools`` must not show A's held access token
    (gateway item 1; before the fix they shared one conversation)."""
    gw = start_http(ctx, serve_args(ctx, BOOKSTORE))
    if gw.running is None:
        return not_listening(gw)
    seen = Seen()

    async def scenario() -> Check:
        if not await _warm(gw, seen):
            return Check(False, "the graph was not built within 20 s")
        async with http_client(gw.url) as a, http_client(gw.url) as b:
            found = await call(a, seen, "find_tools", {"request": REQUEST})
            await call(a, seen, "call_tool", {"name": "login", "arguments": ALICE}, found.token)
            theirs = await call(b, seen, "find_tools", {"request": REQUEST})
            mine = await call(a, seen, "find_tools", {"request": REQUEST}, found.token)
        breaks = int(_shows_alice(theirs))
        kept = _shows_alice(mine)
        return Check(kept, f"B {'sees' if breaks else 'does not see'} A's access token; A's own "
                     f"conversation {'keeps' if kept else 'LOST'} it (token "
                     f"{'returned' if found.token else 'NOT returned'})",
                     isolation_breaks=breaks)

    return run_http(ctx, gw, seen, scenario)


@gateway_case("gw-http-narrow-lists-isolated", 1)
def narrow_lists_isolated(ctx: CaseContext) -> Check:
    """Narrow mode over ``--http``, two default SDK clients: B's ``find_tools`` must not
    change A's tool list, and A's next call of a tool A selected must not be refused
    ``not_selected`` (gateway item 1)."""
    gw = start_http(ctx, serve_args(ctx, BOOKSTORE, mode="narrow"))
    if gw.running is None:
        return not_listening(gw)
    seen = Seen()

    async def scenario() -> Check:
        if not await _warm(gw, seen):
            return Check(False, "the graph was not built within 20 s")
        async with http_client(gw.url) as a, http_client(gw.url) as b:
            found = await call(a, seen, "find_tools", {"request": "log in to the bookstore"})
            before = await list_names(a, seen, found.token)
            await call(b, seen, "find_tools", {"request": "search for a book by its title"})
            after = await list_names(a, seen, found.token)
            login = await call(a, seen, "login", ALICE, found.token)
        problems = []
        if after != before:
            problems.append(f"A's list changed {before} -> {after}")
        if login.kind == "not_selected":
            problems.append("A's login refused not_selected")
        ok = "login" in before and not login.is_error
        return Check(ok, "; ".join(problems) or f"A's list {before} kept, login "
                     f"{'ran' if not login.is_error else 'failed: ' + one_line(login.text, 80)}",
                     isolation_breaks=len(problems))

    return run_http(ctx, gw, seen, scenario)


def _legacy_login(gw: HttpGateway, seen: Seen, username: str) -> str | None:
    """A handshake-era client over raw HTTP that logs in as ``username``: its session id."""
    headers = _legacy_session(gw, seen)
    if headers is None:
        return None
    raw_post(gw.host, gw.port, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "call_tool", "arguments": {"name": "login", "arguments": {
            "username": username, "password": "open sesame"}}}}, headers, seen=seen)
    return headers["mcp-session-id"]


def _find(gw: HttpGateway, seen: Seen, headers: dict[str, str] | None = None,
          meta: dict[str, str] | None = None, legacy: bool = False) -> RawReply:
    if legacy:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
            "name": "find_tools", "arguments": {"request": REQUEST}}}
    else:
        body = modern_body(9, "tools/call", {"name": "find_tools",
                                             "arguments": {"request": REQUEST}}, meta)
    return raw_post(gw.host, gw.port, body, headers, seen=seen)


def _reads_victim(reply: RawReply) -> bool:
    """Whether a find_tools answer shows a victim's token or a held access token."""
    text = tool_text(reply.result(9))
    try:
        values = json.loads(text).get("held") or []
    except (ValueError, AttributeError):
        values = []
    return "tok-alice" in text or "tok-bob" in text or any(
        "access_token" in str(v) for v in values)


@gateway_case("gw-http-forged-ids-read-nothing", 1)
def forged_ids_read_nothing(ctx: CaseContext) -> Check:
    """Requests carrying a victim's ``Mcp-Session-Id``, a made-up one, or a random
    conversation token read nothing of the victims' conversations (a default SDK client and
    a handshake-era client, both logged in) (gateway item 1)."""
    gw = start_http(ctx, serve_args(ctx, BOOKSTORE))
    if gw.running is None:
        return not_listening(gw)
    seen = Seen()

    async def scenario() -> Check:
        if not await _warm(gw, seen):
            return Check(False, "the graph was not built within 20 s")
        async with http_client(gw.url) as a:
            found = await call(a, seen, "find_tools", {"request": REQUEST})
            await call(a, seen, "call_tool", {"name": "login", "arguments": ALICE}, found.token)
            session = await asyncio.to_thread(_legacy_login, gw, seen, "bob")
            forged = secrets.token_urlsafe(24)
            attempts = {
                "the victim's Mcp-Session-Id": ({"mcp-session-id": session or "none"}, None),
                "a made-up Mcp-Session-Id": ({"mcp-session-id": uuid.uuid4().hex}, None),
                "a random conversation token": (None, {CONVERSATION_META: forged}),
                "no id at all": (None, None)}
            replies = {what: await asyncio.to_thread(_find, gw, seen, headers, meta)
                       for what, (headers, meta) in attempts.items()}
        broken = [what for what, reply in replies.items() if _reads_victim(reply)]
        adopted = forged in tool_text(replies["a random conversation token"].result(9))
        # each is served (with a conversation of its own): a refusal would prove nothing
        refused = [what for what, reply in replies.items() if reply.result(9) is None]
        ok = session is not None and not adopted and not refused
        note = "; the made-up token was adopted, not replaced" if adopted else ""
        note += "" if session else "; the handshake-era victim got no session id"
        note += f"; not served: {', '.join(refused)}" if refused else ""
        return Check(ok, (f"read a victim's values with {', '.join(broken)}" if broken
                          else "no forged id read anything") + note,
                     isolation_breaks=len(broken))

    return run_http(ctx, gw, seen, scenario)


def _flood(gw: HttpGateway, count: int) -> int:
    """``count`` find_tools requests with a made-up session id, then ``count`` with a made-up
    conversation token; how many were answered at all."""
    def one(i: int) -> bool:
        if i < count:
            reply = _find(gw, Seen(), headers={"mcp-session-id": uuid.uuid4().hex})
        else:
            reply = _find(gw, Seen(), meta={CONVERSATION_META: secrets.token_urlsafe(24)})
        return reply.status < 500 and bool(reply.messages)

    with ThreadPoolExecutor(8) as pool:
        return sum(pool.map(one, range(2 * count)))


@gateway_case("gw-http-random-ids-no-eviction", 1, timed=True)
def random_ids_no_eviction(ctx: CaseContext) -> Check:
    """1,050 requests with made-up session ids, then 1,050 with made-up conversation tokens
    do not make the gateway forget a live default client's conversation (gateway item 1;
    before the fix 1,001 did)."""
    gw = start_http(ctx, serve_args(ctx, BOOKSTORE))
    if gw.running is None:
        return not_listening(gw)
    seen = Seen()

    async def scenario() -> Check:
        if not await _warm(gw, seen):
            return Check(False, "the graph was not built within 20 s")
        async with http_client(gw.url) as a:
            found = await call(a, seen, "find_tools", {"request": REQUEST})
            await call(a, seen, "call_tool", {"name": "login", "arguments": ALICE}, found.token)
            before = _shows_alice(await call(a, seen, "find_tools", {"request": REQUEST},
                                             found.token))
            answered = await asyncio.to_thread(_flood, gw, FLOOD)
            after = _shows_alice(await call(a, seen, "find_tools", {"request": REQUEST},
                                            found.token))
        lost = before and not after
        state = ("kept" if after else "FORGOTTEN") if before else "never kept"
        return Check(before and after, f"A's held access token {state} after {2 * FLOOD} "
                     f"requests with made-up ids ({answered} answered)",
                     isolation_breaks=int(lost))

    return run_http(ctx, gw, seen, scenario)


# -- item 2: who may call --------------------------------------------------------------------------

def _served(reply: RawReply) -> bool:
    """Whether a request got a tool result (it ran)."""
    return reply.status < 300 and reply.result(9) is not None


def _count_served(gw: HttpGateway, seen: Seen,
                  attempts: dict[str, dict[str, str]]) -> list[str]:
    return [what for what, headers in attempts.items() if _served(_find(gw, seen, headers))]


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
        right = [h for h in right_hosts
                 if _served(await asyncio.to_thread(_find, gw, seen, {"host": f"{h}:{gw.port}"}))]
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
        plain = _served(await asyncio.to_thread(_find, gw, seen))
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
    served = _served(_find(HttpGateway(None, "127.0.0.1", gw.port), seen))
    ctx.stop(gw.running)
    return Check(False, "it listened on every interface without a token"
                 + (" and served a request without one" if served else ""),
                 auth_bypasses=int(served), places=seen.places())


TASKS = (("search for a book by its title", "search_books", {"query": "dune"}),
         ("log in to the bookstore", "login", ALICE))


async def _select_and_call(url: str, seen: Seen, task: int, rounds: int) -> list[str]:
    """One default client in narrow mode: ``rounds`` times, in a new conversation (its held
    output would drop the tool from the list), select its tool, then - when its own list
    shows it - call it; what went wrong (``not listed``, or the failed call's kind)."""
    request, tool, arguments = TASKS[task % len(TASKS)]
    failed = []
    async with http_client(url) as client:
        for _ in range(rounds):
            found = await call(client, seen, "find_tools", {"request": request})
            token = found.token
            if tool not in await list_names(client, seen, token):
                failed.append("not listed")
                continue
            answer = await call(client, seen, tool, arguments, token)
            if answer.is_error:
                failed.append(answer.kind or "tool_error")
    return failed


@gateway_case("gw-http-ten-clients-budget-one", 1)
def ten_clients_budget_one(ctx: CaseContext) -> Check:
    """Ten default SDK clients at once, narrow mode, ``--budget 1``: each selects its own
    tool, lists it and calls it, five times; the tool each selects alone is always in its
    list and never refused (gateway item 1; before the fix another client's selection
    replaced it: 9 of 200 calls refused ``not_selected``)."""
    gw = start_http(ctx, serve_args(ctx, BOOKSTORE, mode="narrow", extra=["--budget", "1"]))
    if gw.running is None:
        return not_listening(gw)
    seen = Seen()

    async def scenario() -> Check:
        if not await _warm(gw, seen):
            return Check(False, "the graph was not built within 20 s")
        alone = [await _select_and_call(gw.url, seen, i, 1) for i in range(len(TASKS))]
        runs = await asyncio.gather(*(_select_and_call(gw.url, seen, i, 5) for i in range(10)))
        failed = [kind for run in runs for kind in run]
        # when each client's tool is listed for it alone, a missing one was replaced by
        # another client's selection (else only a refused call of a listed tool tells)
        refused = failed.count("not_selected") + (0 if any(alone) else
                                                  failed.count("not listed"))
        note = "" if not any(alone) else f" (one after the other: {alone})"
        return Check(not failed, f"{len(failed)} of 50 rounds failed: "
                     f"{ {k: failed.count(k) for k in sorted(set(failed))} }{note}"
                     if failed else "all 50 calls ran", isolation_breaks=refused)

    return run_http(ctx, gw, seen, scenario)


def _legacy_session(gw: HttpGateway, seen: Seen) -> dict[str, str] | None:
    """A handshake-era session over raw HTTP: the headers its requests carry."""
    init = raw_post(gw.host, gw.port, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                       "params": {"protocolVersion": LEGACY, "capabilities": {},
                                                  "clientInfo": {"name": "v", "version": "1"}}},
                    {"mcp-protocol-version": LEGACY}, seen=seen)
    session = init.headers.get("mcp-session-id")
    if not session:
        return None
    headers = {"mcp-protocol-version": LEGACY, "mcp-session-id": session}
    raw_post(gw.host, gw.port, {"jsonrpc": "2.0", "method": "notifications/initialized"},
             headers, seen=seen)
    return headers


def _odd_ids(gw: HttpGateway, seen: Seen) -> tuple[list[str], int, int]:
    """Requests with odd ids, 2026-07-28 and in a handshake-era session: the silent ones,
    how many were tried, and how many of the same with a plain id (the controls) got a
    result."""
    legacy = _legacy_session(gw, seen)
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
        headers = _legacy_session(gw, seen)
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
