"""Tool-retrieval benchmark: Tool Context Graph (HyperAgent, Task-Level Planning) vs. baselines.

For every task the request text is sent to four retrievers, each capped at ``budget`` tools:
``context_graph`` (:func:`hyperplan.retrieve.extract_context_graph` on the deterministic
:func:`~hyperplan.retrieve.interpret_request` interpretation, given the graph's tool namespaces
as the app names to look for, or on an LLM's, :mod:`hyperplan_bench.eval.interpretations`),
``semantic`` (cosine of the raw
request vs tool texts), ``bm25`` and ``one_hop`` (semantic seeds plus their graph neighbours).
Per method: ``recall`` = mean fraction of a task's gold tools retrieved, ``complete`` =
fraction of tasks with every gold tool retrieved, ``mean_tools`` = mean retrieved set size,
``prompt_tokens`` = mean cl100k token count of the serialised retrieved set (the subhypergraph
it induces, same serialiser for every method), ``ms_p50`` = median retrieval time excluding
query embedding.

Suites: ``appworld`` (tools: the api_docs directory; tasks: tasks_train.jsonl; gold:
gold_apis without the supervisor profile/passwords/complete_task calls every task makes; text:
the instruction), ``stabletoolbench`` (tools and tasks: the same query file; pool: the union of
its api_lists; gold: the relevant APIs), ``nestools`` (pool: the union of the tasks' APIs;
gold: the APIs of the gold ``call`` list, in catalog names), ``sealtools`` (pool: every tool of
``tool.jsonl``, 4,076 in the release; tasks: the query file, e.g. ``dev.jsonl``; both may be
given as the release directory; gold: the distinct APIs of each query's ``calling``,
:mod:`hyperplan_bench.importers.sealtools`), and ``custom``: a user's own tools
(any catalog source ``KIND:LOCATION``, :func:`hyperplan.sources.load_source`) and labelled
requests (JSONL, :func:`_custom_gold`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from hyperplan.catalog import Catalog
from hyperplan.embed.base import Embedder, FloatMatrix, l2_normalize
from hyperplan.embed.bm25 import BM25Index
from hyperplan.errors import HyperplanError
from hyperplan.graph.build import build_graph
from hyperplan.graph.model import Hypergraph
from hyperplan.retrieve.baselines import bm25_index, bm25_top_k, one_hop, semantic_top_k
from hyperplan.retrieve.context_graph import (
    ContextGraphConfig,
    GraphIndex,
    embed_interpretation,
    extract_with_vectors,
    single_thread_blas,
)
from hyperplan.retrieve.interpret import TaskInterpretation
from hyperplan.retrieve.serialize import count_tokens, serialize_tools, tokenizer_name
from hyperplan_bench.eval.interpretations import (
    InterpretationStore,
    Interpreted,
    Interpreter,
    rules_interpreter,
)
from hyperplan_bench.eval.links import split_tasks
from hyperplan_bench.eval.registry import suites_of_kind
from hyperplan_bench.importers.gold import GoldTask, unique

__all__ = [
    "APPWORLD_EXCLUDED",
    "METHODS",
    "RetrievalEvalError",
    "RetrievalSuite",
    "evaluate_retrieval",
    "load_retrieval_suite",
]

SUITES = tuple(suites_of_kind("retrieval"))
METHODS = ("context_graph", "semantic", "bm25", "one_hop")
# Calls every AppWorld gold solution makes regardless of the request.
APPWORLD_EXCLUDED = frozenset(
    {"supervisor.show_profile", "supervisor.show_account_passwords", "supervisor.complete_task"}
)
Progress = Callable[[str, int, int], None]


class RetrievalEvalError(HyperplanError):
    """The retrieval benchmark cannot run on the given files."""


@dataclass(frozen=True)
class RetrievalSuite:
    """A tool pool and its tasks; each task's ``tools`` are its gold tools."""

    catalog: Catalog
    tasks: tuple[GoldTask, ...]


def load_retrieval_suite(suite: str, tools: str | Path, tasks: str | Path) -> RetrievalSuite:
    """Catalog and gold tasks of ``suite`` (see the module doc)."""
    if suite not in SUITES:  # before the paths are checked, which mean nothing then
        raise RetrievalEvalError(f"unknown retrieval suite {suite!r}; expected "
                                 f"{', '.join(SUITES)}")
    if suite == "custom":
        if not Path(tasks).exists():
            raise RetrievalEvalError(f"{tasks}: no such file or directory")
        from hyperplan.sources import load_source

        return RetrievalSuite(load_source(str(tools)), tuple(_custom_gold(tasks)))
    for path in (tools, tasks):
        if not Path(path).exists():
            raise RetrievalEvalError(f"{path}: no such file or directory")
    if suite == "appworld":
        from hyperplan_bench.importers.appworld import load_appworld, load_appworld_tasks

        gold = [
            GoldTask(t.id, t.instruction,
                     unique(a for a in t.gold_apis if a not in APPWORLD_EXCLUDED), ())
            for t in load_appworld_tasks(tasks)
        ]
        return RetrievalSuite(load_appworld(tools), tuple(gold))
    if suite == "stabletoolbench":
        from hyperplan_bench.importers.stabletoolbench import (
            load_stabletoolbench,
            load_stabletoolbench_queries,
        )

        queries = load_stabletoolbench_queries(tasks)
        gold = [GoldTask(q.query_id, q.query, q.relevant, ()) for q in queries]
        return RetrievalSuite(load_stabletoolbench(tools), tuple(gold))
    if suite == "nestools":
        from hyperplan_bench.importers.nestools import load_nestools

        return RetrievalSuite(load_nestools(tools), tuple(_nestools_gold(tasks)))
    if suite == "sealtools":
        from hyperplan_bench.importers.sealtools import load_sealtools, load_sealtools_tasks

        # a query's tools are exactly its called APIs: the gold of the retrieval suite
        pool = load_sealtools(tools)
        return RetrievalSuite(pool, tuple(load_sealtools_tasks(tasks, tools=pool)))
    raise RetrievalEvalError(f"unknown retrieval suite {suite!r}; expected {', '.join(SUITES)}")


def _custom_gold(path: str | Path) -> list[GoldTask]:
    """Labelled requests, one JSON object per line: ``{"id": "...", "request": "...",
    "tools": ["tool names the request needs"]}`` (``id`` defaults to the line number)."""
    from hyperplan.importers.common import read_jsonl

    out = []
    for number, row in enumerate(read_jsonl(path), 1):
        where = f"{path}: task {number}"
        if not isinstance(row, dict):
            raise RetrievalEvalError(f"{where}: expected a JSON object")
        text, tools = row.get("request"), row.get("tools")
        if not isinstance(text, str) or not text.strip():
            raise RetrievalEvalError(f"{where}: 'request' must be a non-empty string")
        if (not isinstance(tools, list) or not tools
                or not all(isinstance(t, str) for t in tools)):
            raise RetrievalEvalError(f"{where}: 'tools' must be a non-empty list of tool names")
        out.append(GoldTask(str(row.get("id", number)), text, unique(tools), ()))
    return out


def _nestools_gold(path: str | Path) -> list[GoldTask]:
    """NesTools tasks whose gold is the set of APIs in the ``call`` list, in catalog names
    (the importer renames reused API names ``name~k``; its task ``tools`` list the task's APIs
    in first-seen order, which maps each published name to its catalog name)."""
    from hyperplan.importers.common import read_jsonl
    from hyperplan_bench.importers.nestools import load_nestools_tasks

    rows = read_jsonl(path)
    out = []
    for row, task in zip(rows, load_nestools_tasks(path), strict=True):
        names = unique(str(api["api_name"]) for api in row["api"])
        if len(names) != len(task.tools):
            raise RetrievalEvalError(f"{path}: task {task.id}: API names do not match the catalog")
        catalog_name = dict(zip(names, task.tools, strict=True))
        calls = unique(catalog_name[str(c["api_name"])] for c in row.get("call") or [])
        out.append(GoldTask(task.id, task.text, calls, ()))
    return out


def evaluate_retrieval(
    suite: str,
    tools: str | Path,
    tasks: str | Path,
    *,
    budget: int = 20,
    embedder: Embedder,
    split: str = "all",
    config: ContextGraphConfig | None = None,
    progress: Progress | None = None,
    interpreter: Interpreter | None = None,
    interpreter_name: str = "rules",
    store: InterpretationStore | None = None,
    on_task: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run the benchmark; returns the JSON contract of ``hyperplan eval retrieval``.

    The context graph reads each task through ``interpreter`` (default: the deterministic
    rules; :mod:`hyperplan_bench.eval.interpretations` for an LLM), reusing and adding to ``store``
    when given; the JSON's ``interpretation`` says by what (``interpreter_name``), how many
    tasks the model's answer was used for and how many fell back to the rules. ``on_task``
    receives each task's record (:func:`_task_detail`) as soon as it is scored."""
    if budget < 1:
        raise RetrievalEvalError(f"budget must be at least 1, got {budget}")
    started = time.perf_counter()
    data = load_retrieval_suite(suite, tools, tasks)
    chosen = split_tasks(data.tasks, split)
    graph = build_graph(data.catalog, embedder=embedder, progress=progress)
    cfg = replace(config or ContextGraphConfig(), budget=budget)
    scored = [t for t in chosen if t.tools and t.text.strip()]
    unknown = sorted({n for t in scored for n in t.tools if n not in graph.tool_index})
    if unknown:
        raise RetrievalEvalError(f"{tasks}: gold tools not in the catalog {tools}: {unknown[:5]}")
    methods = _Methods(GraphIndex(graph, embedder), bm25_index(graph), embedder, cfg)
    rows, interpreted = _score_tasks(methods, scored, interpreter or rules_interpreter, store,
                                     progress, on_task)
    return {
        "suite": suite,
        "n_tasks": len(scored),
        "budget": budget,
        "methods": {m: _summary(rows[m]) for m in METHODS},
        "seconds": round(time.perf_counter() - started, 2),
        "split": split,
        "n_tools": graph.n_tools,
        "skipped_tasks": len(chosen) - len(scored),
        "embedder": embedder.name,
        "tokenizer": tokenizer_name(),
        "config": cfg.as_dict(),
        "interpretation": _interpretation_summary(interpreter_name, interpreted),
    }


Row = tuple[float, bool, int, int, float]
"""Per task and method: recall, complete, tools retrieved, prompt tokens, milliseconds."""


@dataclass(frozen=True)
class _Methods:
    """The retrieval methods over one graph: its index (context graph, semantic top-K, one
    hop), its BM25 index, the embedder of requests and the context graph's settings."""

    index: GraphIndex
    bm25: BM25Index
    embedder: Embedder
    cfg: ContextGraphConfig


def _score_tasks(
    methods: _Methods,
    scored: Sequence[GoldTask],
    read: Interpreter,
    store: InterpretationStore | None,
    progress: Progress | None,
    on_task: Callable[[dict[str, Any]], None] | None,
) -> tuple[dict[str, list[Row]], list[Interpreted]]:
    """Per method the rows of ``scored`` (each task read by ``read``, or from ``store``), and
    the tasks' interpretations; ``on_task`` gets each task's record as it is scored."""
    graph = methods.index.graph
    requests = l2_normalize(methods.embedder.embed([t.text for t in scored])) if scored \
        else None
    rows: dict[str, list[Row]] = {m: [] for m in METHODS}
    interpreted: list[Interpreted] = []
    for i, task in enumerate(scored):
        if progress:
            progress("retrieving", i, len(scored))
        assert requests is not None
        item = _interpretation(task, methods.index.namespaces, read, store)
        interpreted.append(item)
        with single_thread_blas():  # as in extract_with_vectors, for comparable timings
            results = _retrieve(methods, item.task, task.text, requests[i])
        gold = {graph.tool_index[n] for n in task.tools}
        for method, (ids, ms) in results.items():
            rows[method].append(_row(graph, gold, ids, ms))
        if on_task is not None:
            on_task(_task_detail(graph, task, item, results))
    return rows, interpreted


def _row(graph: Hypergraph, gold: set[int], ids: list[int], ms: float) -> Row:
    got = set(ids)
    tokens = count_tokens(serialize_tools(graph, ids))
    return len(gold & got) / len(gold), gold <= got, len(got), tokens, ms


def _task_detail(graph: Hypergraph, task: GoldTask, item: Interpreted,
                 results: dict[str, tuple[list[int], float]]) -> dict[str, Any]:
    """One task's record for ``on_task``: the request, its gold tools, the interpretation,
    and per method the retrieved tools in rank order and the gold tools it missed."""
    methods = {}
    for method, (ids, _) in results.items():
        retrieved = [graph.tools[i].name for i in ids]
        got = set(retrieved)
        methods[method] = {"retrieved": retrieved,
                           "missing": [n for n in task.tools if n not in got]}
    return {"id": task.id, "request": task.text, "gold": list(task.tools),
            "interpretation": {"source": item.source, "operations": list(item.task.operations),
                               "schemas": list(item.task.schemas),
                               "apps": list(item.task.apps)},
            "methods": methods}


def _interpretation(task: GoldTask, namespaces: Sequence[str], interpreter: Interpreter,
                    store: InterpretationStore | None) -> Interpreted:
    """The task's interpretation: from ``store`` when it holds this task and text, else from
    ``interpreter`` (then added to the store)."""
    if store is not None:
        kept = store.get(task.id, task.text, namespaces)
        if kept is not None:
            return kept
    item = interpreter(task.text, namespaces)
    if store is not None:
        store.put(task.id, task.text, item)
    return item


def _interpretation_summary(name: str, items: Sequence[Interpreted]) -> dict[str, Any]:
    """By what the tasks were interpreted; per source the task count; the median seconds of
    the interpretations made in this run (0 when all were read from a store)."""
    made = [x.seconds for x in items if x.seconds > 0]
    return {
        "by": name,
        "llm": sum(x.source == "llm" for x in items),
        "rules": sum(x.source == "rules" for x in items),
        "seconds_p50": round(float(np.median(made)), 4) if made else 0.0,
    }


def _retrieve(methods: _Methods, interp: TaskInterpretation, text: str, request: FloatMatrix,
              ) -> dict[str, tuple[list[int], float]]:
    """Ranked tool ids and milliseconds (query embedding excluded) of every method; the
    context graph reads ``interp``, the baselines the raw ``text`` (or its vector)."""
    index, bm25, cfg = methods.index, methods.bm25, methods.cfg
    query = embed_interpretation(interp, methods.embedder)
    out: dict[str, tuple[list[int], float]] = {}
    budget = cfg.budget or index.graph.n_tools
    calls: dict[str, Callable[[], list[int]]] = {
        "context_graph": lambda: extract_with_vectors(index, interp, query, cfg).tool_ids,
        "semantic": lambda: semantic_top_k(index, request, budget),
        "bm25": lambda: bm25_top_k(bm25, text, budget),
        "one_hop": lambda: one_hop(index, request, budget),
    }
    for method, call in calls.items():
        t0 = time.perf_counter()
        ids = call()
        out[method] = (ids, (time.perf_counter() - t0) * 1000)
    return out


def _summary(rows: Sequence[tuple[float, bool, int, int, float]]) -> dict[str, float]:
    if not rows:
        return {"recall": 0.0, "complete": 0.0, "mean_tools": 0.0, "prompt_tokens": 0.0,
                "ms_p50": 0.0}
    arr = np.asarray([(r, float(c), n, t, ms) for r, c, n, t, ms in rows], dtype=np.float64)
    return {
        "recall": round(float(arr[:, 0].mean()), 4),
        "complete": round(float(arr[:, 1].mean()), 4),
        "mean_tools": round(float(arr[:, 2].mean()), 2),
        "prompt_tokens": round(float(arr[:, 3].mean()), 1),
        "ms_p50": round(float(np.median(arr[:, 4])), 3),
    }
