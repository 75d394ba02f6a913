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
* ``graph_tool_call``: graph-tool-call's ``ToolGraph.retrieve`` (BM25, the same embedder and
  its rule-based prerequisite graph; :mod:`hyperplan_bench.eval.baseline_gtc`), run when
  ``graph_tool_call`` is importable, else skipped and said so;
* ``context_graph``: :meth:`hyperplan.select.Selector.select` with ``chain=False``;
* ``context_graph_doe``: the same with ``chain=True`` (DOE's producer chains join the ranking).

Gold is a tuple of slots of acceptable tools (:mod:`hyperplan_bench.eval.preselect_bench`; a suite
whose gold is a list of tools has one slot per tool). Per method and K: ``recall`` (mean
fraction of a task's gold slots with a tool selected), ``complete`` (fraction of tasks with
every slot filled), ``mean_tools``, ``tokens`` (mean definition tokens of the selected tools as
OpenAI functions: the selector's ``tool_tokens`` for every method), ``token_ratio`` (all tools'
tokens over that mean), ``unsafe`` (tasks whose selection holds a write or destructive tool
that is none of their gold alternatives) and, for ``context_graph_doe``, ``unsafe_chain`` (tasks
whose DOE chain, the producers it added, holds such a tool; listed per K in ``unsafe_chains``);
where the data lists tools a task must not be offered (the corpus' ``must_not``), ``must_not``
and, for DOE, ``must_not_chain`` count the tasks whose selection or chain holds one.

Latency: ``ms_p50`` / ``ms_p99`` (wall clock) and ``cpu_ms_p50`` / ``cpu_ms_p99`` (the selecting
thread's CPU time, which other processes on shared cores do not inflate) exclude the query
embedding for every method: the request's vector (and the phrase vectors of the selector's
interpretation) are computed before the timed part; the selector is given an embedder that
serves those vectors from memory, so its timed :meth:`~hyperplan.select.Selector.select`
includes the interpretation, grounding, extraction and DOE but no model call.
``ms_cold_p50`` / ``ms_cold_p99`` are a request never seen before: the same call timed with
every text it embeds (the request; the selector's interpretation phrases) embedded by the model
itself, no cache in front of it (semantic top-K: embedding the request plus the top-K;
BM25 and FastMCP embed nothing: their cold time is their time). ``subsets`` repeat recall and
completeness for the tasks with two or more gold slots (``multi_tool``) and for those whose gold
calls pass data between them (``with_flows``).

``replay`` mode (:mod:`hyperplan_bench.eval.preselect_replay`) replays each task's gold calls
through a
:class:`~hyperplan.select.Session` and scores whether the next gold tool is in the selection.

Suites and ``data``: ``appworld`` (the directory holding ``api_docs`` and
``tasks_train.jsonl``; gold as in ``eval retrieval``), ``stabletoolbench`` (a query file),
``nestools`` (the ``*.jsonl``), ``nestful`` (the data directory, one catalog per spec file),
``sealtools`` (the release directory or its query file) and ``tau2`` (``data`` = domains,
comma-separated, default all three; each task's gold is its assistant's gold actions, and the
replay uses the responses τ²'s environment gives them). The gold tools of a task with gold calls
are the distinct tools of those calls. ``split``: as ``eval retrieval`` (dev = every 5th task of
each catalog's tasks, heldout = the rest), unless the data gives each task its split.

``custom`` (a user's own ``--catalog`` sources and ``--tasks-file``:
:mod:`hyperplan_bench.eval.preselect_custom`), ``mcp-six`` and ``mcp-corpus`` (real MCP servers'
saved ``tools/list``: :mod:`hyperplan_bench.eval.preselect_corpus`) read gold slots. With
``strip_outputs`` every catalog goes through :func:`hyperplan_bench.eval.stripped.strip_outputs`
first (a typed suite as most catalogs are: no output schemas, effects or preconditions; the
replay's synthetic results then follow the stripped catalog).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from hyperplan.embed.base import Embedder
from hyperplan.embed.memo import MemoEmbedder
from hyperplan.errors import HyperplanError
from hyperplan_bench.eval.links import split_tasks
from hyperplan_bench.eval.preselect_bench import (
    Baselines,
    Part,
    PartBench,
    PreselectSuite,
    ReplayCall,
    Row,
    Tally,
    gold_tools,
    scorable_slots,
    summary,
)
from hyperplan_bench.eval.registry import PRESELECT_REPLAY_SUITES, PRESELECT_SUITES
from hyperplan_bench.importers.gold import GoldTask

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
TEXT_METHODS = ("semantic", "bm25", "fastmcp_bm25", "graph_tool_call")
SELECTOR_METHODS = ("context_graph", "context_graph_doe")
METHODS = ("all_tools", *TEXT_METHODS, *SELECTOR_METHODS)
TAU2_DOMAINS = ("airline", "retail", "telecom")
DEFAULT_BUDGETS = (5, 10, 20)
FASTMCP_VERSION = "4.1.6"
TIMING_NOTE = ("ms, cpu_ms: selection only, request vectors computed before the timed part "
               "for every method; the selector's select() timed with its query vectors "
               "served from memory (interpretation, grounding, extraction and DOE included); "
               "ms = wall clock, cpu_ms = the selecting thread's CPU time. ms_cold: wall "
               "clock of a request never seen before, every text the method embeds embedded "
               "by the model itself (no cache); BM25 and FastMCP embed nothing")
Progress = Callable[[str, int, int], None]


class PreselectError(HyperplanError):
    """The pre-selection benchmark cannot run on the given suite or data."""


@dataclass(frozen=True)
class SuiteSource:
    """Where a suite's catalogs and tasks come from: ``data`` (module doc); ``catalogs`` and
    ``tasks_file`` (``custom``); ``tools``: the folder of servers' ``tools/list`` files
    (``mcp-six``, ``mcp-corpus``); ``strip``: every catalog with its outputs stripped."""

    data: str | Path | None = None
    catalogs: tuple[str, ...] = ()
    tasks_file: str | Path | None = None
    tools: str | Path | None = None
    strip: bool = False


def load_preselect_suite(suite: str, data: str | Path | None,
                         source: SuiteSource | None = None) -> PreselectSuite:
    """The catalogs and gold tasks of ``suite`` (module doc) from ``data`` (or ``source``)."""
    src = source or SuiteSource(data)
    loaded = _load(suite, data if data is not None else src.data, src)
    if not src.strip:
        return loaded
    from hyperplan_bench.eval.stripped import strip_outputs

    return PreselectSuite(loaded.suite, tuple(replace(p, catalog=strip_outputs(p.catalog))
                                              for p in loaded.parts))


def _load(suite: str, data: str | Path | None, src: SuiteSource) -> PreselectSuite:
    if suite not in SUITES:
        raise PreselectError(f"unknown pre-selection suite {suite!r}; expected "
                             f"{', '.join(SUITES)}")
    if suite == "tau2":
        return PreselectSuite(suite, tuple(_tau2_part(d) for d in _domains(data)))
    if suite == "custom":
        from hyperplan_bench.eval.preselect_custom import load_custom_suite

        if src.tasks_file is None:
            raise PreselectError("--suite custom needs --tasks-file (JSON or JSONL of "
                                 '{"id", "request", "gold"})')
        return load_custom_suite(src.catalogs, src.tasks_file)
    if data is None:
        raise PreselectError(f"--data is required for suite {suite}")
    path = Path(data)
    if not path.exists():
        raise PreselectError(f"{path}: no such file or directory")
    if suite in ("mcp-six", "mcp-corpus"):
        from hyperplan_bench.eval.preselect_corpus import load_mcp_corpus, load_mcp_six

        return (load_mcp_six if suite == "mcp-six" else load_mcp_corpus)(path, src.tools)
    if suite in ("appworld", "stabletoolbench"):
        from hyperplan_bench.eval.retrieval import load_retrieval_suite

        tools, tasks = (path / "api_docs", path / "tasks_train.jsonl") \
            if suite == "appworld" and path.is_dir() else (path, path)
        loaded = load_retrieval_suite(suite, tools, tasks)
        return PreselectSuite(suite, (Part(loaded.catalog, loaded.tasks),))
    from hyperplan_bench.eval.links import load_suite

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
    from hyperplan_bench.importers.tau2 import (
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
    use_gtc: bool = True,
    source: SuiteSource | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run the benchmark; returns the JSON contract of ``hyperplan eval preselect``.

    ``limit``: the first tasks of each catalog's split only; ``sample``: that many tasks
    evenly spaced over each catalog's split (for a suite whose file is ordered by difficulty,
    such as Seal-Tools' easy queries before its multi-tool ones, the first tasks are not a
    fair subset). ``source``: the custom suite's catalogs and tasks file, the MCP suites'
    tools folder, stripped outputs (:class:`SuiteSource`)."""
    ks = tuple(sorted(set(budgets)))
    if not ks or ks[0] < 1:
        raise PreselectError(f"budgets must be at least 1, got {list(budgets)}")
    if replay and suite not in REPLAY_SUITES:
        raise PreselectError(f"--replay needs gold call sequences: suites "
                             f"{', '.join(REPLAY_SUITES)}, not {suite}")
    src = source or SuiteSource(data)
    started = time.perf_counter()
    loaded = load_preselect_suite(suite, data, src)
    optional = _optional(use_fastmcp, use_gtc)
    baselines = Baselines(fastmcp="fastmcp_bm25" in optional.ran,
                          gtc="graph_tool_call" in optional.ran)
    run = _Run(suite, embedder, ks, split, replay, limit, sample, cache_dir, baselines, progress)
    totals = _score_parts(run, loaded.parts)
    result = _header(run, totals, optional, src.strip, started)
    if suite == "tau2":
        result["domains"] = _domains(data)
    methods = [m for m in METHODS if m not in optional.skipped]
    result.update(_replay_methods(run, totals.tally, methods) if replay
                  else _select_methods(run, totals, methods))
    return result


@dataclass(frozen=True)
class _Run:
    """What every part of one :func:`evaluate_preselect` run is scored with."""

    suite: str
    embedder: Embedder
    ks: tuple[int, ...]
    split: str
    replay: bool
    limit: int | None
    sample: int | None
    cache_dir: Path | None
    baselines: Baselines
    progress: Progress | None


@dataclass(frozen=True)
class _Totals:
    """The scored rows of a run's parts and its counts; ``all_tokens`` and ``catalog_sizes``
    hold one value per scored task (its catalog's)."""

    tally: Tally[Any]
    n_catalogs: int
    n_tools: int
    n_tasks: int
    skipped: int
    all_tokens: tuple[int, ...]
    catalog_sizes: tuple[int, ...]

    @property
    def mean_all_tokens(self) -> float:
        return float(np.mean(self.all_tokens)) if self.all_tokens else 0.0


def _score_parts(run: _Run, parts: Sequence[Part]) -> _Totals:
    """Every method on the chosen tasks of each of ``parts`` (replayed with ``run.replay``)."""
    from hyperplan_bench.eval.preselect_replay import replay_part

    tally: Tally[Any] = Tally(run.ks)
    n_tools = n_tasks = skipped = 0
    all_tokens: list[int] = []
    catalog_sizes: list[int] = []
    for part_no, part in enumerate(parts):
        chosen = _chosen(part, run.split, run.sample, run.limit)
        names = set(part.catalog.names())
        scored = tuple(t for t in chosen if t.text.strip()
                       and scorable_slots(part, t, names) is not None)
        skipped += len(chosen) - len(scored)
        n_tools += len(part.catalog.tools)
        if not scored:
            continue
        stage = f"part {part_no + 1}/{len(parts)}" if len(parts) > 1 else run.suite
        bench = PartBench(part, run.embedder, run.ks, run.cache_dir, run.baselines, run.progress,
                          stage)
        try:
            done = replay_part(bench, scored, tally) if run.replay else bench.run(scored, tally)
        finally:
            bench.close()
        n_tasks += done
        skipped += len(scored) - done
        all_tokens.extend([bench.all_tokens] * done)
        catalog_sizes.extend([len(part.catalog.tools)] * done)
    return _Totals(tally, len(parts), n_tools, n_tasks, skipped, tuple(all_tokens),
                   tuple(catalog_sizes))


def _header(run: _Run, totals: _Totals, optional: OptionalMethods, strip: bool,
            started: float) -> dict[str, Any]:
    """The JSON's keys before the per-method figures (``methods`` left empty)."""
    from hyperplan.retrieve.serialize import tokenizer_name

    sizes = totals.catalog_sizes
    return {
        "suite": run.suite,
        "mode": "replay" if run.replay else "select",
        "split": run.split,
        "budgets": list(run.ks),
        "n_tasks": totals.n_tasks,
        "n_tools": totals.n_tools,
        "n_catalogs": totals.n_catalogs,
        "tools_per_task": round(float(np.mean(sizes)), 1) if sizes else 0.0,
        "all_tokens": round(totals.mean_all_tokens, 1),
        "strip_outputs": strip,
        "methods": {},
        "seconds": round(time.perf_counter() - started, 2),
        "skipped_tasks": totals.skipped,
        **({"limit": run.limit} if run.limit is not None else {}),
        **({"sample": run.sample} if run.sample is not None else {}),
        "skipped_methods": dict(optional.skipped),
        "fastmcp": optional.ran.get("fastmcp_bm25"),
        "graph_tool_call": optional.ran.get("graph_tool_call"),
        "embedder": run.embedder.name,
        "tokenizer": tokenizer_name(),
        "timing": TIMING_NOTE,
    }


def _replay_methods(run: _Run, tally: Tally[Any], methods: Sequence[str]) -> dict[str, Any]:
    """The replay mode's figures: per method and K, the next gold tool's scores."""
    from hyperplan_bench.eval.preselect_replay import replay_summary

    ks = run.ks
    return {
        "methods": {m: {str(k): replay_summary(tally.rows.get(m, {}).get(k, [])) for k in ks}
                    for m in methods},
        "n_steps": len(tally.rows.get("all_tools", {}).get(ks[0], [])),
        "results": "tau2 environment responses" if run.suite == "tau2" else
        "synthetic, keyed by each tool's output schema; gold references carried over",
    }


def _select_methods(run: _Run, totals: _Totals, methods: Sequence[str]) -> dict[str, Any]:
    """The select mode's figures: per method and K, the selection's scores; the unsafe DOE
    chains; the scores of the :data:`SUBSETS`."""
    ks, tally, mean_all = run.ks, totals.tally, totals.mean_all_tokens
    return {
        "methods": {m: {str(k): summary(tally.rows.get(m, {}).get(k, []), mean_all)
                        for k in ks} for m in methods},
        "unsafe_chains": {str(k): tally.unsafe_chains.get(k, []) for k in ks},
        "subsets": {
            name: {"n_tasks": len(by_method.get("all_tools", {}).get(ks[0], [])),
                   "methods": {m: {str(k): _short(by_method.get(m, {}).get(k, []))
                                   for k in ks} for m in methods}}
            for name, by_method in ((n, tally.subsets.get(n, {})) for n in SUBSETS)},
    }


@dataclass(frozen=True)
class OptionalMethods:
    """The optional baselines: per method, its version where it runs, or why it does not."""

    ran: dict[str, str]
    skipped: dict[str, str]


def _optional(use_fastmcp: bool, use_gtc: bool) -> OptionalMethods:
    from hyperplan_bench.eval.baseline_gtc import gtc_status

    ran: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for method, use, flag, status in (("fastmcp_bm25", use_fastmcp, "--no-fastmcp",
                                       fastmcp_status),
                                      ("graph_tool_call", use_gtc, "--no-gtc", gtc_status)):
        ok, info = status() if use else (False, f"disabled ({flag})")
        (ran if ok else skipped)[method] = info
    return OptionalMethods(ran, skipped)


def _chosen(part: Part, split: str, sample: int | None,
            limit: int | None) -> tuple[GoldTask, ...]:
    """The part's tasks of ``split`` (the data's own split labels where it has them), then
    ``sample`` evenly spaced, then the first ``limit``."""
    if part.splits and split != "all":
        if split not in ("dev", "heldout"):
            raise PreselectError(f"unknown split {split!r}; expected all, dev or heldout")
        chosen = tuple(t for t in part.tasks if part.splits.get(t.id) == split)
    else:
        chosen = split_tasks(part.tasks, split)
    if sample is not None and sample < len(chosen):
        chosen = tuple(chosen[(i * len(chosen)) // sample] for i in range(sample))
    return chosen[:limit] if limit is not None else chosen


SUBSETS = ("multi_tool", "with_flows")


def _short(rows: Sequence[Row]) -> dict[str, float]:
    full = summary(rows, 0.0)
    return {"recall": full["recall"], "complete": full["complete"]}


