"""The gateway section of ``hyperplan bench faults``, item 1 of issue 36: one client never
reads or changes another's conversation, whatever ids and tokens the others send. This module
also holds the section's shared helpers; item 2 (and the HTTP side of 6) is in
:mod:`~hyperplan_bench.faults.gateway_http`, items 3-4 in
:mod:`~hyperplan_bench.faults.gateway_calls`,
5-6 in :mod:`~hyperplan_bench.faults.gateway_faults`.

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
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from hyperplan_bench.faults.common import case
from hyperplan_bench.faults.gateway_drive import (
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
from hyperplan_bench.faults.runner import CaseContext
from hyperplan_bench.faults.verdict import Check, one_line

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


def _bookstore_case(ctx: CaseContext,
                    scenario: Callable[[HttpGateway, Seen], Awaitable[Check]],
                    **serve: Any) -> Check:
    """``serve --http`` of the bookstore (``serve``: more of :func:`serve_args`), its graph
    built, then ``scenario``; a gateway that does not listen is its own verdict."""
    gw = start_http(ctx, serve_args(ctx, BOOKSTORE, **serve))
    if gw.running is None:
        return not_listening(gw)
    seen = Seen()

    async def warmed() -> Check:
        if not await _warm(gw, seen):
            return Check(False, "the graph was not built within 20 s")
        return await scenario(gw, seen)

    return run_http(ctx, gw, seen, warmed)


def _shows_alice(answer: Answer) -> bool:
    return "tok-alice" in answer.text or any("access_token" in h for h in held(answer))


def legacy_session(gw: HttpGateway, seen: Seen) -> dict[str, str] | None:
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


# -- item 1: one conversation per client ----------------------------------------------------------

@gateway_case("gw-http-two-clients-isolated", 1)
def two_clients_isolated(ctx: CaseContext) -> Check:
    """Two official SDK clients in their default mode (2026-07-28, no session) on one
    ``serve --http``: A logs in, then B's ``find_tools`` must not show A's held access token
    (gateway item 1; before the fix they shared one conversation)."""
    async def scenario(gw: HttpGateway, seen: Seen) -> Check:
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

    return _bookstore_case(ctx, scenario)


@gateway_case("gw-http-narrow-lists-isolated", 1)
def narrow_lists_isolated(ctx: CaseContext) -> Check:
    """Narrow mode over ``--http``, two default SDK clients: B's ``find_tools`` must not
    change A's tool list, and A's next call of a tool A selected must not be refused
    ``not_selected`` (gateway item 1)."""
    async def scenario(gw: HttpGateway, seen: Seen) -> Check:
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

    return _bookstore_case(ctx, scenario, mode="narrow")


def _legacy_login(gw: HttpGateway, seen: Seen, username: str) -> str | None:
    """A handshake-era client over raw HTTP that logs in as ``username``: its session id."""
    headers = legacy_session(gw, seen)
    if headers is None:
        return None
    raw_post(gw.host, gw.port, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "call_tool", "arguments": {"name": "login", "arguments": {
            "username": username, "password": "open sesame"}}}}, headers, seen=seen)
    return headers["mcp-session-id"]


def find_request(gw: HttpGateway, seen: Seen, headers: dict[str, str] | None = None,
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
    async def scenario(gw: HttpGateway, seen: Seen) -> Check:
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
            replies = {what: await asyncio.to_thread(find_request, gw, seen, headers, meta)
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

    return _bookstore_case(ctx, scenario)


def _flood(gw: HttpGateway, count: int) -> int:
    """``count`` find_tools requests with a made-up session id, then ``count`` with a made-up
    conversation token; how many were answered at all."""
    def one(i: int) -> bool:
        if i < count:
            reply = find_request(gw, Seen(), headers={"mcp-session-id": uuid.uuid4().hex})
        else:
            reply = find_request(gw, Seen(), meta={CONVERSATION_META: secrets.token_urlsafe(24)})
        return reply.status < 500 and bool(reply.messages)

    with ThreadPoolExecutor(8) as pool:
        return sum(pool.map(one, range(2 * count)))


@gateway_case("gw-http-random-ids-no-eviction", 1, timed=True)
def random_ids_no_eviction(ctx: CaseContext) -> Check:
    """1,050 requests with made-up session ids, then 1,050 with made-up conversation tokens
    do not make the gateway forget a live default client's conversation (gateway item 1;
    before the fix 1,001 did)."""
    async def scenario(gw: HttpGateway, seen: Seen) -> Check:
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

    return _bookstore_case(ctx, scenario)


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
    async def scenario(gw: HttpGateway, seen: Seen) -> Check:
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

    return _bookstore_case(ctx, scenario, mode="narrow", extra=["--budget", "1"])
