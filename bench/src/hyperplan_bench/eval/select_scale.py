"""Selection latency at scale, what ``hyperplan bench select`` measures: a
:class:`~hyperplan.select.Selector` over a synthetic catalog of each size (HyperAgent's
"Tool-Level Planning": the state-conditioned Tool Context Graph of Definition 2 and DOE's
chains, used as a pre-selection layer), timed on generated requests with the query embedding
done beforehand.

One size (:func:`measure_select`, run in a fresh process by the benchmark's isolation helper):

* the catalog is :func:`~hyperplan_bench.synthetic.synthetic_catalog` (the one ``bench links``
  builds)
  and its graph is :func:`~hyperplan.graph.build.build_graph` with link inference, so the
  producer matrix is the one a real build of such a catalog gives;
* the requests are "do X, then Y" over the two tools of a random inferred link (producer tool
  -> consumer tool, weight at least the context graph's ``min_link_weight``, no login
  producer, both tools of one app), written from the two tools' descriptions
  (:func:`linked_requests`);
* every text a selection embeds is put in a :class:`~hyperplan.embed.memo.MemoEmbedder`
  (``keep=False``) before anything is timed, so
  the timed :meth:`~hyperplan.select.Selector.select` reads the query vectors from memory
  (interpretation, grounding, extraction and DOE are timed); ``embed_misses`` counts texts the
  memo did not hold during the timed calls (0 when the embedding is really excluded);
* each request is selected with ``chain=False`` (the context graph alone) and ``chain=True``
  (with DOE's chains) at budget K, BLAS on one thread, wall and thread-CPU milliseconds.

With ``cold`` (:func:`time_cold`), the same requests are first timed as requests never seen
before: every text a selection embeds is embedded by the model itself, no cache in front of it
(``cold_context_*``, ``cold_doe_*``), beside BM25 top-K (``bm25_*``: nothing to embed) and
semantic top-K with the request embedded by the model (``semantic_cold_*``), each with the
fraction of requests whose two tools it selects. The embedder ``minilm`` (the packaged
all-MiniLM-L6-v2, what ``--embedder auto`` picks) makes these the figures a user gets; the
catalog's own texts go through the disk cache, so a second run builds faster.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hyperplan.embed.base import Embedder
from hyperplan.embed.memo import MemoEmbedder
from hyperplan.graph.model import Hypergraph
from hyperplan_bench.eval.isolated import rss_mb
from hyperplan_bench.eval.preselect_bench import SwitchEmbedder, raw_embedder

__all__ = ["LinkedRequest", "linked_requests", "measure_select",
           "select_embedder"]

Progress = Callable[[str, int, int], None]
WARMUP = 2  # untimed selections first (lazy tables of the selector, caches)
MODES = (("context", False), ("doe", True))  # key prefix, chain


@dataclass(frozen=True)
class LinkedRequest:
    """A generated request over a producer tool and a consumer tool it links to."""

    text: str
    tools: tuple[str, str]


def _clause(description: str) -> str:
    first = description.strip().split(". ")[0].rstrip(".")
    return first[:1].lower() + first[1:]


def linked_requests(graph: Hypergraph, count: int, seed: int = 0,
                    min_weight: float = 0.5) -> list[LinkedRequest]:
    """``count`` requests "X, then Y." over random links of ``graph`` (weight at least
    ``min_weight``, between two tools of one app, the producer not a login), X and Y the
    first sentences of the producer's and the consumer's descriptions; the same ``(graph,
    count, seed)`` always gives the same requests."""
    src_tool = np.asarray([graph.nodes[s].tool for s in graph.link_source], dtype=np.int64)
    dst_tool = np.asarray([graph.nodes[t].tool for t in graph.link_target], dtype=np.int64)
    login = np.asarray([t.name.endswith(".login") for t in graph.tools], dtype=bool)
    app = np.unique([t.name.split(".")[0] for t in graph.tools], return_inverse=True)[1]
    ok = ((np.asarray(graph.link_weight) >= min_weight) & (src_tool != dst_tool)
          & ~login[src_tool] & (app[src_tool] == app[dst_tool])) if graph.n_links \
        else np.zeros(0, dtype=bool)
    candidates = np.flatnonzero(ok)
    if count < 1 or candidates.size == 0:
        return []
    rng = np.random.default_rng([seed, 0x5E1])
    requests = []
    for link in rng.choice(candidates, size=count, replace=candidates.size < count):
        producer, consumer = graph.tools[src_tool[link]], graph.tools[dst_tool[link]]
        text = f"{_clause(producer.description)}, then {_clause(consumer.description)}."
        requests.append(LinkedRequest(text[:1].upper() + text[1:],
                                      (producer.name, consumer.name)))
    return requests


def select_embedder(spec: str) -> Embedder:
    """``hashing`` (the lexical hashing embedder ``eval preselect`` and ``bench links`` use),
    ``words`` (:class:`~hyperplan_bench.synthetic.RandomWordEmbedder`, faster, 64 dimensions) or
    ``minilm`` (the packaged MiniLM model behind its disk cache)."""
    if spec == "minilm":
        from hyperplan.embed import get_embedder

        return get_embedder("minilm")
    if spec == "hashing":
        from hyperplan.embed.hashing import HashingEmbedder

        return HashingEmbedder()
    if spec == "words":
        from hyperplan_bench.synthetic import RandomWordEmbedder

        return RandomWordEmbedder()
    raise ValueError(f"unknown embedder {spec!r}: use hashing, words or minilm")


def array_mb(obj: object) -> float:
    """MB held by the numpy arrays among ``obj``'s attributes (also inside lists and tuples
    of arrays): the size of an index regardless of how the allocator returns freed memory."""
    total = 0
    for value in vars(obj).values():
        items = value if isinstance(value, list | tuple) else (value,)
        total += sum(v.nbytes for v in items if isinstance(v, np.ndarray))
    return round(total / 1024**2, 1)


def _percentiles(values: list[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    p50, p99 = np.percentile(np.asarray(values), [50, 99])
    return round(float(p50), 3), round(float(p99), 3)


def query_texts(selector: Any, request: str) -> list[str]:
    """Every text :meth:`Selector.select` embeds for ``request`` (the interpretation's
    phrases and the request as written: :func:`~hyperplan.retrieve.embed_interpretation`)."""
    from hyperplan.retrieve.interpret import interpret_request

    interp = interpret_request(request, selector.index.namespaces)
    return [interp.operation_text, *interp.operations, *interp.schemas, request]


def time_selections(selector: Any, requests: Sequence[LinkedRequest], budget: int,
                    chain: bool, progress: Progress | None = None,
                    cpu_clock: Callable[[], float] = time.thread_time) -> dict[str, Any]:
    """Wall and CPU milliseconds (``cpu_clock``: the thread's by default) of
    ``selector.select`` per request (after :data:`WARMUP` untimed ones), BLAS on one thread,
    and the fraction of requests whose two tools are both selected."""
    from hyperplan.retrieve.context_graph import single_thread_blas

    wall_ms: list[float] = []
    cpu_ms: list[float] = []
    both = 0
    with single_thread_blas():  # as eval preselect, for comparable timings
        for k, request in enumerate([*requests[:WARMUP], *requests]):
            wall, cpu = time.perf_counter(), cpu_clock()
            picked = selector.select(request.text, budget=budget, chain=chain)
            elapsed, spent = time.perf_counter() - wall, cpu_clock() - cpu
            if k < min(WARMUP, len(requests)):
                continue
            wall_ms.append(elapsed * 1000)
            cpu_ms.append(spent * 1000)
            both += set(request.tools) <= set(picked.names)
            if progress is not None:
                progress("selecting" + (" with DOE" if chain else ""), len(wall_ms),
                         len(requests))
    (w50, w99), (c50, c99) = _percentiles(wall_ms), _percentiles(cpu_ms)
    return {"ms_p50": w50, "ms_p99": w99, "cpu_ms_p50": c50, "cpu_ms_p99": c99,
            "both_selected": round(both / len(wall_ms), 4) if wall_ms else None}


def build_selector(n_tools: int, seed: int, embedder: str,
                   progress: Progress | None = None) -> tuple[Any, MemoEmbedder, dict[str, Any]]:
    """The selector of a synthetic catalog of ``n_tools`` (graph by link inference), its
    query memo, and the build's description: seconds; RSS added by the graph and by the
    index (after collecting garbage; the allocator may return the build's freed memory late,
    so the index's delta can even be negative) and the index's arrays in MB."""
    from hyperplan.graph.build import build_graph
    from hyperplan.select.selector import Selector
    from hyperplan_bench.synthetic import synthetic_catalog

    report = progress or (lambda stage, done, total: None)
    inner = select_embedder(embedder)
    rss0 = rss_mb()
    report("catalog", 0, 1)
    started = time.perf_counter()
    catalog = synthetic_catalog(n_tools, seed)
    catalog_seconds = time.perf_counter() - started
    report("graph (link inference)", 0, 1)
    started = time.perf_counter()
    graph = build_graph(catalog, embedder=inner, progress=report)
    build_seconds = time.perf_counter() - started
    gc.collect()  # the build's garbage goes first, so that the index's RSS is its own
    rss1 = rss_mb()
    memo = MemoEmbedder(inner, keep=False)
    selector = Selector(catalog, graph, SwitchEmbedder(memo, raw_embedder(inner)))
    report("index", 0, 1)
    started = time.perf_counter()
    _ = selector.index, selector.tool_tokens, selector.free_inputs, graph.producer_matrix
    index_seconds = time.perf_counter() - started
    gc.collect()
    gc.freeze()  # as a long-running selector would: no full collection inside a timed call
    rss2 = rss_mb()
    built = {"n_tools": graph.n_tools, "n_nodes": graph.n_nodes, "n_links": graph.n_links,
             "embedder": inner.name, "catalog_seconds": round(catalog_seconds, 3),
             "build_seconds": round(build_seconds, 3),
             "index_seconds": round(index_seconds, 3),
             "graph_rss_mb": round(rss1 - rss0, 1), "index_rss_mb": round(rss2 - rss1, 1),
             "index_array_mb": array_mb(selector.index), "rss_mb": rss2}
    return selector, memo, built


def time_cold(selector: Any, requests: Sequence[LinkedRequest], budget: int,
              progress: Progress | None = None) -> dict[str, Any]:
    """The requests as never seen before (module doc): the selector with its query texts
    embedded by the model itself (``cold_context_*``, ``cold_doe_*``; their ``cpu_ms`` is the
    process's CPU time, the model's threads included), semantic top-K with the request
    embedded by it (``semantic_cold_*``) and BM25 top-K (``bm25_*``)."""
    from hyperplan.embed.base import l2_normalize
    from hyperplan.retrieve.baselines import bm25_index, bm25_top_k, semantic_top_k
    from hyperplan.retrieve.context_graph import single_thread_blas

    switch: SwitchEmbedder = selector.embedder
    switch.raw.embed(["load the model"])  # the model's loading is not a request's cost
    out: dict[str, Any] = {}
    switch.cold = True
    try:
        for prefix, chain in MODES:
            timings = time_selections(selector, requests, budget, chain, progress,
                                      time.process_time)
            out.update({f"cold_{prefix}_{key}": value for key, value in timings.items()})
    finally:
        switch.cold = False
    bm25 = bm25_index(selector.graph)
    index = selector.graph.tool_index

    def semantic(text: str) -> list[int]:
        return semantic_top_k(selector.index, l2_normalize(switch.raw.embed([text]))[0], budget)

    def keywords(text: str) -> list[int]:
        return bm25_top_k(bm25, text, budget)

    for name, rank in (("semantic_cold", semantic), ("bm25", keywords)):
        wall_ms: list[float] = []
        both = 0
        with single_thread_blas():
            for request in requests:
                started = time.perf_counter()
                ids = rank(request.text)
                wall_ms.append((time.perf_counter() - started) * 1000)
                both += {index[t] for t in request.tools} <= set(ids)
        p50, p99 = _percentiles(wall_ms)
        out.update({f"{name}_ms_p50": p50, f"{name}_ms_p99": p99,
                    f"{name}_both_selected": round(both / len(requests), 4) if requests
                    else None})
    return out


def measure_select(n_tools: int, seed: int = 0, embedder: str = "hashing",
                   progress: Progress | None = None, *, queries: int = 50,
                   budget: int = 20, cold: bool = False) -> dict[str, Any]:
    """One size of ``bench select`` in this process (everything but ``peak_rss_mb``):
    build the selector, generate ``queries`` requests, with ``cold`` time them as never seen
    before (:func:`time_cold`), then pre-embed them and time them with and without DOE's
    chains (module doc)."""
    report = progress or (lambda stage, done, total: None)
    begun = time.perf_counter()
    selector, memo, run = build_selector(n_tools, seed, embedder, report)
    requests = linked_requests(selector.graph, queries, seed,
                               selector.config.context.min_link_weight)
    if cold:
        run.update(time_cold(selector, requests, budget, report))
    report("embedding queries", 0, 1)
    memo.fill([t for r in requests for t in query_texts(selector, r.text)])
    memo.misses = 0  # the index's own texts went past the memo; count only the timed calls
    run["queries"] = len(requests)
    run["budget"] = budget
    for prefix, chain in MODES:
        timings = time_selections(selector, requests, budget, chain, report)
        run.update({f"{prefix}_{key}": value for key, value in timings.items()})
    run["embed_misses"] = memo.misses
    run["seconds"] = round(time.perf_counter() - begun, 3)
    return run
