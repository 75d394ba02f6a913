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
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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


# the gateway process -------------------------------------------------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def rss_mb(pid: int) -> float | None:
    """``VmRSS`` of ``pid`` in MB (``/proc/PID/status``), None if unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        return None
    return None


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (``/proc/PID/task/*/children``), depth first."""
    found: list[int] = []
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            kids = [int(k) for k in children.read_text().split()]
        except (OSError, ValueError):
            continue
        for kid in kids:
            found += [kid, *descendants(kid)]
    return found


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of ``pid`` so far (``/proc/PID/stat``), None if unreadable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class Gateway:
    """``hyperplan serve --http PORT ...`` as a subprocess, stopped by its PID."""

    def __init__(self, config: LoadConfig, workdir: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.command = [config.python, "-m", "hyperplan", "serve", "--http", str(self.port),
                        "--mode", config.mode, "--embedder", config.embedder,
                        *config.serve_args, *config.sources]
        self.env = gateway_env(config, workdir)
        self.cwd = config.cwd
        self.log = workdir / "gateway-stderr.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.process is not None, "the gateway was not started"
        return self.process.pid

    def start(self) -> None:
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(self.command, env=self.env, cwd=self.cwd,
                                            stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL, stderr=log)

    def stderr_tail(self, chars: int = 2000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    async def wait_listening(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.process is None or self.process.poll() is not None:
                raise RuntimeError(f"the gateway exited: {self.stderr_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the gateway did not listen within {timeout:g} s: "
                                       f"{self.stderr_tail()}") from None
                await asyncio.sleep(0.1)

    def memory(self) -> dict[str, float | None]:
        """RSS of the gateway process and the sum over its descendants (MB)."""
        kids = [rss_mb(k) for k in descendants(self.pid)]
        return {"gateway": rss_mb(self.pid),
                "children": round(sum(k for k in kids if k is not None), 1)}

    def stop(self) -> None:
        """SIGTERM to the gateway's PID, SIGKILL after 20 s."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=20)


def gateway_env(config: LoadConfig, workdir: Path) -> dict[str, str]:
    """The environment of the gateway: this one, a cache directory, ``PYTHONPATH``."""
    env = {**os.environ, "HYPERPLAN_CACHE_DIR": config.cache_dir or str(workdir / "cache")}
    if config.pythonpath is not None:
        env["PYTHONPATH"] = config.pythonpath
    return env


def checkout_of(config: LoadConfig) -> dict[str, str]:
    """Which ``hyperplan`` the gateway imports (module path) and, in a git checkout, its
    commit: what before/after runs compare."""
    env = gateway_env(config, Path(tempfile.gettempdir()))
    probe = subprocess.run([config.python, "-c", "import hyperplan; print(hyperplan.__file__)"],
                           env=env, cwd=config.cwd, capture_output=True, text=True, timeout=60)
    module = probe.stdout.strip()
    info = {"module": module}
    if module:
        git = subprocess.run(["git", "-C", str(Path(module).parent), "rev-parse", "HEAD"],
                             capture_output=True, text=True, timeout=30)
        if git.returncode == 0:
            info["commit"] = git.stdout.strip()
    return info


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


def latency_ms(samples: list[float]) -> dict[str, float]:
    """n, mean, p50, p95, p99 (nearest rank) and max of ``samples`` (seconds), in ms."""
    ordered = sorted(samples)

    def rank(q: float) -> float:
        return round(ordered[max(0, math.ceil(q * len(ordered)) - 1)] * 1000, 2)

    return {"n": len(ordered), "mean": round(sum(ordered) / len(ordered) * 1000, 2),
            "p50": rank(0.50), "p95": rank(0.95), "p99": rank(0.99), "max": rank(1.0)}


def run_report(config: LoadConfig, measured: Tally, warm: Tally, infos: list[dict[str, Any]],
               *, seconds: float, ready_s: float, memory: dict[str, dict[str, float | None]],
               cpu_s: float | None, load: list[tuple[float, float, float]]) -> dict[str, Any]:
    """One run as a JSON-ready dict (module doc for the fields)."""
    requests = sum(len(s) for s in measured.seconds.values())
    every = [x for s in measured.seconds.values() for x in s]
    latency = {kind: latency_ms(s) for kind, s in sorted(measured.seconds.items())}
    if every:
        latency["all"] = latency_ms(every)
    warm_rss, end_rss = memory["warm"]["gateway"], memory["end"]["gateway"]
    growth = None if warm_rss is None or end_rss is None or not requests else \
        round((end_rss - warm_rss) / requests * 1000, 3)
    samples: dict[str, str] = {}
    for info in infos:
        for kind, text in info["samples"].items():
            samples.setdefault(kind, text)
    return {
        "requests": requests, "seconds": round(seconds, 3),
        "requests_per_s": round(requests / seconds, 1) if seconds > 0 else None,
        "errors": sum(measured.errors.values()), "errors_by_kind": dict(measured.errors),
        "expected_refusals": dict(measured.refusals),
        "warmup_errors": dict(warm.errors), "error_samples": samples,
        "latency_ms": latency, "ready_s": round(ready_s, 2),
        "rss_mb": {phase: m["gateway"] for phase, m in memory.items()},
        "children_rss_mb": {phase: m["children"] for phase, m in memory.items()},
        "rss_growth_mb_per_1000": growth, "gateway_cpu_s": cpu_s,
        "load_average": [[round(x, 2) for x in avg] for avg in load],
        "protocols": sorted({str(i["protocol"]) for i in infos}),
        "clients_with_token": sum(bool(i["token"]) for i in infos),
        "tokens_changed": sum(i["tokens_changed"] for i in infos),
        "find_tools_not_ready": sum(i["not_ready"] for i in infos),
        "clients": config.clients, "requests_per_client": config.requests,
    }


def _median(values: list[float | None]) -> float | None:
    known = sorted(v for v in values if v is not None)
    if not known:
        return None
    middle = len(known) // 2
    return known[middle] if len(known) % 2 else round((known[middle - 1] + known[middle]) / 2, 3)


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over the runs (errors: their total)."""
    kinds = sorted({kind for run in runs for kind in run["latency_ms"]})
    return {
        "runs": len(runs), "errors": sum(run["errors"] for run in runs),
        "requests_per_s": _median([run["requests_per_s"] for run in runs]),
        "rss_growth_mb_per_1000": _median([run["rss_growth_mb_per_1000"] for run in runs]),
        "rss_end_mb": _median([run["rss_mb"]["end"] for run in runs]),
        "latency_ms": {kind: {q: _median([run["latency_ms"].get(kind, {}).get(q)
                                          for run in runs]) for q in ("p50", "p95", "p99")}
                       for kind in kinds},
    }


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


def _cell(values: dict[str, Any], *keys: str) -> str:
    return " / ".join("-" if values.get(k) is None else f"{values[k]:,}" for k in keys)


def markdown(result: dict[str, Any]) -> str:
    """The report as Markdown: a row per run and the median, then latency per kind."""
    config, checkout = result["config"], result["checkout"]
    lines = [f"gateway-load {result['date']}: {config['clients']} clients x "
             f"{config['requests']} requests, {config['mode']} mode, client mode "
             f"{config['protocol']}; hyperplan {checkout.get('commit', '?')[:10]} "
             f"({checkout.get('module', '?')})", f"gateway: `{result['gateway']}`", "",
             "| run | req/s | errors | expected refusals | p50 / p95 / p99 all (ms) | RSS MB "
             "ready / warm / end | children MB end | MB per 1,000 req | gateway CPU s "
             "| load avg |", "|---|---|---|---|---|---|---|---|---|---|"]
    for i, run in enumerate(result["runs"], 1):
        every = run["latency_ms"].get("all", {})
        lines.append(
            f"| {i} | {run['requests_per_s']} | {run['errors']} "
            f"| {sum(run['expected_refusals'].values())} | {_cell(every, 'p50', 'p95', 'p99')} "
            f"| {_cell(run['rss_mb'], 'ready', 'warm', 'end')} "
            f"| {_cell(run['children_rss_mb'], 'end')} "
            f"| {run['rss_growth_mb_per_1000']} | {run['gateway_cpu_s']} "
            f"| {run['load_average'][1][0]} |")
    summary = result["summary"]
    lines += ["", "| kind (median of runs) | p50 (ms) | p95 (ms) | p99 (ms) |",
              "|---|---|---|---|"]
    for kind, q in summary["latency_ms"].items():
        lines.append(f"| {kind} | {_cell(q, 'p50')} | {_cell(q, 'p95')} | {_cell(q, 'p99')} |")
    lines.append(f"\nmedian {summary['requests_per_s']} req/s, {summary['errors']} errors in "
                 f"{summary['runs']} run(s), RSS growth {summary['rss_growth_mb_per_1000']} MB "
                 "per 1,000 requests")
    for i, run in enumerate(result["runs"], 1):
        for kind, count in {**run["errors_by_kind"], **{
                f"warm-up {k}": v for k, v in run["warmup_errors"].items()}}.items():
            lines.append(f"- run {i}: {count} x {kind}")
    return "\n".join(lines)
