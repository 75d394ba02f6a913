"""Selection for the gateway: its one catalog in the selection host's
:class:`~hyperplan.integrations.host.SelectorPool` (built in the background, a keyword
fallback until it is ready) with the gateway's own build.

The gateway never makes a client wait for the graph. :meth:`SelectionService.start` asks the
pool of the selection host (:mod:`hyperplan.integrations.host.pool`) for the
:class:`~hyperplan.select.Selector` of the upstream catalog without waiting; the pool builds it
in a thread with :class:`GatewayBuilder`, the gateway's part: the Tool-Schema Hypergraph and
its embeddings read from the on-disk cache when they were built before, else built: for a
catalog of :data:`CHILD_BUILD_TOOLS` tools or more first in a child process (:mod:`.build`,
so the build's long stretches holding the interpreter lock do not stall the gateway; in this
process if the child fails), for a smaller one in this thread (a fraction of a second, less
than starting a child); then the selector is warmed (every tool and node embedded, one query).
Before any of that the build thread makes the keyword fallback (BM25 over names and
descriptions) and counts every tool's tokens (:attr:`SelectionService.fallback`), so until
the graph is ready ``find_tools`` answers with :meth:`SelectionService.keyword`, which says
so (and to ask again in a moment): no producers are added and the state is not used. Once
ready, selection is the state-conditioned Tool Context Graph with the chains Deficit-Oriented
Expansion proposes (:mod:`hyperplan.select`), with no LLM anywhere.

The graph is built with the annotations the gateway was given (``--annotations``) and, only
with ``--llm-annotate URL``, a model's annotation of every tool, asked first in the build
thread (answers cached per tool, so a restart asks nothing; a failing endpoint is one line
and the build goes on without). Output schemas learned from the results the gateway forwards
(:mod:`hyperplan.select.observed`) are kept in the cache and used by the next start.

Each client's state is a :class:`~.conversations.Conversation` (the host's conversation, which
replays calls seen before the selector was ready, plus what narrow mode shows the client).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from hyperplan.catalog import Catalog
from hyperplan.integrations.host.pool import SelectorPool, failure_line
from hyperplan.integrations.mcp_gateway.conversations import Conversation
from hyperplan.secrets import redact_cut

if TYPE_CHECKING:
    from hyperplan.graph.annotations import Annotations
    from hyperplan.select import Selection, Selector

CHILD_BUILD_TOOLS = 200  # catalogs at least this large are built in a child process
_TMP_PREFIX = "hyperplan-gateway-"
__all__ = ["CHILD_BUILD_TOOLS", "Conversation", "GatewayBuilder", "SelectionService"]
_KEY = "gateway"  # the pool's one tool set: the upstream catalog
AGAIN = "(call find_tools again in a moment)"  # the gateway's advice on a keyword answer


class GatewayBuilder:
    """How the gateway turns its catalog into a selector (module doc): a
    :data:`~hyperplan.integrations.host.pool.Builder`. ``from_cache``: the last build read
    the graph from the cache."""

    def __init__(self, *, embedder: str = "auto", cache_dir: str | Path | None = "default",
                 budget: int = 10, annotations: Annotations | None = None,
                 llm: str | None = None) -> None:
        self.embedder_spec = embedder
        self.cache_dir = cache_dir
        self.budget = budget
        self.annotations = annotations
        self.llm = llm
        self.from_cache = False

    def __call__(self, catalog: Catalog) -> Selector:
        from hyperplan.embed import get_embedder
        from hyperplan.select import build_selector
        from hyperplan.select.cache import default_cache_dir, is_cached
        from hyperplan.select.selector import SelectConfig

        emb = get_embedder(self.embedder_spec)
        where = default_cache_dir() if self.cache_dir == "default" else \
            (Path(self.cache_dir) if self.cache_dir is not None else None)
        annotations = self._annotations(catalog)
        _sweep_stale_tempdirs()
        with tempfile.TemporaryDirectory(prefix=f"{_TMP_PREFIX}{os.getpid()}-") as tmp:
            store = where if where is not None else Path(tmp) / "selectors"
            self.from_cache = is_cached(store, catalog, emb.name, annotations)
            if not self.from_cache and len(catalog.tools) >= CHILD_BUILD_TOOLS:
                self._build_in_child(catalog, Path(tmp), store, annotations)
            selector = build_selector([catalog], embedder=emb, cache_dir=store,
                                      config=SelectConfig(budget=self.budget),
                                      annotations=annotations)
        selector.index  # noqa: B018 - embeds every tool and node now, not at first use
        selector.select("warm up", budget=1)  # the query path (embedder session) too
        return selector

    def _annotations(self, catalog: Catalog) -> Annotations | None:
        """The annotations the graph is built with: the given ones, plus the model's when
        ``llm`` is set (a failure there is one line on stderr; the build goes on)."""
        if self.llm is None:
            return self.annotations
        from hyperplan.errors import HyperplanError
        from hyperplan.llm.annotate import annotate_catalog, client_for
        from hyperplan.llm.types import LLMError
        from hyperplan.select.observed import combine_annotations

        try:
            client = client_for(self.llm)
            try:
                run = annotate_catalog(catalog, client)
            finally:
                client.close()
        except (HyperplanError, LLMError, OSError) as exc:
            print(f"hyperplan serve: annotating the tools with the model at {self.llm} "
                  f"failed ({failure_line(exc)}); building without", file=sys.stderr)
            return self.annotations
        print(f"hyperplan serve: {len(run.annotations)} tools annotated by the model at "
              f"{self.llm} ({run.asked} asked, {run.cached} from the cache, "
              f"{len(run.skipped)} skipped)", file=sys.stderr)
        return combine_annotations(self.annotations, run.annotations) or None

    def _build_in_child(self, catalog: Catalog, tmp: Path, store: Path,
                        annotations: Annotations | None = None) -> None:
        """Build the graph into ``store`` in a child process (:mod:`.build`); when the child
        fails, the reason is printed and the caller builds in this process instead."""
        catalog_file = tmp / "catalog.json"
        catalog_file.write_text(catalog.model_dump_json(), encoding="utf-8")
        command = [sys.executable, "-m", "hyperplan.integrations.mcp_gateway.build",
                   str(catalog_file), self.embedder_spec, str(store)]
        if annotations:
            from hyperplan.graph.annotations import save_annotations

            command.append(str(save_annotations(annotations, tmp / "annotations.json")))
        try:
            done = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, check=False)
        except OSError as exc:
            why = str(exc)
        else:
            if done.returncode == 0:
                return
            lines = done.stderr.strip().splitlines()
            why = redact_cut(lines[-1], 500) if lines else f"exit status {done.returncode}"
        print(f"hyperplan serve: building the graph in a child process failed ({why}); "
              "building it here", file=sys.stderr)


class SelectionService:
    """The selector over ``catalog`` (module doc): a one-set :class:`SelectorPool` building
    with a :class:`GatewayBuilder` (``embedder``, ``cache_dir``, ``budget``, ``annotations``,
    ``llm``: what the graph is built with). ``on_ready`` is called (in the build thread) with
    None once the selector is usable, or with the error message when the build failed (the
    gateway then keeps the keyword fallback)."""

    def __init__(self, catalog: Catalog, *, embedder: str = "auto",
                 cache_dir: str | Path | None = "default", budget: int = 10,
                 on_ready: Callable[[str | None], None] | None = None,
                 annotations: Annotations | None = None, llm: str | None = None) -> None:
        self.catalog = catalog
        self.budget = budget
        self.on_ready = on_ready
        self.builder = GatewayBuilder(embedder=embedder, cache_dir=cache_dir, budget=budget,
                                      annotations=annotations, llm=llm)
        self.fallback = threading.Event()  # the keyword search and token counts are made
        self.pool = SelectorPool(self._build, size=1, on_ready=self._built, min_tools=1)
        self.pool.add(_KEY, catalog)  # the keyword search serves before the build starts

    @property
    def selector(self) -> Selector | None:
        """The selector once it is ready, else None."""
        built = self.pool.built(_KEY)
        return built.selector if built is not None else None

    @property
    def ready(self) -> bool:
        return self.pool.built(_KEY) is not None

    @property
    def from_cache(self) -> bool:
        return self.builder.from_cache

    @property
    def build_seconds(self) -> float:
        return self.pool.status(_KEY).seconds

    def start(self) -> None:
        """Start building in the background (once)."""
        self.pool.get(_KEY, lambda: self.catalog, wait=False)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the build to end (ready or failed); True when it ended."""
        return self.pool.wait(_KEY, timeout)

    def status(self) -> str:
        return self.pool.status(_KEY).line()

    def keyword(self, request: str, budget: int) -> Selection:
        """The pool's BM25 search over tool names and descriptions, served until the graph
        is ready, with the gateway's advice to ask again (module doc)."""
        found = self.pool.keyword(_KEY, request, budget)
        assert found is not None  # the catalog is added to the pool from the start
        first, *rest = found.notes
        return replace(found, notes=(f"{first} {AGAIN}", *rest))

    def tokens(self, name: str) -> int:
        """Definition tokens of ``name`` as an OpenAI-style function (as the selector
        counts them)."""
        return self.pool.tokens(_KEY, name)

    def _build(self, catalog: Catalog) -> Selector:
        """The pool's build: the fallback first (it serves until the graph is ready), then
        the gateway's build."""
        try:
            self.pool.prepare(_KEY)
        finally:
            self.fallback.set()
        return self.builder(catalog)

    def _built(self, _key: str, error: str | None) -> None:
        self.fallback.set()
        if error is not None:
            print(f"hyperplan serve: {self.status()}; find_tools keeps using BM25",
                  file=sys.stderr)
        if self.on_ready is not None:
            self.on_ready(error)


def _sweep_stale_tempdirs() -> None:
    """Remove the temporary folders of gateways that were killed while building (their
    process is gone): a kill runs no clean-up, so the next gateway does it."""
    import shutil

    for path in Path(tempfile.gettempdir()).glob(f"{_TMP_PREFIX}*-*"):
        pid_text = path.name[len(_TMP_PREFIX):].split("-", 1)[0]
        if not pid_text.isdigit() or int(pid_text) == os.getpid():
            continue
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except OSError:  # alive but not ours, or no permission: leave it
            continue



_MOVED = {"Found": ("hyperplan.select", "Selection"),
          "FoundTool": ("hyperplan.select.model", "SelectedTool"),
          "GRAPH_METHOD": ("hyperplan.select.model", "GRAPH_METHOD"),
          "KEYWORD_METHOD": ("hyperplan.select.model", "KEYWORD_METHOD")}


def __getattr__(name: str) -> object:
    """The names this module had before the gateway answered with the selection host's
    :class:`~hyperplan.select.Selection` (importable for one release, with a warning)."""
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    import warnings

    module, new = _MOVED[name]
    warnings.warn(f"{__name__}.{name} is deprecated: use {module}.{new}", DeprecationWarning,
                  stacklevel=2)
    return getattr(importlib.import_module(module), new)
