"""``hyperplan search figure``: the HyperMCTS paper's cost comparison (Figure 3) in one
command -- Case Accuracy against policy calls (and, with ``--policy llm``, output tokens) per
case for the MCTS-family methods at each branching factor b, the other baselines as rows, a
PNG per run, a Markdown table and the JSON (:mod:`hyperplan_bench.eval.treesearch.figure`).

Registered on ``search_app`` by :mod:`hyperplan_bench.cli.search_cmds`."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from hyperplan.cli.common import console, fail, stage_progress
from hyperplan.cli.options import AsJson, Model, Rollouts, Tasks, llm_option, output_option
from hyperplan.search.policies import Policy, make_policy
from hyperplan_bench.eval.treesearch.figure import (
    FIGURE_METHODS,
    PolicySource,
    figure_plot,
    figure_suite,
    figure_table,
    headline_table,
)

DEFAULT_OUTPUT = Path("docs/figures/hypermcts_cost")


def _ints(text: str, option: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        fail(f"{option} takes integers, comma-separated, got {text!r}")
    if not values or min(values) < 1:
        fail(f"{option} needs at least one value, each >= 1")
    return values


def _source(policy: str, llm: str | None, model: str | None, llm_rollouts: str,
            max_llm_calls: int | None) -> tuple[PolicySource, Callable[[], dict[str, Any]]]:
    """The policies of the run and the JSON's ``llm`` report (empty without a model). With
    ``llm``, each method gets its own factory over one client (module doc of the figure)."""
    from hyperplan_bench.cli.search_cmds import _llm_client

    if policy != "llm":
        if llm is not None or model is not None or max_llm_calls is not None:
            fail("--llm, --model and --max-llm-calls are for --policy llm")
        try:
            make_policy(policy)
        except ValueError as exc:
            fail(str(exc))

        def fresh() -> Callable[[], Policy]:
            return lambda: make_policy(policy)

        return PolicySource(fresh, dict), dict
    from hyperplan.search.llm_policy import LLMPolicyFactory

    client, accounting, report = _llm_client(llm, model, llm_rollouts, max_llm_calls)

    def fresh_llm() -> Callable[[], Policy]:
        return LLMPolicyFactory(client, rollouts=llm_rollouts)

    def usage() -> Mapping[str, float]:
        totals = accounting.totals()
        return {"llm_calls": totals.calls, "prompt_tokens": totals.prompt_tokens,
                "completion_tokens": totals.completion_tokens}

    return PolicySource(fresh_llm, usage), report


def figure_cmd(
    suites: str = typer.Option("shopping,travel", help="comma-separated suites "
                               "(shopping | travel | qa | toy)"),
    branching: str = typer.Option("2,3,6", help="branching factors b, comma-separated"),
    tasks: Tasks = 200,
    seed: int = typer.Option(1000, help="task/search seed (0-999 is the dev range)"),
    rollouts: Rollouts = 32,
    methods: str = typer.Option(",".join(FIGURE_METHODS),
                                help="comma-separated subset of the figure's methods"),
    out_dir: Annotated[Path, output_option("directory for the PNG, the JSON and the table")]
    = DEFAULT_OUTPUT,
    policy: str = typer.Option("heuristic", "--policy", help="heuristic | random | llm"),
    llm: str | None = llm_option("the model for --policy llm (else HYPERPLAN_LLM_BASE_URL)"),
    model: Model = None,
    llm_rollouts: str = typer.Option("heuristic", help="--policy llm: who simulates "
                                     "rollouts, heuristic or llm"),
    max_llm_calls: int | None = typer.Option(None, help="--policy llm: at most this many "
                                             "model calls in all"),
    as_json: AsJson = False,
) -> None:
    """The HyperMCTS paper's Figure 3: Case Accuracy against policy calls per case (and output
    tokens with --policy llm) of HyperMCTS, RAP (llm-reasoners, when installed), LATS and
    FLARE at each b, with UCT, FLARE with B in all, ToT, CoT and Reflexion as rows; paired
    95% intervals of HyperMCTS against each. Writes hypermcts_cost.png, figure.json and
    table.md to --output after each suite."""
    from hyperplan_bench.cli.search_cmds import DEFAULT_C, DEFAULT_LAM, _config, _tasks

    suite_list = [s.strip() for s in suites.split(",") if s.strip()]
    if not suite_list:
        fail("--suites is empty")
    branchings = _ints(branching, "--branching")
    chosen = [m.strip() for m in methods.split(",") if m.strip()]
    unknown = [m for m in chosen if m not in FIGURE_METHODS]
    if not chosen or unknown:
        fail(f"--methods: unknown {unknown or 'none given'}; choose from "
             f"{', '.join(FIGURE_METHODS)}")
    if "hypermcts" not in chosen:
        chosen.insert(0, "hypermcts")  # the paired intervals are against it
    config = _config(rollouts, max(branchings), DEFAULT_LAM, DEFAULT_C, "balanced")
    source, report = _source(policy, llm, model, llm_rollouts, max_llm_calls)
    out_dir.mkdir(parents=True, exist_ok=True)
    doc: dict[str, Any] = {"seed": seed, "policy": policy, "budget": rollouts,
                           "branchings": branchings, "design": "full-path", "suites": {}}
    for suite in suite_list:
        envs = _tasks(suite, tasks, seed, None)
        with stage_progress() as progress:
            doc["suites"][suite] = figure_suite(envs, config, branchings, seed=seed,
                                                source=source, methods=chosen,
                                                progress=progress)
        doc.update(report())
        _write(doc, out_dir, tasks)
    if as_json:
        print(json.dumps(doc))
        return
    print(_tables(doc))
    if "figure" in doc:
        print(f"\nfigure: {doc['figure']}")


def _tables(doc: Mapping[str, Any]) -> str:
    parts = [f"Case Accuracy (%) and cost per case; seed {doc['seed']}, B = {doc['budget']}, "
             f"policy {doc['policy']}.\n"]
    for suite, result in doc["suites"].items():
        parts.append(figure_table(suite, result))
        skipped = result.get("skipped", {})
        parts.extend(f"\n{name} skipped: {why}" for name, why in skipped.items())
        parts.append("\n" + headline_table(suite, result) + "\n")
    return "\n".join(parts)


def _write(doc: dict[str, Any], out_dir: Path, tasks: int) -> None:
    """The PNG, the table and the JSON so far (after each suite, so a long run keeps what it
    finished)."""
    png = out_dir / "hypermcts_cost.png"
    try:
        figure_plot(doc["suites"], str(png), title=f"{tasks} tasks per suite, seed "
                    f"{doc['seed']}, B = {doc['budget']}, policy {doc['policy']}")
        doc["figure"] = str(png)
    except RuntimeError as exc:
        console.print(f"[yellow]warning:[/yellow] {exc}", highlight=False)
    (out_dir / "table.md").write_text(_tables(doc) + "\n", encoding="utf-8")
    (out_dir / "figure.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
