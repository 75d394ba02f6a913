"""``hyperplan serve --config FILE`` (issue 38, items 1-3): the ``mcpServers`` file people
already have (stdio with env and cwd, remote streamable HTTP with headers, ``${VAR}``
resolved and redacted), colliding tool names namespaced as ``server__tool`` and routed,
upstreams started together with a failing one reported and the others served.

The servers are real: tests/data/mcp_config/tiny_server.py (the official SDK's MCPServer)
over stdio and over streamable HTTP, started as processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway_helpers import free_port, result_data, result_text, run_bounded

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters

from hyperplan.errors import HyperplanError
from hyperplan.integrations.mcp_gateway import GatewayConfig, build_gateway
from hyperplan.integrations.mcp_gateway.config import Namespace
from hyperplan.integrations.mcp_gateway.mcp_config import (
    ServerKind,
    load_mcp_config,
    parse_mcp_config,
)
from hyperplan.integrations.mcp_gateway.upstream import (
    UpstreamOptions,
    load_upstream,
)
from hyperplan.secrets import redact_text

TINY = str(Path(__file__).parent / "data" / "mcp_config" / "tiny_server.py")
SLOW = str(Path(__file__).parent / "data" / "mcp_config" / "slow_stub.py")
TINY_TOOLS = {"read_env", "working_directory", "request_header"}
OPTIONS = UpstreamOptions(call_timeout=20)


def _tiny(**env: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [TINY], "env": env}


def _value(result: Any) -> Any:
    assert result.ok, result.error
    return result.value["result"] if isinstance(result.value, dict) else result.value


# parsing ---------------------------------------------------------------------------------


def test_every_form_is_read() -> None:
    """Claude/Cursor ``mcpServers``, VS Code ``servers`` with ``type``, ``url`` + ``headers``,
    ``disabled`` entries left out; ``${VAR}`` and ``${env:VAR}`` resolved everywhere."""
    environ = {"H6_ROOT": "/srv/repo", "H6_TOKEN": "tok-abcdef-123456", "H6_HOST": "mcp.test"}
    claude = parse_mcp_config({"mcpServers": {
        "git": {"command": "uvx", "args": ["mcp-server-git", "--repository", "${H6_ROOT}"],
                "env": {"A": "1", "B": "${env:H6_ROOT}/x"}, "cwd": "${H6_ROOT}"},
        "remote": {"url": "https://${H6_HOST}/mcp",
                   "headers": {"Authorization": "Bearer ${H6_TOKEN}"}},
        "off": {"command": "nothing", "disabled": True}}}, "f.json", environ)
    assert [e.name for e in claude] == ["git", "remote"]
    git, remote = claude
    assert git.kind is ServerKind.STDIO and git.command == "uvx"
    assert git.args == ("mcp-server-git", "--repository", "/srv/repo")
    assert dict(git.env) == {"A": "1", "B": "/srv/repo/x"} and git.cwd == "/srv/repo"
    assert remote.kind is ServerKind.HTTP and remote.url == "https://mcp.test/mcp"
    assert dict(remote.headers) == {"Authorization": "Bearer tok-abcdef-123456"}
    assert "tok-abcdef-123456" not in repr(remote)
    vscode = parse_mcp_config({"servers": {
        "a": {"type": "stdio", "command": "node", "args": ["s.js"]},
        "b": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}}, "v.json", {})
    assert [(e.name, e.kind) for e in vscode] == [("a", ServerKind.STDIO), ("b", ServerKind.HTTP)]


def test_substituted_values_and_headers_are_secrets() -> None:
    environ = {"H6_SECRET_ENV": "env-secret-value-987", "H6_SECRET_HDR": "hdr-secret-value-654"}
    parse_mcp_config({"mcpServers": {
        "s": {"command": "x", "env": {"KEY": "${H6_SECRET_ENV}"}},
        "h": {"url": "http://127.0.0.1:1/mcp",
              "headers": {"X-Api-Key": "literal-key-value-321",
                          "Authorization": "Bearer ${H6_SECRET_HDR}"}}}}, "f.json", environ)
    for value in ("env-secret-value-987", "hdr-secret-value-654", "literal-key-value-321"):
        assert redact_text(f"said {value}") == "said ***"
    parse_mcp_config({"mcpServers": {"m": {"command": "x", "env": {
        "MEMORY_FILE_PATH": "${HOME}/memory.json"}}}}, "f.json", {"HOME": "/home/h6-user"})
    assert redact_text("/home/h6-user/x") == "/home/h6-user/x"  # a place, not a credential


@pytest.mark.parametrize(("data", "message"), [
    ({"mcpServers": {"git": {"command": "uvx", "env": {"T": "${H6_NOT_SET_VAR}"}}}},
     "f.json: server 'git': field env.T: the environment variable H6_NOT_SET_VAR is not set"),
    ({"mcpServers": {"git": {"command": "uvx", "args": ["--x", "${H6_NOT_SET_VAR}"]}}},
     "server 'git': field args[1]: the environment variable H6_NOT_SET_VAR"),
    ({"mcpServers": {"r": {"url": "http://h/mcp", "headers": {"A": "${H6_NOT_SET_VAR}"}}}},
     "server 'r': field headers.A"),
    ({"mcpServers": {"x": {"command": "a", "url": "http://h"}}}, "either \"command\""),
    ({"mcpServers": {"x": {}}}, "either \"command\""),
    ({"mcpServers": {"x": {"type": "sse", "url": "http://h"}}}, "'sse' is not supported"),
    ({"mcpServers": {"x": {"type": "http", "command": "a"}}}, "needs the field 'url'"),
    ({"mcpServers": {"x": {"command": "a", "argz": []}}}, "unknown field 'argz'"),
    ({"mcpServers": {"x": {"command": "a", "args": "--flag"}}}, "'args' must be a list"),
    ({"mcpServers": {"x": {"command": "a", "env": {"K": ["v"]}}}}, "field env.K"),
    ({"mcpServers": {"bad name": {"command": "a"}}}, "server 'bad name': a server name"),
    ({"mcpServers": {}}, "lists no (enabled) server"),
    ({"tools": []}, "no \"mcpServers\""),
    ([], "expected a JSON object"),
])
def test_bad_files_are_clear_errors(data: Any, message: str) -> None:
    with pytest.raises(HyperplanError) as caught:
        parse_mcp_config(data, "f.json", {})
    assert message in str(caught.value)
    assert str(caught.value).startswith("f.json")


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(HyperplanError, match="cannot read it"):
        load_mcp_config(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(HyperplanError, match=r"bad\.json: not valid JSON"):
        load_mcp_config(bad)


def test_the_cli_names_the_missing_variable_and_prints_no_secret(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "ok": {"command": "x", "env": {"K": "${H6_CLI_SECRET}"}},
        "memory": {"command": "x", "env": {"MEMORY_FILE_PATH": "${H6_UNSET_FOR_CLI}"}}}}))
    env = {k: v for k, v in os.environ.items() if k != "H6_UNSET_FOR_CLI"}
    env["H6_CLI_SECRET"] = "cli-secret-value-111"
    done = subprocess.run([sys.executable, "-m", "hyperplan", "serve", "--config", str(config)],
                          capture_output=True, text=True, env=env, timeout=60, check=False)
    assert done.returncode == 1 and done.stdout == ""
    assert (f"{config}: server 'memory': field env.MEMORY_FILE_PATH: the environment variable "
            "H6_UNSET_FOR_CLI is not set") in done.stderr
    assert "cli-secret-value-111" not in done.stderr


# env, cwd, HTTP: real servers ---------------------------------------------------------


def test_env_and_cwd_reach_a_real_stdio_server(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The server gets its own env over the safe default (not the gateway's whole
    environment), in its cwd; a value from ``${VAR}`` is redacted in what the gateway says."""
    monkeypatch.setenv("H6_GATEWAY_ONLY", "not-for-the-server")
    monkeypatch.setenv("H6_API_KEY_VALUE", "sk-env-secret-4242")
    servers = parse_mcp_config({"mcpServers": {"tiny": {
        **_tiny(MEMORY_FILE_PATH=str(tmp_path / "memory.json"), API_KEY="${H6_API_KEY_VALUE}"),
        "cwd": str(tmp_path)}}}, "f.json")
    upstream = load_upstream([], OPTIONS, servers=servers)
    try:
        assert set(upstream.names) == TINY_TOOLS  # one server: nothing to namespace
        assert upstream.server_of("read_env") == "tiny"
        read = upstream.call("read_env", {"variable": "MEMORY_FILE_PATH"})
        assert _value(read) == str(tmp_path / "memory.json")
        assert _value(upstream.call("working_directory", {})) == str(tmp_path)
        assert _value(upstream.call("read_env", {"variable": "H6_GATEWAY_ONLY"})) == ""
        assert _value(upstream.call("read_env", {"variable": "PATH"})) == os.environ["PATH"]
        key = upstream.call("read_env", {"variable": "API_KEY"})
        assert _value(key) == "sk-env-secret-4242"  # the server has it ...
        assert redact_text(str(key.value)) == "{'result': '***'}"  # ... the gateway hides it
    finally:
        upstream.close()


@pytest.fixture
def http_server() -> Iterator[str]:
    """tiny_server over streamable HTTP on a free port; killed by its PID."""
    port = free_port()
    process = subprocess.Popen([sys.executable, TINY, "http", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 30
        import socket

        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
        yield url
    finally:
        process.kill()
        process.wait(timeout=10)


def test_a_remote_http_upstream_gets_its_headers(http_server: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("H6_REMOTE_TOKEN", "remote-token-0123456789")
    servers = parse_mcp_config({"mcpServers": {"remote": {
        "type": "http", "url": http_server,
        "headers": {"Authorization": "Bearer ${H6_REMOTE_TOKEN}", "X-Team": "planning"}}}},
        "f.json")
    upstream = load_upstream([], OPTIONS, servers=servers)
    try:
        assert set(upstream.names) == TINY_TOOLS and upstream.server_of("read_env") == "remote"
        auth = upstream.call("request_header", {"header": "authorization"})
        assert _value(auth) == "Bearer remote-token-0123456789"
        assert _value(upstream.call("request_header", {"header": "x-team"})) == "planning"
        assert "remote-token" not in redact_text(json.dumps(auth.value))
    finally:
        upstream.close()


# collisions -----------------------------------------------------------------------------


def test_two_copies_of_a_server_are_namespaced_and_routed(tmp_path: Path) -> None:
    servers = parse_mcp_config({"mcpServers": {
        "left": {**_tiny(WHO="left"), "cwd": str(tmp_path)},
        "right": _tiny(WHO="right")}}, "f.json")
    upstream = load_upstream([], OPTIONS, servers=servers)
    try:
        assert set(upstream.names) == {f"{side}__{tool}" for side in ("left", "right")
                                       for tool in TINY_TOOLS}
        for side in ("left", "right"):
            result = upstream.call(f"{side}__read_env", {"variable": "WHO"})
            assert _value(result) == side and result.tool == f"{side}__read_env"
            assert upstream.server_of(f"{side}__read_env") == side
            assert upstream.tool(f"{side}__read_env").metadata["server"] == side  # type: ignore[union-attr]
            definition = upstream.definition(f"{side}__read_env")
            assert definition["name"] == f"{side}__read_env" and definition["inputSchema"]
        assert _value(upstream.call("left__working_directory", {})) == str(tmp_path)
        unknown = upstream.call("read_env", {"variable": "WHO"})
        assert not unknown.ok and unknown.error_kind is not None
    finally:
        upstream.close()


def test_only_colliding_names_are_prefixed_unless_always() -> None:
    """A python source next to an MCP server: nothing collides, nothing is renamed; with
    ``--namespace always`` every tool is."""
    servers = parse_mcp_config({"mcpServers": {"tiny": _tiny()}}, "f.json")
    book = "python:hyperplan.examples.bookstore"
    upstream = load_upstream([book], OPTIONS, servers=servers)
    try:
        assert set(upstream.names) >= TINY_TOOLS and "login" in upstream.names
    finally:
        upstream.close()
    always = UpstreamOptions(call_timeout=20, namespace=Namespace.ALWAYS)
    upstream = load_upstream([book], always, servers=servers)
    try:
        assert {f"tiny__{t}" for t in TINY_TOOLS} <= set(upstream.names)
        assert "hyperplan_examples_bookstore__login" in upstream.names
        assert _value(upstream.call("tiny__read_env", {"variable": "NOPE_H6"})) == ""
    finally:
        upstream.close()


# parallel start, failures ------------------------------------------------------------


def test_a_failing_server_is_reported_and_the_others_served(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("H6_FAIL_SECRET", "fail-secret-value-777")
    servers = parse_mcp_config({"mcpServers": {
        "good": _tiny(WHO="good"),
        "broken": _tiny(TINY_FAIL="${H6_FAIL_SECRET}"),
        "absent": {"command": "no-such-mcp-server-h6"},
        "also": _tiny(WHO="also")}}, "f.json")
    told: list[str] = []
    upstream = load_upstream([], OPTIONS, servers=servers, report=told.append)
    try:
        assert set(upstream.names) == {f"{s}__{t}" for s in ("good", "also") for t in TINY_TOOLS}
        assert _value(upstream.call("also__read_env", {"variable": "WHO"})) == "also"
    finally:
        upstream.close()
    assert len(told) == 2, told
    broken = next(line for line in told if "server 'broken'" in line)
    assert "refusing to start (***)" in broken and "fail-secret-value-777" not in broken
    assert "\n" not in broken
    assert any("server 'absent'" in line and "no command 'no-such-mcp-server-h6'" in line
               for line in told)


def test_none_started_is_an_error() -> None:
    servers = parse_mcp_config({"mcpServers": {"a": _tiny(TINY_FAIL="one"),
                                               "b": {"command": "no-such-mcp-server-h6"}}},
                               "f.json")
    with pytest.raises(HyperplanError, match=r"no upstream started: server 'a'.*server 'b'"):
        load_upstream([], OPTIONS, servers=servers, report=lambda line: None)


def test_slow_servers_start_together() -> None:
    """Two servers that each take 2 s before answering (a stdlib-only stub: its start is the
    delay, not import time): the first tools/list after < 3.5 s (one after the other:
    > 4 s)."""
    import hyperplan.execute.runtimes  # imported before the clock starts
    import hyperplan.importers.mcp  # noqa: F401

    slow = {"command": sys.executable, "args": [SLOW], "env": {"TINY_START_DELAY": "2"}}
    servers = parse_mcp_config({"mcpServers": {"slow1": slow, "slow2": slow}}, "f.json")
    started = time.monotonic()
    upstream = load_upstream([], OPTIONS, servers=servers)
    try:
        seconds = time.monotonic() - started
        assert upstream.names == ["slow1__wait", "slow2__wait"]
        assert seconds < 3.5, f"first tools/list after {seconds:.2f} s"
        assert _value(upstream.call("slow2__wait", {})) == "done"
    finally:
        upstream.close()


def test_a_hung_server_costs_its_own_deadline_only() -> None:
    """A server that never answers is given up at its own start deadline (the call timeout)
    and reported; the quick one is served meanwhile, not after it."""
    hung = {"command": sys.executable, "args": [SLOW], "env": {"TINY_START_DELAY": "60"}}
    quick = {"command": sys.executable, "args": [SLOW]}
    servers = parse_mcp_config({"mcpServers": {"hung": hung, "quick": quick}}, "f.json")
    told: list[str] = []
    started = time.monotonic()
    upstream = load_upstream([], UpstreamOptions(call_timeout=2), servers=servers,
                             report=told.append)
    try:
        seconds = time.monotonic() - started
        assert upstream.names == ["wait"] and upstream.server_of("wait") == "quick"
        assert seconds < 8, f"gave up after {seconds:.2f} s"
        assert len(told) == 1 and "server 'hung'" in told[0], told
    finally:
        upstream.close()


def test_mcp_server_sources_still_work_with_a_config() -> None:
    """``mcp-server:CMD`` next to a config's servers: merged, the same tools namespaced by
    server name (``tiny_server.py`` for the command line's server)."""
    servers = parse_mcp_config({"mcpServers": {"tiny": _tiny(WHO="file")}}, "f.json")
    spec = f"mcp-server:{sys.executable} {TINY}"
    upstream = load_upstream([spec], OPTIONS, servers=servers)
    try:
        assert _value(upstream.call("tiny__read_env", {"variable": "WHO"})) == "file"
        other = [n for n in upstream.names if n.endswith("__read_env") and n != "tiny__read_env"]
        assert len(other) == 1
        assert _value(upstream.call(other[0], {"variable": "WHO"})) == ""
    finally:
        upstream.close()


# end to end -------------------------------------------------------------------------------


def test_serve_config_end_to_end(tmp_path: Path) -> None:
    """``hyperplan serve --config FILE`` over stdio: two copies of a server, a broken one;
    find_tools offers the namespaced tools and call_tool reaches the right copy."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "alpha": _tiny(WHO="alpha"), "beta": _tiny(WHO="beta"),
        "broken": _tiny(TINY_FAIL="down")}}), encoding="utf-8")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hyperplan", "serve", "--embedder", "hashing", "--no-cache",
              "--config", str(config)],
        env={**os.environ, "HYPERPLAN_CACHE_DIR": str(tmp_path / "cache")})

    async def scenario() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            assert {t.name for t in (await client.list_tools()).tools} == {"find_tools",
                                                                           "call_tool"}
            found = result_data(await client.call_tool("find_tools", {
                "request": "read the environment variable WHO"}))
            names = {t["name"] for t in found["tools"]}
            assert names & {"alpha__read_env", "beta__read_env"}, names
            for side in ("alpha", "beta"):
                called = await client.call_tool("call_tool", {
                    "name": f"{side}__read_env", "arguments": {"variable": "WHO"}})
                assert side in result_text(called), result_text(called)

    run_bounded(scenario, 120)


def test_build_gateway_takes_servers() -> None:
    servers = parse_mcp_config({"mcpServers": {"tiny": _tiny()}}, "f.json")
    gateway = build_gateway([], GatewayConfig(embedder="hashing", cache_dir=None),
                            servers=servers)
    try:
        assert set(gateway.upstream.names) == TINY_TOOLS
    finally:
        gateway.upstream.close()
