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

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hyperplan.embed.base import Embedder
from hyperplan.embed.memo import MemoEmbedder
from hyperplan.errors import HyperplanError
from hyperplan.eval.links import split_tasks
from hyperplan.eval.preselect_bench import (
    Part,
    PartBench,
    PreselectSuite,
    ReplayCall,
    Row,
    Tally,
    gold_tools,
    summary,
)
from hyperplan.eval.registry import PRESELECT_REPLAY_SUITES, PRESELECT_SUITES
from hyperplan.importers.gold import GoldTask

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


