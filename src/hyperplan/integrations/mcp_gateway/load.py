"""The gateway under load: ``hyperplan bench gateway-load``.

Starts the real command, ``python -m hyperplan serve --http PORT --embedder hashing
python:hyperplan.examples.bookstore`` (sources, ``--mode``, extra options, the Python
executable, working directory and ``PYTHONPATH`` configurable, so the same benchmark runs
against another checkout), waits until its graph is ready, then runs ``clients`` concurrent
official SDK clients (:class:`mcp.Client` over streamable HTTP, by default in the SDK's own
default mode, which negotiates the 2026-07-28 protocol) that each make ``requests`` mixed
requests after a few unmeasured warm-up ones:

* ``find_tools`` (one of a few task descriptions), ``tools/list``;
* ``read``: ``search_books`` (its answer checked), ``write``: ``add_to_cart`` (a cart id);
* ``invalid``: ``add_to_cart`` with a number as ``book_id``, which the gateway must refuse
  as ``invalid_arguments``: that refusal is the right answer, counted as an *expected
  refusal*, not an error.

In search mode the tools are called through ``call_tool``. In narrow mode they are called
directly and, as a client does, only when the client's own tool list shows them: a tool not
listed is first asked for with ``find_tools`` (then ``tools/list``), and the list is read again
after each call; a ``not_selected`` refusal of a tool the list showed is an error (another
client's traffic changed this client's list).

Each client logs in once (its own user) and passes the conversation token ``find_tools``
returned back in every request's ``_meta`` under :data:`CONVERSATION_META` (a gateway that
predates tokens returns none and ignores ``_meta``: the same benchmark runs on both).

Reported per run: requests/s over the measured phase, errors by kind (an exception or
timeout, a tool error the request did not deserve, a wrong answer, an invalid request that
was accepted), latency p50/p95/p99 per request kind, the gateway's RSS (``/proc/PID/status``
of the process started here; its children separately) when listening, when ready, after the
warm-up and at the end, RSS growth per 1,000 requests and the gateway's CPU seconds. Linux
only for RSS and CPU (``/proc``); None elsewhere.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hyperplan.integrations.mcp_gateway.load_process import Gateway, checkout_of, cpu_seconds
from hyperplan.integrations.mcp_gateway.load_report import (
    run_report,
    summarize,
)

DEFAULT_SOURCES = ("python:hyperplan.examples.bookstore",)
CONVERSATION_META = "io.hyperplan/conversation"
#: Request kinds and their share of the mixed requests.
MIX = (("find_tools", 0.15), ("tools/list", 0.10), ("read", 0.35), ("write", 0.25),
       ("invalid", 0.15))
FIND_REQUESTS = ("log in, add the book Dune to a cart and pay", "search the catalogue for Emma",
                 "add a book to my shopping cart", "find books whose title contains Dune")
READS = {"dune": ["b1", "b3"], "emma": ["b2"], "messiah": ["b3"], "zzz": []}
TOOL_OF = {"read": "search_books", "write": "add_to_cart", "invalid": "add_to_cart"}
#: narrow mode: the find_tools request that brings a tool into a client's list
SELECTS = {"search_books": "search the catalogue for books whose title contains a word",
           "add_to_cart": "add a book to my shopping cart", "login": "log in to the bookstore"}
PASSWORD = "open sesame"  # the bookstore example's (a public constant, not a secret)


@dataclass(frozen=True)
class LoadConfig:
    """One load run's settings. ``protocol``: the SDK client's ``mode`` (``auto``, the SDK
    default, negotiates 2026-07-28; ``legacy`` forces the handshake); ``serve_args``: more
    options of ``hyperplan serve``; ``pythonpath``/``cwd``: the gateway's, for another
    checkout; ``cache_dir``: the gateway's ``HYPERPLAN_CACHE_DIR`` (None: a fresh one)."""

    clients: int = 20
    requests: int = 200
    warmup: int = 5
    sources: tuple[str, ...] = DEFAULT_SOURCES
    mode: str = "search"
    protocol: str = "auto"
    embedder: str = "hashing"
    serve_args: tuple[str, ...] = ()
    python: str = sys.executable
    cwd: str | None = None
    pythonpath: str | None = None
    cache_dir: str | None = None
    ready_timeout: float = 180.0
    request_timeout: float = 60.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.clients < 1 or self.requests < 1 or self.warmup < 0:
            raise ValueError("clients and requests must be >= 1, warmup >= 0")
        if self.mode not in ("search", "narrow"):
            raise ValueError(f"mode must be search or narrow, got {self.mode!r}")


@dataclass
class Tally:
    """What one phase of the clients saw: latencies per kind, errors and refusals."""

    seconds: dict[str, list[float]] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)
    refusals: Counter[str] = field(default_factory=Counter)

    def add(self, kind: str, seconds: float, error: str | None, refused: bool) -> None:
        self.seconds.setdefault(kind, []).append(seconds)
        if error is not None:
            self.errors[f"{kind}: {error}"] += 1
        elif refused:
            self.refusals[kind] += 1


# the clients ---------------------------------------------------------------------------


class Gate:
    """Every client arrives once (warm-up done, or failed to connect); the measured phase
    starts for all at once when :attr:`go` is set."""

    def __init__(self, parties: int) -> None:
        self.waiting = parties
        self.all_arrived = asyncio.Event()
        self.go = asyncio.Event()

    def arrive(self) -> None:
        self.waiting -= 1
        if self.waiting <= 0:
            self.all_arrived.set()


def schedule(count: int, rng: random.Random) -> list[str]:
    """``count`` request kinds in :data:`MIX` proportions (the rest reads), shuffled."""
    kinds = [kind for kind, share in MIX for _ in range(math.floor(share * count))]
    kinds += ["read"] * (count - len(kinds))
    rng.shuffle(kinds)
    return kinds


def result_text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def error_kind(result: Any) -> str:
    """The gateway's ``error_kind`` of a tool error (structured content), or ``tool_error``."""
    structured = getattr(result, "structured_content", None)
    if isinstance(structured, dict) and isinstance(structured.get("error_kind"), str):
        return str(structured["error_kind"])
    return "tool_error"


def exception_kind(exc: BaseException) -> str:
    """An exception as an error kind: ``timeout``, ``mcp_error CODE`` or its type name."""
    if isinstance(exc, TimeoutError):
        return "timeout"
    code = getattr(exc, "code", None)
    if type(exc).__name__ == "MCPError" and isinstance(code, int):
        return f"mcp_error {code}"
    return f"exception {type(exc).__name__}"


Check = Callable[[Any], "tuple[str | None, bool]"]


class LoadClient:
    """One SDK client's requests (module doc); its conversation token, once ``find_tools``
    returned one, travels in every request's ``_meta``."""

    def __init__(self, index: int, client: Any, config: LoadConfig) -> None:
        self.index = index
        self.client = client
        self.config = config
        self.rng = random.Random(config.seed * 1_000_003 + index)
        self.token: str | None = None
        self.tokens_changed = 0
        self.not_ready = 0
        self.access_token = ""
        self.listed: set[str] = set()  # narrow mode: this client's tool list as last seen
        self.samples: dict[str, str] = {}  # an error kind -> the first message seen

    @property
    def meta(self) -> dict[str, Any] | None:
        return None if self.token is None else {CONVERSATION_META: self.token}

    def call(self, name: str, arguments: dict[str, Any]) -> Awaitable[Any]:
        """A tool call: direct for find_tools and in narrow mode, else through call_tool."""
        if self.config.mode == "search" and name != "find_tools":
            arguments, name = {"name": name, "arguments": arguments}, "call_tool"
        return self.client.call_tool(name, arguments, meta=self.meta)  # type: ignore[no-any-return]

    async def step(self, kind: str, tally: Tally) -> None:
        """A scheduled request. In narrow mode, as a client does: a tool not in this
        client's list is first asked for (:meth:`select`), and the list is read again after
        each call (the gateway selects again from what the call returned)."""
        tool = TOOL_OF.get(kind)
        if self.config.mode != "narrow" or tool is None:
            return await self.one(kind, tally)
        if tool not in self.listed:
            await self.select(tool, tally)
        await self.one(kind, tally, unlisted=tool not in self.listed)
        await self.one("tools/list", tally)

    async def select(self, tool: str, tally: Tally) -> None:
        """Narrow mode: find_tools with a request for ``tool``, then tools/list (what a
        client does on list_changed)."""
        await self.one("find_tools", tally, SELECTS[tool])
        await self.one("tools/list", tally)

    async def one(self, kind: str, tally: Tally, text: str | None = None,
                  unlisted: bool = False) -> None:
        """One request of ``kind``, timed and judged into ``tally``. ``unlisted``: the tool
        is not in this client's list, so a ``not_selected`` refusal is deserved."""
        send, check = self.request(kind, text)
        started = time.perf_counter()
        try:
            result = await asyncio.wait_for(send(), self.config.request_timeout)
        except Exception as exc:  # every failure is counted, by kind
            tally.add(kind, time.perf_counter() - started, exception_kind(exc), False)
            self.samples.setdefault(exception_kind(exc), repr(exc)[:300])
            return
        seconds = time.perf_counter() - started
        error, refused = check(result)
        if unlisted and error == "tool error not_selected":
            error, refused = None, True
        if error is not None:
            self.samples.setdefault(error, result_text(result)[:300])
        tally.add(kind, seconds, error, refused)

    def request(self, kind: str, text: str | None = None,
                ) -> tuple[Callable[[], Awaitable[Any]], Check]:
        """How to send a request of ``kind`` (``text``: find_tools' request) and how to judge
        its answer."""
        if kind == "find_tools":
            request = text or self.rng.choice(FIND_REQUESTS)
            return lambda: self.call("find_tools", {"request": request}), self.check_found
        if kind == "tools/list":
            return lambda: self.client.list_tools(meta=self.meta), self.check_listed
        if kind == "read":
            query = self.rng.choice(sorted(READS))
            return (lambda: self.call("search_books", {"query": query}),
                    lambda r: _expect(r, lambda text: json.loads(text) == READS[query]))
        book = self.rng.choice(sorted(READS["dune"] + READS["emma"]))
        if kind == "write":
            args = {"book_id": book, "access_token": self.access_token}
            return (lambda: self.call("add_to_cart", args),
                    lambda r: _expect(r, lambda text: text.startswith("c")))
        bad = {"book_id": 7, "access_token": self.access_token}
        return lambda: self.call("add_to_cart", bad), _refused

    def check_found(self, result: Any) -> tuple[str | None, bool]:
        """A find_tools answer: tools listed; its conversation token is kept."""
        if result.is_error:
            return f"tool error {error_kind(result)}", False
        try:
            data = json.loads(result_text(result))
        except ValueError:
            return "wrong answer", False
        if not isinstance(data, dict) or not isinstance(data.get("tools"), list):
            return "wrong answer", False
        token = data.get("conversation")
        if isinstance(token, str) and token:
            self.tokens_changed += self.token is not None and token != self.token
            self.token = token
        self.not_ready += not data.get("ready", False)
        if isinstance(data.get("listed"), list):
            self.listed = {str(name) for name in data["listed"]}
        return None, False

    def check_listed(self, result: Any) -> tuple[str | None, bool]:
        names = {tool.name for tool in result.tools}
        self.listed = names - {"find_tools"}
        wanted = {"find_tools", "call_tool"} if self.config.mode == "search" else {"find_tools"}
        return (None if wanted <= names else "wrong answer"), False

    async def login(self, tally: Tally) -> None:
        """find_tools (the token) and a login as this client's own user, unmeasured."""
        await self.one("find_tools", tally)
        if self.config.mode == "narrow":
            await self.select("login", tally)
        started = time.perf_counter()
        result = await self.call("login", {"username": f"load-{self.index}",
                                           "password": PASSWORD})
        error, _ = _expect(result, lambda text: "access_token" in json.loads(text))
        if error is None:
            self.access_token = json.loads(result_text(result))["access_token"]
        tally.add("login", time.perf_counter() - started, error, False)


def _expect(result: Any, good: Callable[[str], bool]) -> tuple[str | None, bool]:
    if result.is_error:
        return f"tool error {error_kind(result)}", False
    try:
        return (None if good(result_text(result)) else "wrong answer"), False
    except (ValueError, TypeError, AttributeError):
        return "wrong answer", False


def _refused(result: Any) -> tuple[str | None, bool]:
    """An invalid argument: refused as invalid_arguments is right (not an error)."""
    if not result.is_error:
        return "invalid arguments accepted", False
    kind = error_kind(result)
    return (None, True) if kind == "invalid_arguments" else (f"tool error {kind}", False)


async def client_task(index: int, url: str, config: LoadConfig, gate: Gate,
                      warm: Tally, measured: Tally) -> dict[str, Any]:
    """One client: connect, log in, warm up, wait for the gate, make the measured requests."""
    from mcp import Client

    arrived = False
    info: dict[str, Any] = {"protocol": None, "token": False, "tokens_changed": 0,
                            "not_ready": 0, "samples": {}}
    try:
        async with Client(url, mode=config.protocol, cache=None,
                          read_timeout_seconds=config.request_timeout) as client:
            load = LoadClient(index, client, config)
            info["protocol"] = client.protocol_version
            await load.login(warm)
            for kind in schedule(config.warmup, load.rng):
                await load.step(kind, warm)
            arrived = True
            gate.arrive()
            await gate.go.wait()
            for kind in schedule(config.requests, load.rng):
                await load.step(kind, measured)
            info.update(token=load.token is not None, tokens_changed=load.tokens_changed,
                        not_ready=load.not_ready, samples=load.samples)
    except Exception as exc:  # a client that could not connect or close is counted
        (measured if arrived else warm).errors[f"client: {exception_kind(exc)}"] += 1
        info["samples"] = {exception_kind(exc): repr(exc)[:300]}
    finally:
        if not arrived:
            gate.arrive()
    return info


async def wait_ready(gateway: Gateway, config: LoadConfig, timeout: float) -> None:
    """find_tools from a probe client until the gateway says its graph is ready."""
    from mcp import Client

    deadline, last = time.monotonic() + timeout, ""
    async with Client(gateway.url, mode=config.protocol, cache=None,
                      read_timeout_seconds=config.request_timeout) as client:
        while time.monotonic() < deadline:
            try:
                result = await client.call_tool("find_tools", {"request": FIND_REQUESTS[0]})
            except Exception as exc:  # not ready, or broken: said below if it stays so
                last = repr(exc)
            else:
                last = result_text(result)
                if not result.is_error and json.loads(last).get("ready"):
                    return
            await asyncio.sleep(0.2)
    raise RuntimeError(f"the gateway's graph was not ready within {timeout:g} s: {last[:300]}"
                       f"; its stderr ends: {gateway.stderr_tail(1500)}")


async def run_once(config: LoadConfig) -> dict[str, Any]:
    """Start a gateway, load it (module doc), stop it by PID; one run's report."""
    with tempfile.TemporaryDirectory(prefix="hyperplan-gateway-load-") as tmp:
        gateway = Gateway(config, Path(tmp))
        gateway.start()
        try:
            return await _drive(gateway, config)
        finally:
            gateway.stop()


async def _drive(gateway: Gateway, config: LoadConfig) -> dict[str, Any]:
    started = time.perf_counter()
    await gateway.wait_listening(config.ready_timeout)
    memory = {"listening": gateway.memory()}
    await wait_ready(gateway, config, config.ready_timeout)
    ready_s = time.perf_counter() - started
    memory["ready"] = gateway.memory()
    gate, warm, measured = Gate(config.clients), Tally(), Tally()
    tasks = [asyncio.create_task(client_task(i, gateway.url, config, gate, warm, measured))
             for i in range(config.clients)]
    await gate.all_arrived.wait()
    memory["warm"] = gateway.memory()
    cpu_before, load_before = cpu_seconds(gateway.pid), os.getloadavg()
    begun, own_cpu = time.perf_counter(), time.process_time()
    gate.go.set()
    infos = await asyncio.gather(*tasks)
    seconds = time.perf_counter() - begun
    cpu_after, own_cpu = cpu_seconds(gateway.pid), time.process_time() - own_cpu
    memory["end"] = gateway.memory()
    if gateway.process is not None and gateway.process.poll() is not None:
        measured.errors["gateway exited"] += 1
    cpu = None if cpu_before is None or cpu_after is None else round(cpu_after - cpu_before, 2)
    report = run_report(config, measured, warm, infos, seconds=seconds, ready_s=ready_s,
                        memory=memory, cpu_s=cpu, load=[load_before, os.getloadavg()])
    return {**report, "client_cpu_s": round(own_cpu, 2), "gateway_pid": gateway.pid}


# the report ----------------------------------------------------------------------------


def command_line(config: LoadConfig) -> str:
    """The gateway's command as a shell line (``PORT`` for the free port chosen per run)."""
    import shlex

    env = f"PYTHONPATH={shlex.quote(config.pythonpath)} " if config.pythonpath else ""
    cd = f"cd {shlex.quote(config.cwd)} && " if config.cwd else ""
    args = [config.python, "-m", "hyperplan", "serve", "--http", "PORT", "--mode", config.mode,
            "--embedder", config.embedder, *config.serve_args, *config.sources]
    return cd + env + shlex.join(args)


def run_load(config: LoadConfig, repeats: int = 1,
             progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """``repeats`` runs, each against a fresh gateway; the whole report."""
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    result: dict[str, Any] = {
        "bench": "gateway-load", "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "gateway": command_line(config), "checkout": checkout_of(config),
        "config": asdict(config), "mix": dict(MIX), "runs": []}
    for _ in range(repeats):
        run = asyncio.run(run_once(config))
        result["runs"].append(run)
        if progress is not None:
            progress(run)
    result["summary"] = summarize(result["runs"])
    return result


