"""``hyperplan serve [SOURCE...] [--config FILE]``: the MCP gateway
(:mod:`hyperplan.integrations.mcp_gateway`).

Only the option types are imported here; the gateway and the MCP SDK load when the command
runs, so ``hyperplan --help`` does not pay for them. The command collects its options into one
:class:`ServeOptions`; :func:`start` checks them, reads the files they name (``--config``,
``--annotations``, the bearer token) and serves.
"""

from __future__ import annotations

from dataclasses import dataclass
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
from hyperplan.execute.sandboxing import Sandbox
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
    from hyperplan.integrations.mcp_gateway.config import GatewayConfig, HttpSecurity
    from hyperplan.integrations.mcp_gateway.mcp_config import ServerEntry
    from hyperplan.integrations.mcp_gateway.upstream import UpstreamOptions

_MAX_RESPONSE_BYTES = 10 * 1024 * 1024

# The options (typer reads the Annotated metadata; serve_cmd gives the defaults).
Sources = Annotated[list[str] | None, typer.Argument(
    metavar="[SOURCE]...", help="Tool sources, as `graph build` takes them: python:MOD, "
    "openapi:FILE, openai:FILE, 'mcp-server:CMD' (one or many, merged).")]
ConfigFile = Annotated[Path | None, typer.Option(
    "--config", metavar="FILE", help="An mcpServers JSON file, as Claude Desktop, Cursor, VS "
    "Code and Hermes use (command, args, env, cwd; url, headers); ${VAR} taken from the "
    "environment. Its servers are served with the SOURCEs.")]
NamespaceOption = Annotated[Namespace, typer.Option(
    help="collisions: serve a tool name two upstreams both define as server__tool; always: "
    "prefix every tool so.")]
ModeOption = Annotated[Mode, typer.Option(
    help="search: two tools, find_tools and call_tool; narrow: find_tools plus the selected "
    "tools, the list changing with the session state (list_changed).")]
Http = Annotated[str | None, typer.Option(
    "--http", metavar="[HOST:]PORT", help="Serve streamable HTTP at http://HOST:PORT/mcp "
    "(host 127.0.0.1 by default) instead of stdio.")]
AllowRemote = Annotated[bool, typer.Option(
    help="Let --http listen on a host that is not loopback; needs a bearer token "
    "(--auth-token-env or --auth-token-file).")]
AuthTokenEnv = Annotated[str | None, typer.Option(
    "--auth-token-env", metavar="VAR", help="--http: every request must carry "
    "'Authorization: Bearer TOKEN', TOKEN the value of this environment variable.")]
AuthTokenFile = Annotated[Path | None, typer.Option(
    "--auth-token-file", metavar="FILE", help="--http: the bearer token is the first line of "
    "this file (keep it mode 600).")]
AllowOrigin = Annotated[list[str], typer.Option(
    "--allow-origin", metavar="ORIGIN", help="--http: also serve browser requests from this "
    "exact origin (scheme://host[:port]; repeatable). Default: only the gateway's own.")]
SessionsPerClient = Annotated[int, typer.Option(
    help="--http: open handshake-era sessions per client address; past it the client's "
    "oldest one is closed.")]
SessionIdleTimeout = Annotated[float, typer.Option(
    help="--http: seconds after which an idle session is closed.")]
SelectionBudget = Annotated[int, typer.Option(
    "--budget", help="at most this many tools per selection")]
CallTimeout = Annotated[float, typer.Option(
    help="Hard deadline of every forwarded call, in seconds.")]
CacheDir = Annotated[Path | None, typer.Option(
    help="Where the built graph and each MCP upstream's last tool list are kept (default: "
    "$HYPERPLAN_CACHE_DIR/selectors or ~/.cache/hyperplan).")]
NoCache = Annotated[bool, typer.Option(
    "--no-cache", help="Build the graph anew and wait for every upstream's tool list; keep "
    "nothing.")]
SandboxOption = Annotated[Sandbox, typer.Option(
    help="subprocess (default): run python: tools in a child process without network, with "
    "resource limits, killed at the call's deadline; none: in the gateway's process (a tool "
    "that overruns keeps its thread).")]
MaxRequestChars = Annotated[int, typer.Option(
    help="Longest find_tools request (characters).")]
MaxArgumentBytes = Annotated[int, typer.Option(
    help="Largest call arguments (bytes of JSON); larger ones are refused, not forwarded.")]
MaxCallsPerUpstream = Annotated[int, typer.Option(
    help="Calls running at once on one upstream source; more wait inside their deadline.")]
MaxCallsPerClient = Annotated[int, typer.Option(
    help="Calls of one conversation (or, without one, one address) running or waiting at "
    "once.")]
ConversationIdle = Annotated[float, typer.Option(
    help="Seconds after which an unused conversation (its state) is forgotten.")]
AnnotationsFile = Annotated[Path | None, typer.Option(
    "--annotations", metavar="FILE", help="Build the graph with these inferred outputs, "
    "preconditions and effects (an annotation file, as `hyperplan graph annotate` writes).")]
LlmAnnotate = Annotated[str | None, typer.Option(
    "--llm-annotate", metavar="URL", help="Ask the model at this OpenAI-compatible base URL "
    "for every tool's outputs, preconditions and effects before the graph is built (answers "
    "cached per tool; model: HYPERPLAN_LLM_MODEL, else the server's first; key: "
    "HYPERPLAN_LLM_API_KEY). Optional: selection itself never uses an LLM.")]


@dataclass(frozen=True)
class ServeOptions:
    """``hyperplan serve``'s options as given, one field per option of :func:`serve_cmd` (its
    help says what each does)."""

    sources: tuple[str, ...]
    config_file: Path | None
    namespace: Namespace
    mode: Mode
    http: str | None
    allow_remote: bool
    auth_token_env: str | None
    auth_token_file: Path | None
    allow_origin: tuple[str, ...]
    sessions_per_client: int
    session_idle_timeout: float
    budget: int
    call_timeout: float
    embedder: str
    cache_dir: Path | None
    no_cache: bool
    allow_unsafe_tools: bool
    sandbox: Sandbox
    base_url: str | None
    header: tuple[str, ...]
    max_response_bytes: int
    idempotency_key_header: str | None
    max_request_chars: int
    max_argument_bytes: int
    max_calls_per_upstream: int
    max_calls_per_client: int
    conversation_idle: float
    annotations: Path | None
    llm_annotate: str | None


def serve_cmd(
    sources: Sources = None,
    config_file: ConfigFile = None,
    namespace: NamespaceOption = Namespace.COLLISIONS,
    mode: ModeOption = Mode.SEARCH,
    http: Http = None,
    allow_remote: AllowRemote = False,
    auth_token_env: AuthTokenEnv = None,
    auth_token_file: AuthTokenFile = None,
    allow_origin: AllowOrigin = [],  # noqa: B006 (typer copies it)
    sessions_per_client: SessionsPerClient = DEFAULT_SESSIONS_PER_CLIENT,
    session_idle_timeout: SessionIdleTimeout = DEFAULT_SESSION_IDLE_TIMEOUT,
    budget: SelectionBudget = DEFAULT_BUDGET,
    call_timeout: CallTimeout = DEFAULT_CALL_TIMEOUT,
    embedder: str = embedder_option("auto"),
    cache_dir: CacheDir = None,
    no_cache: NoCache = False,
    allow_unsafe_tools: AllowUnsafeTools = False,
    sandbox: SandboxOption = Sandbox.SUBPROCESS,
    base_url: BaseUrl = None,
    header: Headers = [],  # noqa: B006 (typer copies it)
    max_response_bytes: MaxResponseBytes = _MAX_RESPONSE_BYTES,
    idempotency_key_header: IdempotencyKeyHeader = None,
    max_request_chars: MaxRequestChars = DEFAULT_MAX_REQUEST_CHARS,
    max_argument_bytes: MaxArgumentBytes = DEFAULT_MAX_ARGUMENT_BYTES,
    max_calls_per_upstream: MaxCallsPerUpstream = CallLimits.per_source,
    max_calls_per_client: MaxCallsPerClient = CallLimits.per_client,
    conversation_idle: ConversationIdle = ConversationLimits.idle_seconds,
    annotations: AnnotationsFile = None,
    llm_annotate: LlmAnnotate = None,
) -> None:
    """Serve tools as an LLM-free MCP gateway.

    It selects the tools for each task: the Tool Context Graph and DOE pick the tools a
    request names and the producers of their inputs, given what the client holds. stdio by
    default, --http for streamable HTTP.

    Calls are forwarded through hyperplan's hardened runtimes: arguments checked against the
    tool's schema first, a hard deadline per call, writes never repeated, secrets redacted by
    value. The graph is built in the background; until it is ready find_tools answers with a
    BM25 search and says so."""
    start(ServeOptions(
        tuple(sources or ()), config_file, namespace, mode, http, allow_remote, auth_token_env,
        auth_token_file, tuple(allow_origin), sessions_per_client, session_idle_timeout, budget,
        call_timeout, embedder, cache_dir, no_cache, allow_unsafe_tools, sandbox, base_url,
        tuple(header), max_response_bytes, idempotency_key_header, max_request_chars,
        max_argument_bytes, max_calls_per_upstream, max_calls_per_client, conversation_idle,
        annotations, llm_annotate))


def start(opts: ServeOptions) -> None:
    """Check ``opts``, read the files they name and serve until the client leaves (stdio) or
    the gateway is interrupted (HTTP). A bad option or file is one ``error:`` line and exit
    status 1: printed here (:func:`_fail`), or, for ``--cache-dir`` with ``--no-cache`` and
    ``--max-response-bytes`` under 1, raised for the CLI's ``main`` to print."""
    import sys

    from hyperplan.errors import HyperplanError
    from hyperplan.integrations.mcp_gateway import serve
    from hyperplan.integrations.mcp_gateway.config import parse_http_address

    if opts.no_cache and opts.cache_dir is not None:
        raise HyperplanError("give --cache-dir or --no-cache, not both")
    try:
        servers = _servers(opts.config_file)
        address = (parse_http_address(opts.http, allow_remote=opts.allow_remote)
                   if opts.http else None)
        security = _security(opts, http=address is not None)
    except HyperplanError as exc:
        _fail(exc)
    config = _gateway_config(opts, _annotations(opts.annotations))
    upstream = _upstream_options(opts)
    try:
        serve(list(opts.sources), config, upstream, http=address, security=security,
              announce=lambda line: print(line, file=sys.stderr, flush=True),
              servers=servers)
    except HyperplanError as exc:
        _fail(exc)


def _gateway_config(opts: ServeOptions, annotated: Annotations | None) -> GatewayConfig:
    """The selection side of the options (:class:`~hyperplan.integrations.mcp_gateway.config.
    GatewayConfig`), with the annotation file already read."""
    from hyperplan.integrations.mcp_gateway.config import GatewayConfig

    return GatewayConfig(mode=opts.mode, budget=opts.budget, call_timeout=opts.call_timeout,
                         embedder=opts.embedder,
                         cache_dir=None if opts.no_cache else (opts.cache_dir or "default"),
                         max_request_chars=opts.max_request_chars,
                         max_argument_bytes=opts.max_argument_bytes,
                         call_limits=CallLimits(opts.max_calls_per_upstream,
                                                opts.max_calls_per_client),
                         conversation_limits=ConversationLimits(opts.conversation_idle),
                         annotations=annotated, llm_annotate=opts.llm_annotate)


def _upstream_options(opts: ServeOptions) -> UpstreamOptions:
    """How the upstream runtimes are built (:class:`~hyperplan.integrations.mcp_gateway.
    upstream.UpstreamOptions`); ``--max-response-bytes`` must be positive."""
    from hyperplan.errors import HyperplanError
    from hyperplan.integrations.mcp_gateway.upstream import UpstreamOptions

    if opts.max_response_bytes < 1:
        raise HyperplanError("--max-response-bytes must be positive")
    return UpstreamOptions(call_timeout=opts.call_timeout,
                           allow_unsafe_tools=opts.allow_unsafe_tools, sandbox=opts.sandbox,
                           base_url=opts.base_url, headers=_headers(list(opts.header)),
                           max_response_bytes=opts.max_response_bytes,
                           idempotency_header=opts.idempotency_key_header,
                           namespace=opts.namespace)


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


def _security(opts: ServeOptions, *, http: bool) -> HttpSecurity | None:
    """The HTTP security options (:class:`~hyperplan.integrations.mcp_gateway.config.
    HttpSecurity`), the bearer token read; refused without --http, where they would protect
    nothing."""
    from hyperplan.errors import HyperplanError
    from hyperplan.integrations.mcp_gateway.config import HttpSecurity, read_auth_token

    if not http:
        if opts.auth_token_env or opts.auth_token_file or opts.allow_origin:
            raise HyperplanError("--auth-token-env, --auth-token-file and --allow-origin "
                                 "apply to --http only")
        return None
    return HttpSecurity(token=read_auth_token(opts.auth_token_env, opts.auth_token_file),
                        allowed_origins=opts.allow_origin,
                        sessions_per_client=opts.sessions_per_client,
                        session_idle_timeout=opts.session_idle_timeout)


def _headers(items: list[str]) -> dict[str, str]:
    """``--header`` values (:func:`hyperplan.connect.parse_headers`, imported only when
    there are some: that module loads the OpenAI SDK)."""
    if not items:
        return {}
    from hyperplan.connect import parse_headers

    return parse_headers(items)
