"""The misbehaving world of ``hyperplan bench faults`` (docs/benchmarks.md,
"`hyperplan bench faults`: the catalogue end to end through the command line"): an HTTP
server on 127.0.0.1 that drips, floods, echoes secrets, fails, redirects forever and never
answers writes; a stdio MCP server that prints garbage or sits on a write; Python tool modules
that exit, interrupt, print, loop and allocate; modules that exit or loop at import.

One :class:`LabServer` serves every case of a benchmark run. Each case talks to it under its
own prefix, ``/c/<case>/...``, so cases may run side by side and each one's requests (and the
writes the server *applied*) are counted apart. Everything here is started and stopped by the
benchmark itself; nothing listens beyond 127.0.0.1.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

# How long a "never answering" endpoint sits on a request: far beyond every deadline of the
# benchmark, yet bounded so a stray thread cannot outlive the process by much.
NEVER_S = 60.0
DRIP_INTERVAL_S = 0.2
LAB_MODEL = "lab-model"


@dataclass(frozen=True)
class Request:
    """One request the lab server saw."""

    method: str
    path: str  # below the case prefix
    idempotency_key: str | None
    at: float  # wall-clock time (time.time()) of its arrival


class _LabHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.requests: dict[str, list[Request]] = defaultdict(list)
        self.stopping = threading.Event()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _LabHTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    # -- plumbing ----------------------------------------------------------------------------
    def _route(self) -> tuple[str, str, dict[str, list[str]]]:
        """``(case, path below the case prefix, query)``, the request recorded and its body
        read."""
        parts = urlsplit(self.path)
        segments = parts.path.split("/", 3)  # "", "c", case, rest
        if len(segments) >= 3 and segments[1] == "c":
            case, rest = segments[2], "/" + (segments[3] if len(segments) > 3 else "")
        else:
            case, rest = "", parts.path
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        key = self.headers.get("idempotency-key")
        with self.server.lock:
            self.server.requests[case].append(Request(self.command, rest, key, time.time()))
        return case, rest, parse_qs(parts.query)

    def _send(self, body: bytes, status: int = 200, ctype: str = "application/json",
              extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, data: Any, status: int = 200) -> None:
        self._send(json.dumps(data).encode(), status)

    def _sit(self, seconds: float) -> None:
        """Wait ``seconds`` (or until the server stops) without answering."""
        self.server.stopping.wait(seconds)

    # -- GET -----------------------------------------------------------------------------------
    def do_GET(self) -> None:
        try:
            case, path, query = self._route()
            self._get(case, path, query)
        except (BrokenPipeError, ConnectionResetError):
            return

    def _get(self, case: str, path: str, query: dict[str, list[str]]) -> None:
        if path == "/echo":  # item 2: the request's headers and query come back in the body
            self._json({"headers": dict(self.headers), "query": query})
        elif path == "/drip":  # item 3: one byte every 0.2 s, far too long in all
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", "100000")
            self.end_headers()
            for _ in range(100_000):
                if self.server.stopping.is_set():
                    return
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(DRIP_INTERVAL_S)
        elif path == "/huge":  # item 4: a chunked body of ?mb= megabytes
            mb = int(query.get("mb", ["200"])[0])
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            chunk = b"x" * 65536
            for _ in range(mb * 16):
                if self.server.stopping.is_set():
                    return
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")
        elif path == "/slow":  # item 3: answers after ?s= seconds
            self._sit(float(query.get("s", [str(NEVER_S)])[0]))
            self._json({"ok": True})
        elif path == "/fail":  # item 2: a 500 whose body quotes the request headers
            self._json({"error": "internal", "headers": dict(self.headers)}, status=500)
        elif path == "/loop":  # a redirect to itself, for ever
            self._send(b"", status=302, extra={"location": f"/c/{case}/loop"})
        elif path == "/probe":  # item 5: reached only from a tool that has network
            self._json({"reached": True})
        elif path.endswith("/models"):  # the LLM endpoint's model list
            if path.startswith("/llm-slow-models"):
                self._sit(NEVER_S)
            self._json({"object": "list", "data": [{"id": LAB_MODEL, "object": "model"}]})
        else:
            self._json({"items": []})

    # -- POST ----------------------------------------------------------------------------------
    def do_POST(self) -> None:
        try:
            _, path, _ = self._route()
            self._post(path)
        except (BrokenPipeError, ConnectionResetError):
            return

    def _post(self, path: str) -> None:
        if path == "/payments":  # item 1: a write whose answer never comes
            self._sit(NEVER_S)
            self._json({"payment_id": "p1"})
        elif path == "/refunds":  # item 1: a write answered by a 500
            self._json({"error": "try later"}, status=500)
        elif path.endswith("/chat/completions"):
            if path.startswith("/llm-slow"):  # item 3: the model never answers
                self._sit(NEVER_S)
            # item 2: a model that repeats the Authorization header it was sent
            said = f"my key is {self.headers.get('authorization', '')}"
            self._json({"id": "c1", "object": "chat.completion", "created": 0,
                        "model": LAB_MODEL, "choices": [{
                            "index": 0, "finish_reason": "stop",
                            "message": {"role": "assistant", "content": said}}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                                  "total_tokens": 2}})
        else:
            self._json({"ok": True})


class LabServer:
    """The misbehaving HTTP server of a benchmark run (module doc); a context manager."""

    def __init__(self) -> None:
        self._httpd = _LabHTTPServer()
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True,
                                        name="faults-lab")

    def __enter__(self) -> LabServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._httpd.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def case_url(self, case: str) -> str:
        """The base URL under which ``case`` talks to the server."""
        return f"{self.url}/c/{case}"

    def requests(self, case: str) -> list[Request]:
        with self._httpd.lock:
            return list(self._httpd.requests.get(case, ()))

    def applied_writes(self, case: str, path: str) -> int:
        """How many times a write to ``path`` took effect for ``case``: every POST without an
        idempotency key, once per distinct key otherwise (a repeat carrying the same key is
        the same write, and a careful server applies it once)."""
        posts = [r for r in self.requests(case) if r.method == "POST" and r.path == path]
        keyed = {r.idempotency_key for r in posts if r.idempotency_key}
        return sum(1 for r in posts if not r.idempotency_key) + len(keyed)


def openapi_spec(base_url: str) -> dict[str, Any]:
    """An OpenAPI document of the lab server's endpoints, its server ``base_url``."""
    def answer(schema: dict[str, Any]) -> dict[str, Any]:
        return {"200": {"description": "ok", "content": {"application/json": {
            "schema": schema}}}}

    obj = {"type": "object", "properties": {"ok": {"type": "boolean"}}}

    def get(operation: str, summary: str, *params: str,
            returns: dict[str, Any] = obj) -> dict[str, Any]:
        return {"get": {"operationId": operation, "summary": summary,
                        "responses": answer(returns),
                        "parameters": [{"name": p, "in": "query", "schema": {"type": "string"}}
                                       for p in params]}}

    def post(operation: str, summary: str) -> dict[str, Any]:
        return {"post": {"operationId": operation, "summary": summary,
                         "responses": answer({"type": "object", "properties": {
                             "payment_id": {"type": "string"}}}),
                         "requestBody": {"content": {"application/json": {"schema": {
                             "type": "object", "required": ["amount"],
                             "properties": {"amount": {"type": "integer"}}}}}}}}

    echoed = {"type": "object", "properties": {"headers": {"type": "object"},
                                               "query": {"type": "object"}}}
    return {
        "openapi": "3.0.3", "info": {"title": "faults lab", "version": "1"},
        "servers": [{"url": base_url}],
        "paths": {
            "/payments": post("create_payment", "Create a payment"),
            "/refunds": post("create_refund", "Create a refund"),
            "/echo": get("echo_request", "Echo the request", "note", returns=echoed),
            "/drip": get("drip", "Drip bytes"),
            "/huge": get("huge", "A huge body", "mb", returns={"type": "string"}),
            "/slow": get("slow_read", "A slow read", "s"),
            "/fail": get("get_status", "A failing read"),
            "/loop": get("follow", "A redirect loop"),
        },
    }


MCP_SERVER = '''
"""A stdio MCP server of bench faults: `server.py COUNT_FILE [--banner]`."""
import sys
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("faults-lab")


@server.tool()
def send_payment(amount: int) -> str:
    """Send a payment of amount; returns the payment id."""
    with open(sys.argv[1], "a") as count:
        count.write("sent\\n")
    time.sleep(60)
    return "p1"


@server.tool()
def nap(seconds: float) -> str:
    """Sleep for seconds; returns ok."""
    time.sleep(seconds)
    return "ok"


if __name__ == "__main__":
    if "--banner" in sys.argv:  # item 10: garbage on the protocol stream
        with open(sys.argv[1] + ".banner", "w") as when:
            when.write(repr(time.time()))
        sys.stdout.buffer.write(b"\\xff\\xfe starting up, not JSON-RPC\\n")
        sys.stdout.flush()
    server.run("stdio")
'''

TOOLS_MODULE = '''
"""Misbehaving Python tools of bench faults."""
import sys
import time
import urllib.request

COUNT_FILE = "writes.log"


def quit_now(code: int) -> dict:
    """Exit the interpreter; returns nothing."""
    raise SystemExit(code)


def interrupt(code: int) -> dict:
    """Press Ctrl-C; returns nothing."""
    raise KeyboardInterrupt("pressed by the tool")


def chatty(text: str) -> dict:
    """Print to stdout, then return the text."""
    print("HELLO FROM TOOL", text)
    sys.stdout.flush()
    return {"echo": text}


def book_slot(slot: str) -> dict:
    """Book a slot (a write), then take a minute to answer; returns the booking."""
    with open(COUNT_FILE, "a") as count:
        count.write("booked\\n")
    time.sleep(60)
    return {"booking": slot}


def spin(rounds: int) -> int:
    """Loop for ever, ignoring every deadline; returns the rounds."""
    n = 0
    while True:
        n += 1


def hog(gib: int) -> int:
    """Allocate gib GiB; returns the bytes allocated."""
    return len(bytearray(gib * 1024 ** 3))


def probe(url: str) -> str:
    """Fetch a URL; returns its body."""
    with urllib.request.urlopen(url, timeout=3) as answer:
        return answer.read().decode()
'''

# item 3: a process that is started as an MCP server and never answers (reads nothing, says
# nothing) for a minute; `mute.py STARTED_FILE` writes the time it started
MUTE_MCP_SERVER = ("import sys, time\nwith open(sys.argv[1], 'w') as f:\n"
                   "    f.write(repr(time.time()))\ntime.sleep(60)\n")

EXIT_AT_IMPORT = "import sys\nsys.exit(4)\n"
# writes the time its import started to ./import_started, then loops
LOOP_AT_IMPORT = ("import time\nwith open('import_started', 'w') as f:\n"
                  "    f.write(repr(time.time()))\n"
                  "print('hello from the import')\nwhile True:\n    pass\n")
