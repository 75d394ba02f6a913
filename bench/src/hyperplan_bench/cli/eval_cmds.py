"""``hyperplan eval ...``: benchmarks that print one JSON object on stdout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from hyperplan.cli.common import embedder_from_option, fail, out, stage_progress
from hyperplan.cli.options import AsJson, Split, deprecated_alias, embedder_option
from hyperplan.errors import HyperplanError
from hyperplan.plan.doe import DOEConfig
from hyperplan_bench.eval.chains import evaluate_chains
from hyperplan_bench.eval.links import DEFAULT_THRESHOLD, evaluate_links

eval_app = typer.Typer(help="Benchmarks with stable JSON output, agent runs and their reports.",
                       no_args_is_help=True)


@eval_app.command("links")
def links_cmd(
    suite: str = typer.Option(..., help="nestful | nestools | sealtools | appworld "
                              "(appworld: --strip-outputs only)"),
    data: Path = typer.Option(..., help="NESTFUL data dir or *-data.json; NesTools *.jsonl; "
                              "Seal-Tools dir or dev.jsonl; AppWorld data dir"),
    embedder: str = embedder_option("auto"),
    split: Split = "all",
    threshold: float = typer.Option(
        DEFAULT_THRESHOLD, help="links at least this heavy count as predicted"),
    sweep: str = typer.Option("", help="extra thresholds, e.g. 0.4,0.5,0.6"),
    learn_from: str = typer.Option(None, "--learn-from", help="dev | heldout: learn the gold "
                                   "flows of that split first (score the other split)"),
    strip_outputs: bool = typer.Option(
        False, "--strip-outputs", help="drop the catalog's declared outputs, effects and "
        "preconditions (as most MCP catalogs are) and score the graph built from the rest "
        "against the typed catalog's links (a SILVER reference) and the gold flows"),
    as_json: AsJson = False,
) -> None:
    """Precision/recall/F1 of inferred links against the data flows of gold calls; with
    --strip-outputs, of the links of a catalog without outputs against the typed ones."""
    if strip_outputs and sweep:
        fail("--sweep does not combine with --strip-outputs")
    try:
        thresholds = [float(x) for x in sweep.split(",") if x.strip()]
    except ValueError:
        fail(f"--sweep takes comma-separated numbers, got {sweep!r}")
    if not all(0 <= t <= 1 for t in [threshold, *thresholds]):
        fail("--threshold and --sweep are link weights, in [0, 1]")
    with stage_progress(not as_json) as progress:
        if strip_outputs:
            from hyperplan_bench.eval.stripped import evaluate_stripped_suite

            result = evaluate_stripped_suite(
                suite, data, embedder=embedder_from_option(embedder), split=split,
                threshold=threshold, progress=progress, learn_from=learn_from)
        else:
            result = evaluate_links(
                suite, data, embedder=embedder_from_option(embedder), split=split,
                threshold=threshold, thresholds=thresholds, progress=progress,
                learn_from=learn_from)
    _check_tasks(result, data, split)
    if as_json:
        print(json.dumps(result))
        return
    out.print_json(json.dumps(result))


@eval_app.command("chains")
def chains_cmd(
    suite: str = typer.Option(..., help="nestful | nestools | sealtools | tau2"),
    data: Path = typer.Option(None, help="NESTFUL data dir or *-data.json; NesTools *.jsonl; "
                              "Seal-Tools dir or dev.jsonl"),
    domain: str = typer.Option(None, help="tau2 domain: airline | retail | telecom"),
    embedder: str = embedder_option("auto"),
    split: Split = "all",
    top_k: int = typer.Option(DOEConfig.top_k, help="DOE producers per expansion (K)"),
    beam: int = typer.Option(DOEConfig.beam_width, help="DOE beam width (B)"),
    learn_from: str = typer.Option(None, "--learn-from", help="dev | heldout: learn the gold "
                                   "flows of that split first (score the other split)"),
    as_json: AsJson = False,
) -> None:
    """Can DOE find the producer tools of the gold calls? DOE against its baselines.

    Reports exact, producer precision/recall and unsatisfiable for DOE and each baseline,
    each method's operating points, and DOE vs. each baseline at equal recall."""
    source = domain if suite == "tau2" else data
    if source is None:
        raise HyperplanError("--data is required" if suite != "tau2" else "--domain is required")
    if top_k < 1 or beam < 1:
        fail(f"--top-k and --beam must be >= 1, got {top_k} and {beam}")
    with stage_progress(not as_json) as progress:
        result = evaluate_chains(
            suite, source, embedder=embedder_from_option(embedder), split=split,
            config=DOEConfig(top_k=top_k, beam_width=beam), progress=progress,
            learn_from=learn_from,
        )
    _check_tasks(result, source, split)
    if as_json:
        print(json.dumps(result))
        return
    out.print_json(json.dumps(result))


def _check_tasks(result: dict[str, Any], data: object, split: str) -> None:
    """A benchmark over no task is a mistake (an empty or wrong data file), not a result."""
    if not result.get("n_tasks"):
        fail(f"{data}: no tasks to evaluate" + (f" in split {split!r}" if split != "all" else ""))


# The tree-search commands were `eval mcts*`; they are `hyperplan search ...` now
# (search_cmds). The old names stay, hidden, each saying so in one line.
from hyperplan_bench.cli.search_cmds import (  # noqa: E402
    mcts_bench_cmd,
    mcts_cmd,
    mcts_reasoners_cmd,
    mcts_sweep_cmd,
)

for _old, _new, _command in (("mcts", "run", mcts_cmd), ("mcts-sweep", "sweep", mcts_sweep_cmd),
                             ("mcts-bench", "bench", mcts_bench_cmd),
                             ("mcts-reasoners", "reasoners", mcts_reasoners_cmd)):
    deprecated_alias(eval_app, _old, _command, f"eval {_old}", f"search {_new}")


@eval_app.command("suites")
def suites_cmd(
    as_json: bool = typer.Option(False, "--json", help="Print the table as JSON."),
) -> None:
    """Every suite, the evaluations it supports, the command for each, its data and checker."""
    from dataclasses import asdict

    from rich.table import Table

    from hyperplan_bench.eval.registry import SUITE_TABLE, commands

    if as_json:
        print(json.dumps([asdict(s) | {"commands": commands(s)} for s in SUITE_TABLE]))
        return
    table = Table(title="hyperplan suites")
    for column in ("suite", "commands", "data", "checker"):
        table.add_column(column)
    for info in SUITE_TABLE:
        table.add_row(info.name, "\n".join(commands(info)), info.data, info.checker)
    out.print(table)
