"""MCPRuntime under misbehaving upstreams (issue 36, items 5 and 6): results over
``max_response_bytes`` are cut while they are read (memory bounded, the next call unharmed),
an upstream that overran, broke the protocol or sent too much is restarted before the next
call, faults are booked on the call they happened to (a call never sent is never
``outcome_unknown``), stderr tails are redacted before they are cut, nothing is left in the
temporary directory after ``kill -9``, and non-finite numbers in arguments are refused.

Every upstream is a tiny raw JSON-RPC stdio server written here (it starts in milliseconds);
every process a test starts is stopped by its PID."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hyperplan.catalog import Catalog, ToolSpec
from hyperplan.execute.results import ErrorKind
from hyperplan.execute.runtimes.mcp import MCPRuntime
from hyperplan.secrets import register_secret

pytest.importorskip("mcp")

SECRET = "sk-faults-0123456789abcdefghijklmnopqrstuvwxyz"

# A raw JSON-RPC stdio server; the tool names say what each does. ``BIG`` lines are written
# in pieces, so the server never holds them whole either.
FAULTY = textwrap.dedent('''
    import json, os, sys, threading, time

    OBJ = {"type": "object", "properties": {"size": {"type": "integer"},
                                            "text": {"type": "string"}}}
    READ = {"readOnlyHint": True}
    TOOLS = [{"name": n, "description": n, "inputSchema": OBJ, **({"annotations": READ}
              if n.startswith("read_") else {})}
             for n in ("ping", "big", "big_id_last", "slow", "read_slow", "garbage",
                       "read_garbage", "garbage_after", "die_after", "leak", "echo",
                       "read_bad_utf8", "big_error", "read_leak_stdout")]
    out = sys.stdout.buffer

    def send(data):
        out.write(data)
        out.flush()

    def answer(request, result=None, error=None):
        reply = {"jsonrpc": "2.0", "id": request["id"]}
        reply.update({"error": error} if error else {"result": result})
        send(json.dumps(reply).encode() + b"\\n")

    def text(request, value):
        answer(request, {"content": [{"type": "text", "text": value}]})

    def big(request, size, id_last):
        rid = json.dumps(request["id"]).encode()
        start = b'{"jsonrpc": "2.0", ' + (b"" if id_last else b'"id": ' + rid + b", ")
        send(start + b'"result": {"content": [{"type": "text", "text": "big:')
        piece = b"x" * (1 << 20)
        left = size
        while left > 0:
            send(piece[:left])
            left -= len(piece)
        send(b'"}]}' + (b', "id": ' + rid if id_last else b"") + b"}\\n")

    for line in sys.stdin:
        request = json.loads(line)
        method = request.get("method")
        if "id" not in request:
            continue  # a notification
        if method == "initialize":
            answer(request, {"protocolVersion": request["params"]["protocolVersion"],
                             "capabilities": {"tools": {}},
                             "serverInfo": {"name": "faulty", "version": "1"}})
            continue
        if method == "tools/list":
            answer(request, {"tools": TOOLS})
            continue
        if method != "tools/call":
            answer(request, error={"code": -32601, "message": f"no method {method}"})
            continue
        name, args = request["params"]["name"], request["params"].get("arguments") or {}
        if name == "ping":
            text(request, str(os.getpid()))
        elif name in ("big", "big_id_last"):
            big(request, args["size"], name == "big_id_last")
        elif name in ("slow", "read_slow"):
            time.sleep(60)
        elif name in ("garbage", "read_garbage"):
            send(b"this is not JSON-RPC\\n")
        elif name == "garbage_after":
            text(request, "fine")
            threading.Timer(0.3, send, [b"late garbage\\n"]).start()
        elif name == "die_after":
            text(request, "bye")
            threading.Timer(0.1, lambda: os._exit(0)).start()
        elif name == "leak":
            key = os.environ["FAULTS_SECRET"]  # the quoted tail (800 chars) starts inside the first
            sys.stderr.write(f"first: {key} {'.' * 724}\\nfatal: the key is {key}\\n")
            sys.stderr.flush()
            os._exit(4)
        elif name == "read_bad_utf8":
            rid = json.dumps(request["id"]).encode()
            send(b'{"jsonrpc": "2.0", "id": ' + rid
                 + b', "result": {"content": [{"type": "text", "text": "caf\\xe9"}]}}\\n')
        elif name == "read_leak_stdout":  # the quoted start (120) ends inside the key
            send(("." * 100 + os.environ["FAULTS_SECRET"] + " oops\\n").encode())
        elif name == "big_error":
            answer(request, error={"code": -32000, "message": "E" * (2 << 20)})
        elif name == "echo":
            text(request, json.dumps(args))
''')


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("faulty") / "faulty.py"
    path.write_text(FAULTY, "utf-8")
    return path


@pytest.fixture(scope="module")
def tools(server: Path) -> Catalog:
    with MCPRuntime(sys.executable, [str(server)], timeout=10) as runtime:
        return runtime.catalog()


@pytest.fixture()
def runtime(server: Path) -> Iterator[MCPRuntime]:
    with MCPRuntime(sys.executable, [str(server)], timeout=10,
                    env={"FAULTS_SECRET": SECRET}, max_response_bytes=1 << 20) as started:
        yield started


def _pid(runtime: MCPRuntime, tools: Catalog) -> int:
    result = runtime.call(tools.get("ping"), {})
    assert result.ok, result.error
    return int(result.value)


def _gone(pid: int, seconds: float = 5.0) -> bool:
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


# -- item 5: bounded results -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["big", "big_id_last"])
def test_an_oversize_result_is_cut_with_a_marker_and_the_server_restarted(
        runtime: MCPRuntime, tools: Catalog, name: str) -> None:
    first = _pid(runtime, tools)
    started = time.monotonic()
    result = runtime.call(tools.get(name), {"size": 30 << 20})
    assert time.monotonic() - started < 8
    assert result.ok, result.error
    assert result.metadata["truncated"] is True
    assert result.value.startswith("big:xxxx")
    assert result.value.endswith(f"... [truncated: the result exceeded {1 << 20} bytes]")
    assert len(result.value) <= (1 << 20) + 100
    second = _pid(runtime, tools)  # the next call works, on a fresh server
    assert second != first and _gone(first)


def test_an_oversize_error_response_is_a_tool_error(runtime: MCPRuntime,
                                                     tools: Catalog) -> None:
    result = runtime.call(tools.get("big_error"), {})
    assert result.error_kind is ErrorKind.TOOL_ERROR
    assert result.error.endswith(f"[truncated: the result exceeded {1 << 20} bytes]")
    assert len(result.error) < 1000
    assert _pid(runtime, tools) > 0


def test_a_result_under_the_cap_is_whole(runtime: MCPRuntime, tools: Catalog) -> None:
    result = runtime.call(tools.get("big"), {"size": 900_000})
    assert result.ok and result.value == "big:" + "x" * 900_000
    assert not result.metadata.get("truncated")


_RSS_PROBE = textwrap.dedent('''
    import json, resource, sys
    from hyperplan.execute.runtimes.mcp import MCPRuntime
    server, size = sys.argv[1], int(sys.argv[2])
    with MCPRuntime(sys.executable, [server], timeout=20,
                    max_response_bytes=1 << 20) as runtime:
        tools = runtime.catalog()
        runtime.call(tools.get("big"), {"size": 100_000})  # warm: everything imported
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        big = runtime.call(tools.get("big"), {"size": size})
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        ping = runtime.call(tools.get("ping"), {})
    print(json.dumps({"grew_kib": after - before, "truncated": big.metadata.get("truncated"),
                      "next_ok": ping.ok}))
''')


def test_memory_stays_bounded_while_a_150_mb_result_is_read(server: Path) -> None:
    probe = subprocess.run([sys.executable, "-c", _RSS_PROBE, str(server), str(150 << 20)],
                           capture_output=True, text=True, timeout=120)
    assert probe.returncode == 0, probe.stderr
    report = json.loads(probe.stdout)
    assert report["truncated"] is True and report["next_ok"] is True
    assert report["grew_kib"] < 12 * 1024, report  # cap 1 MiB: a few MiB, never the result


# -- item 6 / restarts: faults booked on the call they happened to ------------------------------


def test_a_timed_out_server_is_replaced_so_the_next_call_does_not_queue(
        runtime: MCPRuntime, tools: Catalog) -> None:
    first = _pid(runtime, tools)
    for name in ("read_slow", "slow", "read_slow"):
        started = time.monotonic()
        late = runtime.call(tools.get(name), {}, timeout=0.3)
        assert time.monotonic() - started < 1.5
        assert late.error_kind in (ErrorKind.TIMEOUT, ErrorKind.OUTCOME_UNKNOWN)
        started = time.monotonic()
        pid = _pid(runtime, tools)  # a stuck single-threaded server would never answer
        assert time.monotonic() - started < 3
        assert pid != first
        assert _gone(first), "the server that overran was not stopped"
        first = pid


def test_a_protocol_break_is_booked_on_the_call_in_flight(runtime: MCPRuntime,
                                                           tools: Catalog) -> None:
    write = runtime.call(tools.get("garbage"), {})
    assert write.error_kind is ErrorKind.OUTCOME_UNKNOWN
    assert "not a JSON-RPC message" in write.error and "this is not JSON-RPC" in write.error
    read = runtime.call(tools.get("read_garbage"), {})
    assert read.error_kind is ErrorKind.TRANSPORT and "not a JSON-RPC message" in read.error
    assert _pid(runtime, tools) > 0


def test_a_line_that_is_not_utf8_ends_the_session(runtime: MCPRuntime,
                                                  tools: Catalog) -> None:
    first = _pid(runtime, tools)
    bad = runtime.call(tools.get("read_bad_utf8"), {})
    assert bad.error_kind is ErrorKind.TRANSPORT
    assert "not UTF-8" in bad.error and "caf\\xe9" in bad.error
    assert _pid(runtime, tools) != first


def test_a_break_while_idle_is_not_blamed_on_the_next_call(runtime: MCPRuntime,
                                                            tools: Catalog) -> None:
    done = runtime.call(tools.get("garbage_after"), {})
    assert done.ok and done.value == "fine"
    time.sleep(0.8)  # the garbage line arrives while no call is in flight
    nxt = runtime.call(tools.get("echo"), {"text": "hello"})  # a write: never repeated
    assert nxt.ok, nxt.error
    assert nxt.value == {"text": "hello"}


def test_a_server_that_died_while_idle_is_restarted_before_sending(
        runtime: MCPRuntime, tools: Catalog) -> None:
    first = _pid(runtime, tools)
    bye = runtime.call(tools.get("die_after"), {})
    assert bye.ok and bye.value == "bye"
    assert _gone(first)
    nxt = runtime.call(tools.get("echo"), {"text": "again"})
    assert nxt.ok, nxt.error  # not outcome_unknown: nothing had been sent to the dead one
    assert _pid(runtime, tools) != first


def test_a_server_that_cannot_restart_fails_as_a_start_failure(server: Path,
                                                               tools: Catalog,
                                                               tmp_path: Path) -> None:
    flag = tmp_path / "broken"
    wrapper = tmp_path / "wrapper.py"
    wrapper.write_text(textwrap.dedent(f'''
        import os, runpy, sys
        if os.path.exists({str(flag)!r}):
            sys.exit("cannot start: config gone")
        sys.argv = [{str(server)!r}]
        runpy.run_path({str(server)!r}, run_name="__main__")
    '''), "utf-8")
    with MCPRuntime(sys.executable, [str(wrapper)], timeout=10) as runtime:
        assert runtime.call(tools.get("die_after"), {}).ok
        flag.write_text("x")
        time.sleep(0.5)
        nxt = runtime.call(tools.get("echo"), {"text": "x"})
    assert nxt.error_kind is ErrorKind.TRANSPORT, nxt.error
    assert "cannot start: config gone" in nxt.error


# -- item 6: redaction before the cut, nothing left behind ----------------------------------


def test_the_stderr_tail_is_redacted_before_it_is_cut(runtime: MCPRuntime,
                                                      tools: Catalog) -> None:
    register_secret(SECRET)
    crashed = runtime.call(tools.get("leak"), {})
    assert crashed.error_kind is ErrorKind.OUTCOME_UNKNOWN
    assert "fatal: the key is ***" in crashed.error
    for start in range(0, len(SECRET) - 6):
        assert SECRET[start:start + 6] not in crashed.error


def test_a_bad_line_is_redacted_before_it_is_cut(runtime: MCPRuntime,
                                                 tools: Catalog) -> None:
    register_secret(SECRET)
    broken = runtime.call(tools.get("read_leak_stdout"), {})
    assert broken.error_kind is ErrorKind.TRANSPORT
    assert "not a JSON-RPC message" in broken.error and "....***" in broken.error
    for start in range(0, len(SECRET) - 6):
        assert SECRET[start:start + 6] not in broken.error


_KILLED = textwrap.dedent('''
    import sys
    from hyperplan.execute.runtimes.mcp import MCPRuntime
    runtime = MCPRuntime(sys.executable, [sys.argv[1]], timeout=10)
    tools = runtime.catalog()
    print(runtime.call(tools.get("ping"), {}).value, flush=True)
    runtime.call(tools.get("slow"), {}, timeout=0.2)  # a server stopped in the background
    print(runtime.call(tools.get("ping"), {}).value, flush=True)
    import time; time.sleep(60)
''')


def test_nothing_is_left_in_the_temp_dir_after_kill_9(server: Path, tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    user = subprocess.Popen([sys.executable, "-c", _KILLED, str(server)], env=env,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert user.stdout is not None
        first = int(user.stdout.readline())
        upstream = int(user.stdout.readline())
    finally:
        os.kill(user.pid, signal.SIGKILL)
        user.wait(timeout=10)
    assert _gone(first), "the server that overran was not stopped"
    assert _gone(upstream), "the upstream outlived its user (its stdin closed)"
    assert list(scratch.iterdir()) == []


# -- item 6: non-finite numbers --------------------------------------------------------------


@pytest.mark.parametrize("text, where, spelled", [
    ('{"size": NaN}', "size", "NaN"),
    ('{"text": "a", "size": Infinity}', "size", "Infinity"),
    ('{"nested": {"list": [1, -Infinity]}}', "nested.list[1]", "-Infinity"),
    ('{"size": 1e999}', "size", "Infinity"),
])
def test_non_finite_numbers_are_refused_before_sending(runtime: MCPRuntime, tools: Catalog,
                                                       text: str, where: str,
                                                       spelled: str) -> None:
    result = runtime.call(tools.get("echo"), json.loads(text))
    assert result.error_kind is ErrorKind.INVALID_ARGUMENTS
    assert result.error == f"echo: at {where!r}: {spelled} is not a finite number"


def test_finite_numbers_still_pass(runtime: MCPRuntime, tools: Catalog) -> None:
    result = runtime.call(tools.get("echo"), {"size": 3, "nested": [1.5, -2e300]})
    assert result.ok and result.value == {"size": 3, "nested": [1.5, -2e300]}


def test_a_tool_spec_from_elsewhere_is_still_refused(runtime: MCPRuntime) -> None:
    result = runtime.call(ToolSpec(name="ghost", source="mcp"), {"x": float("nan")})
    assert result.error_kind is ErrorKind.INVALID_ARGUMENTS
