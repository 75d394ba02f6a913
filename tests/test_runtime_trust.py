"""Issue 22, items 1-4 and the MCP part of item 10: writes are never repeated, secrets never
printed, deadlines are deadlines, response bodies are bounded. A misbehaving HTTP server on
127.0.0.1 (started and stopped here) plays the unlucky cases."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from hyperplan.catalog import Catalog
from hyperplan.execute.events import ToolCalled
from hyperplan.execute.results import ErrorKind
from hyperplan.execute.runtimes import MCPRuntime, OpenAPIRuntime
from hyperplan.execute.trace import TraceWriter, clip
from hyperplan.importers.openapi import load_openapi
from hyperplan.llm.budget import Accounting, Budget
from hyperplan.secrets import REDACTED, SecretRegistry

SECRET = "sk-test-4f9c2a7e1b83d5"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    log: list[tuple[str, str]]

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _record(self) -> dict[str, list[str]]:
        parts = urlsplit(self.path)
        self.server.log.append((self.command, parts.path))  # type: ignore[attr-defined]
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        return parse_qs(parts.query)

    def _send(self, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(200)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        query = self._record()
        path = urlsplit(self.path).path
        try:
            if path == "/echo":
                self._send(json.dumps({"headers": dict(self.headers)}).encode())
            elif path == "/drip":
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", "1000")
                self.end_headers()
                for _ in range(1000):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.2)
            elif path == "/huge":
                mb = int(query.get("mb", ["50"])[0])
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                chunk = b"x" * 65536
                for _ in range(mb * 16):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.write(b"0\r\n\r\n")
            elif path == "/slow":
                time.sleep(float(query.get("s", ["5"])[0]))
                self._send(b'{"ok": true}')
            else:
                self._send(b'{"items": []}')
        except (BrokenPipeError, ConnectionResetError):
            return

    def do_POST(self) -> None:
        self._record()
        try:
            time.sleep(5)
            self._send(b'{"payment_id": "p1"}')
        except (BrokenPipeError, ConnectionResetError):
            return


@pytest.fixture()
def server() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    httpd.log = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _url(httpd: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{httpd.server_address[1]}"


def _spec(url: str) -> dict[str, Any]:
    ok = {"200": {"description": "ok", "content": {"application/json": {"schema": {
        "type": "object", "properties": {"payment_id": {"type": "string"}}}}}}}
    return {
        "openapi": "3.0.3", "info": {"title": "faults", "version": "1"},
        "servers": [{"url": url}],
        "paths": {
            "/payments": {"post": {
                "operationId": "create_payment", "summary": "Create a payment",
                "requestBody": {"content": {"application/json": {"schema": {
                    "type": "object", "required": ["amount"],
                    "properties": {"amount": {"type": "integer"}}}}}},
                "responses": ok}},
            "/echo": {"get": {"operationId": "echo_headers", "summary": "Echo headers",
                              "responses": ok}},
            "/drip": {"get": {"operationId": "drip", "summary": "Drip bytes", "responses": ok}},
            "/huge": {"get": {"operationId": "huge", "summary": "A huge body",
                              "parameters": [{"name": "mb", "in": "query",
                                              "schema": {"type": "integer"}}],
                              "responses": ok}},
            "/slow": {"get": {"operationId": "slow_read", "summary": "A slow read",
                              "parameters": [{"name": "s", "in": "query",
                                              "schema": {"type": "number"}}],
                              "responses": ok}},
        },
    }


@pytest.fixture()
def spec_file(server: ThreadingHTTPServer, tmp_path: Path) -> Path:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(_spec(_url(server))), "utf-8")
    return path


@pytest.fixture()
def catalog(spec_file: Path) -> Catalog:
    return load_openapi(spec_file)


def _cli(*args: str, env: dict[str, str] | None = None,
         timeout: float = 60) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **(env or {}), "HYPERPLAN_EMBEDDER": "hashing"}
    return subprocess.run([sys.executable, "-m", "hyperplan", *args], capture_output=True,
                          text=True, env=full, timeout=timeout)


# -- item 1: a write is never executed twice ----------------------------------------------------

def test_timed_out_post_is_outcome_unknown_and_sent_once(server: ThreadingHTTPServer,
                                                         catalog: Catalog) -> None:
    with OpenAPIRuntime() as runtime:
        result = runtime.call(catalog.get("create_payment"), {"amount": 5}, timeout=0.5)
    assert result.error_kind is ErrorKind.OUTCOME_UNKNOWN
    assert "outcome unknown" in result.error and "not re-sent" in result.error
    assert [m for m, _ in server.log] == ["POST"]


def test_timed_out_get_may_be_retried(server: ThreadingHTTPServer, catalog: Catalog) -> None:
    with OpenAPIRuntime() as runtime:
        result = runtime.call(catalog.get("slow_read"), {"s": 3}, timeout=0.5)
    assert result.error_kind is ErrorKind.TIMEOUT


def test_idempotency_key_makes_a_post_repeatable(server: ThreadingHTTPServer,
                                                 catalog: Catalog) -> None:
    with OpenAPIRuntime(idempotency_header="Idempotency-Key") as runtime:
        result = runtime.call(catalog.get("create_payment"), {"amount": 5}, timeout=0.3)
    assert result.error_kind is ErrorKind.TIMEOUT


def test_run_sends_a_timed_out_write_once(server: ThreadingHTTPServer, spec_file: Path,
                                          tmp_path: Path) -> None:
    goal = json.dumps({"terminals": ["create_payment"], "values": {"amount": 5}})
    started = time.monotonic()
    proc = _cli("run", "--tools", f"openapi:{spec_file}", "--goal", goal, "--json",
                "--max-seconds", "3", "--trace", str(tmp_path / "t.jsonl"))
    assert time.monotonic() - started < 20
    assert "Traceback" not in proc.stderr
    assert [m for m, _ in server.log].count("POST") == 1
    calls = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    kinds = [e["error_kind"] for e in calls if e["type"] == "tool_call"]
    assert kinds == ["outcome_unknown"]
    json.loads(proc.stdout)  # the --json result is there and whole


# -- item 2: secrets never printed --------------------------------------------------------------

def test_echoed_secret_header_is_redacted_everywhere(server: ThreadingHTTPServer,
                                                     spec_file: Path, tmp_path: Path) -> None:
    goal = json.dumps({"terminals": ["echo_headers"]})
    trace = tmp_path / "t.jsonl"
    for extra in (["--json"], []):
        proc = _cli("run", "--tools", f"openapi:{spec_file}", "--goal", goal,
                    "--header", "Authorization: $SECRET_TOK", "--trace", str(trace), *extra,
                    env={"SECRET_TOK": f"Bearer {SECRET}"})
        assert any(p == "/echo" for _, p in server.log)
        for text in (proc.stdout, proc.stderr, trace.read_text()):
            assert SECRET not in text
        assert REDACTED in trace.read_text()


def test_goal_values_marked_secret_are_redacted(server: ThreadingHTTPServer, spec_file: Path,
                                                tmp_path: Path) -> None:
    goal = json.dumps({"terminals": ["echo_headers"], "values": {"pin": "hunter22-pin"},
                       "secrets": ["pin"]})
    trace = tmp_path / "t.jsonl"
    proc = _cli("run", "--tools", f"openapi:{spec_file}", "--goal", goal, "--trace", str(trace))
    assert "hunter22-pin" not in proc.stdout + proc.stderr + trace.read_text()


def test_registry_redacts_by_value_in_text_and_data() -> None:
    registry = SecretRegistry()
    registry.add(f"Bearer {SECRET}")
    registry.add("abc")  # too short to redact anything safely
    assert registry.redact_text(f"got {SECRET}!") == "got ***!"
    data = {"k": [f"x{SECRET}y", 3], SECRET: "v"}
    assert registry.redact_value(data) == {"k": ["x***y", 3], "***": "v"}
    assert registry.redact_text("abc") == "abc"
    registry.load_environment({"MY_API_KEY": "value-of-the-key", "HOME": "/root"})
    assert registry.redact_text("value-of-the-key /root") == "*** /root"


# -- item 3: deadlines are deadlines ------------------------------------------------------------

def test_drip_server_cannot_outlive_the_deadline(server: ThreadingHTTPServer,
                                                 catalog: Catalog) -> None:
    started = time.monotonic()
    with OpenAPIRuntime() as runtime:
        result = runtime.call(catalog.get("drip"), {}, timeout=1.5)
    assert time.monotonic() - started < 2.5
    assert result.error_kind is ErrorKind.TIMEOUT


def test_max_seconds_is_a_hard_deadline_for_run(server: ThreadingHTTPServer,
                                                spec_file: Path) -> None:
    goal = json.dumps({"terminals": ["drip"]})
    started = time.monotonic()
    proc = _cli("run", "--tools", f"openapi:{spec_file}", "--goal", goal, "--json",
                "--max-seconds", "4")
    # the budget starts before the graph is built; the interpreter start is outside it
    assert time.monotonic() - started < 4 + 2 + 3
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] in ("failed", "budget_exhausted")


def test_llm_request_is_cut_to_the_time_left(server: ThreadingHTTPServer) -> None:
    from hyperplan.llm.openai_client import OpenAICompatibleLLM
    from hyperplan.llm.types import LLMError, Message

    accounting = Accounting(Budget(max_wall_s=1.5))
    llm = OpenAICompatibleLLM("m", base_url=_url(server) + "/slow?s=30&", timeout=60,
                              accounting=accounting, max_retries=5)
    started = time.monotonic()
    with pytest.raises((LLMError, RuntimeError)):
        llm.complete([Message("user", "hi")])
    assert time.monotonic() - started < 3.5


# -- item 4: unbounded responses ----------------------------------------------------------------

def test_huge_body_stops_at_the_cap(server: ThreadingHTTPServer, catalog: Catalog) -> None:
    with OpenAPIRuntime(max_response_bytes=1_000_000) as runtime:
        result = runtime.call(catalog.get("huge"), {"mb": 200}, timeout=20)
    assert result.ok and result.metadata["truncated"] is True
    assert isinstance(result.value, str) and result.value.endswith("[truncated at 1000000 bytes]")
    assert len(result.value) < 1_100_000


def test_traces_keep_a_bounded_prefix(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with TraceWriter(path, max_chars=100, max_items=3) as tracer:
        tracer.emit(ToolCalled(tool="t", value="y" * 10_000,
                               printed={"items": list(range(10))}))
    assert path.stat().st_size < 500
    event = json.loads(path.read_text())
    assert event["value"].endswith("[9900 more chars]")
    assert event["items"] == [0, 1, 2, "... [7 more items]"]
    assert clip("short") == "short"


# -- item 10 (MCP): a server that breaks the stdio protocol -------------------------------------

_NOISY = '''
import sys
from mcp.server.mcpserver import MCPServer
server = MCPServer("noisy")

@server.tool()
def nap(seconds: float) -> str:
    """Sleep."""
    import time
    time.sleep(seconds)
    return "ok"

if __name__ == "__main__":
    if "--banner" in sys.argv:
        sys.stdout.buffer.write(b"\\xff\\xfe starting up\\n")
        sys.stdout.flush()
    server.run()
'''


def test_mcp_server_printing_garbage_is_one_clear_error_fast(tmp_path: Path) -> None:
    script = tmp_path / "noisy.py"
    script.write_text(_NOISY, "utf-8")
    started = time.monotonic()
    with MCPRuntime(sys.executable, [str(script), "--banner"], timeout=30) as runtime, \
            pytest.raises(Exception) as caught:
        runtime.list_tools()
    assert time.monotonic() - started < 10
    assert "not a JSON-RPC message" in str(caught.value) and "starting up" in str(caught.value)


def test_mcp_call_gets_the_deadline_not_the_timeout(tmp_path: Path) -> None:
    script = tmp_path / "noisy.py"
    script.write_text(_NOISY, "utf-8")
    with MCPRuntime(sys.executable, [str(script)], timeout=30) as runtime:
        tool = runtime.catalog().get("nap")
        started = time.monotonic()
        result = runtime.call(tool, {"seconds": 20}, timeout=1.0)
        assert time.monotonic() - started < 2.5
    assert result.error_kind is ErrorKind.OUTCOME_UNKNOWN
