"""Pre-selection benchmark: hyperplan's selection against what users of agent
frameworks pick instead, side by side on the same tool texts, embedder and token counts.

For every task the request text goes to each method, capped at a budget of K tools:

* ``all_tools``: no selection (every tool's definition is sent);
* ``semantic``: cosine of the raw request against the tool texts, top K (what
  langgraph-bigtool's ``retrieve_tools`` and LlamaIndex's ObjectIndex do);
* ``bm25``: BM25 of the raw request against the same tool texts, top K (Hermes' ``tool_search``);
* ``fastmcp_bm25``: FastMCP's own ``BM25SearchTransform`` ranking (its tokenizer and its text
  of name, description and parameters), run when ``fastmcp`` is importable, else skipped and
  said so in the JSON;
* ``context_graph``: :meth:`hyperplan.select.Selector.select` with ``chain=False``;
* ``context_graph_doe``: the same with ``chain=True`` (DOE's producer chains join the ranking).

Per method and K: ``recall`` (mean fraction of a task's gold tools selected), ``complete``
(fraction of tasks with every gold tool selected), ``mean_tools``, ``tokens`` (mean definition
tokens of the selected tools as OpenAI functions: the selector's ``tool_tokens`` for every
method), ``token_ratio`` (all tools' tokens over that mean), and the selection's
``ms_p50`` / ``ms_p99`` (wall clock) and ``cpu_ms_p50`` / ``cpu_ms_p99`` (the selecting
thread's CPU time, which other processes on shared cores do not inflate). Query embedding is
excluded for every method: the request's vector (and the phrase vectors of the selector's
interpretation) are computed before the timed part; the selector is given an embedder that
serves those vectors from memory, so its timed :meth:`~hyperplan.select.Selector.select`
includes the interpretation, grounding, extraction and DOE but no model call. ``subsets``
repeat recall and completeness for the tasks with two or more gold tools (``multi_tool``) and
for those whose gold calls pass data between them (``with_flows``).

``replay`` mode (:mod:`hyperplan.eval.preselect_replay`) replays each task's gold calls through a
:class:`~hyperplan.select.Session` and scores whether the next gold tool is in the selection.

Suites and ``data``: ``appworld`` (the directory holding ``api_docs`` and
``tasks_train.jsonl``; gold as in ``eval retrieval``), ``stabletoolbench`` (a query file),
``nestools`` (the ``*.jsonl``), ``nestful`` (the data directory, one catalog per spec file),
``sealtools`` (the release directory or its query file) and ``tau2`` (``data`` = domains,
comma-separated, default all three; each task's gold is its assistant's gold actions, and the
replay uses the responses τ²'s environment gives them). The gold tools of a task with gold calls
are the distinct tools of those calls. ``split``: as ``eval retrieval`` (dev = every 5th task of
each catalog's tasks, heldout = the rest).
"""

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
from hyperplan.embed.base import Embedder, FloatMatrix, check_texts, l2_normalize
from hyperplan.errors import HyperplanError
from hyperplan.eval.links import split_tasks
from hyperplan.eval.registry import PRESELECT_REPLAY_SUITES, PRESELECT_SUITES
from hyperplan.importers.gold import GoldTask, unique

__all__ = [
    "METHODS",
    "SUITES",
    "MemoEmbedder",
    "Part",
    "PreselectError",
    "PreselectSuite",
    "evaluate_preselect",
    "gold_tools",
    "load_preselect_suite",
]

SUITES = PRESELECT_SUITES  # the registry's table
REPLAY_SUITES = PRESELECT_REPLAY_SUITES
TEXT_METHODS = ("semantic", "bm25", "fastmcp_bm25")
SELECTOR_METHODS = ("context_graph", "context_graph_doe")
METHODS = ("all_tools", *TEXT_METHODS, *SELECTOR_METHODS)
TAU2_DOMAINS = ("airline", "retail", "telecom")
DEFAULT_BUDGETS = (5, 10, 20)
FASTMCP_VERSION = "4.1.6"
TIMING_NOTE = ("selection only: request vectors computed before the timed part for every "
               "method; the selector's select() timed with its query vectors served from "
               "memory (interpretation, grounding, extraction and DOE included); ms = wall "
               "clock, cpu_ms = the selecting thread's CPU time")
Progress = Callable[[str, int, int], None]


class PreselectError(HyperplanError):
    """The pre-selection benchmark cannot run on the given suite or data."""


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


def load_preselect_suite(suite: str, data: str | Path | None) -> PreselectSuite:
    """The catalogs and gold tasks of ``suite`` (module doc) from ``data``."""
    if suite not in SUITES:
        raise PreselectError(f"unknown pre-selection suite {suite!r}; expected "
                             f"{', '.join(SUITES)}")
    if suite == "tau2":
        return PreselectSuite(suite, tuple(_tau2_part(d) for d in _domains(data)))
    if data is None:
        raise PreselectError(f"--data is required for suite {suite}")
    path = Path(data)
    if not path.exists():
        raise PreselectError(f"{path}: no such file or directory")
    if suite in ("appworld", "stabletoolbench"):
        from hyperplan.eval.retrieval import load_retrieval_suite

        tools, tasks = (path / "api_docs", path / "tasks_train.jsonl") \
            if suite == "appworld" and path.is_dir() else (path, path)
        loaded = load_retrieval_suite(suite, tools, tasks)
        return PreselectSuite(suite, (Part(loaded.catalog, loaded.tasks),))
    from hyperplan.eval.links import load_suite

    parts = load_suite(suite, path).parts
    return PreselectSuite(suite, tuple(Part(c, t) for c, t in parts))


def _domains(data: str | Path | None) -> list[str]:
    chosen = [d.strip() for d in str(data).split(",") if d.strip()] if data else \
        list(TAU2_DOMAINS)
    bad = [d for d in chosen if d not in TAU2_DOMAINS]
    if bad or not chosen:
        raise PreselectError(f"unknown tau2 domain {bad[0] if bad else data!r}; expected "
                             f"{', '.join(TAU2_DOMAINS)}")
    return chosen


def _tau2_part(domain: str) -> Part:
    """τ²'s tasks of ``domain`` with at least one assistant gold action; each action replayed
    once on τ²'s environment, so the replay mode gets its real responses."""
    from hyperplan.importers.tau2 import (
        gold_task,
        load_tau2_catalog,
        load_tau2_tasks,
        replay_gold,
        tau2_terminals,
    )

    catalog = load_tau2_catalog(domain)
    schemas = {t.name: t.output_schema for t in catalog.tools}
    tasks: list[GoldTask] = []
    replays: dict[str, tuple[ReplayCall, ...]] = {}
    for raw in load_tau2_tasks(domain):
        steps = replay_gold(domain, raw)
        task = gold_task(domain, raw, steps, schemas)
        if not task.calls:
            continue
        task = GoldTask(task.id, task.text, task.tools, task.flows, task.calls,
                        tuple(tau2_terminals(task, catalog)))
        tasks.append(task)
        replays[task.id] = tuple(ReplayCall(s.tool, dict(s.arguments), s.response, not s.error)
                                 for s in steps if s.requestor == "assistant")
    return Part(catalog, tuple(tasks), replays)


class MemoEmbedder:
    """``inner`` with an in-memory table of every text embedded so far: the selector's query
    vectors are computed before its timed call and then read back, not recomputed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self._table: dict[str, FloatMatrix] = {}

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        items = check_texts(texts)
        missing = list(dict.fromkeys(t for t in items if t not in self._table))
        if missing:
            for text, vec in zip(missing, self.inner.embed(missing), strict=True):
                self._table[text] = np.asarray(vec, dtype=np.float32)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._table[t] for t in items])


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


def fastmcp_status() -> tuple[bool, str]:
    """Whether FastMCP's BM25 transform can run here, and its version or why not."""
    try:
        import fastmcp
        from fastmcp.server.transforms.search.bm25 import BM25SearchTransform  # noqa: F401
    except ImportError as exc:
        return False, (f"fastmcp is not installed ({exc}); pip install fastmcp=="
                       f"{FASTMCP_VERSION} to run FastMCP's BM25SearchTransform")
    return True, str(getattr(fastmcp, "__version__", "unknown"))


def evaluate_preselect(
    suite: str,
    data: str | Path | None,
    *,
    embedder: Embedder,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    split: str = "all",
    replay: bool = False,
    limit: int | None = None,
    sample: int | None = None,
    cache_dir: Path | None = None,
    use_fastmcp: bool = True,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run the benchmark; returns the JSON contract of ``hyperplan eval preselect``.

    ``limit``: the first tasks of each catalog's split only; ``sample``: that many tasks
    evenly spaced over each catalog's split (for a suite whose file is ordered by difficulty,
    such as Seal-Tools' easy queries before its multi-tool ones, the first tasks are not a
    fair subset)."""
    from hyperplan.eval.preselect_replay import replay_part
    from hyperplan.retrieve.serialize import tokenizer_name

    ks = tuple(sorted(set(budgets)))
    if not ks or ks[0] < 1:
        raise PreselectError(f"budgets must be at least 1, got {list(budgets)}")
    if replay and suite not in REPLAY_SUITES:
        raise PreselectError(f"--replay needs gold call sequences: suites "
                             f"{', '.join(REPLAY_SUITES)}, not {suite}")
    started = time.perf_counter()
    loaded = load_preselect_suite(suite, data)
    fastmcp_ok, fastmcp_info = fastmcp_status() if use_fastmcp else \
        (False, "disabled (--no-fastmcp)")
    tally = Tally(ks)
    n_tools = n_tasks = skipped = 0
    all_tokens: list[int] = []
    for part_no, part in enumerate(loaded.parts):
        chosen = split_tasks(part.tasks, split)
        if sample is not None and sample < len(chosen):
            chosen = tuple(chosen[(i * len(chosen)) // sample] for i in range(sample))
        if limit is not None:
            chosen = chosen[:limit]
        names = set(part.catalog.names())
        scored = tuple(t for t in chosen if t.text.strip() and gold_tools(t)
                       and set(gold_tools(t)) <= names)
        skipped += len(chosen) - len(scored)
        n_tools += len(part.catalog.tools)
        if not scored:
            continue
        stage = f"part {part_no + 1}/{len(loaded.parts)}" if len(loaded.parts) > 1 else suite
        bench = PartBench(part, embedder, ks, cache_dir, fastmcp_ok, progress, stage)
        try:
            done = replay_part(bench, scored, tally) if replay else bench.run(scored, tally)
        finally:
            bench.close()
        n_tasks += done
        skipped += len(scored) - done
        all_tokens.extend([bench.all_tokens] * done)
    mean_all = float(np.mean(all_tokens)) if all_tokens else 0.0
    methods = [m for m in METHODS if m != "fastmcp_bm25" or fastmcp_ok]
    result: dict[str, Any] = {
        "suite": suite,
        "mode": "replay" if replay else "select",
        "split": split,
        "budgets": list(ks),
        "n_tasks": n_tasks,
        "n_tools": n_tools,
        "all_tokens": round(mean_all, 1),
        "methods": {},
        "seconds": round(time.perf_counter() - started, 2),
        "skipped_tasks": skipped,
        **({"limit": limit} if limit is not None else {}),
        **({"sample": sample} if sample is not None else {}),
        "skipped_methods": {} if fastmcp_ok else {"fastmcp_bm25": fastmcp_info},
        "fastmcp": fastmcp_info if fastmcp_ok else None,
        "embedder": embedder.name,
        "tokenizer": tokenizer_name(),
        "timing": TIMING_NOTE,
        **({"domains": _domains(data)} if suite == "tau2" else {}),
    }
    if replay:
        from hyperplan.eval.preselect_replay import replay_summary

        result["methods"] = {m: {str(k): replay_summary(tally.rows.get(m, {}).get(k, []))
                                 for k in ks} for m in methods}
        result["n_steps"] = len(tally.rows.get("all_tools", {}).get(ks[0], []))
        result["results"] = "tau2 environment responses" if suite == "tau2" else \
            "synthetic, keyed by each tool's output schema; gold references carried over"
        return result
    result["methods"] = {m: {str(k): summary(tally.rows.get(m, {}).get(k, []), mean_all)
                             for k in ks} for m in methods}
    result["subsets"] = {
        name: {"n_tasks": len(by_method.get("all_tools", {}).get(ks[0], [])),
               "methods": {m: {str(k): _short(by_method.get(m, {}).get(k, [])) for k in ks}
                           for m in methods}}
        for name, by_method in ((n, tally.subsets.get(n, {})) for n in SUBSETS)}
    return result


SUBSETS = ("multi_tool", "with_flows")


def _short(rows: Sequence[Row]) -> dict[str, float]:
    full = summary(rows, 0.0)
    return {"recall": full["recall"], "complete": full["complete"]}


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
                        effects: frozenset[str] = frozenset()) -> Timed:
        def call() -> list[int]:
            picked = self.selector.select(text, known=known, effects=effects, budget=k,
                                          chain=chain)
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
