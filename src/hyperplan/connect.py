"""Turning command-line style options into a catalog, a runtime and an LLM client (the wiring
above :mod:`hyperplan.execute`, :mod:`hyperplan.sources` and the demo world).

Tool sources (``--tools``):

* ``python:pkg.module[:attr]`` — Python callables, run in-process, or in a limited child
  process with ``sandbox=Sandbox.SUBPROCESS`` (:class:`hyperplan.execute.sandboxing.Sandbox`,
  run by :mod:`hyperplan.execute.runtimes.sandbox`);
  modules that act on the host are refused unless ``allow_unsafe_tools``;
* ``openapi:FILE`` — an OpenAPI document, run over HTTP (``base_url`` overrides its server);
* ``demo-world`` — the shipped demo world (a fresh in-memory database);
* ``mcp-server:CMD`` — a stdio MCP server: tools listed live and run over stdio
  (``mcp_command="CMD"``, the command line's ``--mcp-command``, is its deprecated spelling);
* any other ``KIND:LOCATION`` source loads a catalog with no runtime (planning only; every
  call comes back as an ``unknown_tool`` observation, :class:`NoRuntime`).

Each kind is registered once, in :mod:`hyperplan.tool_sources`.
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hyperplan.catalog import Catalog, merge_catalogs
from hyperplan.errors import HyperplanError
from hyperplan.execute.results import ToolRuntime
from hyperplan.execute.runtimes import CompositeRuntime
from hyperplan.execute.runtimes.http import DEFAULT_MAX_RESPONSE_BYTES
from hyperplan.execute.sandboxing import Sandbox
from hyperplan.llm.budget import Accounting
from hyperplan.secrets import register_secret
from hyperplan.tool_sources import NoRuntime as NoRuntime  # re-exported: its old home
from hyperplan.tool_sources import OpenSource, SourceOptions, open_mcp_server, open_source

if TYPE_CHECKING:
    from hyperplan.llm.openai_client import OpenAICompatibleLLM


@dataclass(frozen=True)
class ToolSetup:
    catalog: Catalog
    runtime: ToolRuntime
    world: Any = None  # the DemoWorld behind ``demo-world``, for checkers


def tools_from_source(spec: str | Sequence[str] | None, *, base_url: str | None = None,
                      headers: Mapping[str, str] | None = None,
                      mcp_command: str | None = None, timeout: float = 30.0,
                      max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
                      idempotency_header: str | None = None,
                      allow_unsafe_tools: bool = False,
                      sandbox: Sandbox = Sandbox.NONE) -> ToolSetup:
    """Catalog and runtime for one tool source or several (module doc), each opened through
    the registry (:func:`hyperplan.tool_sources.open_source`); several are merged in order,
    one runtime over them all. ``mcp_command`` is the deprecated spelling of one more source,
    ``mcp-server:CMD``, after the others. ``max_response_bytes`` and ``idempotency_header``
    go to the OpenAPI runtime (:class:`~hyperplan.execute.runtimes.OpenAPIRuntime`);
    ``allow_unsafe_tools`` and ``sandbox`` to a ``python:`` source."""
    specs = [spec] if isinstance(spec, str) else list(spec or ())
    sandbox = Sandbox(sandbox)  # its value taken too; any other is a ValueError
    if sandbox is not Sandbox.NONE and not any(s.startswith("python:") for s in specs):
        raise HyperplanError(f"--sandbox {sandbox.value} runs the tools of a python: source; "
                             f"{specs[0] if specs else '--mcp-command'} has none to run there")
    if not specs and not mcp_command:
        raise HyperplanError("give --tools SOURCE (e.g. python:MOD, openapi:FILE, "
                             "'mcp-server:CMD', demo-world)")
    opts = SourceOptions(timeout=timeout, allow_unsafe_tools=allow_unsafe_tools,
                         sandbox=sandbox, base_url=base_url, headers=headers,
                         max_response_bytes=max_response_bytes,
                         idempotency_header=idempotency_header)
    opened: list[OpenSource] = []
    try:
        for one in specs:
            opened.append(open_source(one, opts))
        if mcp_command is not None:
            opened.append(open_mcp_server(mcp_command, opts, label="--mcp-command"))
        if len(opened) == 1:
            return ToolSetup(opened[0].catalog, opened[0].runtime, opened[0].world)
        labels = [f"--tools {s}" for s in specs] + ["--mcp-command"] * (mcp_command is not None)
        catalog = merge_catalogs([o.catalog for o in opened], labels=labels)
    except BaseException:
        for source in opened:
            source.close()
        raise
    world = next((o.world for o in opened if o.world is not None), None)
    return ToolSetup(catalog, CompositeRuntime([o.runtime for o in opened]), world)


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
