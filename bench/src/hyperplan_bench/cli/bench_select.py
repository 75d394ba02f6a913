"""``hyperplan bench select``: selection latency of :class:`~hyperplan.select.Selector` on
synthetic catalogs of several sizes (:mod:`hyperplan_bench.eval.select_scale`), each size in a fresh
process with a memory cap and a timeout.

Registered on the ``bench`` command group by :mod:`hyperplan.cli`.
"""

from __future__ import annotations

import json
import time
from typing import Any

import typer
from rich.table import Table

from hyperplan.cli.common import out
from hyperplan.cli.options import AsJson, Sizes, embedder_option
from hyperplan_bench.cli.bench_cmds import MaxMemoryGb, SizeTimeout, parse_sizes, run_sizes

EMBEDDERS = ("hashing", "words", "minilm")


def _pair(run: dict[str, Any], key: str) -> str:
    p50, p99 = run.get(f"{key}_p50"), run.get(f"{key}_p99")
    return "-" if p50 is None or p99 is None else f"{p50:,.2f} / {p99:,.2f}"


def _table(result: dict[str, Any]) -> Table:
    table = Table(title=f"bench select (embedder {result['embedder']}, budget "
                        f"{result['budget']}, {result['queries']} queries, seed {result['seed']})")
    for column in ("tools", "nodes", "build s", "index MB arrays / RSS", "peak MB", "context ms",
                   "context CPU ms", "+DOE ms", "+DOE CPU ms"):
        table.add_column(column, justify="right")
    for run in result["runs"]:
        if "error" in run:
            peak = run.get("peak_rss_mb")
            table.add_row(f"{run['tools']:,}", "[red]failed[/red]", "", "",
                          f"{peak:,.0f}" if peak is not None else "?", "", "", "", "")
            continue
        table.add_row(
            f"{run['n_tools']:,}", f"{run['n_nodes']:,}", f"{run['build_seconds']:.1f}",
            f"{run['index_array_mb']:,.0f} / {run['index_rss_mb']:,.0f}",
            f"{run['peak_rss_mb']:,.0f}",
            _pair(run, "context_ms"), _pair(run, "context_cpu_ms"), _pair(run, "doe_ms"),
            _pair(run, "doe_cpu_ms"))
    return table


def _cold_table(result: dict[str, Any]) -> Table:
    table = Table(title=f"requests never seen before (query embedding by {result['embedder']} "
                        "included), wall ms p50 / p99 and both tools selected")
    for column in ("tools", "context", "+DOE", "semantic top-K", "BM25 top-K"):
        table.add_column(column, justify="right")
    for run in result["runs"]:
        if "error" not in run:
            table.add_row(f"{run['n_tools']:,}", *(
                f"{_pair(run, key + '_ms')} ({run[key + '_both_selected']:.2f})"
                for key in ("cold_context", "cold_doe", "semantic_cold", "bm25")))
    return table


def select_cmd(
    sizes: Sizes = "1000,4000,10000,100000",
    queries: int = typer.Option(50, help="generated requests per size"),
    budget: int = typer.Option(20, help="tools per selection (K)"),
    embedder: str = embedder_option("hashing", "here only hashing, words (random word "
                                    "vectors, 64 dimensions, faster) or minilm (the model a "
                                    "user gets; slow to build at large sizes)"),
    cold: bool = typer.Option(False, "--cold", help="also time each request as never seen "
                              "before (query embedding by the model included), beside BM25 "
                              "and semantic top-K"),
    seed: int = typer.Option(0, help="seed of the synthetic catalogs and requests"),
    timeout: SizeTimeout = 1200,
    max_memory_gb: MaxMemoryGb = 8,
    as_json: AsJson = False,
) -> None:
    """Selection latency at scale: Selector.select on synthetic catalogs of each size.

    Each size is built in a fresh process (graph by link inference); the query embedding is
    done before the timer. Reports build seconds, index RSS and selection wall and CPU ms
    p50/p99, for the context graph alone and with DOE's chains; --cold adds the same requests
    with their embedding included, beside BM25 and semantic top-K."""
    from hyperplan_bench.eval.select_scale import measure_select

    counts = parse_sizes(sizes)
    if embedder not in EMBEDDERS:
        raise typer.BadParameter(f"unknown embedder {embedder!r}: use "
                                 f"{', '.join(EMBEDDERS)}")
    if queries < 1 or budget < 1:
        raise typer.BadParameter("--queries and --budget must be at least 1")
    options: dict[str, Any] = {"queries": queries, "budget": budget,
                               **({"cold": True} if cold else {})}
    started = time.perf_counter()
    runs = run_sizes(counts, seed, embedder, timeout=timeout, max_memory_gb=max_memory_gb,
                     quiet=as_json, measure=measure_select, options=options)
    result = {"bench": "select", "embedder": embedder, "seed": seed, "queries": queries,
              "budget": budget, "runs": runs, "seconds": round(time.perf_counter() - started, 3)}
    if as_json:
        print(json.dumps(result))
    else:
        out.print(_table(result))
        if cold:
            out.print(_cold_table(result))
        for run in runs:
            if "error" in run:
                out.print(f"[red]{run['tools']:,} tools failed[/red] during {run['stage']}: "
                          f"{run['error']}", highlight=False)
        out.print("ms: wall / CPU milliseconds p50 / p99 of Selector.select, query embedding "
                  "excluded; context: chain=False, +DOE: chain=True.", highlight=False)
    if any("error" in run for run in runs):
        raise typer.Exit(1)
