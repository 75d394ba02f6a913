"""Turning command-line style options into a catalog, a runtime and an LLM client (the wiring
above :mod:`hyperplan.execute`, :mod:`hyperplan.sources` and the demo world).

Tool sources (``--tools``):

* ``python:pkg.module[:attr]`` — Python callables, run in-process, or in a limited child
  process with ``sandbox=Sandbox.SUBPROCESS`` (:mod:`hyperplan.execute.runtimes.sandbox`);
  modules that act on the host are refused unless ``allow_unsafe_tools``;
* ``openapi:FILE`` — an OpenAPI document, run over HTTP (``base_url`` overrides its server);
* ``demo-world`` — the shipped demo world (a fresh in-memory database);
* an MCP server command (``mcp_command="python server.py"``) — tools listed live and run over
  stdio;
* any other ``KIND:LOCATION`` source loads a catalog with no runtime (planning only; every
  call comes back as an ``unknown_tool`` observation).
"""

from __future__ import annotations

import concurrent.futures
import os
import shlex
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hyperplan.catalog import Catalog, ToolSpec, merge_catalogs
from hyperplan.errors import HyperplanError
from hyperplan.execute.results import ErrorKind, ToolResult, ToolRuntime
from hyperplan.execute.runtimes import (
    CompositeRuntime,
    MCPRuntime,
    OpenAPIRuntime,
    PythonRuntime,
)
from hyperplan.execute.runtimes.http import DEFAULT_MAX_RESPONSE_BYTES
from hyperplan.execute.runtimes.sandbox import Sandbox, SubprocessPythonRuntime
from hyperplan.llm.budget import Accounting
from hyperplan.secrets import register_secret
from hyperplan.sources import load_source

if TYPE_CHECKING:
    from hyperplan.llm.openai_client import OpenAICompatibleLLM


@dataclass(frozen=True)
class ToolSetup:
    catalog: Catalog
    runtime: ToolRuntime
    world: Any = None  # the DemoWorld behind ``demo-world``, for checkers


class NoRuntime:
    """The runtime of a catalog nobody can execute: every call is an observation saying so."""

    def can_run(self, tool: ToolSpec) -> bool:
        return False

    def call(self, tool: ToolSpec, arguments: Mapping[str, Any], *,
             timeout: float | None = None) -> ToolResult:
        return ToolResult.failure(tool.name, arguments, ErrorKind.UNKNOWN_TOOL,
                                  f"{tool.name}: no runtime for catalog source {tool.source!r}")

    def close(self) -> None:
        return None


def tools_from_source(spec: str | None, *, base_url: str | None = None,
                      headers: Mapping[str, str] | None = None,
                      mcp_command: str | None = None, timeout: float = 30.0,
                      max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
                      idempotency_header: str | None = None,
                      allow_unsafe_tools: bool = False,
                      sandbox: Sandbox = Sandbox.NONE) -> ToolSetup:
    """Catalog and runtime for a tool source (module doc). ``max_response_bytes`` and
    ``idempotency_header`` go to the OpenAPI runtime (:class:`OpenAPIRuntime`);
    ``allow_unsafe_tools`` and ``sandbox`` to a ``python:`` source."""
    if sandbox is not Sandbox.NONE and not (spec or "").startswith("python:"):
        raise HyperplanError(f"--sandbox {sandbox.value} runs the tools of a python: source; "
                             f"{spec or '--mcp-command'} has none to run there")
    if mcp_command:
        try:
            parts = shlex.split(mcp_command)
        except ValueError as exc:
            raise HyperplanError(f"--mcp-command: cannot split {mcp_command!r}: {exc}") from None
        if not parts:
            raise HyperplanError("--mcp-command is empty")
        mcp = MCPRuntime(parts[0], parts[1:], timeout=timeout,
                         max_response_bytes=max_response_bytes)
        if not spec:
            return ToolSetup(mcp.catalog(), mcp)
        try:  # both: --tools first, then the server's tools, one runtime over the two
            other = tools_from_source(spec, base_url=base_url, headers=headers,
                                      timeout=timeout, max_response_bytes=max_response_bytes,
                                      idempotency_header=idempotency_header,
                                      allow_unsafe_tools=allow_unsafe_tools, sandbox=sandbox)
            catalog = merge_catalogs([other.catalog, mcp.catalog()],
                                     labels=[f"--tools {spec}", "--mcp-command"])
        except BaseException:
            mcp.close()
            raise
        return ToolSetup(catalog, CompositeRuntime([other.runtime, mcp]), other.world)
    if not spec:
        raise HyperplanError("give --tools SOURCE or --mcp-command CMD")
    if spec == "demo-world":
        from hyperplan.demo_world import DemoWorld

        world = DemoWorld()
        return ToolSetup(world.catalog(), PythonRuntime(world.callables(), timeout=timeout),
                         world)
    catalog = load_source(spec, allow_unsafe_tools=allow_unsafe_tools)
    kind = spec.partition(":")[0]
    if kind == "python" and sandbox is Sandbox.SUBPROCESS:
        return ToolSetup(catalog, SubprocessPythonRuntime.from_catalog(
            catalog, timeout=timeout, allow_unsafe=allow_unsafe_tools))
    if kind == "python":
        return ToolSetup(catalog, PythonRuntime.from_catalog(
            catalog, timeout=timeout, allow_unsafe=allow_unsafe_tools))
    if kind == "openapi":
        return ToolSetup(catalog, OpenAPIRuntime(base_url, headers, timeout=timeout,
                                                 max_response_bytes=max_response_bytes,
                                                 idempotency_header=idempotency_header))
    return ToolSetup(catalog, NoRuntime())


def parse_headers(items: list[str]) -> dict[str, str]:
    """``["Authorization: Bearer x"]`` -> ``{"Authorization": "Bearer x"}``; ``$VAR`` values
    are read from the environment so secrets need not appear on the command line."""
    headers = {}
    for item in items:
        name, sep, value = item.partition(":")
        if not sep or not name.strip():
            raise HyperplanError(f"header {item!r} is not 'Name: value'")
        value = value.strip()
        if value.startswith("$"):
            value = os.environ.get(value[1:], "")
            if not value:
                raise HyperplanError(f"header {name.strip()}: environment variable "
                                     f"{item.partition(':')[2].strip()} is not set")
        headers[name.strip()] = value
        register_secret(value)  # any header may carry a credential: redacted by value
    return headers


def llm_from_options(url: str | None, model: str | None, accounting: Accounting, *,
                     max_tokens: int | None = None,
                     check: bool = False) -> OpenAICompatibleLLM | None:
    """An OpenAI-compatible client for ``url`` (else ``HYPERPLAN_LLM_BASE_URL``), or None
    when no endpoint is configured. The model defaults to ``HYPERPLAN_LLM_MODEL``, else the
    first model the server lists. Completions are capped at ``max_tokens`` (else
    ``HYPERPLAN_LLM_MAX_TOKENS``, else 1024) so a model that never closes its JSON cannot run
    to the end of its context. An endpoint that cannot be connected to is a
    :class:`HyperplanError` when the model must be listed, or with ``check`` (the command
    line's, once at start, rather than every call failing after its retries)."""
    base = url or os.environ.get("HYPERPLAN_LLM_BASE_URL")
    if not base:
        return None
    chosen = _model(base, model or os.environ.get("HYPERPLAN_LLM_MODEL"), check,
                    accounting.deadline(MODEL_LIST_TIMEOUT) or MODEL_LIST_TIMEOUT)
    cap = max_tokens or int(os.environ.get("HYPERPLAN_LLM_MAX_TOKENS") or 1024)
    from hyperplan.llm.openai_client import OpenAICompatibleLLM  # the SDK, only for a client

    return OpenAICompatibleLLM(chosen, base_url=base, accounting=accounting, max_tokens=cap,
                               temperature=0.0)


MODEL_LIST_TIMEOUT = 10.0  # seconds for the endpoint's model list, the whole exchange


def _get_json(url: str, timeout: float) -> Any:
    """GET ``url`` and parse its JSON within ``timeout`` seconds in all (connect, headers and
    body together: the read runs in a worker thread that is abandoned at the deadline)."""
    import httpx

    result: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def fetch() -> None:
        try:
            result.set_result(httpx.get(url, timeout=timeout).json())
        except BaseException as exc:  # handed to the caller
            result.set_exception(exc)

    threading.Thread(target=fetch, name="hyperplan-models", daemon=True).start()
    try:
        return result.result(timeout=timeout)
    except concurrent.futures.TimeoutError:
        raise httpx.ReadTimeout(f"no model list within {timeout:g} s") from None


def _model(base_url: str, model: str | None, check: bool,
           timeout: float = MODEL_LIST_TIMEOUT) -> str:
    """``model``, else the first model the server lists; asks the server when either is
    needed, and only a failed connection is an error when ``model`` is given. ``timeout``
    bounds the whole exchange (the time left of the run's deadline, when it has one), not
    each read: a server that drips its answer cannot stretch it."""
    import httpx

    if model and not check:
        return model
    try:
        data = _get_json(base_url.rstrip("/") + "/models", timeout)
        return model or str(data["data"][0]["id"])
    except (httpx.ConnectError, httpx.ConnectTimeout, httpx.UnsupportedProtocol,
            httpx.InvalidURL) as exc:
        raise HyperplanError(f"cannot reach the LLM endpoint {base_url}: {exc}") from None
    except (httpx.HTTPError, KeyError, IndexError, ValueError, TypeError):
        if model:
            return model
        raise HyperplanError(f"cannot list models at {base_url}; pass --model") from None
