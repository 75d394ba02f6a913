"""``hyperplan serve [SOURCE...] [--config FILE]``: the MCP gateway
(:mod:`hyperplan.integrations.mcp_gateway`).

Only the option types are imported here; the gateway and the MCP SDK load when the command
runs, so ``hyperplan --help`` does not pay for them.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from hyperplan.cli.options import (
    AllowUnsafeTools,
    BaseUrl,
    Headers,
    IdempotencyKeyHeader,
    MaxResponseBytes,
    embedder_option,
)
from hyperplan.integrations.mcp_gateway.config import (
    DEFAULT_BUDGET,
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_MAX_ARGUMENT_BYTES,
    DEFAULT_MAX_REQUEST_CHARS,
    DEFAULT_SESSION_IDLE_TIMEOUT,
    DEFAULT_SESSIONS_PER_CLIENT,
    CallLimits,
    ConversationLimits,
    Mode,
    Namespace,
)

if TYPE_CHECKING:
    from hyperplan.graph.annotations import Annotations
    from hyperplan.integrations.mcp_gateway.config import HttpSecurity
    from hyperplan.integrations.mcp_gateway.mcp_config import ServerEntry

_MAX_RESPONSE_BYTES = 10 * 1024 * 1024


class Sandbox(StrEnum):
    """``--sandbox``: the values of :class:`hyperplan.execute.runtimes.Sandbox` (not imported
    here: that loads every runtime, which the gateway does in the background)."""

    NONE = "none"
    SUBPROCESS = "subprocess"


CacheDir = Annotated[Path | None, typer.Option(
    help="Where the built graph and each MCP upstream's last tool list are kept (default: "
    "$HYPERPLAN_CACHE_DIR/selectors or ~/.cache/hyperplan).")]


def serve_cmd(
    sources: list[str] = typer.Argument(None, metavar="[SOURCE]...", help="Tool sources, "
                                        "as `graph build` takes them: python:MOD, "
                                        "openapi:FILE, openai:FILE, 'mcp-server:CMD' (one or "
                                        "many, merged)."),
    config_file: Path = typer.Option(None, "--config", metavar="FILE", help="An mcpServers "
                                     "JSON file, as Claude Desktop, Cursor, VS Code and Hermes "
                                     "use (command, args, env, cwd; url, headers); ${VAR} "
                                     "taken from the environment. Its servers are served with "
                                     "the SOURCEs."),
    namespace: Namespace = typer.Option(Namespace.COLLISIONS, help="collisions: serve a tool "
                                        "name two upstreams both define as server__tool; "
                                        "always: prefix every tool so."),
    mode: Mode = typer.Option(Mode.SEARCH, help="search: two tools, find_tools and "
                              "call_tool; narrow: find_tools plus the selected tools, the "
                              "list changing with the session state (list_changed)."),
    http: str = typer.Option(None, "--http", metavar="[HOST:]PORT", help="Serve streamable "
                             "HTTP at http://HOST:PORT/mcp (host 127.0.0.1 by default) "
                             "instead of stdio."),
    allow_remote: bool = typer.Option(False, help="Let --http listen on a host that is not "
                                      "loopback; needs a bearer token (--auth-token-env or "
                                      "--auth-token-file)."),
    auth_token_env: str = typer.Option(None, "--auth-token-env", metavar="VAR", help="--http: "
                                       "every request must carry 'Authorization: Bearer "
                                       "TOKEN', TOKEN the value of this environment variable."),
    auth_token_file: Path = typer.Option(None, "--auth-token-file", metavar="FILE",
                                         help="--http: the bearer token is the first line of "
                                         "this file (keep it mode 600)."),
    allow_origin: list[str] = typer.Option([], "--allow-origin", metavar="ORIGIN",
                                           help="--http: also serve browser requests from "
                                           "this exact origin (scheme://host[:port]; "
                                           "repeatable). Default: only the gateway's own."),
    sessions_per_client: int = typer.Option(DEFAULT_SESSIONS_PER_CLIENT, help="--http: open "
                                            "handshake-era sessions per client address; past "
                                            "it the client's oldest one is closed."),
    session_idle_timeout: float = typer.Option(DEFAULT_SESSION_IDLE_TIMEOUT, help="--http: "
                                               "seconds after which an idle session is "
                                               "closed."),
    budget: int = typer.Option(DEFAULT_BUDGET, "--budget", help="at most this many tools "
                               "per selection"),
    call_timeout: float = typer.Option(DEFAULT_CALL_TIMEOUT, help="Hard deadline of every "
                                       "forwarded call, in seconds."),
    embedder: str = embedder_option("auto"),
    cache_dir: CacheDir = None,
    no_cache: bool = typer.Option(False, "--no-cache", help="Build the graph anew and wait "
                                  "for every upstream's tool list; keep nothing."),
    allow_unsafe_tools: AllowUnsafeTools = False,
    sandbox: Sandbox = typer.Option(Sandbox.SUBPROCESS, help="subprocess (default): run "
                                    "python: tools in a child process without network, with "
                                    "resource limits, killed at the call's deadline; none: in "
                                    "the gateway's process (a tool that overruns keeps its "
                                    "thread)."),
    base_url: BaseUrl = None,
    header: Headers = [],  # noqa: B006 (typer copies it)
    max_response_bytes: MaxResponseBytes = _MAX_RESPONSE_BYTES,
    idempotency_key_header: IdempotencyKeyHeader = None,
    max_request_chars: int = typer.Option(DEFAULT_MAX_REQUEST_CHARS, help="Longest "
                                          "find_tools request (characters)."),
    max_argument_bytes: int = typer.Option(DEFAULT_MAX_ARGUMENT_BYTES, help="Largest "
                                           "call arguments (bytes of JSON); larger ones are "
                                           "refused, not forwarded."),
    max_calls_per_upstream: int = typer.Option(CallLimits.per_source, help="Calls running "
                                               "at once on one upstream source; more wait "
                                               "inside their deadline."),
    max_calls_per_client: int = typer.Option(CallLimits.per_client, help="Calls of one "
                                             "conversation (or, without one, one address) "
                                             "running or waiting at once."),
    conversation_idle: float = typer.Option(ConversationLimits.idle_seconds, help="Seconds "
                                            "after which an unused conversation (its state) "
                                            "is forgotten."),
    annotations: Path = typer.Option(None, "--annotations", metavar="FILE", help="Build the "
                                     "graph with these inferred outputs, preconditions and "
                                     "effects (an annotation file, as `hyperplan graph "
                                     "annotate` writes)."),
    llm_annotate: str = typer.Option(None, "--llm-annotate", metavar="URL", help="Ask the "
                                     "model at this OpenAI-compatible base URL for every "
                                     "tool's outputs, preconditions and effects before the "
                                     "graph is built (answers cached per tool; model: "
                                     "HYPERPLAN_LLM_MODEL, else the server's first; key: "
                                     "HYPERPLAN_LLM_API_KEY). Optional: selection itself "
                                     "never uses an LLM."),
) -> None:
    """Serve tools as an LLM-free MCP gateway.

    It selects the tools for each task: the Tool Context Graph and DOE pick the tools a
    request names and the producers of their inputs, given what the client holds. stdio by
    default, --http for streamable HTTP.

    Calls are forwarded through hyperplan's hardened runtimes: arguments checked against the
    tool's schema first, a hard deadline per call, writes never repeated, secrets redacted by
    value. The graph is built in the background; until it is ready find_tools answers with a
    BM25 search and says so."""
    import sys

    from hyperplan.errors import HyperplanError
    from hyperplan.integrations.mcp_gateway import serve
    from hyperplan.integrations.mcp_gateway.config import GatewayConfig, parse_http_address
    from hyperplan.integrations.mcp_gateway.upstream import UpstreamOptions

    if no_cache and cache_dir is not None:
        raise HyperplanError("give --cache-dir or --no-cache, not both")
    try:
        servers = _servers(config_file)
        address = parse_http_address(http, allow_remote=allow_remote) if http else None
        security = _security(address is not None, auth_token_env, auth_token_file,
                             allow_origin, sessions_per_client, session_idle_timeout)
    except HyperplanError as exc:
        _fail(exc)
    annotated = _annotations(annotations)
    config = GatewayConfig(mode=mode, budget=budget, call_timeout=call_timeout,
                           embedder=embedder,
                           cache_dir=None if no_cache else (cache_dir or "default"),
                           max_request_chars=max_request_chars,
                           max_argument_bytes=max_argument_bytes,
                           call_limits=CallLimits(max_calls_per_upstream, max_calls_per_client),
                           conversation_limits=ConversationLimits(conversation_idle),
                           annotations=annotated, llm_annotate=llm_annotate)
    if max_response_bytes < 1:
        raise HyperplanError("--max-response-bytes must be positive")
    options = UpstreamOptions(call_timeout=call_timeout, allow_unsafe_tools=allow_unsafe_tools,
                              sandbox=sandbox.value, base_url=base_url,
                              headers=_headers(header),
                              max_response_bytes=max_response_bytes,
                              idempotency_header=idempotency_key_header,
                              namespace=namespace)
    try:
        serve(sources or [], config, options, http=address, security=security,
              announce=lambda line: print(line, file=sys.stderr, flush=True),
              servers=servers)
    except HyperplanError as exc:
        _fail(exc)


def _servers(path: Path | None) -> list[ServerEntry]:
    """The servers of ``--config FILE`` (:mod:`hyperplan.integrations.mcp_gateway.
    mcp_config`), ``${VAR}`` resolved; none without it."""
    if path is None:
        return []
    from hyperplan.integrations.mcp_gateway.mcp_config import load_mcp_config

    return load_mcp_config(path)


def _annotations(path: Path | None) -> Annotations | None:
    """The annotation file of ``--annotations``, read now (a bad file is one error before
    anything is served)."""
    if path is None:
        return None
    from hyperplan.errors import HyperplanError
    from hyperplan.graph.annotations import load_annotations

    try:
        return load_annotations(path)
    except HyperplanError as exc:
        _fail(exc)


def _fail(exc: Exception) -> NoReturn:
    """One line on stderr, exit status 1 (without loading the CLI's rich console)."""
    import sys

    from hyperplan.secrets import redact_text

    print(f"error: {redact_text(' '.join(str(exc).split()))}", file=sys.stderr)
    raise SystemExit(1) from None


def _security(http: bool, token_env: str | None, token_file: Path | None,
              origins: list[str], sessions_per_client: int,
              idle_timeout: float) -> HttpSecurity | None:
    """The HTTP security options (:class:`~hyperplan.integrations.mcp_gateway.config.
    HttpSecurity`); refused without --http, where they would protect nothing."""
    from hyperplan.errors import HyperplanError
    from hyperplan.integrations.mcp_gateway.config import HttpSecurity, read_auth_token

    if not http:
        if token_env or token_file or origins:
            raise HyperplanError("--auth-token-env, --auth-token-file and --allow-origin "
                                 "apply to --http only")
        return None
    return HttpSecurity(token=read_auth_token(token_env, token_file),
                        allowed_origins=tuple(origins),
                        sessions_per_client=sessions_per_client,
                        session_idle_timeout=idle_timeout)


def _headers(items: list[str]) -> dict[str, str]:
    """``--header`` values (:func:`hyperplan.connect.parse_headers`, imported only when
    there are some: that module loads the OpenAI SDK)."""
    if not items:
        return {}
    from hyperplan.connect import parse_headers

    return parse_headers(items)
