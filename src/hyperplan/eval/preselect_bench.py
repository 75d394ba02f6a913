"""The machinery of the pre-selection benchmark (:mod:`hyperplan.eval.preselect`): its data
(gold calls to replay, catalog parts), the memo embedder that keeps query embedding out of the
timings, FastMCP's ranking, the per-catalog bench of every method, and the tally of rows.
:mod:`.preselect` and :mod:`.preselect_replay` both build on it."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hyperplan.catalog import Catalog
from hyperplan.embed.base import Embedder, FloatMatrix, l2_normalize
from hyperplan.embed.memo import MemoEmbedder
from hyperplan.importers.gold import GoldTask, unique

Progress = Callable[[str, int, int], None]


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
    the benchmark's data gives (τ²'s environment), else none (synthetic values are made)."""

    catalog: Catalog
    tasks: tuple[GoldTask, ...]
    replays: Mapping[str, tuple[ReplayCall, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class PreselectSuite:
    suite: str
    parts: tuple[Part, ...]


def gold_tools(task: GoldTask) -> tuple[str, ...]:
    """The distinct tools of the task's gold calls, else its listed tools."""
    return unique(c.tool for c in task.calls) if task.calls else task.tools


Row = tuple[float, bool, int, int, float, float]
"""Per task, method and budget: recall, complete, tools selected, tokens, wall and CPU
milliseconds."""
Timed = tuple[list[int], float, float]
"""Ranked tool ids, wall-clock and thread-CPU milliseconds of one selection."""


def timed(call: Callable[[], list[int]]) -> Timed:
    """``call()`` with its wall-clock and thread-CPU milliseconds (the CPU time is what the
    selection itself costs, robust to other processes sharing the cores)."""
    wall, cpu = time.perf_counter(), time.thread_time()
    ids = call()
    return ids, (time.perf_counter() - wall) * 1000, (time.thread_time() - cpu) * 1000


@dataclass
class Tally:
    """Rows per method and budget for all tasks and the subsets."""

    budgets: tuple[int, ...]
    rows: dict[str, dict[int, list[Row]]] = field(default_factory=dict)
    subsets: dict[str, dict[str, dict[int, list[Row]]]] = field(default_factory=dict)
    tasks: int = 0  # tasks replayed so far (replay mode numbers them)

    def add(self, method: str, k: int, row: Row, subsets: Sequence[str]) -> None:
        self.rows.setdefault(method, {}).setdefault(k, []).append(row)
        for name in subsets:
            self.subsets.setdefault(name, {}).setdefault(method, {}).setdefault(k, []).append(row)


def summary(rows: Sequence[Row], all_tokens: float) -> dict[str, float]:
    """Recall, complete, mean tools, tokens, token ratio and latency of ``rows``."""
    if not rows:
        return {"recall": 0.0, "complete": 0.0, "mean_tools": 0.0, "tokens": 0.0,
                "token_ratio": 0.0, "ms_p50": 0.0, "ms_p99": 0.0, "cpu_ms_p50": 0.0,
                "cpu_ms_p99": 0.0}
    arr = np.asarray([(r, float(c), n, t, ms, cpu) for r, c, n, t, ms, cpu in rows],
                     dtype=np.float64)
    tokens = float(arr[:, 3].mean())
    return {
        "recall": round(float(arr[:, 0].mean()), 4),
        "complete": round(float(arr[:, 1].mean()), 4),
        "mean_tools": round(float(arr[:, 2].mean()), 2),
        "tokens": round(tokens, 1),
        "token_ratio": round(all_tokens / tokens, 2) if tokens else 0.0,
        "ms_p50": round(float(np.percentile(arr[:, 4], 50)), 3),
        "ms_p99": round(float(np.percentile(arr[:, 4], 99)), 3),
        "cpu_ms_p50": round(float(np.percentile(arr[:, 5], 50)), 3),
        "cpu_ms_p99": round(float(np.percentile(arr[:, 5], 99)), 3),
    }


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


class PartBench:
    """One catalog's selector and baselines, built once for all its tasks and budgets."""

    def __init__(self, part: Part, embedder: Embedder, budgets: tuple[int, ...],
                 cache_dir: Path | None, fastmcp: bool, progress: Progress | None,
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
        self.selector = Selector(part.catalog, graph, self.memo)
        self.graph = self.selector.graph
        self.index = self.selector.index
        self.bm25 = bm25_index(self.graph)
        self.tokens = self.selector.tool_tokens
        self.all_tokens = self.selector.all_tokens
        self.fastmcp = FastMCPRanker(part.catalog, budgets) if fastmcp else None

    def close(self) -> None:
        if self.fastmcp is not None:
            self.fastmcp.close()

    def prepare(self, tasks: Sequence[GoldTask]) -> FloatMatrix:
        """Every request's vector, and the selector's query vectors put in its memo, in one
        embedder call before anything is timed."""
        from hyperplan.retrieve.interpret import interpret_request

        texts = [t.text for t in tasks]
        for task in tasks:
            interp = interpret_request(task.text, self.index.namespaces)
            texts.extend([interp.operation_text, *interp.operations, *interp.schemas])
        vectors = self.memo.embed(texts)
        return l2_normalize(vectors[: len(tasks)])

    def text_methods(self, text: str, vec: FloatMatrix, k: int) -> dict[str, Timed]:
        """Ranked tool ids and milliseconds of the text-only methods at budget ``k``."""
        from hyperplan.retrieve.baselines import bm25_top_k, semantic_top_k

        out: dict[str, Timed] = {
            "semantic": timed(lambda: semantic_top_k(self.index, vec, k)),
            "bm25": timed(lambda: bm25_top_k(self.bm25, text, k)),
        }
        if self.fastmcp is not None:
            out["fastmcp_bm25"] = self.fastmcp.top(text, k)
        return out

    def selector_method(self, text: str, k: int, chain: bool,
                        known: frozenset[str] = frozenset(),
                        effects: frozenset[str] = frozenset(),
                        called: tuple[str, ...] = ()) -> Timed:
        def call() -> list[int]:
            picked = self.selector.select(text, known=known, effects=effects, budget=k,
                                          chain=chain, called=called)
            return [self.graph.tool_index[n] for n in picked.names]

        return timed(call)

    def row(self, gold: set[int], ids: list[int], ms: float, cpu_ms: float) -> Row:
        got = set(ids)
        tokens = int(self.tokens[list(got)].sum()) if got else 0
        return len(gold & got) / len(gold), gold <= got, len(got), tokens, ms, cpu_ms

    def tick(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(self.stage, done, total)

    def run(self, tasks: Sequence[GoldTask], tally: Tally) -> int:
        """Score every task at every budget; returns how many were scored."""
        from hyperplan.retrieve.context_graph import single_thread_blas

        vectors = self.prepare(tasks)
        everything = list(range(self.graph.n_tools))
        for i, task in enumerate(tasks):
            self.tick(i, len(tasks))
            gold = {self.graph.tool_index[n] for n in gold_tools(task)}
            subsets = [name for name, keep in (("multi_tool", len(gold) > 1),
                                               ("with_flows", bool(task.flows))) if keep]
            for k in self.budgets:
                with single_thread_blas():  # as eval retrieval, for comparable timings
                    results = self.text_methods(task.text, vectors[i], k)
                    for method, chain in (("context_graph", False), ("context_graph_doe", True)):
                        results[method] = self.selector_method(task.text, k, chain)
                tally.add("all_tools", k,
                          (1.0, True, len(everything), self.all_tokens, 0.0, 0.0), subsets)
                for method, (ids, ms, cpu_ms) in results.items():
                    tally.add(method, k, self.row(gold, ids, ms, cpu_ms), subsets)
        self.tick(len(tasks), len(tasks))
        return len(tasks)
