"""``hyperplan bench ...``: scale benchmarks on synthetic catalogs and graphs.

``bench links`` builds the hypergraph of :func:`~hyperplan_bench.synthetic.synthetic_catalog`
at several sizes, each in a fresh (spawned) process so that its peak RSS is its own, and
reports nodes, links, candidate pairs, build time, peak memory and how many required id
inputs got a link from a producer of their own app.

``bench scale`` does the same for :func:`~hyperplan_bench.synthetic.synthetic_hypergraph` (drawn
directly as arrays, no link inference, up to millions of tools) and reports build time,
memory, DOE latency and Tool Context Graph latency
(:func:`~hyperplan_bench.eval.scale.measure_scale`).

What is measured lives beside the other benchmarks
(:func:`~hyperplan_bench.eval.link_scale.measure_links`,
:func:`~hyperplan_bench.eval.scale.measure_scale`),
as does :func:`~hyperplan_bench.eval.isolated.run_isolated`, which runs either in a fresh process;
this module parses the options and prints the tables.

``bench faults`` is the fault-injection benchmark (docs/benchmarks.md, "Runtime trust under
faults"): a catalogue of misbehaving servers, tools, files and stores run end to end through the
command line (:mod:`hyperplan_bench.faults`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from hyperplan.cli.common import console, embedder_from_option, out, stage_progress
from hyperplan.cli.options import AsJson, Sizes, embedder_option, renamed_options
from hyperplan_bench.eval.isolated import Measure, run_isolated
from hyperplan_bench.eval.scale import DEFAULT_DIM

bench_app = typer.Typer(help="Scale benchmarks on synthetic catalogs.", no_args_is_help=True)

SizeTimeout = Annotated[float, typer.Option(
    help="give up on a size after this many seconds (0: never)")]
MaxMemoryGb = Annotated[float, typer.Option(
    help="address-space limit of each run, so one size cannot exhaust the machine (0: none)")]

# Above this many tools a model-backed embedder takes hours (MiniLM: ~100-500 texts/s).
_SLOW_EMBEDDER_TOOLS = 5000


def parse_sizes(spec: str) -> list[int]:
    """``"1000,10k,100_000"`` -> ``[1000, 10000, 100000]``."""
    sizes = []
    for part in spec.split(","):
        text = part.strip().lower().replace("_", "")
        if not text:
            continue
        scale = 1000 if text.endswith("k") else 1
        try:
            value = int(text.removesuffix("k")) * scale
        except ValueError:
            raise typer.BadParameter(f"not a tool count: {part.strip()!r}") from None
        if value < 1:
            raise typer.BadParameter(f"tool counts must be positive, got {value}")
        sizes.append(value)
    if not sizes:
        raise typer.BadParameter("give at least one tool count, e.g. --sizes 1000,10000")
    return sizes


def run_sizes(sizes: list[int], seed: int, embedder: str, *, timeout: float,
               max_memory_gb: float, quiet: bool, measure: Measure,
               options: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """:func:`run_isolated` for each size in turn, with a progress bar and a line per size
    unless ``quiet``."""
    runs = []
    with stage_progress(not quiet) as progress:
        for n in sizes:
            def report(stage: str, done: int, total: int, n: int = n) -> None:
                progress(f"{n:,} tools: {stage}", done, total)

            runs.append(run_isolated(n, seed, embedder, timeout=timeout,
                                     max_memory_gb=max_memory_gb, progress=report,
                                     measure=measure, options=options))
            if not quiet:
                run = runs[-1]
                state = f"[red]{run['error']}[/red]" if "error" in run else "done"
                console.print(f"{n:,} tools: {state} in {run['seconds']:.1f} s", highlight=False)
    return runs


def _table(result: dict[str, Any]) -> Table:
    table = Table(title=f"bench links (embedder {result['embedder']}, seed {result['seed']})")
    for column in ("tools", "nodes", "links", "candidates", "seconds", "peak MB", "id inputs",
                   "linked"):
        table.add_column(column, justify="right")
    for run in result["runs"]:
        if "error" in run:
            peak = run.get("peak_rss_mb")
            table.add_row(f"{run['tools']:,}", "[red]failed[/red]", "", "", f"{run['seconds']:.1f}",
                          f"{peak:,.0f}" if peak is not None else "?", "", "")
            continue
        cands = run.get("candidate_pairs")
        coverage = run["id_inputs_with_producer"]
        table.add_row(
            f"{run['tools']:,}", f"{run['nodes']:,}", f"{run['links']:,}",
            f"{cands:,}" if cands is not None else "-", f"{run['seconds']:.1f}",
            f"{run['peak_rss_mb']:,.0f}", f"{run['id_inputs']:,}",
            f"{coverage:.1%}" if coverage is not None else "-",
        )
    return table


@bench_app.command("links")
@renamed_options({"--tools": "--sizes"})
def links_cmd(
    sizes: Sizes = "1000,10000,100000",
    embedder: str = embedder_option("hashing", "minilm embeds ~100-500 texts/s, far too slow "
                                    "for 100K tools"),
    seed: int = typer.Option(0, help="seed of the synthetic catalogs"),
    timeout: SizeTimeout = 0,
    max_memory_gb: MaxMemoryGb = 0,
    as_json: AsJson = False,
) -> None:
    """Link-inference scale on synthetic catalogs of each size.

    Each size is built in a fresh process; reports nodes, links, candidate pairs, seconds and
    peak RSS."""
    counts = parse_sizes(sizes)
    if embedder.split(":")[0].lower() in ("minilm", "auto", "openai") and max(
            counts) >= _SLOW_EMBEDDER_TOOLS:
        console.print(f"[yellow]warning:[/yellow] embedder {embedder!r} embeds ~100-500 texts/s;"
                      f" {max(counts):,} tools have ~{8 * max(counts):,} schema nodes. The "
                      "default --embedder hashing is the one meant for scale runs.",
                      highlight=False)
    from hyperplan_bench.eval.link_scale import measure_links

    started = time.perf_counter()
    runs = run_sizes(counts, seed, embedder, timeout=timeout, max_memory_gb=max_memory_gb,
                      quiet=as_json, measure=measure_links,
                      options={"resolve_embedder": embedder_from_option})
    result = {"bench": "links", "embedder": embedder, "seed": seed, "runs": runs,
              "seconds": round(time.perf_counter() - started, 3)}
    if as_json:
        print(json.dumps(result))
    else:
        out.print(_table(result))
        _print_failures(runs)
        if embedder == "hashing":
            out.print("embedder: hashing (lexical feature hashing, no model); use --embedder "
                      "minilm for semantic similarity on small sizes only.", highlight=False)
    if any("error" in run for run in runs):
        raise typer.Exit(1)


def _pair(run: dict[str, Any], key: str) -> str:
    """``"p50 / p99"`` of ``{key}_ms_p50`` and ``{key}_ms_p99``, or ``-``."""
    p50, p99 = run.get(f"{key}_ms_p50"), run.get(f"{key}_ms_p99")
    return "-" if p50 is None or p99 is None else f"{p50:,.2f} / {p99:,.2f}"


def _scale_table(result: dict[str, Any]) -> Table:
    table = Table(title=f"bench scale (seed {result['seed']}, embedder {result['embedder']}, "
                        f"dim {result['dim']})")
    for column in ("tools", "nodes", "links", "build s", "peak MB", "DOE ms p50 / p99",
                   "complete", "context ms p50 / p99"):
        table.add_column(column, justify="right")
    for run in result["runs"]:
        if "error" in run:
            peak = run.get("peak_rss_mb")
            table.add_row(f"{run['tools']:,}", "[red]failed[/red]", "", "",
                          f"{peak:,.0f}" if peak is not None else "?", "", "", "")
            continue
        complete = run.get("doe_complete")
        table.add_row(
            f"{run['tools']:,}", f"{run['nodes']:,}", f"{run['links']:,}",
            f"{run['build_seconds']:.1f}", f"{run['peak_rss_mb']:,.0f}", _pair(run, "doe"),
            f"{complete:.0%}" if complete is not None else "-", _pair(run, "context"),
        )
    return table


@bench_app.command("scale")
@renamed_options({"--tools": "--sizes"})
def scale_cmd(
    sizes: Sizes = "1000,10000,100000",
    seed: int = typer.Option(0, help="seed of the synthetic graphs, terminals and requests"),
    embedder: str = embedder_option(
        "words", "here only words (random word vectors, fast; meant for scale runs) or "
        "hashing (~10K texts/s: about 12 minutes per 1M tools' 7M texts)"),
    dim: int = typer.Option(
        DEFAULT_DIM, help="embedding dimension; the index holds a float32 vector per schema "
        "node (6M at 1M tools: 1.5 GB at 64 dims, 12 GB at 512)"),
    terminals: int = typer.Option(200, help="random terminal tools to run DOE for"),
    grounded: float = typer.Option(0.3, help="fraction of input nodes grounded per DOE run"),
    requests: int = typer.Option(50, help="generated requests for the context graph (0: skip "
                                 "the retrieval index and context graph)"),
    freeze_gc: bool = typer.Option(
        True, help="gc.freeze() once the graph is built, as a long-running planner would; "
        "without it a full collection walking the graph's ~10M objects (1M tools) can land "
        "inside a timed call"),
    timeout: SizeTimeout = 0,
    max_memory_gb: MaxMemoryGb = 0,
    as_json: AsJson = False,
) -> None:
    """Planning scale: DOE and context-graph latency on synthetic hypergraphs.

    The hypergraphs have heavy-tailed degrees; each size is built in a fresh process. Reports
    build seconds, peak RSS, DOE and context-graph latency (p50/p99)."""
    counts = parse_sizes(sizes)
    if embedder not in ("words", "hashing"):
        raise typer.BadParameter(f"unknown embedder {embedder!r}: use words or hashing")
    if not 0 <= grounded <= 1:
        raise typer.BadParameter("--grounded is a fraction in [0, 1]")
    if dim < 1 or terminals < 0 or requests < 0:
        raise typer.BadParameter("--dim must be >= 1, --terminals and --requests >= 0")
    from hyperplan_bench.eval.scale import measure_scale

    options = {"dim": dim, "terminals": terminals, "requests": requests, "grounded": grounded,
               "freeze_gc": freeze_gc}
    started = time.perf_counter()
    runs = run_sizes(counts, seed, embedder, timeout=timeout, max_memory_gb=max_memory_gb,
                      quiet=as_json, measure=measure_scale, options=options)
    result = {"bench": "scale", "seed": seed, "embedder": embedder, "dim": dim,
              "terminals": terminals, "grounded": grounded, "requests": requests,
              "freeze_gc": freeze_gc, "runs": runs,
              "seconds": round(time.perf_counter() - started, 3)}
    if as_json:
        print(json.dumps(result))
    else:
        out.print(_scale_table(result))
        _print_failures(runs)
        out.print("DOE: expand() per random terminal with a random grounding of "
                  f"{grounded:.0%} of input nodes; context graph: extract_with_vectors() per "
                  "generated request, embedding outside the timer.", highlight=False)
    if any("error" in run for run in runs):
        raise typer.Exit(1)


def _print_failures(runs: list[dict[str, Any]]) -> None:
    for run in runs:
        if "error" in run:
            out.print(f"[red]{run['tools']:,} tools failed[/red] during {run['stage']}: "
                      f"{run['error']}", highlight=False)


@bench_app.command("faults")
def faults_cmd(
    only: str = typer.Option("", help="comma-separated case names to run (default: all; "
                             "--list shows them)"),
    jobs: int = typer.Option(2, help="cases run side by side"),
    list_cases: bool = typer.Option(False, "--list", help="list the cases and exit"),
    section: str = typer.Option("all", help="which cases: runtime (the runtime's faults), "
                                "gateway (hyperplan serve over stdio and --http) or all"),
    keep: Path = typer.Option(None, help="run the cases in this directory and keep their "
                              "files (default: a temporary directory, removed)"),
    as_json: bool = typer.Option(False, "--json", help="print only the JSON object"),
) -> None:
    """Fault injection: misbehaving servers, tools, files and stores, end to end.

    Each case is a `python -m hyperplan ...` subprocess with a hard wall-clock limit, run
    against servers and files the benchmark starts and writes itself; every case is counted
    once as clear, crash, hang, leak, repeated write, lost results or unclear - the gateway
    section also as isolation break or authentication bypass. Exits 1 unless every case is
    clear."""
    from hyperplan_bench.faults import all_cases, run_bench, select_cases
    from hyperplan_bench.faults.report import progress_line, table

    chosen = None if section == "all" else section
    try:
        listed = all_cases(chosen)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    if list_cases:
        for case in listed:
            where = "" if case.section == "runtime" else f"{case.section} "
            out.print(f"{case.name} ({where}item {case.item}): {case.summary}",
                      highlight=False, soft_wrap=True)
        return
    if jobs < 1:
        raise typer.BadParameter("--jobs must be >= 1")
    try:
        cases = select_cases(only.split(","), chosen)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None

    def progress(result: dict[str, Any]) -> None:
        console.print(progress_line(result), highlight=False, soft_wrap=True)

    result = run_bench(cases, jobs=jobs, workdir=keep, progress=None if as_json else progress)
    if as_json:
        print(json.dumps(result))
    else:
        out.print(table(result))
    if result["clear_errors"] != result["cases"]:
        raise typer.Exit(1)


@bench_app.command("gateway-load")
def gateway_load_cmd(
    clients: int = typer.Option(20, help="concurrent MCP SDK clients"),
    requests: int = typer.Option(200, help="measured mixed requests per client"),
    warmup: int = typer.Option(5, help="unmeasured requests per client first (after its "
                               "find_tools and login)"),
    repeats: int = typer.Option(1, help="runs, each against a fresh gateway"),
    mode: str = typer.Option("search", help="the gateway's --mode: search or narrow"),
    protocol: str = typer.Option("auto", help="the SDK client's mode: auto (its default, "
                                 "negotiates 2026-07-28), legacy (initialize handshake) or a "
                                 "protocol version"),
    source: list[str] = typer.Option(["python:hyperplan.examples.bookstore"], "--source",
                                     help="a tool source of the gateway (repeatable); the "
                                     "requests need the bookstore's tools"),
    serve_option: list[str] = typer.Option([], "--serve-option", help="more options of "
                                           "`hyperplan serve`, e.g. '--sandbox none' "
                                           "(repeatable)"),
    embedder: str = embedder_option("hashing"),
    python: str = typer.Option(None, help="the gateway's Python (default: this one)"),
    cwd: Path = typer.Option(None, help="the gateway's working directory (another checkout)"),
    pythonpath: str = typer.Option(None, help="the gateway's PYTHONPATH (e.g. CHECKOUT/src)"),
    seed: int = typer.Option(0, help="seed of the request schedules"),
    as_json: AsJson = False,
) -> None:
    """The MCP gateway under load over HTTP: concurrent SDK clients, mixed requests.

    Starts `hyperplan serve --http PORT` on the sources, waits for its graph, then each
    client makes find_tools, tools/list, read, write and invalid requests, passing its
    conversation token back in _meta. Reports requests/s, errors by kind (a refused invalid
    argument is expected, not an error), p50/p95/p99 per kind and the gateway's RSS (start,
    warm, end; growth per 1,000 requests). Exits 1 on any error."""
    import shlex
    import sys

    from hyperplan.integrations.mcp_gateway.load import LoadConfig, run_load
    from hyperplan.integrations.mcp_gateway.load_report import markdown

    try:
        config = LoadConfig(
            clients=clients, requests=requests, warmup=warmup, sources=tuple(source),
            mode=mode, protocol=protocol, embedder=embedder,
            serve_args=tuple(a for option in serve_option for a in shlex.split(option)),
            python=python or sys.executable, cwd=str(cwd) if cwd else None,
            pythonpath=pythonpath, seed=seed)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None

    def progress(run: dict[str, Any]) -> None:
        console.print(f"run: {run['requests_per_s']} req/s, {run['errors']} errors, p99 "
                      f"{run['latency_ms'].get('all', {}).get('p99')} ms", highlight=False)

    result = run_load(config, repeats, progress=None if as_json else progress)
    if as_json:
        print(json.dumps(result))
    else:
        out.print(markdown(result), highlight=False, markup=False, soft_wrap=True)
    if result["summary"]["errors"]:
        raise typer.Exit(1)
