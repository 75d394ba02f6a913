"""Resources, resource templates, prompts and tool annotations through ``hyperplan serve``
(issue 38, item 4), against real stdio MCP servers: ``tests/data/gateway/passthrough_server.py``
(the SDK's ``MCPServer``: resources, a template, prompts, annotated tools; two copies of it
clash on every URI and prompt name) and, when installed, ``@modelcontextprotocol/
server-everything``. The gateway runs as the real command, over stdio (both protocol
generations of the SDK client) and over streamable HTTP."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError, StdioServerParameters

from gateway_helpers import free_port, result_data, run_bounded, wait_listening
from hyperplan.integrations.mcp_gateway.config import GatewayConfig, Mode
from hyperplan.integrations.mcp_gateway.passthrough import server_label, template_pattern
from hyperplan.integrations.mcp_gateway.server import GatewayServer

SERVER = Path(__file__).parent / "data" / "gateway" / "passthrough_server.py"
SECRET = "pt-secret-value-0123456789"
TIMEOUT = 90.0
A, B = "passthrough_server_py", "passthrough_server_py_2"  # the two copies' labels
BOOKSTORE = "python:hyperplan.examples.bookstore"


def _source(label: str, *flags: str) -> str:
    return f"mcp-server:{sys.executable} {SERVER} {label} {SECRET} {' '.join(flags)}".strip()


def _gateway_args(*sources: str, extra: tuple[str, ...] = (), timeout: int = 30) -> list[str]:
    return ["-m", "hyperplan", "serve", "--embedder", "hashing", "--no-cache",
            "--call-timeout", str(timeout), *extra, *sources]


def _env() -> dict[str, str]:
    # the secret is registered for redaction from the gateway's environment (a *SECRET* name)
    return {**os.environ, "PASSTHROUGH_SECRET": SECRET}


def _stdio(*sources: str, extra: tuple[str, ...] = (), timeout: int = 30
           ) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=_gateway_args(
        *sources, extra=extra, timeout=timeout), env=_env())


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.contents)


# pure parts --------------------------------------------------------------------------------


def test_labels_and_template_patterns() -> None:
    assert server_label("mcp-server:server-filesystem") == "server-filesystem"
    assert server_label("mcp-server:passthrough_server.py") == A
    pattern = template_pattern("notes://note/{note_id}")
    assert pattern.match("notes://note/7") and not pattern.match("notes://note/7/x")
    assert template_pattern("file:///{+path}").match("file:///a/b/c.txt")
    assert template_pattern("search://q{?query,limit}").match("search://q?query=x&limit=2")
    assert not template_pattern("notes://note/{id}").match("other://note/1")


def test_a_definition_with_an_odd_field_keeps_title_and_hints() -> None:
    """Narrow mode lists upstream definitions; one the SDK's model refuses (here a bad
    outputSchema) is listed without the odd field but with its title and annotations."""
    server = GatewayServer(GatewayConfig(mode=Mode.NARROW), lambda: None)  # type: ignore[arg-type, return-value]
    tool = server._tool({"name": "wipe", "inputSchema": {"type": "object"},
                         "outputSchema": "not a schema", "title": "Wipe",
                         "annotations": {"destructiveHint": True}})
    assert tool.title == "Wipe" and tool.output_schema is None
    assert tool.annotations is not None and tool.annotations.destructive_hint is True


# two clashing upstreams over stdio ------------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_clashing_upstreams_are_prefixed_consistently(mode: str) -> None:
    """Two copies of one server (same URIs, template and prompt names; the second serves no
    tools) and a Python source: the lists are the union, each clash shown under its server's
    label (the same word that prefixes its clashing tools), and reading / getting a listed
    entry reaches the server that listed it; the secret the server shows is redacted; an
    unknown URI or prompt is a JSON-RPC error naming it."""
    async def scenario() -> None:
        async with Client(_stdio(_source("alpha"), _source("beta", "--no-tools"),
                                 BOOKSTORE), mode=mode,
                          read_timeout_seconds=TIMEOUT) as client:
            assert client.server_capabilities.resources is not None
            assert client.server_capabilities.prompts is not None
            resources = (await client.list_resources()).resources
            uris = [r.uri for r in resources]
            assert uris == [f"{x}+notes://{name}" for x in (A, B)
                            for name in ("readme", "config", "big", "slow")]
            assert resources[0].name == f"{A}__readme"
            assert resources[0].mime_type == "text/plain"
            templates = (await client.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == [
                f"{A}+notes://note/{{note_id}}", f"{B}+notes://note/{{note_id}}"]
            prompts = (await client.list_prompts()).prompts
            assert [p.name for p in prompts] == [f"{A}__summarize", f"{A}__greet",
                                                 f"{B}__summarize", f"{B}__greet"]
            summarize = prompts[0]
            assert [a.name for a in summarize.arguments or []] == ["note_id"]

            assert _text(await client.read_resource(f"{A}+notes://readme")) == "readme of alpha"
            assert _text(await client.read_resource(f"{B}+notes://readme")) == "readme of beta"
            assert _text(await client.read_resource(f"{B}+notes://note/7")) == "note 7 of beta"
            config = _text(await client.read_resource(f"{A}+notes://config"))
            assert SECRET not in config and config.startswith("token=")
            got = await client.get_prompt(f"{B}__summarize", {"note_id": "3"})
            assert got.messages[0].content.text == "Summarize note 3 (beta)."  # type: ignore[union-attr]
            got = await client.get_prompt(f"{A}__greet")
            assert got.messages[0].content.text == "Hello from alpha."  # type: ignore[union-attr]

            with pytest.raises(MCPError) as unknown_uri:
                await client.read_resource("notes://readme")  # clashing: which one?
            assert "notes://readme" in unknown_uri.value.error.message
            assert A in unknown_uri.value.error.message
            with pytest.raises(MCPError) as unknown_prompt:
                await client.get_prompt("nope")
            assert "nope" in unknown_prompt.value.error.message
            found = result_data(await client.call_tool("find_tools", {
                "request": "delete a note for good"}))
            assert "delete_note" in [t["name"] for t in found["tools"]]

    run_bounded(scenario, TIMEOUT * 2)


def test_one_upstream_unprefixed_with_template_routing_and_limits() -> None:
    """One server with resources (and the bookstore, without): nothing is prefixed, a URI of
    its template that was never listed reaches it, an answer over --max-response-bytes is an
    error saying so (and the next read is served), prompt arguments over
    --max-argument-bytes are refused unsent."""
    async def scenario() -> None:
        params = _stdio(_source("solo"), BOOKSTORE, extra=(
            "--max-response-bytes", "20000", "--max-argument-bytes", "200"))
        async with Client(params, read_timeout_seconds=TIMEOUT) as client:
            uris = [r.uri for r in (await client.list_resources()).resources]
            assert uris == ["notes://readme", "notes://config", "notes://big", "notes://slow"]
            assert _text(await client.read_resource("notes://note/42")) == "note 42 of solo"
            with pytest.raises(MCPError) as big:
                await client.read_resource("notes://big")
            assert "max-response-bytes" in big.value.error.message
            assert _text(await client.read_resource("notes://readme")) == "readme of solo"
            assert [p.name for p in (await client.list_prompts()).prompts] == [
                "summarize", "greet"]
            with pytest.raises(MCPError) as large:
                await client.get_prompt("summarize", {"note_id": "x" * 500})
            assert "Nothing was sent" in large.value.error.message
            got = await client.get_prompt("summarize", {"note_id": "9"})
            assert got.messages[0].content.text == "Summarize note 9 (solo)."  # type: ignore[union-attr]

    run_bounded(scenario, TIMEOUT * 2)


def test_a_read_past_the_deadline_is_an_error_and_the_upstream_is_replaced() -> None:
    """A resource that takes a minute, with --call-timeout 2: the read is an error within the
    deadline (not a hang), and the next read is served by a fresh upstream."""
    async def scenario() -> None:
        async with Client(_stdio(_source("slowpoke"), timeout=2),
                          read_timeout_seconds=TIMEOUT) as client:
            started = time.monotonic()
            with pytest.raises(MCPError) as late:
                await client.read_resource("notes://slow")
            assert time.monotonic() - started < 15
            assert "no answer within" in late.value.error.message
            assert _text(await client.read_resource("notes://readme")) == "readme of slowpoke"

    run_bounded(scenario, TIMEOUT)


def test_find_tools_shows_hints_and_narrow_list_keeps_annotations() -> None:
    """Search mode: each tool find_tools returns carries its hints (readOnlyHint,
    destructiveHint, idempotentHint, openWorldHint, title). Narrow mode: the listed tools
    keep their upstream annotations and title."""
    async def search() -> None:
        async with Client(_stdio(_source("solo")), read_timeout_seconds=TIMEOUT) as client:
            found = result_data(await client.call_tool("find_tools", {
                "request": "read the note and then delete the note"}))
            hints = {t["name"]: t["hints"] for t in found["tools"]}
            assert hints["delete_note"] == {"readOnlyHint": False, "destructiveHint": True,
                                            "idempotentHint": False, "openWorldHint": False,
                                            "title": "Delete a note"}
            assert hints["read_note"] == {"readOnlyHint": True, "idempotentHint": True,
                                          "openWorldHint": False, "title": "Read a note"}

    async def narrow() -> None:
        async with Client(_stdio(_source("solo"), extra=("--mode", "narrow")), mode="legacy",
                          read_timeout_seconds=TIMEOUT) as client:
            found = result_data(await client.call_tool("find_tools", {
                "request": "delete the note"}))
            assert all("hints" in t for t in found["tools"])
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert "delete_note" in tools, list(tools)
            annotations = tools["delete_note"].annotations
            assert annotations is not None and annotations.destructive_hint is True
            assert tools["delete_note"].title == "Delete a note"

    run_bounded(search, TIMEOUT)
    run_bounded(narrow, TIMEOUT)


# over streamable HTTP ---------------------------------------------------------------------


@contextmanager
def _http_gateway(*sources: str) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen([sys.executable, *_gateway_args(
        *sources, extra=("--http", str(port)))], env=_env(), stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_listening(process, port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGTERM)
        process.communicate(timeout=20)


def test_http_passthrough_and_capabilities_only_when_an_upstream_has_them() -> None:
    """Over HTTP, both client generations read and get through the gateway; once the sources
    loaded, a gateway whose upstreams have neither resources nor prompts does not advertise
    them (a handshake-era client initializing after the load sees no such capability)."""
    async def with_passthrough(url: str) -> None:
        for mode in ("auto", "legacy"):
            async with Client(url, mode=mode, read_timeout_seconds=TIMEOUT) as client:
                await client.list_tools()  # the sources loaded
                uris = [r.uri for r in (await client.list_resources()).resources]
                assert "notes://readme" in uris
                assert _text(await client.read_resource("notes://note/5")) == \
                    "note 5 of web"
                got = await client.get_prompt("greet")
                assert got.messages[0].content.text == "Hello from web."  # type: ignore[union-attr]
        async with Client(url, mode="legacy", read_timeout_seconds=TIMEOUT) as client:
            assert client.server_capabilities.resources is not None
            assert client.server_capabilities.prompts is not None

    async def without(url: str) -> None:
        async with Client(url, mode="legacy", read_timeout_seconds=TIMEOUT) as client:
            await client.list_tools()
        async with Client(url, mode="legacy", read_timeout_seconds=TIMEOUT) as client:
            assert client.server_capabilities.resources is None
            assert client.server_capabilities.prompts is None
            assert client.server_capabilities.tools is not None
            assert (await client.list_resources()).resources == []

    with _http_gateway(_source("web")) as url:
        run_bounded(lambda: with_passthrough(url), TIMEOUT * 2)
    with _http_gateway(BOOKSTORE) as url:
        run_bounded(lambda: without(url), TIMEOUT)


# server-everything (npm), when installed ------------------------------------------------------


def _everything_command() -> str | None:
    """``mcp-server-everything`` on PATH or installed under ``$HYPERPLAN_NPM_PREFIX`` (``npm
    install --prefix DIR @modelcontextprotocol/server-everything@2026.8.31``, as
    benchmarks/mcp-corpus/servers.json pins it), when ``npx`` exists."""
    if shutil.which("npx") is None:
        return None
    prefix = os.environ.get("HYPERPLAN_NPM_PREFIX")
    for folder in ("node_modules/.bin", "bin") if prefix else ():
        candidate = Path(prefix or ".") / folder / "mcp-server-everything"
        if candidate.is_file():
            return str(candidate)
    return shutil.which("mcp-server-everything")


def test_server_everything_resources_and_prompts() -> None:
    """``@modelcontextprotocol/server-everything`` (its resources, templates and prompts)
    through the gateway. Runs only when npx and the package are installed (on PATH or under
    $HYPERPLAN_NPM_PREFIX); skipped otherwise, in CI as well: CI installs no npm packages,
    and the same passthrough is covered there by the MCPServer test server above."""
    command = _everything_command()
    if command is None:
        pytest.skip("@modelcontextprotocol/server-everything is not installed (npm)")

    async def scenario() -> None:
        params = _stdio(f"mcp-server:{command} stdio")
        async with Client(params, read_timeout_seconds=TIMEOUT) as client:
            assert client.server_capabilities.resources is not None
            resources = (await client.list_resources()).resources
            assert resources, "server-everything lists resources"
            first = await client.read_resource(resources[0].uri)
            assert first.contents and str(first.contents[0].uri) == resources[0].uri
            templates = (await client.list_resource_templates()).resource_templates
            assert templates
            prompts = (await client.list_prompts()).prompts
            assert prompts
            simple = next((p for p in prompts if not any(
                a.required for a in p.arguments or [])), None)
            assert simple is not None, [p.name for p in prompts]
            got = await client.get_prompt(simple.name)
            assert got.messages
            data = json.dumps(result_data(await client.call_tool("find_tools", {
                "request": "echo a message back"})))
            assert '"hints"' in data

    run_bounded(scenario, TIMEOUT * 2)
