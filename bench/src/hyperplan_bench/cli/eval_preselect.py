"""``hyperplan eval preselect``: hyperplan's tool pre-selection against all tools, semantic
top-K, BM25 top-K, FastMCP's BM25 search and graph-tool-call, side by side
(:mod:`hyperplan_bench.eval.preselect`), on the benchmark suites, real MCP servers or a user's own
catalog (``--suite custom --catalog KIND:LOCATION --tasks-file F``).

Registered on the ``eval`` command group by :mod:`hyperplan.cli`.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import typer

from hyperplan.cli.common import console, embedder_from_option, fail, out, stage_progress
from hyperplan.cli.options import AsJson, Split, embedder_option
from hyperplan.embed.base import Embedder
from hyperplan_bench.eval.preselect import (
    DEFAULT_BUDGETS,
    SUITES,
    PreselectError,
    SuiteSource,
    evaluate_preselect,
)

PLAIN_EVERY = 10.0  # seconds between plain progress lines when stderr is not a terminal


def preselect_cmd(
    suite: str = typer.Option(..., help=" | ".join(SUITES)),
    data: str = typer.Option(
        None, help="appworld: dir with api_docs and tasks_train.jsonl; stabletoolbench: query "
        "file; nestools: *.jsonl; nestful: data dir or *-data.json; sealtools: dir or "
        "dev.jsonl; tau2: domains, comma-separated (default airline,retail,telecom); "
        "mcp-six: dir with requests.json (../shared/data/mcp-six); mcp-corpus: the corpus "
        "dir (benchmarks/mcp-corpus)"),
    catalog: list[str] = typer.Option(
        None, "--catalog", help="custom: a catalog source KIND:LOCATION as graph build takes "
        "it (repeat for several; each becomes a namespace of its own)"),
    tasks_file: Path = typer.Option(
        None, help='custom: JSON or JSONL of {"id", "request", "gold"}; gold = tool names or '
        "slots (lists of alternatives, one of each needed)"),
    tools_dir: Path = typer.Option(
        None, "--tools-dir", help="mcp-six / mcp-corpus: the folder of the servers' tools/list "
        "files (<slug>.json; default: tools beside the requests, else "
        "benchmarks/mcp-corpus/tools)"),
    strip_outputs: bool = typer.Option(
        False, "--strip-outputs", help="every catalog without its output schemas, effects "
        "and preconditions (a typed suite as most catalogs are)"),
    domain: str = typer.Option(None, help="tau2 domains (same as --data for tau2)"),
    budget: str = typer.Option(",".join(map(str, DEFAULT_BUDGETS)),
                               help="tool budgets K (at most this many tools), comma-separated"),
    split: Split = "all",
    embedder: str = embedder_option("auto", "none is refused here (pre-selection needs vectors)"),
    replay: bool = typer.Option(False, "--replay", help="replay each task's gold calls through "
                                "a session and score the next gold tool at each step"),
    limit: int = typer.Option(None, help="at most this many tasks per catalog (after --split)"),
    sample: int = typer.Option(None, help="this many tasks per catalog, evenly spaced over the "
                               "split (a fair subset where the file is ordered by difficulty)"),
    cache_dir: Path = typer.Option(
        None, help="where built graphs are cached (default: hyperplan.select's cache)"),
    no_cache: bool = typer.Option(False, "--no-cache", help="build every graph anew"),
    fastmcp: bool = typer.Option(True, "--fastmcp/--no-fastmcp",
                                 help="run FastMCP's BM25SearchTransform when installed"),
    gtc: bool = typer.Option(True, "--gtc/--no-gtc",
                             help="run graph-tool-call's ToolGraph.retrieve when installed "
                             "(slow on thousands of tools)"),
    as_json: AsJson = False,
) -> None:
    """Gold recall, completeness, unsafe selections, definition tokens and latency (warm and
    cold, query embedding included) of tool pre-selection: all tools, semantic and BM25 top-K,
    FastMCP's BM25 search, graph-tool-call, the context graph, and the context graph with DOE
    chains; --replay scores the next gold tool after each gold call."""
    run_preselect(PreselectOptions(
        suite, data, tuple(catalog or ()), tasks_file, tools_dir, strip_outputs, domain, budget,
        split, embedder, replay, limit, sample, cache_dir, no_cache, fastmcp, gtc, as_json))


@dataclass(frozen=True)
class PreselectOptions:
    """The options of ``eval preselect``, as given (help text: :func:`preselect_cmd`)."""

    suite: str
    data: str | None
    catalog: tuple[str, ...]
    tasks_file: Path | None
    tools_dir: Path | None
    strip_outputs: bool
    domain: str | None
    budget: str
    split: str
    embedder: str
    replay: bool
    limit: int | None
    sample: int | None
    cache_dir: Path | None
    no_cache: bool
    fastmcp: bool
    gtc: bool
    as_json: bool


def run_preselect(opts: PreselectOptions) -> None:
    """Check ``opts``, run the benchmark and print its JSON (one line with ``--json``)."""
    budgets = _budgets(opts.budget)
    for name, value in (("--limit", opts.limit), ("--sample", opts.sample)):
        if value is not None and value < 1:
            fail(f"{name} must be at least 1, got {value}")
    chosen = embedder_from_option(opts.embedder)
    if not isinstance(chosen, Embedder):
        raise PreselectError(f"pre-selection needs a text embedder with a name; --embedder "
                             f"{opts.embedder} is not one")
    source = (opts.domain or opts.data) if opts.suite == "tau2" else opts.data
    where = None if opts.no_cache else _cache_dir(opts.cache_dir)
    if opts.suite != "custom" and (opts.catalog or opts.tasks_file is not None):
        fail("--catalog and --tasks-file are for --suite custom")
    origin = SuiteSource(source, opts.catalog, opts.tasks_file, opts.tools_dir,
                         opts.strip_outputs)
    with _progress() as progress:
        result = evaluate_preselect(
            opts.suite, source, embedder=chosen, budgets=budgets, split=opts.split,
            replay=opts.replay, limit=opts.limit, sample=opts.sample, cache_dir=where,
            use_fastmcp=opts.fastmcp, use_gtc=opts.gtc, source=origin, progress=progress)
    if not result["n_tasks"]:
        fail(f"{source or opts.tasks_file}: no task with a request and gold tools to score"
             + (f" in split {opts.split!r}" if opts.split != "all" else ""))
    if opts.as_json:
        print(json.dumps(result))
        return
    out.print_json(json.dumps(result))


def _budgets(budget: str) -> list[int]:
    """The tool budgets of ``--budget`` (comma-separated integers, each at least 1)."""
    try:
        budgets = [int(b) for b in budget.split(",") if b.strip()]
    except ValueError:
        fail(f"--budget takes comma-separated integers, got {budget!r}")
    if not budgets or min(budgets) < 1:
        fail(f"--budget values must be at least 1, got {budget!r}")
    return budgets


def _cache_dir(given: Path | None) -> Path:
    """``--cache-dir``, else hyperplan.select's cache."""
    from hyperplan.select.cache import default_cache_dir

    return given if given is not None else default_cache_dir()


@contextlib.contextmanager
def _progress() -> Iterator[Callable[[str, int, int], None]]:
    """A progress bar on a terminal's stderr; else a plain stderr line every
    :data:`PLAIN_EVERY` seconds (long runs redirected to files still show where they are)."""
    if console.is_terminal:
        with stage_progress(True) as bar:
            yield bar
        return
    last = [0.0]

    def plain(stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= PLAIN_EVERY or (done == total and total > 1):
            last[0] = now
            print(f"{stage}: {done}/{total}", file=sys.stderr, flush=True)

    yield plain
