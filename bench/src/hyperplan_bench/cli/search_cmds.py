"""``hyperplan search run|sweep|reasoners|bench``: HyperMCTS (Algorithm 1 of the HyperMCTS
paper) against its baselines on generated long-horizon tasks, and its bookkeeping benchmark.

The old names ``hyperplan eval mcts``, ``eval mcts-sweep``, ``eval mcts-reasoners`` and
``eval mcts-bench`` stay as hidden aliases (registered on the ``eval`` group).

Defaults for c, lambda and Agg were chosen on the dev seeds 0-999 (see
:data:`hyperplan_bench.eval.treesearch.runner.DEV_SEEDS`); report results with ``--seed 1000`` or
above.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from hyperplan.cli.common import console, fail, out, print_warning, stage_progress
from hyperplan.cli.options import (
    AsJson,
    Iterations,
    Model,
    Rollouts,
    Tasks,
    llm_option,
    output_option,
    renamed_options,
)
from hyperplan.connect import llm_from_options
from hyperplan.errors import HyperplanError
from hyperplan.llm.budget import Accounting
from hyperplan.llm.budget import Budget as LLMBudget
from hyperplan.search.config import BRANCH_ON, MCTSConfig, TreeDesign, design_config
from hyperplan.search.env import SearchEnv
from hyperplan.search.llm_policy import LLM_ROLLOUTS, LLMPolicyFactory
from hyperplan.search.policies import POLICIES, Policy
from hyperplan.search.trajectory_hypergraph import AGGREGATORS, DEFAULT_AGG
from hyperplan_bench.eval.treesearch.runner import (
    ALL_METHODS,
    METHODS,
    evaluate,
    load_tasks,
    sweep,
    sweep_plot,
    sweep_table,
)

if TYPE_CHECKING:
    from hyperplan.llm.openai_client import OpenAICompatibleLLM

search_app = typer.Typer(help="Tree search (HyperMCTS) on generated long-horizon tasks: runs, "
                         "sweeps, benchmarks.", no_args_is_help=True)

DEFAULT_C = 0.5
DEFAULT_LAM = 0.5


WIDEN_HELP = ("progressive widening w of commit decision points (0 = off, Algorithm 1 "
              "proper); default: the design's")
DESIGN_NAMES = tuple(d.value for d in TreeDesign)

# Options the commands share (typer reads the Annotated metadata).
Suite = Annotated[str, typer.Option(help="shopping | travel | qa | toy")]
Seed = Annotated[int, typer.Option(help="task/search seed (0-999 is the dev range)")]
Branching = Annotated[int, typer.Option(help="children per expansion b")]
Level = Annotated[int | None, typer.Option(help="difficulty level (suite-defined)")]
Agg = Annotated[str, typer.Option(help="prior aggregator: " + " | ".join(AGGREGATORS))]
PolicyName = Annotated[str, typer.Option(help=" | ".join(POLICIES))]
SearchPolicy = Annotated[str, typer.Option(
    "--policy", help=" | ".join((*POLICIES, "llm")) + " (llm: the model at --llm proposes "
    "and scores candidates)")]
LLMRollouts = Annotated[str, typer.Option(
    help="--policy llm: who simulates rollouts, heuristic (the model only proposes the "
    "children of expanded histories) or llm (the model at every rollout step too)")]
MaxLLMCalls = Annotated[int | None, typer.Option(
    help="--policy llm: at most this many model calls in all; past it the policy falls back "
    "to uniform choices and the JSON says so")]
Design = Annotated[str, typer.Option(
    help="tree design: full-path (default; every rollout step in the tree, llm-reasoners' "
    "shape, with the evidence widening, composed rollouts, evidence pruning, free "
    "decisions last and ending decisions last), paper "
    "(Algorithm 1 as written) or commit-widen (the default until 2026-12-03); the four "
    "options below override its settings")]
Guidance = Annotated[bool | None, typer.Option(
    "--rollout-guidance/--no-rollout-guidance",
    help="HyperMCTS rollouts also pick among the policy's b candidates by the prior "
    "(inactive at lam = 0, i.e. for UCT); default: the design's", show_default=False)]
BranchOn = Annotated[str | None, typer.Option(
    help="branch at commit decision points only (commit) or on every action (all); default: "
    "the design's", show_default=False)]
Widen = Annotated[float | None, typer.Option(help=WIDEN_HELP, show_default=False)]
Lam = Annotated[float, typer.Option(help="hypergraph prior weight lambda")]
UCTConstant = Annotated[float, typer.Option(help="UCT exploration constant c")]
ExpandRollout = Annotated[bool | None, typer.Option(
    "--expand-rollout/--no-expand-rollout",
    help="run each rollout inside the tree, expanding every history it passes (llm-reasoners' "
    "tree shape; off in Algorithm 1); default: the design's", show_default=False)]


def _config(
    budget: int, branching: int, lam: float, c: float, agg: str, design: str = "full-path",
    *, rollout_guidance: bool | None = None, branch_on: str | None = None,
    widen: float | None = None, expand_rollout: bool | None = None,
    budget_option: str = "--rollouts",
) -> MCTSConfig:
    """The search configuration of the options (``budget`` is the value of
    ``budget_option``: ``--rollouts`` or ``--iterations``), each checked: the design's
    settings with the options given on top (None: not given)."""
    if agg not in AGGREGATORS:
        fail(f"unknown --agg {agg!r}; choose one of {', '.join(sorted(AGGREGATORS))}")
    if budget < 1 or branching < 1 or c < 0 or lam < 0:
        fail(f"{budget_option} and --branching must be >= 1, --c and --lam >= 0")
    if design not in DESIGN_NAMES:
        fail(f"unknown --design {design!r}; choose one of {', '.join(DESIGN_NAMES)}")
    if branch_on is not None and branch_on not in BRANCH_ON:
        fail(f"unknown --branch-on {branch_on!r}; choose one of {', '.join(BRANCH_ON)}")
    if widen is not None and widen < 0:
        fail("--widen must be >= 0 (0 = off)")
    given = {"rollout_guidance": rollout_guidance, "branch_on": branch_on, "widen": widen,
             "expand_rollout": expand_rollout}
    return design_config(design, budget=budget, branching=branching, c=c, lam=lam, agg=agg,
                         **{k: v for k, v in given.items() if v is not None})


def _design_keys(config: MCTSConfig, design: str) -> dict[str, Any]:
    """The design and its settings, for the JSON."""
    return {"design": design, "rollout_guidance": config.rollout_guidance,
            "branch_on": str(config.branch_on), "widen": config.widen,
            "expand_rollout": config.expand_rollout,
            "evidence_widening": config.evidence_widening,
            "evidence_width": config.evidence_width, "compose_every": config.compose_every,
            "evidence_pruning": config.evidence_pruning, "free_last": config.free_last,
            "ending_last": config.ending_last, "scored_picks": config.scored_picks}


def _tasks(suite: str, n: int, seed: int, level: int | None) -> list[SearchEnv]:
    if n < 1:
        fail(f"--tasks must be >= 1, got {n}")
    try:
        return load_tasks(suite, n, seed, level)
    except ImportError as exc:
        fail(f"suite {suite!r} is not available: {exc}")
    except (KeyError, ValueError) as exc:
        fail(f"cannot make tasks for suite {suite!r}: {exc}")


@search_app.command("run")
@renamed_options({"--budget": "--rollouts"})
def mcts_cmd(
    suite: Suite,
    tasks: Tasks = 50,
    seed: Seed = 1000,
    rollouts: Rollouts = 32,
    branching: Branching = 3,
    lam: Lam = DEFAULT_LAM,
    c: UCTConstant = DEFAULT_C,
    level: Level = None,
    agg: Agg = DEFAULT_AGG,
    policy: SearchPolicy = "heuristic",
    methods: str = typer.Option(",".join(METHODS), help="comma-separated methods: "
                                + ", ".join(ALL_METHODS)),
    design: Design = "full-path",
    rollout_guidance: Guidance = None,
    branch_on: BranchOn = None,
    widen: Widen = None,
    expand_rollout: ExpandRollout = None,
    llm: str | None = llm_option("the model for --policy llm (else HYPERPLAN_LLM_BASE_URL)"),
    model: Model = None,
    llm_rollouts: LLMRollouts = "heuristic",
    max_llm_calls: MaxLLMCalls = None,
    as_json: AsJson = False,
) -> None:
    """HyperMCTS vs UCT, best-of-N, greedy, beam search and a LATS-style baseline at equal
    rollout budget; per method the cost as the HyperMCTS paper reports it
    (policy_calls_per_case: every proposal, rollout choice and value request; and
    rollouts_per_case).

    With --policy llm every method asks the same model (one shared answer cache, so a history
    two methods reach costs one call); the JSON's "llm" object counts the histories the model
    was asked about, the requests sent (re-asks included), the answers that gave no valid
    decision (fallbacks), tokens and model seconds."""
    config = _config(rollouts, branching, lam, c, agg, design,
                     rollout_guidance=rollout_guidance, branch_on=branch_on, widen=widen,
                     expand_rollout=expand_rollout)
    chosen = [m.strip() for m in methods.split(",") if m.strip()]
    unknown = [m for m in chosen if m not in ALL_METHODS]
    if not chosen:
        fail(f"--methods is empty; choose from {', '.join(ALL_METHODS)}")
    if unknown:
        fail(f"unknown methods {unknown}; choose from {', '.join(ALL_METHODS)}")
    make, report = _policy(policy, llm, model, llm_rollouts, max_llm_calls)
    envs = _tasks(suite, tasks, seed, level)
    with stage_progress() as progress:
        result = evaluate(envs, config, policy=make, seed=seed, methods=chosen,
                          progress=progress)
    extra = report()
    if "llm" in extra:
        _warn_llm(extra["llm"])
    _emit({"suite": suite, "seed": seed, "level": level, "policy": policy,
           **_design_keys(config, design), **result, **extra}, as_json)


def _policy(name: str, url: str | None, model: str | None, rollouts: str,
            max_calls: int | None) -> tuple[str | Callable[[], Policy],
                                            Callable[[], dict[str, Any]]]:
    """The policy ``evaluate`` runs (a name, or for ``llm`` a factory over one client) and a
    function giving the JSON's ``llm`` report after the run (empty for the other policies)."""
    llm_options = url is not None or model is not None or max_calls is not None
    if name != "llm":
        if name not in POLICIES:
            fail(f"unknown --policy {name!r}; choose one of {', '.join((*POLICIES, 'llm'))}")
        if llm_options:
            fail("--llm, --model and --max-llm-calls are for --policy llm")
        return name, dict
    client, _, report = _llm_client(url, model, rollouts, max_calls)
    factory = LLMPolicyFactory(client, rollouts=rollouts)

    def with_histories() -> dict[str, Any]:
        doc = report()
        doc["llm"].update(histories=factory.calls, fallbacks=factory.fallbacks)
        return doc

    return factory, with_histories


def _llm_client(url: str | None, model: str | None, rollouts: str, max_calls: int | None
                ) -> tuple[OpenAICompatibleLLM, Accounting, Callable[[], dict[str, Any]]]:
    """The model client of ``--policy llm`` (options checked), its accounting, and the
    JSON's ``llm`` report of it."""
    if rollouts not in LLM_ROLLOUTS:
        fail(f"--llm-rollouts must be {' or '.join(LLM_ROLLOUTS)}, got {rollouts!r}")
    if max_calls is not None and max_calls < 1:
        fail(f"--max-llm-calls must be >= 1, got {max_calls}")
    accounting = Accounting(LLMBudget(max_calls=max_calls))
    try:
        client = llm_from_options(url, model, accounting, check=True)
    except HyperplanError as exc:
        fail(str(exc))
    if client is None:
        fail("--policy llm needs --llm URL or HYPERPLAN_LLM_BASE_URL")

    def report() -> dict[str, Any]:
        totals = accounting.totals()
        stopped = accounting.stopped
        return {"llm": {"model": client.model, "rollouts": rollouts,
                        "calls": totals.calls, "errors": totals.errors,
                        "prompt_tokens": totals.prompt_tokens,
                        "completion_tokens": totals.completion_tokens,
                        "seconds": round(totals.latency_s, 2),
                        "stopped": None if stopped is None else str(stopped)}}

    return client, accounting, report


def _warn_llm(report: dict[str, Any]) -> None:
    """One warning line each for an LLM run that a budget stopped, that had failed requests,
    or whose answers mostly named no valid decision (proposals then fell back to uniform)."""
    if report["stopped"]:
        print_warning(f"--policy llm: {report['stopped']}; later proposals were uniform choices")
    if report["errors"]:
        print_warning(f"--policy llm: {report['errors']} of {report['calls']} requests failed")
    asked, fallbacks = report["histories"], report["fallbacks"]
    if asked and fallbacks * 2 > asked:
        print_warning(f"--policy llm: {fallbacks} of {asked} answers named no valid decision; "
                      "those proposals were uniform choices")


def _emit(payload: dict[str, Any], as_json: bool) -> None:
    """The benchmark object: one JSON line with ``--json``, else pretty-printed."""
    if as_json:
        print(json.dumps(payload))
        return
    out.print_json(json.dumps(payload))


@search_app.command("sweep")
@renamed_options({"--budgets": "--rollouts", "--out": "--output"})
def mcts_sweep_cmd(
    suite: Suite,
    tasks: Tasks = 50,
    seed: Seed = 1000,
    rollouts: str = typer.Option("8,16,32,64", "--rollouts",
                                 help="rollout budgets B, comma-separated"),
    lams: str = typer.Option("0,0.3,0.7,1.0", help="comma-separated lambda values (0 = UCT)"),
    branching: Branching = 3,
    c: UCTConstant = DEFAULT_C,
    level: Level = None,
    agg: Agg = DEFAULT_AGG,
    policy: PolicyName = "heuristic",
    out_dir: Annotated[Path, output_option("directory for the PNG")] = Path("docs/figures"),
    design: Design = "full-path",
    rollout_guidance: Guidance = None,
    branch_on: BranchOn = None,
    widen: Widen = None,
    expand_rollout: ExpandRollout = None,
    methods: str = typer.Option("", help="other methods to sweep too, comma-separated, or "
                                "'all' (every method of search run besides HyperMCTS and "
                                "best-of-N; UCT too unless λ=0 is swept)"),
    as_json: AsJson = False,
) -> None:
    """Case accuracy vs budget and vs lambda: a Markdown table and a matplotlib PNG. With
    --methods, accuracy against budget for those methods too, and a third panel against policy
    calls per case (the figure is then mcts_sweep_SUITE_methods.png)."""
    budget_list, lam_list, extra = _sweep_grid(rollouts, lams, methods)
    config = _config(max(budget_list), branching, max(lam_list), c, agg, design,
                     rollout_guidance=rollout_guidance, branch_on=branch_on, widen=widen,
                     expand_rollout=expand_rollout)
    envs = _tasks(suite, tasks, seed, level)
    out_dir.mkdir(parents=True, exist_ok=True)  # before the sweep: a bad --output fails fast
    with stage_progress() as progress:
        result = sweep(envs, config, budget_list, lam_list, policy=policy, seed=seed,
                       progress=progress, methods=extra)
    result = {"suite": suite, "seed": seed, "level": level, "policy": policy,
              **_design_keys(config, design), **result}
    png = out_dir / (f"mcts_sweep_{suite}_methods.png" if extra else f"mcts_sweep_{suite}.png")
    try:
        sweep_plot(result, str(png),
                   title=f"{suite}: {len(envs)} tasks, b={branching}, seed {seed}")
        result["figure"] = str(png)
    except RuntimeError as exc:
        console.print(f"[yellow]warning:[/yellow] {exc}", highlight=False)
    if as_json:
        print(json.dumps(result))
        return
    print(f"Case accuracy (%) on {suite}, {len(envs)} tasks, seed {seed}, b={branching}, "
          f"c={c}, agg={agg}, policy={policy}; λ=0 is UCT.\n")
    print(sweep_table(result))
    if "figure" in result:
        print(f"\nfigure: {result['figure']}")


def _sweep_grid(rollouts: str, lams: str, methods: str
                ) -> tuple[list[int], list[float], list[str]]:
    """The rollout budgets, lambda values and other methods ``search sweep`` draws, each
    checked."""
    try:
        budget_list = [int(x) for x in rollouts.split(",") if x.strip()]
        lam_list = [float(x) for x in lams.split(",") if x.strip()]
    except ValueError:
        fail("--rollouts takes integers and --lams numbers, comma-separated")
    extra = _sweep_methods(methods, lam_list)
    if not budget_list or not lam_list:
        fail("--rollouts and --lams must not be empty")
    if min(budget_list) < 1 or min(lam_list) < 0:
        fail("every --rollouts value must be >= 1 and every --lams value >= 0")
    return budget_list, lam_list, extra


def _sweep_methods(methods: str, lams: list[float]) -> list[str]:
    """The other methods ``search sweep --methods`` names (``all``: every one of METHODS the
    sweep does not draw already)."""
    drawn = {"hypermcts", "best_of_n"} | ({"uct"} if 0.0 in lams else set())
    if methods.strip() == "all":
        return [m for m in METHODS if m not in drawn]
    chosen = [m.strip() for m in methods.split(",") if m.strip()]
    unknown = [m for m in chosen if m not in METHODS or m in {"hypermcts", "best_of_n"}]
    if unknown:
        fail(f"unknown --methods {unknown}; choose from "
             f"{', '.join(m for m in METHODS if m not in drawn)} or all")
    return chosen


@search_app.command("bench")
@renamed_options({"--budget": "--iterations"})
def mcts_bench_cmd(
    suite: str = typer.Option("toy", help="toy (synthetic, random policy), shopping or travel "
                              "(generated, heuristic policy)"),
    tasks: Tasks = 20,
    seed: Seed = 1,
    iterations: Iterations = 256,
    branching: Branching = 3,
    lam: Lam = DEFAULT_LAM,
    agg: Agg = DEFAULT_AGG,
    design: Design = "full-path",
    widen: Widen = None,
    repeat: int = typer.Option(1, help="runs per task; a task's figure is their minimum"),
    isolate: bool = typer.Option(
        False, help="time replays of a recorded run (environment and policy answered from a "
        "log): the search's own work with warm caches"),
    as_json: AsJson = False,
) -> None:
    """Bookkeeping microseconds per iteration (policy and environment time excluded).

    The result says whether the compiled search core ran (built by
    `HYPERPLAN_COMPILE=1 pip install .`)."""
    from hyperplan_bench.eval.treesearch.bench import BENCH_SUITES, bench_bookkeeping

    if suite not in BENCH_SUITES:
        fail(f"--suite must be one of {', '.join(BENCH_SUITES)}")
    config = _config(iterations, branching, lam, DEFAULT_C, agg, design, widen=widen,
                     budget_option="--iterations")
    if repeat < 1 or tasks < 1:
        fail("--repeat and --tasks must be >= 1")
    _emit(bench_bookkeeping(tasks=tasks, budget=iterations, branching=branching, lam=lam,
                            agg=agg, suite=suite, seed=seed, repeat=repeat, isolate=isolate,
                            config=config, design=design), as_json)


@search_app.command("reasoners")
@renamed_options({"--budget": "--rollouts"})
def mcts_reasoners_cmd(
    suite: Suite,
    tasks: Tasks = 50,
    seed: Seed = 1000,
    rollouts: Rollouts = 32,
    branching: Branching = 3,
    lam: Lam = DEFAULT_LAM,
    c: float = typer.Option(DEFAULT_C, help="exploration constant (llm-reasoners' w_exp)"),
    design: Design = "full-path",
    widen: float | None = typer.Option(None, help=WIDEN_HELP + " (ours only)",
                                       show_default=False),
    as_json: AsJson = False,
) -> None:
    """HyperMCTS and UCT beside llm-reasoners' MCTS (optional package 'reasoners') at equal
    rollouts, with the heuristic policy."""
    from hyperplan_bench.eval.treesearch.reasoners_bridge import compare

    config = _config(rollouts, branching, lam, c, DEFAULT_AGG, design, widen=widen)
    envs = _tasks(suite, tasks, seed, None)
    try:
        with stage_progress() as progress:
            result = compare(envs, config, seed=seed, progress=progress)
    except HyperplanError as exc:
        fail(str(exc))
    _emit({"suite": suite, "seed": seed, "policy": "heuristic", **_design_keys(config, design),
           **result}, as_json)


def _register_figure() -> None:
    """``search figure`` lives in :mod:`hyperplan_bench.cli.search_figure` (it reads this module's
    helpers, so it is imported after them)."""
    from hyperplan_bench.cli.search_figure import figure_cmd

    search_app.command("figure")(figure_cmd)


_register_figure()
