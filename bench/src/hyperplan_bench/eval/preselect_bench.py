"""The machinery of the pre-selection benchmark (:mod:`hyperplan_bench.eval.preselect`): its data
(gold slots, gold calls to replay, catalog parts), the embedder switch that keeps query
embedding out of the warm timings and in the cold ones, FastMCP's ranking, the per-catalog bench
of every method, and the tally of rows. :mod:`.preselect` and :mod:`.preselect_replay` both
build on it.

Gold is a tuple of *slots*, each a tuple of acceptable tools (``[["git_status",
"git_diff_staged"], ["git_commit"]]``): a task is complete when every slot has one of its tools
selected, and its recall is the fraction of slots covered. A suite whose gold is a list of
tools has one slot per tool.

A tool is *unsafe* for a task when it writes (the graph's ``writing_tools``: a write verb, a
write HTTP method, a declared state change) or is destructive by its MCP annotations
(``metadata["destructive"]``: ``destructiveHint``, or ``readOnlyHint: false`` without one,
the MCP default) and is none of the task's gold alternatives. Where the data lists a task's
``must_not`` tools (writes the request does not ask for, read by a human), selecting one is
counted apart (``must_not``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, NamedTuple, TypeVar

import numpy as np

from hyperplan.catalog import Catalog
from hyperplan.embed.base import Embedder, FloatMatrix, l2_normalize
from hyperplan.embed.memo import MemoEmbedder
from hyperplan_bench.importers.gold import GoldTask, unique

Progress = Callable[[str, int, int], None]
Slots = tuple[tuple[str, ...], ...]
"""Gold slots: per slot, the tools any one of which fills it."""


@dataclass(frozen=True)
class ReplayCall:
    """One gold call as the agent makes it: tool, arguments, result, success."""

    tool: str
    arguments: Mapping[str, Any]
    result: Any
    ok: bool = True


@dataclass(frozen=True)
class Part:
    """One catalog and its tasks; ``replays``: per task id, the gold calls with the values
    the benchmark's data gives (τ²'s environment), else none (synthetic values are made);
    ``slots``: per task id, its gold slots where the data gives alternatives (else one slot
    per gold tool); ``splits``: per task id, ``dev`` or ``heldout`` where the data says
    (else the every-5th-task rule of ``eval retrieval``); ``must_not``: per task id, the
    tools it must not be offered, where the data says."""

    catalog: Catalog
    tasks: tuple[GoldTask, ...]
    replays: Mapping[str, tuple[ReplayCall, ...]] = field(default_factory=dict)
    slots: Mapping[str, Slots] = field(default_factory=dict)
    splits: Mapping[str, str] = field(default_factory=dict)
    must_not: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class PreselectSuite:
    suite: str
    parts: tuple[Part, ...]


def gold_tools(task: GoldTask) -> tuple[str, ...]:
    """The distinct tools of the task's gold calls, else its listed tools."""
    return unique(c.tool for c in task.calls) if task.calls else task.tools


def gold_slots(part: Part, task: GoldTask) -> Slots:
    """The task's gold slots: the data's own, else one slot per gold tool."""
    given = part.slots.get(task.id)
    return given if given else tuple((t,) for t in gold_tools(task))


def scorable_slots(part: Part, task: GoldTask, names: set[str]) -> Slots | None:
    """The task's slots restricted to ``names`` (alternatives outside the catalog dropped);
    ``None`` when a slot has no tool of the catalog (the task cannot be complete)."""
    kept = tuple(tuple(t for t in slot if t in names) for slot in gold_slots(part, task))
    return kept if kept and all(kept) else None


class Row(NamedTuple):
    """Per task, method and budget (select mode)."""

    recall: float  # fraction of gold slots with a tool selected
    complete: bool  # every slot has one
    n_tools: int
    tokens: int
    ms: float  # wall ms, query embedding excluded (served from memory)
    cpu_ms: float  # the selecting thread's CPU ms, same
    cold_ms: float  # wall ms with the query embedding by the model itself
    cold_cpu_ms: float  # the process's CPU ms of that call (the model's threads included)
    unsafe: bool  # a write or destructive tool none of the gold alternatives
    unsafe_chain: bool | None  # DOE only: its chain's producers hold such a tool
    must_not: bool  # a tool the task's must_not lists
    must_not_chain: bool | None  # DOE only: its chain's producers hold one


Timed = tuple[list[int], float, float]
"""Ranked tool ids, wall-clock and thread-CPU milliseconds of one selection."""
R = TypeVar("R", bound=tuple[Any, ...])


def timed(call: Callable[[], list[int]]) -> Timed:
    """``call()`` with its wall-clock and thread-CPU milliseconds (the CPU time is what the
    selection itself costs, robust to other processes sharing the cores)."""
    wall, cpu = time.perf_counter(), time.thread_time()
    ids = call()
    return ids, (time.perf_counter() - wall) * 1000, (time.thread_time() - cpu) * 1000


def cold_timed(call: Callable[[], object]) -> tuple[float, float]:
    """Wall and process-CPU milliseconds of ``call()`` (every thread of the process: an
    embedding model's own threads included)."""
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


@dataclass
class Tally(Generic[R]):
    """Rows per method and budget for all tasks and the subsets; ``unsafe_chains``: per
    budget, the tasks whose DOE chain holds an unsafe or a must-not tool, and those tools."""

    budgets: tuple[int, ...]
    rows: dict[str, dict[int, list[R]]] = field(default_factory=dict)
    subsets: dict[str, dict[str, dict[int, list[R]]]] = field(default_factory=dict)
    tasks: int = 0  # tasks replayed so far (replay mode numbers them)
    unsafe_chains: dict[int, list[dict[str, Any]]] = field(default_factory=dict)

    def add(self, method: str, k: int, row: R, subsets: Sequence[str]) -> None:
        self.rows.setdefault(method, {}).setdefault(k, []).append(row)
        for name in subsets:
            self.subsets.setdefault(name, {}).setdefault(method, {}).setdefault(k, []).append(row)


def _p(values: np.ndarray, q: int) -> float:
    return round(float(np.percentile(values, q)), 3)


EMPTY_SUMMARY = {"recall": 0.0, "complete": 0.0, "mean_tools": 0.0, "tokens": 0.0,
                 "token_ratio": 0.0, "ms_p50": 0.0, "ms_p99": 0.0, "cpu_ms_p50": 0.0,
                 "cpu_ms_p99": 0.0, "ms_cold_p50": 0.0, "ms_cold_p99": 0.0,
                 "cpu_ms_cold_p50": 0.0, "cpu_ms_cold_p99": 0.0, "unsafe": 0, "must_not": 0}


def summary(rows: Sequence[Row], all_tokens: float) -> dict[str, float]:
    """Recall, complete, mean tools, tokens, token ratio, latency (warm and cold) and the
    number of unsafe and must-not tasks of ``rows`` (and of such DOE chains where rows have
    them)."""
    if not rows:
        return dict(EMPTY_SUMMARY)
    arr = np.asarray([r[:8] for r in rows], dtype=np.float64)
    tokens = float(arr[:, 3].mean())
    out: dict[str, float] = {
        "recall": round(float(arr[:, 0].mean()), 4),
        "complete": round(float(arr[:, 1].mean()), 4),
        "mean_tools": round(float(arr[:, 2].mean()), 2),
        "tokens": round(tokens, 1),
        "token_ratio": round(all_tokens / tokens, 2) if tokens else 0.0,
        "ms_p50": _p(arr[:, 4], 50), "ms_p99": _p(arr[:, 4], 99),
        "cpu_ms_p50": _p(arr[:, 5], 50), "cpu_ms_p99": _p(arr[:, 5], 99),
        "ms_cold_p50": _p(arr[:, 6], 50), "ms_cold_p99": _p(arr[:, 6], 99),
        "cpu_ms_cold_p50": _p(arr[:, 7], 50), "cpu_ms_cold_p99": _p(arr[:, 7], 99),
        "unsafe": sum(r.unsafe for r in rows),
        "must_not": sum(r.must_not for r in rows),
    }
    if any(r.unsafe_chain is not None for r in rows):
        out["unsafe_chain"] = sum(bool(r.unsafe_chain) for r in rows)
        out["must_not_chain"] = sum(bool(r.must_not_chain) for r in rows)
    return out


class SwitchEmbedder:
    """The selector's embedder in the benchmark: its query vectors from ``memo`` (embedded
    before the timed part: warm), or, while ``cold`` is set, from ``raw``, the model itself
    with no cache in front of it (what a request never seen before costs)."""

    def __init__(self, memo: MemoEmbedder, raw: Embedder) -> None:
        self.memo = memo
        self.raw = raw
        self.cold = False

    @property
    def name(self) -> str:
        return self.memo.name

    @property
    def dim(self) -> int:
        return self.memo.dim

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        return (self.raw if self.cold else self.memo).embed(texts)


def raw_embedder(embedder: Embedder) -> Embedder:
    """``embedder`` without the disk cache or memo wrapped around it."""
    from hyperplan.embed.cache import CachedEmbedder

    while isinstance(embedder, CachedEmbedder | MemoEmbedder):
        embedder = embedder.inner
    return embedder


def unsafe_tools(catalog: Catalog, writing: np.ndarray) -> np.ndarray:
    """Per tool, whether it writes (``writing``: the graph's ``writing_tools``) or its MCP
    annotations make it destructive (module doc)."""
    destructive = np.asarray([t.metadata.get("destructive") is True for t in catalog.tools],
                             dtype=bool)
    unsafe: np.ndarray = np.asarray(writing, dtype=bool) | destructive
    return unsafe


class FastMCPRanker:
    """FastMCP's ``BM25SearchTransform`` ranking over the catalog's tools (as FastMCP
    ``Tool`` objects with the same names, descriptions and input schemas), one transform per
    budget (its ``max_results``); its index is built by one untimed warm-up query."""

    def __init__(self, catalog: Catalog, budgets: Sequence[int]) -> None:
        from fastmcp.server.transforms.search.bm25 import BM25SearchTransform
        from fastmcp.tools.base import Tool

        # benchmark names such as NesTools' ``book_room~2`` break MCP's naming advice: FastMCP
        # logs a warning per tool, which would bury the benchmark's output
        quiet = logging.getLogger("mcp.shared.tool_name_validation")
        level = quiet.level
        quiet.setLevel(logging.ERROR)
        try:
            self.tools = [Tool(name=t.name, description=t.description,
                               parameters=t.input_schema) for t in catalog.tools]
        finally:
            quiet.setLevel(level)
        self.index = {t.name: i for i, t in enumerate(catalog.tools)}
        self.loop = asyncio.new_event_loop()
        self.transforms = {k: BM25SearchTransform(max_results=k) for k in budgets}
        for k in budgets:
            self.top("warm up", k)

    def top(self, text: str, k: int) -> Timed:
        """Tool ids in FastMCP's order and the milliseconds of its search alone."""
        transform = self.transforms[k]

        async def search() -> Timed:
            wall, cpu = time.perf_counter(), time.thread_time()
            found = await transform._search(self.tools, text)  # the transform's own ranking
            ms, cpu_ms = (time.perf_counter() - wall) * 1000, (time.thread_time() - cpu) * 1000
            return [self.index[t.name] for t in found], ms, cpu_ms

        return self.loop.run_until_complete(search())

    def close(self) -> None:
        self.loop.close()


@dataclass(frozen=True)
class Gold:
    """One task's gold as tool ids: its slots, every alternative of any slot, and the tools
    it must not be offered."""

    slots: tuple[frozenset[int], ...]
    alternatives: frozenset[int]
    forbidden: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Baselines:
    """Which optional baselines run: FastMCP's BM25 search, graph-tool-call."""

    fastmcp: bool = False
    gtc: bool = False


class PartBench:
    """One catalog's selector and baselines, built once for all its tasks and budgets."""

    def __init__(self, part: Part, embedder: Embedder, budgets: tuple[int, ...],
                 cache_dir: Path | None, baselines: Baselines, progress: Progress | None,
                 stage: str) -> None:
        from hyperplan.retrieve.baselines import bm25_index
        from hyperplan.select.cache import cached_build
        from hyperplan.select.selector import Selector

        self.part = part
        self.budgets = budgets
        self.progress = progress
        self.stage = stage
        graph, _ = cached_build(part.catalog, embedder, cache_dir, progress)
        self.memo = MemoEmbedder(embedder)
        self.switch = SwitchEmbedder(self.memo, raw_embedder(embedder))
        self.selector = Selector(part.catalog, graph, self.switch)
        self.graph = self.selector.graph
        self.index = self.selector.index
        self.bm25 = bm25_index(self.graph)
        self.tokens = self.selector.tool_tokens
        self.all_tokens = self.selector.all_tokens
        self.unsafe = unsafe_tools(part.catalog, self.graph.writing_tools)
        self.fastmcp = FastMCPRanker(part.catalog, budgets) if baselines.fastmcp else None
        self.gtc: Any = None
        if baselines.gtc:
            from hyperplan_bench.eval.baseline_gtc import GTCRanker

            self.gtc = GTCRanker(part.catalog, self.switch.embed)

    def close(self) -> None:
        if self.fastmcp is not None:
            self.fastmcp.close()

    def prepare(self, tasks: Sequence[GoldTask]) -> FloatMatrix:
        """Every request's vector, and the selector's query vectors put in its memo, in one
        embedder call before anything is timed; the model itself loaded by one untimed call
        (the cold timings measure a request, not the loading of the model)."""
        from hyperplan.retrieve.interpret import interpret_request

        texts = [t.text for t in tasks]
        for task in tasks:
            interp = interpret_request(task.text, self.index.namespaces)
            texts.extend([interp.operation_text, *interp.operations, *interp.schemas])
        vectors = self.memo.embed(texts)
        self.switch.raw.embed(["warm up the model"])
        return l2_normalize(vectors[: len(tasks)])

    def gold(self, task: GoldTask) -> Gold:
        index = self.graph.tool_index
        slots = tuple(frozenset(index[t] for t in slot) for slot in gold_slots(self.part, task)
                      if any(t in index for t in slot))
        forbidden = frozenset(index[t] for t in self.part.must_not.get(task.id, ())
                              if t in index)
        return Gold(slots, frozenset().union(*slots), forbidden)

    def text_methods(self, text: str, vec: FloatMatrix, k: int) -> dict[str, Timed]:
        """Ranked tool ids and milliseconds of the text-only methods at budget ``k``."""
        from hyperplan.retrieve.baselines import bm25_top_k, semantic_top_k

        out: dict[str, Timed] = {
            "semantic": timed(lambda: semantic_top_k(self.index, vec, k)),
            "bm25": timed(lambda: bm25_top_k(self.bm25, text, k)),
        }
        if self.fastmcp is not None:
            out["fastmcp_bm25"] = self.fastmcp.top(text, k)
        if self.gtc is not None:
            out["graph_tool_call"] = self.gtc.top(text, k)
        return out

    def cold_ms(self, text: str, k: int) -> dict[str, tuple[float, float]]:
        """Wall and process-CPU milliseconds of the methods that embed the request, each
        embedding it with the model itself (no cache): semantic top-K, graph-tool-call and
        the selector. The process's CPU time counts the model's own threads, and not the
        time spent waiting for a core."""
        from hyperplan.retrieve.baselines import semantic_top_k

        raw = self.switch.raw
        out = {"semantic": cold_timed(lambda: semantic_top_k(
            self.index, l2_normalize(raw.embed([text]))[0], k))}
        self.switch.cold = True
        try:
            if self.gtc is not None:
                out["graph_tool_call"] = cold_timed(lambda: self.gtc.top(text, k))
            out["context_graph"] = cold_timed(lambda: self.selector_method(text, k, False))
            out["context_graph_doe"] = cold_timed(lambda: self.selector_method(text, k, True))
        finally:
            self.switch.cold = False
        return out

    def selector_method(self, text: str, k: int, chain: bool,
                        known: frozenset[str] = frozenset(),
                        effects: frozenset[str] = frozenset(),
                        called: tuple[str, ...] = ()) -> Timed:
        return self.selection(text, k, chain, known, effects, called)[0]

    def selection(self, text: str, k: int, chain: bool,
                  known: frozenset[str] = frozenset(), effects: frozenset[str] = frozenset(),
                  called: tuple[str, ...] = ()) -> tuple[Timed, Any]:
        """The selector's ranked ids and milliseconds, and its :class:`Selection`."""
        picked: list[Any] = []

        def call() -> list[int]:
            picked.append(self.selector.select(text, known=known, effects=effects, budget=k,
                                               chain=chain, called=called))
            return [self.graph.tool_index[n] for n in picked[0].names]

        return timed(call), picked[0]

    def chain_producers(self, selection: Any) -> list[int]:
        """The producers DOE's chain added: the tools its steps read from and the tools it
        put in the selection for a chain (:class:`~hyperplan.select.model.Reason` ``chain``)."""
        from hyperplan.select.model import Reason

        names = [p for step in selection.chain for _, p, _ in step.reads]
        names += [t.name for t in selection.tools if t.reason is Reason.CHAIN]
        index = self.graph.tool_index
        return [index[n] for n in unique(names) if n in index]

    def unsafe_of(self, gold: Gold, ids: Sequence[int]) -> list[int]:
        return [t for t in ids if self.unsafe[t] and t not in gold.alternatives]

    def row(self, gold: Gold, ids: list[int], ms: float, cpu_ms: float,
            cold: tuple[float, float], chain: Sequence[int] | None = None) -> Row:
        got = set(ids)
        covered = sum(bool(slot & got) for slot in gold.slots)
        tokens = int(self.tokens[list(got)].sum()) if got else 0
        return Row(covered / len(gold.slots), covered == len(gold.slots), len(got), tokens,
                   ms, cpu_ms, *cold, bool(self.unsafe_of(gold, ids)),
                   None if chain is None else bool(self.unsafe_of(gold, chain)),
                   bool(gold.forbidden & got),
                   None if chain is None else bool(gold.forbidden.intersection(chain)))

    def tick(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(self.stage, done, total)

    def run(self, tasks: Sequence[GoldTask], tally: Tally[Row]) -> int:
        """Score every task at every budget; returns how many were scored."""
        from hyperplan.retrieve.context_graph import single_thread_blas

        vectors = self.prepare(tasks)
        everything = list(range(self.graph.n_tools))
        for i, task in enumerate(tasks):
            self.tick(i, len(tasks))
            gold = self.gold(task)
            subsets = [name for name, keep in (("multi_tool", len(gold.slots) > 1),
                                               ("with_flows", bool(task.flows))) if keep]
            for k in self.budgets:
                chains: dict[str, list[int]] = {}
                with single_thread_blas():  # as eval retrieval, for comparable timings
                    cold = self.cold_ms(task.text, k)
                    results = self.text_methods(task.text, vectors[i], k)
                    for method, chain in (("context_graph", False), ("context_graph_doe", True)):
                        results[method], selection = self.selection(task.text, k, chain)
                        if chain:
                            chains[method] = self.chain_producers(selection)
                tally.add("all_tools", k, self.row(gold, everything, 0.0, 0.0, (0.0, 0.0)),
                          subsets)
                for method, (ids, ms, cpu_ms) in results.items():
                    tally.add(method, k, self.row(gold, ids, ms, cpu_ms,
                                                  cold.get(method, (ms, cpu_ms)),
                                                  chains.get(method)), subsets)
                self._note_unsafe_chain(tally, task, gold, k, chains.get("context_graph_doe"))
        self.tick(len(tasks), len(tasks))
        return len(tasks)

    def _note_unsafe_chain(self, tally: Tally[Row], task: GoldTask, gold: Gold, k: int,
                           chain: list[int] | None) -> None:
        bad = self.unsafe_of(gold, chain or [])
        banned = [t for t in chain or [] if t in gold.forbidden]
        if bad or banned:
            names = self.graph.tools
            tally.unsafe_chains.setdefault(k, []).append(
                {"task": task.id, "tools": [names[t].name for t in bad],
                 **({"must_not": [names[t].name for t in banned]} if banned else {})})
