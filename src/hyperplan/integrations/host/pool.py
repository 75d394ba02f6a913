"""Selectors of a selection host, one per tool set, and the keyword search served until one
is ready.

A host sees tool sets (the gateway: its upstreams' catalog; an adapter: the tools its agent
sends, which can change from one model call to the next). :class:`SelectorPool` builds the
:class:`~hyperplan.select.Selector` of each set once, however many callers ask at once, and
keeps the ``size`` most recently used (a building or failed set is never evicted while it is
the newest). A caller either waits for the build (``wait=True``: an adapter, before the model
call it narrows) or not (``wait=False``: the build runs in a thread, the caller gets None and
serves :meth:`SelectorPool.keyword` meanwhile: the gateway, which never makes a client wait).
A failed build is kept as failed (its error in :meth:`SelectorPool.status`), not retried on
every call.

The keyword search is BM25 over the tools' names and descriptions (what text-only tool
search does): no producers are added and the state is not used, and its answer says so.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hyperplan.catalog import Catalog, ToolSpec
    from hyperplan.embed.bm25 import BM25Index
    from hyperplan.select import Selection, Selector

logger = logging.getLogger("hyperplan.integrations")

#: Selectors kept in memory per pool (each distinct tool set is one).
DEFAULT_SELECTORS = 4

Builder = Callable[["Catalog"], "Selector"]
"""How a pool turns a catalog into a selector (the gateway's builds in a child process and
warms the embedder; the default is :func:`hyperplan.select.build_selector`)."""


class BuildState(StrEnum):
    """Where the selector of one tool set is."""

    BUILDING = "building"
    READY = "ready"
    FAILED = "failed"
    EMPTY = "empty"  # fewer than two tools hyperplan can read: nothing to select among


@dataclass(frozen=True)
class Built:
    """A ready selector and the tool names it covers (an adapter leaves out the tools whose
    schemas it cannot read; they are offered unjudged)."""

    selector: Selector
    covered: frozenset[str]


@dataclass
class _Slot:
    catalog: Catalog | None = None
    state: BuildState = BuildState.BUILDING
    built: Built | None = None
    error: str | None = None
    seconds: float = 0.0
    done: threading.Event = field(default_factory=threading.Event)
    made: threading.Event = field(default_factory=threading.Event)  # catalog made (or not)
    keyword: BM25Index | None = None
    tokens: dict[str, int] = field(default_factory=dict)
    specs: dict[str, ToolSpec] = field(default_factory=dict)  # by name, for counting tokens
    started: bool = False  # a build was asked for (:meth:`SelectorPool.add` does not ask)


@dataclass(frozen=True)
class BuildStatus:
    """What :meth:`SelectorPool.status` says of one tool set."""

    state: BuildState | None  # None: the pool has never seen the set
    tools: int = 0
    error: str | None = None
    seconds: float = 0.0

    def line(self) -> str:
        """The status in words, for a host's answer."""
        if self.state is BuildState.FAILED:
            return f"graph build failed: {self.error}"
        if self.state is BuildState.BUILDING or self.state is None:
            return f"building the context graph of {self.tools} tools"
        return str(self.state)


class SelectorPool:
    """Selectors per tool set (module doc). ``build`` makes one from a catalog;
    ``on_ready(key, error)`` is called when a build ends (in the building thread);
    ``min_tools``: a set with fewer tools is :attr:`BuildState.EMPTY`, never built (the
    gateway builds even one upstream tool's graph, as it always did)."""

    def __init__(self, build: Builder, *, size: int = DEFAULT_SELECTORS,
                 on_ready: Callable[[str, str | None], None] | None = None,
                 min_tools: int = 2) -> None:
        self.build = build
        self.size = max(1, size)
        self.on_ready = on_ready
        self.min_tools = min_tools
        self._slots: OrderedDict[str, _Slot] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str, catalog: Callable[[], Catalog | None], *,
            wait: bool = True) -> Built | None:
        """The selector of the tool set ``key``; ``catalog`` makes the set's catalog on first
        sight (None or fewer than two tools: nothing to select among). ``wait``: build in
        this thread (others asking meanwhile wait for it) or in a background thread (then
        None until it is ready)."""
        with self._lock:
            slot = self._slots.get(key)
            if slot is None:
                slot = self._slots[key] = _Slot()
                self._evict()
            first, slot.started = not slot.started, True
            self._slots.move_to_end(key)
        if first:
            if wait:
                self._build(key, slot, catalog)
            else:
                threading.Thread(target=self._build, args=(key, slot, catalog),
                                 name="hyperplan-selector-build", daemon=True).start()
                slot.made.wait()  # the catalog is known (for the keyword search) on return
        elif wait:
            slot.done.wait()
        return slot.built

    def add(self, key: str, catalog: Catalog) -> None:
        """Know the set ``key`` and its catalog before its build is asked for: the keyword
        search and the token counts serve it at once, the first :meth:`get` builds it (the
        gateway: its one catalog, known when it loads, built once it is started)."""
        with self._lock:
            if key in self._slots:
                return
            slot = self._slots[key] = _Slot(catalog=catalog)
            slot.made.set()
            self._evict()

    def built(self, key: str) -> Built | None:
        """The ready selector of ``key``, else None (never starts a build)."""
        with self._lock:
            slot = self._slots.get(key)
        return slot.built if slot is not None else None

    def status(self, key: str) -> BuildStatus:
        """Where the selector of ``key`` is."""
        with self._lock:
            slot = self._slots.get(key)
        if slot is None:
            return BuildStatus(None)
        tools = len(slot.catalog.tools) if slot.catalog is not None else 0
        return BuildStatus(slot.state, tools, slot.error, slot.seconds)

    def wait(self, key: str, timeout: float | None = None) -> bool:
        """Wait for the build of ``key`` to end; True when it ended."""
        with self._lock:
            slot = self._slots.get(key)
        return slot is None or slot.done.wait(timeout)

    def keyword(self, key: str, request: str, budget: int) -> Selection | None:
        """BM25 over the names and descriptions of the set ``key`` (module doc); None when
        the pool does not know the set's catalog yet."""
        with self._lock:
            slot = self._slots.get(key)
        if slot is None or slot.catalog is None:
            return None
        return keyword_selection(slot, request, budget, self.status(key).line())

    def prepare(self, key: str) -> None:
        """Make the keyword search's index and count every tool's tokens now (a host's build
        does this first, so that the fallback answers at once and with ``all_tokens``)."""
        with self._lock:
            slot = self._slots.get(key)
        if slot is None or slot.catalog is None:
            raise KeyError(key)
        _keyword_index(slot)
        for tool in slot.catalog.tools:
            _tokens(slot, tool.name)

    def tokens(self, key: str, name: str) -> int:
        """Definition tokens of tool ``name`` of the set ``key`` (as the selector counts)."""
        with self._lock:
            slot = self._slots.get(key)
        if slot is None:
            raise KeyError(key)
        return _tokens(slot, name)

    def _build(self, key: str, slot: _Slot, catalog: Callable[[], Catalog | None]) -> None:
        started = time.perf_counter()
        try:
            try:
                slot.catalog = catalog()
            finally:
                slot.made.set()
            if slot.catalog is None or len(slot.catalog.tools) < self.min_tools:
                slot.state = BuildState.EMPTY
            else:
                selector = self.build(slot.catalog)
                slot.built = Built(selector, frozenset(t.name for t in slot.catalog.tools))
                slot.state = BuildState.READY
        except Exception as exc:  # a host serves on without the graph; the reason is kept
            slot.state = BuildState.FAILED
            slot.error = failure_line(exc)
            logger.warning("hyperplan: %s", BuildStatus(slot.state, 0, slot.error).line())
        finally:
            slot.seconds = time.perf_counter() - started
            slot.done.set()
        if self.on_ready is not None:
            self.on_ready(key, slot.error)

    def _evict(self) -> None:
        """Drop the least recently used finished sets beyond ``size`` (lock held)."""
        finished = [k for k, s in self._slots.items() if s.done.is_set()]
        for key in finished[: max(0, len(self._slots) - self.size)]:
            del self._slots[key]


def failure_line(exc: BaseException, limit: int = 500) -> str:
    """The reason of a failed build as one line: redacted by value (secrets), *then* cut to
    ``limit`` characters (cut first, a secret split at the cut would escape but for its
    tail); whitespace is folded after redaction so a secret holding a newline still matches."""
    from hyperplan.secrets import redact_cut, redact_text

    return redact_cut(" ".join(redact_text(f"{type(exc).__name__}: {exc}").split()), limit)


def _tokens(slot: _Slot, name: str) -> int:
    """Definition tokens of ``name`` as an OpenAI-style function (the selector's count when
    it is ready, else counted here and kept)."""
    if slot.built is not None:
        selector = slot.built.selector
        return int(selector.tool_tokens[selector.graph.tool_index[name]])
    count = slot.tokens.get(name)
    if count is None and slot.catalog is not None:
        from hyperplan.retrieve.serialize import count_tokens
        from hyperplan.select.selector import definition

        if not slot.specs:  # made whole, then set: another thread never sees it in part
            slot.specs = {t.name: t for t in slot.catalog.tools}
        spec = slot.specs[name]
        count = slot.tokens[name] = count_tokens(json.dumps(definition(spec),
                                                            ensure_ascii=False))
    return count or 0


def _keyword_index(slot: _Slot) -> BM25Index:
    """The slot's BM25 index over tool names and descriptions, made on first use."""
    if slot.keyword is None:
        from hyperplan.embed.bm25 import BM25Index
        from hyperplan.graph.text import name_tokens

        assert slot.catalog is not None
        slot.keyword = BM25Index([f"{' '.join(name_tokens(t.name))} {t.name}: {t.description}"
                                  for t in slot.catalog.tools])
    return slot.keyword


def keyword_selection(slot: _Slot, request: str, budget: int, status: str) -> Selection:
    """The keyword answer for ``request`` over the slot's catalog (module doc)."""
    from hyperplan.select.model import KEYWORD_METHOD, Reason, SelectedTool, Selection

    assert slot.catalog is not None
    started = time.perf_counter()
    tools = slot.catalog.tools
    picked = tuple(SelectedTool(tools[i].name, Reason.KEYWORD, round(score, 6),
                                _tokens(slot, tools[i].name))
                   for i, score in _keyword_index(slot).search(request, budget))
    note = (f"{status}: this is a plain BM25 search over tool names and descriptions; the "
            "producers a tool needs and the state are not used yet")
    notes = (note,) if picked else (note, "no tool name or description shares a word with "
                                          "the request")
    all_tokens = (sum(_tokens(slot, t.name) for t in tools)
                  if len(slot.tokens) >= len(tools) or slot.built is not None else None)
    return Selection(request=request, tools=picked, tokens=sum(t.tokens for t in picked),
                     all_tokens=all_tokens, ms=(time.perf_counter() - started) * 1000,
                     notes=notes, method=KEYWORD_METHOD)
