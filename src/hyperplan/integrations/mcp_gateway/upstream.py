"""The upstream tools behind the gateway: one catalog merged from every source, and per tool the
hardened runtime that executes it (the trust rules of docs/benchmarks.md, "Runtime trust under
faults" hold for every forwarded call).

Sources are the ``KIND:LOCATION`` strings ``hyperplan graph build`` takes, each opened through
the tool-source registry (:mod:`hyperplan.tool_sources`; the gateway adds its catalog cache and
warm start to MCP upstreams):

* ``mcp-server:CMD``: a stdio MCP server, started once at gateway start (listing its tools)
  and kept running for the calls (:class:`~hyperplan.execute.runtimes.MCPRuntime`). The
  tools keep their real upstream definitions (input and output schemas, annotations);
* ``python:MOD[:ATTR]``: Python callables, by default in a limited child process
  (:class:`~hyperplan.execute.runtimes.SubprocessPythonRuntime`: no network, resource
  limits, killed at its deadline, so a tool that ignores its deadline costs nothing after
  it), or with ``--sandbox none`` in-process
  (:class:`~hyperplan.execute.runtimes.PythonRuntime`: a tool that overruns is abandoned,
  its thread keeps running).
  A module that acts on the host is refused unless ``allow_unsafe_tools`` (the loader's rule);
* ``openapi:FILE``: HTTP calls (:class:`~hyperplan.execute.runtimes.OpenAPIRuntime`, with
  ``base_url`` / ``headers``; header values are registered as secrets);
* ``demo-world``: the shipped demo world, in memory;
* any other catalog source (``openai:FILE``, ``appworld:DIR`` ...): selectable, but with no
  runtime: a call is an error saying so;
* the servers of an ``mcpServers`` file (:mod:`.mcp_config`, ``--config``): stdio servers
  started with their own ``env`` and ``cwd``, remote ones over streamable HTTP; each is named
  by its key in the file.

MCP upstreams start together (one thread each, each bounded by its own handshake and listing
deadline, ``call_timeout`` each): the first ``tools/list`` waits for the slowest, not for the
sum. One that fails to start is reported (one line naming it and why, redacted) and the others
are served; loading fails only when none started. A failing source of another kind (a file
that does not parse, a refused module) is a configuration error and fails the load.

Names two upstreams both define are served as ``server__tool`` (each side prefixed with its
server's name; ``--namespace always``: every tool), and calls under that name reach the right
upstream under the tool's own name.

Every call goes through :meth:`Upstream.call`: the arguments are checked against the tool's
input schema first (:func:`~hyperplan.execute.runtimes.validate_arguments`: a violation is
an ``invalid_arguments`` result and nothing is sent), then the runtime gets the call with the
gateway's ``call_timeout`` as its hard deadline. No call is ever repeated here: a call that did
not finish is reported as the runtime reports it (``outcome_unknown`` for a write, which
:func:`~hyperplan.execute.repeat.may_repeat` forbids repeating). An MCP upstream that exits or
drops the connection mid-call makes that call a ``transport`` / ``outcome_unknown`` error
saying so; the runtime then starts the server again at the next call (a fresh process: the
state the old one held is gone).
"""

from __future__ import annotations

import functools
import re
import shlex
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from hyperplan.catalog import Catalog, ToolSpec, merge_catalogs
from hyperplan.errors import HyperplanError
from hyperplan.execute.results import ErrorKind, ToolResult, ToolRuntime
from hyperplan.execute.sandboxing import Sandbox
from hyperplan.integrations.mcp_gateway.catalog_cache import CatalogCache, entry_key, spec_key
from hyperplan.integrations.mcp_gateway.config import NAMESPACE_SEPARATOR, Namespace
from hyperplan.integrations.mcp_gateway.mcp_config import ServerEntry, ServerKind
from hyperplan.secrets import redact_cut, redact_value
from hyperplan.tool_sources import (
    BARE,
    DEFAULT_MAX_RESPONSE_BYTES,
    KINDS,
    SourceOptions,
    mcp_runtime,
    mcp_server_runtime,
    open_source,
    split_command,
    tag_server,
)

# The runtimes (and with them httpx, numpy and the graph code) are imported when the sources
# load, in the background, not when the gateway starts: the handshake does not wait for them.
MCP_SERVER = "mcp-server:"
_DEFINITION_KEYS = ("name", "title", "description", "inputSchema", "outputSchema",
                    "annotations", "icons")


@dataclass(frozen=True)
class UpstreamOptions:
    """How the runtimes are built: ``call_timeout`` is every call's hard deadline (seconds);
    ``sandbox`` / ``allow_unsafe_tools`` apply to ``python:`` sources, ``base_url``,
    ``headers`` and ``idempotency_header`` to ``openapi:`` ones, ``max_response_bytes`` to
    ``openapi:`` and ``mcp-server:`` ones."""

    call_timeout: float = 30.0
    allow_unsafe_tools: bool = False
    sandbox: Sandbox = Sandbox.SUBPROCESS
    base_url: str | None = None
    headers: Mapping[str, str] | None = None
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    idempotency_header: str | None = None
    namespace: Namespace = Namespace.COLLISIONS


@dataclass
class _Source:
    spec: str
    catalog: Catalog
    runtime: ToolRuntime
    definitions: dict[str, dict[str, Any]]  # the MCP definitions an MCP upstream listed
    slots: int | None = None  # calls it serves at once, when it has its own bound
    label: str | None = None  # its name in an mcpServers file
    originals: dict[str, ToolSpec] = field(default_factory=dict)  # namespaced -> upstream's
    key: str | None = None  # its file in the catalog cache (MCP upstreams)
    starting: Future[list[dict[str, Any]]] | None = None  # warm start: its live listing

    @functools.cached_property
    def name(self) -> str:
        """What clients and caches are told of this source: its name in the ``mcpServers``
        file, else its kind and a server or module name, never an MCP server's command line
        (which may carry paths, options or credentials)."""
        return self.label or server_name(self.spec)


_LAUNCHERS = frozenset({"uvx", "uv", "npx", "pnpx", "bunx", "pipx", "python", "python3",
                        "node", "deno", "bun", "env", "run", "exec", "x", "dlx", "tool"})


def server_name(spec: str) -> str:
    """``mcp-server:uvx mcp-server-git --repository /x`` -> ``mcp-server:mcp-server-git``;
    ``mcp-server:npx -y @scope/server-memory`` -> ``mcp-server:server-memory``; other sources
    keep their kind and the last part of their location (``openapi:api.yaml``,
    ``python:hyperplan.examples.bookstore``)."""
    kind, sep, location = spec.partition(":")
    if not sep:
        return spec
    if kind != "mcp-server":
        return f"{kind}:{location.replace(chr(92), '/').rsplit('/', 1)[-1]}"
    try:
        parts = shlex.split(location)
    except ValueError:
        parts = location.split()
    for part in parts:
        if "=" in part and not part.startswith(("-", "/", ".")):
            continue  # env VAR=value
        base = part.replace(chr(92), "/").rstrip("/").rsplit("/", 1)[-1].split("@")[0]
        if part.startswith("-") or not base or base.lower() in _LAUNCHERS \
                or base.lower().startswith("python3."):
            continue
        return f"{kind}:{base}"
    return f"{kind}:server"


class Upstream:
    """The merged catalog of ``sources`` and the runtime of each tool (module doc)."""

    def __init__(self, sources: Sequence[_Source], options: UpstreamOptions) -> None:
        self.options = options
        self.closed = False
        self._raw = list(sources)
        self._sources = namespaced(sources, options.namespace)
        self.catalog = (self._sources[0].catalog if len(self._sources) == 1 else
                        merge_catalogs([tag_server(s.catalog, s.name) for s in self._sources],
                                       labels=[s.name for s in self._sources]))
        self._owner: dict[str, _Source] = {t.name: s for s in self._sources
                                           for t in s.catalog.tools}
        self._index = {id(s): i for i, s in enumerate(self._sources)}
        self._specs = {t.name: t for t in self.catalog.tools}
        self._definitions: dict[str, dict[str, Any]] = {}

    def mcp_runtimes(self) -> list[tuple[int, str, str, ToolRuntime]]:
        """The MCP server sources, each as (source index, name clients are told, prefix of its
        clashing entries, runtime), for what passes through besides tools (resources,
        prompts)."""
        return [(index, source.name, prefix, source.runtime)
                for index, (source, prefix) in enumerate(
                    zip(self._sources, _unique_prefixes(self._sources), strict=True))
                if hasattr(source.runtime, "_acquire") and hasattr(source.runtime, "_release")]

    @property
    def names(self) -> list[str]:
        return self.catalog.names()

    def tool(self, name: str) -> ToolSpec | None:
        return self._specs.get(name)

    def source_of(self, name: str) -> str:
        """The source spec of tool ``name`` (internal: it may hold a command line)."""
        owner = self._owner.get(name)
        return owner.spec if owner is not None else ""

    def server_of(self, name: str) -> str:
        """The name of the server or module of tool ``name``, as clients are told it."""
        owner = self._owner.get(name)
        return owner.name if owner is not None else ""

    def source_index(self, name: str) -> int | None:
        """Which source (0, 1 ...) runs tool ``name``; None for an unknown tool."""
        owner = self._owner.get(name)
        return None if owner is None else self._index[id(owner)]

    @property
    def source_count(self) -> int:
        return len(self._sources)

    def source_slots(self, index: int) -> int | None:
        """How many calls source ``index`` serves at once when it has its own bound (the
        sandbox's one child: 1), else None (the gateway's ``--max-calls-per-upstream``)."""
        return self._sources[index].slots

    def definition(self, name: str) -> dict[str, Any]:
        """The tool as an MCP tool definition (``name``, ``description``, ``inputSchema``
        ...): what an MCP upstream listed, else built from the catalog entry."""
        cached = self._definitions.get(name)
        if cached is None:
            owner = self._owner[name]
            raw = owner.definitions.get(name)
            cached = redact_value({k: raw[k] for k in _DEFINITION_KEYS if k in raw}
                                  if raw is not None else _definition(self._specs[name]))
            self._definitions[name] = cached
        return cached

    def call(self, name: str, arguments: Mapping[str, Any], *,
             timeout: float | None = None) -> ToolResult:
        """Validate, then forward to the tool's runtime with the hard deadline (module doc;
        ``timeout``: what is left of it, default ``call_timeout``). Never raises for a
        tool-side failure; an unknown ``name`` is ``unknown_tool``."""
        tool = self._specs.get(name)
        if tool is None:
            return ToolResult.failure(name, arguments, ErrorKind.UNKNOWN_TOOL,
                                      f"{name}: no upstream tool has this name")
        from hyperplan.execute.runtimes.validation import validate_arguments

        problem = validate_arguments(tool, arguments)
        if problem is not None:
            return ToolResult.failure(name, arguments, ErrorKind.INVALID_ARGUMENTS, problem)
        owner = self._owner[name]
        original = owner.originals.get(name, tool)  # the upstream's own name for it
        try:
            limit = self.options.call_timeout if timeout is None else \
                min(timeout, self.options.call_timeout)
            result = owner.runtime.call(original, arguments, timeout=limit)
        except Exception as exc:  # a runtime must not raise; if one does, it is this call's error
            return ToolResult.failure(name, arguments, ErrorKind.TRANSPORT,
                                      f"{name}: the runtime failed: {type(exc).__name__}: {exc}")
        if result.tool != name:
            result = replace(result, tool=name)
        return _explain_lost_upstream(result, owner.spec)

    @property
    def starting(self) -> bool:
        """Whether some MCP upstream is served from the catalog cache while it starts (a
        warm start; :meth:`settle` waits for them)."""
        return any(s.starting is not None for s in self._raw)

    def settle(self, catalogs: CatalogCache | None,
               report: Callable[[str], None] | None = None) -> Upstream | None:
        """After a warm start: wait for every upstream served from the catalog cache to be
        up (each bounded by its handshake and listing deadline). None when each listed
        what was kept; else the upstream to serve now (sharing the runtimes): a listing that
        changed is served (and kept) instead, an upstream that did not start is left out
        and told to ``report``, as at a cold start (unless none would be left)."""
        tell = report or _stderr
        kept: list[_Source] = []
        changed = False
        for source in self._raw:
            if source.starting is None:
                kept.append(source)
                continue
            try:
                listed = source.starting.result()
            except Exception as exc:
                if self.closed:  # stopped while it started: the gateway is ending
                    return None
                tell(f"hyperplan serve: warning: {source.name}: the upstream did not start: "
                     f"{redact_cut(' '.join(str(exc).split()), 600)} (serving the other "
                     "upstreams without it)")
                changed = True
                source.runtime.close()
                continue
            previous = list(source.definitions.values())
            if catalogs is not None and source.key is not None and \
                    catalogs.same(previous, listed):
                kept.append(replace(source, starting=None))
                continue
            if catalogs is not None and source.key is not None:
                catalogs.put(source.key, listed)
            changed = True
            kept.append(replace(_listed_source(source.runtime, listed, source.spec,
                                               source.label), key=source.key))
        if not changed:
            return None
        return Upstream(kept, self.options) if kept else None

    def close(self) -> None:
        """Stop every runtime (MCP upstream processes, sandbox children, HTTP clients)."""
        self.closed = True
        for source in self._sources:
            try:
                source.runtime.close()
            except Exception:  # closing the others matters more than one failure
                continue


def _definition(tool: ToolSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"name": tool.name, "description": tool.description,
                           "inputSchema": tool.input_schema}
    title = tool.metadata.get("title")
    if isinstance(title, str):
        out["title"] = title
    return out


def namespaced(sources: Sequence[_Source], policy: Namespace) -> list[_Source]:
    """``sources`` with the names to prefix served as ``server__tool`` (module doc): with
    :attr:`Namespace.ALWAYS` every tool, else the names two sources both define. Each
    renamed tool keeps its upstream definition (``name`` changed) and its original spec in
    ``originals``, which the call is sent with."""
    counts = Counter(t.name for s in sources for t in s.catalog.tools)
    prefixes = _unique_prefixes(sources)
    out: list[_Source] = []
    for source, prefix in zip(sources, prefixes, strict=True):
        renamed = {t.name: f"{prefix}{NAMESPACE_SEPARATOR}{t.name}"
                   for t in source.catalog.tools
                   if policy is Namespace.ALWAYS or counts[t.name] > 1}
        if not renamed:
            out.append(source)
            continue
        tools = tuple(t.model_copy(update={"name": renamed[t.name]}) if t.name in renamed
                      else t for t in source.catalog.tools)
        definitions = {renamed.get(n, n): ({**d, "name": renamed[n]} if n in renamed else d)
                       for n, d in source.definitions.items()}
        originals = {renamed[t.name]: t for t in source.catalog.tools if t.name in renamed}
        out.append(replace(source, catalog=source.catalog.model_copy(update={"tools": tools}),
                           definitions=definitions, originals=originals))
    return out


def prefix_word(name: str) -> str:
    """The word a source's name gives its clashing tools, resources and prompts (``word__x``):
    the name without its kind, letters, digits, ``_`` and ``-`` only
    (``mcp-server:server-filesystem`` -> ``server-filesystem``)."""
    tail = name.partition(":")[2] if ":" in name else name
    return re.sub(r"[^A-Za-z0-9_-]+", "_", tail).strip("_") or "server"


def _unique_prefixes(sources: Sequence[_Source]) -> list[str]:
    """Each source's namespace prefix, :func:`prefix_word` of its name; a repeated one gets
    ``_2`` ..."""
    seen: Counter[str] = Counter()
    out: list[str] = []
    for source in sources:
        word = prefix_word(source.label or source.name)
        seen[word] += 1
        out.append(word if seen[word] == 1 else f"{word}_{seen[word]}")
    return out


def _explain_lost_upstream(result: ToolResult, spec: str) -> ToolResult:
    """An MCP upstream that exited or dropped the connection: say so in the error."""
    if result.ok or not spec.startswith(MCP_SERVER) or "MCP server failure" not in result.error:
        return result
    if result.error_kind not in (ErrorKind.TRANSPORT, ErrorKind.OUTCOME_UNKNOWN):
        return result
    message = (f"the upstream MCP server ({server_name(spec)}) exited or closed the connection "
               f"during this call ({result.error}). The gateway starts it again at the next "
               "call (a fresh process: what the old one held is gone).")
    return ToolResult.failure(result.tool, result.arguments, result.error_kind or
                              ErrorKind.TRANSPORT, " ".join(message.split()), result.seconds)


def check_sources(sources: Sequence[str], options: UpstreamOptions | None = None, *,
                  servers: Sequence[ServerEntry] = ()) -> None:
    """The checks that need no import and no process, done before the gateway serves: each
    source has a known kind, an ``mcp-server:`` command exists (on ``PATH`` or as a file),
    a file source's file exists, a ``python:`` module is found and is not host-acting
    without ``allow_unsafe_tools``. Raises :class:`~hyperplan.errors.HyperplanError` (one
    line naming the source)."""
    import importlib.util
    import os
    import shutil
    from pathlib import Path

    opts = options or UpstreamOptions()
    _check_choice(sources, servers)
    for spec in sources:
        kind, sep, location = spec.partition(":")
        if spec in BARE:
            continue
        if not sep or kind not in KINDS or not location.strip():
            raise HyperplanError(f"unknown tool source {spec!r}; expected KIND:LOCATION with "
                                 f"KIND one of {', '.join(sorted(KINDS))} (or demo-world)")
        if kind == "mcp-server":
            parts = split_command(location, spec)
            found = shutil.which(parts[0]) or (parts[0] if os.sep in parts[0] and os.access(
                parts[0], os.X_OK) and Path(parts[0]).is_file() else None)
            if found is None:
                raise HyperplanError(f"{spec}: cannot start the upstream MCP server: no "
                                     f"command {parts[0]!r} (not on PATH, not an executable "
                                     "file)")
        elif kind == "python":
            module = location.partition(":")[0].strip()
            if not opts.allow_unsafe_tools:
                from hyperplan.importers.python_safety import refuse_unsafe_module

                refuse_unsafe_module(spec, module)
            try:
                missing = importlib.util.find_spec(module) is None
            except (ImportError, ValueError):
                missing = True
            if missing:
                raise HyperplanError(f"{spec}: no module named {module!r}")
        elif kind in ("openapi", "openai", "mcp", "nestful", "nestools",
                      "stabletoolbench") and not Path(location).exists():
            raise HyperplanError(f"{spec}: no such file {location!r}")


def _check_choice(sources: Sequence[str], servers: Sequence[ServerEntry]) -> None:
    """At least one source."""
    if not sources and not servers:
        raise HyperplanError("give at least one tool source (e.g. "
                             "python:hyperplan.examples.bookstore or 'mcp-server:CMD') or "
                             "--config FILE (an mcpServers file)")


def load_upstream(sources: Sequence[str], options: UpstreamOptions | None = None, *,
                  servers: Sequence[ServerEntry] = (),
                  report: Callable[[str], None] | None = None,
                  catalogs: CatalogCache | None = None) -> Upstream:
    """Load every source and every server of an ``mcpServers`` file, MCP upstreams together
    (module doc). An MCP upstream that does not start is told to ``report`` (default: a line
    on stderr) and left out; a :class:`~hyperplan.errors.HyperplanError` when none started,
    or when a source of another kind cannot be loaded (a file that does not parse, a
    host-acting module without ``allow_unsafe_tools``); runtimes already started are then
    stopped.

    With ``catalogs`` (:mod:`.catalog_cache`), an MCP upstream whose listing was kept by an
    earlier run is loaded from it at once and started in the background
    (:meth:`Upstream.settle` waits for it); the others are listed now, and kept."""
    opts = options or UpstreamOptions()
    _check_choice(sources, servers)
    tell = report or _stderr
    jobs: list[tuple[str, Callable[[], _Source]]] = [
        *((spec, functools.partial(_load, spec, opts, catalogs)) for spec in sources),
        *((f"server {e.name!r}", functools.partial(_load_entry, e, opts, catalogs))
          for e in servers)]
    mcp = [i for i, (what, _) in enumerate(jobs)
           if i >= len(sources) or sources[i].startswith(MCP_SERVER)]
    loaded: dict[int, _Source] = {}
    failures: list[HyperplanError] = []
    with ThreadPoolExecutor(max_workers=max(1, len(mcp)),
                            thread_name_prefix="hyperplan-upstream-start") as pool:
        started: dict[int, Future[_Source]] = {i: pool.submit(jobs[i][1]) for i in mcp}
        problem: BaseException | None = None
        for i, (_, job) in enumerate(jobs):  # the other kinds here, meanwhile
            if i not in started and problem is None:
                try:
                    loaded[i] = job()
                except BaseException as exc:
                    problem = exc
        for i, future in started.items():
            try:
                loaded[i] = future.result()
            except HyperplanError as exc:
                failures.append(exc)
            except BaseException as exc:
                problem = problem or exc
    if problem is None and not loaded and failures:
        problem = failures[0] if len(failures) == 1 else HyperplanError(
            "no upstream started: " + "; ".join(str(f) for f in failures))
    if problem is not None:
        for source in loaded.values():
            source.runtime.close()
        raise problem
    for failure in failures:
        tell(f"hyperplan serve: warning: {redact_cut(' '.join(str(failure).split()), 600)} "
             "(serving the other upstreams without it)")
    try:
        return Upstream([loaded[i] for i in sorted(loaded)], opts)
    except BaseException:
        for source in loaded.values():
            source.runtime.close()
        raise


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def source_options(opts: UpstreamOptions) -> SourceOptions:
    """The registry's options (:mod:`hyperplan.tool_sources`) for the gateway's."""
    return SourceOptions(timeout=opts.call_timeout, allow_unsafe_tools=opts.allow_unsafe_tools,
                         sandbox=opts.sandbox, base_url=opts.base_url, headers=opts.headers,
                         max_response_bytes=opts.max_response_bytes,
                         idempotency_header=opts.idempotency_header)


def _load(spec: str, opts: UpstreamOptions, catalogs: CatalogCache | None = None) -> _Source:
    """One source opened through the registry; an MCP server with the catalog cache's warm
    start (:func:`_started`)."""
    if spec.startswith(MCP_SERVER):
        return _load_mcp_server(spec, opts, catalogs)
    opened = open_source(spec, source_options(opts))
    return _Source(spec, opened.catalog, opened.runtime, {}, slots=opened.slots)


def _load_mcp_server(spec: str, opts: UpstreamOptions,
                     catalogs: CatalogCache | None = None) -> _Source:
    runtime = mcp_server_runtime(spec[len(MCP_SERVER):], source_options(opts), label=spec)
    return _started(runtime, spec, spec, None, catalogs, spec_key(spec))


def _load_entry(entry: ServerEntry, opts: UpstreamOptions,
                catalogs: CatalogCache | None = None) -> _Source:
    """Start (stdio) or connect to (HTTP) one server of an ``mcpServers`` file."""
    import os
    import shutil
    from pathlib import Path

    where = f"server {entry.name!r}"
    if entry.kind is ServerKind.STDIO:
        command = entry.command
        if not (shutil.which(command) or (os.sep in command and os.access(command, os.X_OK)
                                          and Path(command).is_file())):
            raise HyperplanError(f"{where}: cannot start it: no command {command!r} (not on "
                                 "PATH, not an executable file)")
        if entry.cwd is not None and not Path(entry.cwd).is_dir():
            raise HyperplanError(f"{where}: cannot start it: its cwd {entry.cwd!r} is not a "
                                 "directory")
    runtime = mcp_runtime(entry.command, entry.args, source_options(opts), env=dict(entry.env),
                          cwd=entry.cwd, url=entry.url or None,
                          headers=dict(entry.headers) or None)
    return _started(runtime, f"{MCP_SERVER}{entry.name}", where, entry.name, catalogs,
                    entry_key(entry))


def _started(runtime: Any, spec: str, where: str, label: str | None,
             catalogs: CatalogCache | None = None, key: str | None = None) -> _Source:
    """The source of an MCP ``runtime`` once it listed its tools (its handshake and
    listing each bounded by the runtime's timeout); stopped, and a
    :class:`~hyperplan.errors.HyperplanError` naming ``where``, when it cannot. With a
    listing kept in ``catalogs`` under ``key``: that listing at once, the runtime started
    in the background (``starting``)."""
    kept = catalogs.get(key) if catalogs is not None and key is not None else None
    if kept is not None:
        try:
            source = _listed_source(runtime, kept, spec, label)
        except HyperplanError:
            kept = None  # a kept file the importer refuses: start cold
        else:
            return replace(source, key=key, starting=_start_in_background(runtime, where))
    try:
        source = _listed_source(runtime, _listing(runtime), spec, label)
    except HyperplanError as exc:
        runtime.close()
        reason = " ".join(str(exc).split())
        raise HyperplanError(f"{where}: cannot start the upstream MCP server: "
                             f"{redact_cut(reason, 600)}") from None
    except BaseException:
        runtime.close()
        raise
    if catalogs is not None and key is not None:
        catalogs.put(key, list(source.definitions.values()))
    return replace(source, key=key)


def _listing(runtime: Any) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = runtime.list_tools()
    return listed


def _listed_source(runtime: Any, listed: list[dict[str, Any]], spec: str,
                   label: str | None) -> _Source:
    """The source of an MCP ``runtime`` that listed (or, kept, had listed) ``listed``."""
    from hyperplan.importers.mcp import load_mcp_tools

    catalog = load_mcp_tools({"tools": listed})
    definitions = {str(t["name"]): t for t in listed if isinstance(t.get("name"), str)}
    name = label or server_name(spec)
    return _Source(spec, catalog.model_copy(update={"source": name}), runtime, definitions,
                   label=label)


def _start_in_background(runtime: Any, where: str) -> Future[list[dict[str, Any]]]:
    """Start ``runtime`` (handshake and ``tools/list``) in a thread of its own; its listing,
    or a :class:`~hyperplan.errors.HyperplanError` naming ``where``, in the future."""
    import threading

    future: Future[list[dict[str, Any]]] = Future()

    def start() -> None:
        try:
            future.set_result(_listing(runtime))
        except HyperplanError as exc:
            reason = " ".join(str(exc).split())
            future.set_exception(HyperplanError(
                f"{where}: cannot start the upstream MCP server: {redact_cut(reason, 600)}"))
        except BaseException as exc:
            future.set_exception(exc)

    threading.Thread(target=start, name="hyperplan-upstream-warm", daemon=True).start()
    return future
