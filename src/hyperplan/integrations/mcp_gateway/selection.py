"""Selection for the gateway: the selector built in the background, a keyword fallback until
it is ready, and one state-conditioned session per client conversation.

The gateway never makes a client wait for the graph. :class:`SelectionService` starts a
thread that gets the Tool-Schema Hypergraph of the upstream catalog and the
:class:`~hyperplan.select.Selector` over it, embeddings included: read from the on-disk cache
when it was built before, else built: for a catalog of :data:`CHILD_BUILD_TOOLS` tools or
more first in a child process (:mod:`.build`, so the build's long stretches holding the
interpreter lock do not stall the gateway; in this process if the child fails), for a
smaller one in this thread (a fraction of a second, less than starting a child).
Until that is done, ``find_tools`` ranks tools by BM25 over their names and descriptions
(what text-only tool search does) and says so in its result: no producers are added and the
state is not used. Once ready, selection is the state-conditioned Tool Context Graph with the
chains Deficit-Oriented Expansion proposes (:mod:`hyperplan.select`), with no LLM anywhere.

The graph is built with the annotations the gateway was given (``--annotations``) and, only
with ``--llm-annotate URL``, a model's annotation of every tool, asked first in the build
thread (answers cached per tool, so a restart asks nothing; a failing endpoint is one line
and the build goes on without). Output schemas learned from the results the gateway forwards
(:mod:`hyperplan.select.observed`) are kept in the cache and used by the next start.

A :class:`Conversation` is the agent state S of Definition 4 for one client: the request,
the values the client said it holds (``known``), and every call forwarded with its result
(:meth:`~hyperplan.select.Session.observe`), so the next selection drops producers of values
already held and adds what the new deficit needs. Calls observed before the selector is
ready are kept and replayed into the session when it is.

MCP has no notion of a user turn: the gateway learns of a new user request from
``find_tools``, which its description tells the model to call first and again when the task
changes. A ``find_tools`` request other than the conversation's last one starts a new turn
(:meth:`~hyperplan.select.Session.new_turn`): the calls made so far stop counting as this
turn's, and when the request names a value the conversation has not seen (another record's
title), the values held so far stop grounding the selection, so the producer of a new one is
offered again; a request that refers back ("now close it") keeps them grounding.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hyperplan.catalog import Catalog
from hyperplan.integrations._catalog import Call, Turn, open_session
from hyperplan.integrations.mcp_gateway.build import failure_line
from hyperplan.secrets import redact_cut

if TYPE_CHECKING:
    from hyperplan.embed.bm25 import BM25Index
    from hyperplan.graph.annotations import Annotations
    from hyperplan.select import Selection, Selector, Session

CHILD_BUILD_TOOLS = 200  # catalogs at least this large are built in a child process
GRAPH_METHOD = "context-graph+doe"
KEYWORD_METHOD = "bm25"
_MAX_PENDING = 1_000  # calls kept for replay while the selector is being built
_TMP_PREFIX = "hyperplan-gateway-"


@dataclass(frozen=True)
class FoundTool:
    """One selected tool: ``why`` it is there in words (``anchored by the request``,
    ``chain: supplies book_id for add_to_cart`` ...), its rank ``score`` and the
    ``tokens`` of its definition."""

    name: str
    reason: str
    why: str
    score: float
    tokens: int


@dataclass(frozen=True)
class Found:
    """What ``find_tools`` answers: the tools best first, DOE's chain (calls in execution
    order, each with the inputs it reads from an earlier call), the inputs nothing supplies,
    the values held, token counts, and how the tools were found (``method``)."""

    request: str
    tools: tuple[FoundTool, ...]
    method: str
    chain: tuple[dict[str, Any], ...] = ()
    missing: tuple[str, ...] = ()
    held: tuple[str, ...] = ()
    tokens: int = 0
    all_tokens: int | None = 0  # None: not counted yet (the keyword fallback's first moments)
    ms: float = 0.0
    notes: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tools)

    def as_dict(self) -> dict[str, Any]:
        return {"request": self.request, "method": self.method,
                "tools": [{"name": t.name, "reason": t.reason, "why": t.why,
                           "score": t.score, "tokens": t.tokens} for t in self.tools],
                "chain": list(self.chain), "missing": list(self.missing),
                "held": list(self.held), "tokens": self.tokens,
                "all_tokens": self.all_tokens, "ms": round(self.ms, 3),
                "notes": list(self.notes)}


def found_from_selection(selection: Selection) -> Found:
    data = selection.as_dict()
    return Found(
        request=selection.request, method=GRAPH_METHOD,
        tools=tuple(FoundTool(t.name, t.reason.value, t.why(), t.score, t.tokens)
                    for t in selection.tools),
        chain=tuple(data["chain"]), missing=selection.missing, held=selection.held,
        tokens=selection.tokens, all_tokens=selection.all_tokens, ms=selection.ms,
        notes=selection.notes)


class SelectionService:
    """The selector over ``catalog``, built in a background thread (module doc).

    ``on_ready`` is called (in the build thread) once the selector is usable, or with the
    error message when the build failed (the gateway then keeps the keyword fallback).
    ``annotations`` and ``llm`` (a base URL): what the graph is built with (module doc)."""

    def __init__(self, catalog: Catalog, *, embedder: str = "auto",
                 cache_dir: str | Path | None = "default", budget: int = 10,
                 on_ready: Callable[[str | None], None] | None = None,
                 annotations: Annotations | None = None, llm: str | None = None) -> None:
        self.catalog = catalog
        self.annotations = annotations
        self.llm = llm
        self.embedder_spec = embedder
        self.cache_dir = cache_dir
        self.budget = budget
        self.on_ready = on_ready
        self.selector: Selector | None = None
        self.error: str | None = None
        self.from_cache = False
        self.build_seconds = 0.0
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._keyword_lock = threading.Lock()
        self._keyword: BM25Index | None = None
        self._tokens: dict[str, int] = {}
        self._specs = {t.name: t for t in catalog.tools}
        self._all_tokens: int | None = None  # counted first thing in the build thread

    @property
    def ready(self) -> bool:
        return self.selector is not None

    def start(self) -> None:
        """Start building (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._build, name="hyperplan-gateway-build",
                                            daemon=True)
            self._thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the build to end (ready or failed); True when it ended."""
        return self._done.wait(timeout)

    def status(self) -> str:
        if self.selector is not None:
            return "ready"
        if self.error is not None:
            return f"graph build failed: {self.error}"
        return f"building the context graph of {len(self.catalog.tools)} tools"

    def _build(self) -> None:
        started = time.perf_counter()
        try:
            self._keyword_index()  # the fallback first: it serves until the graph is ready
            self._all_tokens = sum(self.tokens(t.name) for t in self.catalog.tools)
            from hyperplan.embed import get_embedder
            from hyperplan.select import build_selector
            from hyperplan.select.cache import default_cache_dir, is_cached
            from hyperplan.select.selector import SelectConfig

            emb = get_embedder(self.embedder_spec)
            where = default_cache_dir() if self.cache_dir == "default" else \
                (Path(self.cache_dir) if self.cache_dir is not None else None)
            annotations = self._annotations()
            _sweep_stale_tempdirs()
            with tempfile.TemporaryDirectory(prefix=f"{_TMP_PREFIX}{os.getpid()}-") as tmp:
                store = where if where is not None else Path(tmp) / "selectors"
                self.from_cache = is_cached(store, self.catalog, emb.name, annotations)
                if not self.from_cache and len(self.catalog.tools) >= CHILD_BUILD_TOOLS:
                    self._build_in_child(Path(tmp), store, annotations)
                selector = build_selector([self.catalog], embedder=emb, cache_dir=store,
                                          config=SelectConfig(budget=self.budget),
                                          annotations=annotations)
            selector.index  # noqa: B018 - embeds every tool and node now, not at first use
            selector.select("warm up", budget=1)  # the query path (embedder session) too
            self.selector = selector
        except Exception as exc:
            self.error = failure_line(exc)
            print(f"hyperplan serve: {self.status()}; find_tools keeps using BM25",
                  file=sys.stderr)
        finally:
            self.build_seconds = time.perf_counter() - started
            self._done.set()
        if self.on_ready is not None:
            self.on_ready(self.error)

    def _annotations(self) -> Annotations | None:
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
                run = annotate_catalog(self.catalog, client)
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

    def _build_in_child(self, tmp: Path, store: Path,
                        annotations: Annotations | None = None) -> None:
        """Build the graph into ``store`` in a child process (:mod:`.build`); when the child
        fails, the reason is printed and the caller builds in this process instead."""
        catalog_file = tmp / "catalog.json"
        catalog_file.write_text(self.catalog.model_dump_json(), encoding="utf-8")
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

    def keyword(self, request: str, budget: int) -> Found:
        """BM25 over tool names and descriptions: the search served until the graph is
        ready (module doc)."""
        started = time.perf_counter()
        tools = self.catalog.tools
        hits = self._keyword_index().search(request, budget)
        picked = tuple(FoundTool(tools[i].name, KEYWORD_METHOD,
                                 "matches words of the request (BM25)", round(score, 6),
                                 self.tokens(tools[i].name)) for i, score in hits)
        note = (f"{self.status()}: this is a plain BM25 search over tool names and "
                "descriptions; the producers a tool needs and the state are not used yet "
                "(call find_tools again in a moment)")
        return Found(request=request, tools=picked, method=KEYWORD_METHOD,
                     tokens=sum(t.tokens for t in picked), all_tokens=self._all_tokens,
                     ms=(time.perf_counter() - started) * 1000,
                     notes=(note,) if picked else (note, "no tool name or description "
                                                   "shares a word with the request"))

    def _keyword_index(self) -> BM25Index:
        with self._keyword_lock:
            if self._keyword is None:
                from hyperplan.embed.bm25 import BM25Index
                from hyperplan.graph.text import name_tokens

                self._keyword = BM25Index([f"{' '.join(name_tokens(t.name))} {t.name}: "
                                           f"{t.description}" for t in self.catalog.tools])
            return self._keyword

    def tokens(self, name: str) -> int:
        """Definition tokens of ``name`` as an OpenAI-style function (as the selector
        counts them)."""
        if self.selector is not None:
            return int(self.selector.tool_tokens[self.selector.graph.tool_index[name]])
        count = self._tokens.get(name)
        if count is None:
            from hyperplan.retrieve.serialize import count_tokens
            from hyperplan.select.selector import definition

            count = count_tokens(json.dumps(definition(self._specs[name]), ensure_ascii=False))
            self._tokens[name] = count
        return count


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


@dataclass
class Conversation:
    """One client's state (Definition 4; module doc). ``listed``: in narrow mode, the tools
    currently selected (what ``tools/list`` shows besides ``find_tools``). Methods are
    thread-safe (selection runs in worker threads)."""

    service: SelectionService
    token: str = ""  # the conversation token (.conversations); "" for a throwaway state
    bound: bool = False  # bound to a transport session (its tools/list shows its selection)
    request: str = ""
    budget: int | None = None  # the last find_tools budget (None: the gateway's)
    known: set[str] = field(default_factory=set)
    listed: tuple[str, ...] = ()
    offered: set[str] = field(default_factory=set)  # every tool ever selected for it
    last: Found | None = None
    _session: Session | None = None
    _pending: list[Call | Turn] = field(default_factory=list)  # replayed when ready
    _lock: threading.RLock = field(default_factory=threading.RLock)

    def session(self) -> Session | None:
        """The selection session, created (with the calls seen so far replayed into it) once
        the selector is ready; None before."""
        with self._lock:
            selector = self.service.selector
            if self._session is None and selector is not None:
                self._session = open_session(selector, self._pending, self.request)
                self._pending.clear()
            return self._session

    def find(self, request: str, known: Iterable[str] = (), budget: int | None = None) -> Found:
        """Select for ``request`` given the state plus ``known`` (held from now on). A
        request other than the conversation's last one starts a new turn (module doc)."""
        with self._lock:
            if request != self.request:
                self._new_turn(request)
            self.request = request
            self.budget = budget or self.budget
            self.known.update(known)
            return self._select(budget)

    def _new_turn(self, request: str) -> None:
        """Re-condition the state on a new request (:meth:`~hyperplan.select.Session.new_turn`):
        when it names a value not seen yet, the values held so far, the ``known`` ones
        included, stop grounding the selection."""
        session = self.session()
        if session is None:
            if len(self._pending) < _MAX_PENDING:
                self._pending.append(Turn(request))
        elif self.request and session.new_turn(request):
            self.known.clear()

    def reselect(self, budget: int | None = None) -> Found | None:
        """Select again for the conversation's request from the current state (None when no
        request was made yet)."""
        with self._lock:
            return self._select(budget) if self.request else None

    def observe(self, tool: str, arguments: dict[str, Any], value: Any, ok: bool) -> None:
        """Record a forwarded call and its result (value None for a failed call)."""
        with self._lock:
            session = self.session()
            if session is not None:
                session.observe(tool, arguments, value, ok=ok)
            elif len(self._pending) < _MAX_PENDING:
                self._pending.append(Call(tool, dict(arguments), value, ok))

    def state(self) -> dict[str, Any]:
        """The state as JSON-ready data."""
        with self._lock:
            session = self.session()
            if session is not None:
                return session.state()
            return {"request": self.request, "held": sorted(self.known),
                    "calls": [{"tool": c.tool, "arguments": sorted(c.arguments), "ok": c.ok}
                              for c in self._pending if isinstance(c, Call)]}

    def _select(self, budget: int | None) -> Found:
        k = budget or self.budget or self.service.budget
        session = self.session()
        if session is None:
            found = self.service.keyword(self.request, k)
        else:
            session.held.update(self.known)
            found = found_from_selection(session.select(self.request, budget=k))
        self.last = found
        return found
