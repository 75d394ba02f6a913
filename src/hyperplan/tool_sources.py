"""One registry of tool sources: every kind of ``KIND:LOCATION`` registered once, with how
to load its catalog, how to open it for calls (an optional runtime factory) and how to close
what was opened.

==================  ==============================  =========================================
kind                catalog                         runtime (:func:`open_source`)
==================  ==============================  =========================================
``python:MOD:ATTR`` the callables' hints and docs   in-process, or a limited child process
                                                    (``sandbox=Sandbox.SUBPROCESS``, one call
                                                    at a time)
``openapi:FILE``    OpenAPI 3.x / Swagger 2.0       HTTP (``base_url``, ``headers``)
``mcp-server:CMD``  the server's ``tools/list``     the same stdio server, kept running
``openai:FILE``     OpenAI function specs           none (planning only)
``mcp:FILE``        a saved ``tools/list`` result   none
``demo``            the shipped example catalog     none
``demo-world``      the shipped demo world          the world, in memory (a fresh database)
installed kinds     an entry point of               none
                    :data:`SOURCE_GROUP`
==================  ==============================  =========================================

Every entry point goes through here: ``hyperplan run`` / ``graph`` (:mod:`hyperplan.connect`,
:mod:`hyperplan.sources`), the gateway's upstreams
(:mod:`hyperplan.integrations.mcp_gateway.upstream`, which adds its catalog cache and warm
start to ``mcp-server:`` and the servers of an ``mcpServers`` file) and the selector cache
(:func:`hyperplan.select.cache.load_catalogs`). A source of a kind with no runtime opens with
:class:`NoRuntime`: every call is an observation saying the tool cannot be run. Closing an
:class:`OpenSource` closes its runtime (stops an MCP server, a child process).

Nothing heavy is imported here: the importers and runtimes are imported when a source of
their kind is loaded.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hyperplan.catalog import Catalog, ToolSpec
from hyperplan.errors import CatalogError
from hyperplan.execute.sandboxing import Sandbox

if TYPE_CHECKING:
    from hyperplan.execute.results import ToolResult, ToolRuntime
    from hyperplan.execute.runtimes.mcp import MCPRuntime
    from hyperplan.plugins import Point

DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024  # as hyperplan.execute.runtimes.http's
SOURCE_GROUP = "hyperplan.sources"
"""Entry points adding catalog source kinds: ``kind = "module:function"``, a function from the
LOCATION to a :class:`~hyperplan.catalog.Catalog` (no runtime)."""
LAB_KINDS = ("appworld", "nestful", "nestools", "sealtools", "stabletoolbench", "tau2")
"""Source kinds of the benchmark lab (hyperplan-bench): without it, naming one says how to
install it."""
BARE_KINDS = ("demo", "demo-world")
"""Kinds named without a location."""


@dataclass(frozen=True)
class SourceOptions:
    """How a source is loaded and run: ``timeout`` is each call's deadline (seconds);
    ``allow_unsafe_tools`` / ``sandbox`` (a :class:`~hyperplan.execute.sandboxing.Sandbox`,
    or its value, made the member: any other value is a ``ValueError``) apply to ``python:``,
    ``base_url`` / ``headers`` / ``idempotency_header`` to ``openapi:``,
    ``max_response_bytes`` to ``openapi:`` and ``mcp-server:``."""

    timeout: float = 30.0
    allow_unsafe_tools: bool = False
    sandbox: Sandbox | str = Sandbox.NONE
    base_url: str | None = None
    headers: Mapping[str, str] | None = None
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    idempotency_header: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "sandbox", Sandbox(self.sandbox))  # ValueError: not a Sandbox


@dataclass(frozen=True)
class OpenSource:
    """A source opened for calls: its catalog, the runtime that executes it, the demo world
    behind ``demo-world`` (for checkers) and how many calls it serves at once (None: no bound
    of its own)."""

    spec: str
    catalog: Catalog
    runtime: ToolRuntime
    world: Any = None
    slots: int | None = None

    def close(self) -> None:
        """Stop what opening started (a server, a child process)."""
        self.runtime.close()


CatalogLoader = Callable[[str, SourceOptions], Catalog]
Opener = Callable[[str, str, SourceOptions], OpenSource]  # (spec, location, options)


@dataclass(frozen=True)
class SourceKind:
    """One kind of tool source: ``catalog`` loads its catalog from the LOCATION; ``open``, when
    the kind can run its tools, opens it with a runtime (else :class:`NoRuntime`)."""

    name: str
    catalog: CatalogLoader
    open: Opener | None = None


class NoRuntime:
    """The runtime of a catalog nobody can execute: every call is an observation saying so."""

    def __init__(self, source: str) -> None:
        self.source = source

    def can_run(self, tool: ToolSpec) -> bool:
        return False

    def call(self, tool: ToolSpec, arguments: Mapping[str, Any], *,
             timeout: float | None = None) -> ToolResult:
        from hyperplan.execute.results import ErrorKind, ToolResult

        return ToolResult.failure(tool.name, arguments, ErrorKind.UNKNOWN_TOOL,
                                  f"{tool.name}: the source {self.source} describes this tool "
                                  "but gives no way to run it")

    def close(self) -> None:
        return None


# -- the library's kinds -----------------------------------------------------------------------

def demo_catalog_path() -> Path:
    """The example catalog shipped in the package (OpenAI function format)."""
    return Path(str(resources.files("hyperplan") / "examples" / "music_catalog.json"))


def _openai(loc: str, opts: SourceOptions) -> Catalog:
    from hyperplan.importers.openai_functions import load_openai_functions

    return load_openai_functions(Path(loc))


def _openapi(loc: str, opts: SourceOptions) -> Catalog:
    from hyperplan.importers.openapi import load_openapi

    return load_openapi(Path(loc))


def _open_openapi(spec: str, loc: str, opts: SourceOptions) -> OpenSource:
    from hyperplan.execute.runtimes import OpenAPIRuntime

    return OpenSource(spec, _openapi(loc, opts), OpenAPIRuntime(
        opts.base_url, opts.headers, timeout=opts.timeout,
        max_response_bytes=opts.max_response_bytes, idempotency_header=opts.idempotency_header))


def _mcp(loc: str, opts: SourceOptions) -> Catalog:
    from hyperplan.importers.mcp import load_mcp_tools

    return load_mcp_tools(Path(loc))


def split_command(command: str, label: str = "mcp-server") -> list[str]:
    """The words of a server command line; a :class:`~hyperplan.errors.CatalogError` naming
    ``label`` when it cannot be split or is empty."""
    try:
        parts = shlex.split(command)
    except ValueError as exc:
        raise CatalogError(f"{label}: cannot split {command!r}: {exc}") from None
    if not parts:
        raise CatalogError(f"{label}: no server command")
    return parts


def mcp_server_runtime(command: str, opts: SourceOptions,
                       label: str = "mcp-server") -> MCPRuntime:
    """The (not yet started) runtime of the stdio MCP server ``command``."""
    parts = split_command(command, label)
    return mcp_runtime(parts[0], parts[1:], opts)


def mcp_runtime(command: str, args: Sequence[str], opts: SourceOptions, *,
                env: Mapping[str, str] | None = None, cwd: str | None = None,
                url: str | None = None, headers: Mapping[str, str] | None = None) -> MCPRuntime:
    """The (not yet started) runtime of an MCP server: ``command *args`` over stdio (with
    ``env`` and ``cwd``), or the streamable-HTTP server at ``url`` (with ``headers``); the
    one place an MCP runtime is made for ``mcp-server:`` sources and the servers of an
    ``mcpServers`` file alike."""
    from hyperplan.execute.runtimes.mcp import MCPRuntime

    return MCPRuntime(command, args, env=env, cwd=cwd, timeout=opts.timeout,
                      max_response_bytes=opts.max_response_bytes, url=url, headers=headers)


def _mcp_server(loc: str, opts: SourceOptions) -> Catalog:
    with mcp_server_runtime(loc, opts) as runtime:
        return runtime.catalog()


def _open_mcp_server(spec: str, loc: str, opts: SourceOptions) -> OpenSource:
    return open_mcp_server(loc, opts, spec=spec)


def open_mcp_server(command: str, opts: SourceOptions, *, spec: str | None = None,
                    label: str = "mcp-server") -> OpenSource:
    """The stdio MCP server ``command`` started, its tools listed, kept running for the
    calls (stopped again when it cannot list them); errors name ``label``."""
    runtime = mcp_server_runtime(command, opts, label)
    spec = spec or f"mcp-server:{command}"
    try:
        return OpenSource(spec, runtime.catalog(), runtime)
    except BaseException:
        runtime.close()
        raise


def _python(loc: str, opts: SourceOptions) -> Catalog:
    from hyperplan.importers.python_callables import load_python_target

    if opts.allow_unsafe_tools:
        return load_python_target(loc, allow_unsafe=True)
    return load_python_target(loc)


def _open_python(spec: str, loc: str, opts: SourceOptions) -> OpenSource:
    catalog = _python(loc, opts)
    if opts.sandbox is Sandbox.SUBPROCESS:
        from hyperplan.execute.runtimes import SubprocessPythonRuntime

        return OpenSource(spec, catalog, SubprocessPythonRuntime.from_catalog(
            catalog, timeout=opts.timeout, allow_unsafe=opts.allow_unsafe_tools),
            slots=1)  # one child, one call at a time
    from hyperplan.execute.runtimes import PythonRuntime

    return OpenSource(spec, catalog, PythonRuntime.from_catalog(
        catalog, timeout=opts.timeout, allow_unsafe=opts.allow_unsafe_tools))


def _demo(loc: str, opts: SourceOptions) -> Catalog:
    return _openai(str(demo_catalog_path()), opts)


def _demo_world_catalog(loc: str, opts: SourceOptions) -> Catalog:
    from hyperplan.demo_world import DemoWorld

    return DemoWorld().catalog()


def _open_demo_world(spec: str, loc: str, opts: SourceOptions) -> OpenSource:
    from hyperplan.demo_world import DemoWorld
    from hyperplan.execute.runtimes import PythonRuntime

    world = DemoWorld()
    return OpenSource(spec, world.catalog(),
                      PythonRuntime(world.callables(), timeout=opts.timeout), world)


CORE_KINDS: dict[str, SourceKind] = {kind.name: kind for kind in (
    SourceKind("openai", _openai),
    SourceKind("openapi", _openapi, _open_openapi),
    SourceKind("mcp", _mcp),
    SourceKind("mcp-server", _mcp_server, _open_mcp_server),
    SourceKind("python", _python, _open_python),
)}
"""The library's own ``KIND:LOCATION`` kinds (``demo`` and ``demo-world``: :data:`BARE`)."""

BARE: dict[str, SourceKind] = {
    "demo": SourceKind("demo", _demo),
    "demo-world": SourceKind("demo-world", _demo_world_catalog, _open_demo_world),
}


class _Kinds(Mapping[str, SourceKind]):
    """:data:`CORE_KINDS` and the kinds installed packages add (:data:`SOURCE_GROUP`), the
    entry points read on first use (importing this module stays cheap)."""

    def __init__(self) -> None:
        self._all: dict[str, SourceKind] | None = None

    def _loaded(self) -> dict[str, SourceKind]:
        if self._all is None:
            from hyperplan.plugins import entry_points

            added = {point.name: point for point in entry_points(SOURCE_GROUP)
                     if point.name not in CORE_KINDS}
            self._all = {**CORE_KINDS, **{name: SourceKind(name, _plugin_loader(point))
                                          for name, point in sorted(added.items())}}
        return self._all

    def __getitem__(self, kind: str) -> SourceKind:
        return self._loaded()[kind]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())


def _plugin_loader(point: Point) -> CatalogLoader:
    """The catalog loader an entry point names, imported when a source of its kind loads."""

    def load(location: str, opts: SourceOptions) -> Catalog:
        loader: Callable[[str], Catalog] = point.load()
        return loader(location)

    return load


KINDS: Mapping[str, SourceKind] = _Kinds()
"""Every ``KIND:LOCATION`` kind: the library's (:data:`CORE_KINDS`) and installed packages'."""


# -- resolving and loading ---------------------------------------------------------------------

def resolve(spec: str) -> tuple[SourceKind, str]:
    """The kind of ``spec`` and its LOCATION; a :class:`~hyperplan.errors.CatalogError`
    naming the known kinds (or how to install the benchmark lab) when there is none."""
    if spec in BARE:
        return BARE[spec], ""
    kind, sep, location = spec.partition(":")
    if sep and location and kind in LAB_KINDS and kind not in KINDS:
        raise CatalogError(f"catalog source {kind}: is part of hyperplan-bench, the benchmark "
                           "lab, which is not installed; install it beside hyperplan (from a "
                           "checkout of the repository: pip install -e ./bench)")
    if not sep or kind not in KINDS or not location:
        raise CatalogError(
            f"unknown catalog source {spec!r}; expected KIND:LOCATION with KIND one of "
            f"{', '.join(sorted(KINDS))} (or 'demo')"
        )
    return KINDS[kind], location


def load_catalog(spec: str, options: SourceOptions | None = None) -> Catalog:
    """The catalog of ``spec`` (nothing is kept running: an MCP server is started, asked and
    stopped)."""
    kind, location = resolve(spec)
    return kind.catalog(location, options or SourceOptions())


def open_source(spec: str, options: SourceOptions | None = None) -> OpenSource:
    """``spec`` opened for calls: its catalog and its runtime (:class:`NoRuntime` for a kind
    that cannot run its tools). Close it when done."""
    opts = options or SourceOptions()
    kind, location = resolve(spec)
    if kind.open is not None:
        return kind.open(spec, location, opts)
    return OpenSource(spec, kind.catalog(location, opts), NoRuntime(spec))


def tag_server(catalog: Catalog, server: str) -> Catalog:
    """``catalog`` with ``metadata["server"] = server`` on every tool that names no app and no
    dotted namespace of its own: when a gateway or selector merges several sources, link
    inference knows which server each tool came from (a link between two servers needs
    specific evidence, :mod:`hyperplan.graph.field_roles`)."""
    tools = tuple(
        tool if tool.metadata.get("app") or "." in tool.name
        else tool.model_copy(update={"metadata": {**tool.metadata, "server": server}})
        for tool in catalog.tools)
    return catalog.model_copy(update={"tools": tools})


def __getattr__(name: str) -> Any:
    """``SUBPROCESS``, the old spelling of :attr:`Sandbox.SUBPROCESS`, with a
    DeprecationWarning (it goes in the next release)."""
    if name == "SUBPROCESS":
        import warnings

        warnings.warn("hyperplan.tool_sources.SUBPROCESS is Sandbox.SUBPROCESS "
                      "(hyperplan.execute.sandboxing); the old name goes in the next release",
                      DeprecationWarning, stacklevel=2)
        return Sandbox.SUBPROCESS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
