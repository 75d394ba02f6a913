"""Benchmark runner: every method on the same tasks, policy, seeds and rollout budget.

Per task i the methods share the seed ``seed * 1_000_003 + i`` (common random numbers), so the
HyperMCTS - UCT comparison is paired and differs only by the hypergraph term. Reported per
method: case accuracy (mean verifier ``success``) with a 95% Wilson interval, mean suite score
(``metrics`` "score" / "match_score" / "composite_score", else the reward), mean rollouts used,
and bookkeeping microseconds per iteration (median over tasks; the mean too), and the cost as
the HyperMCTS paper reports it (``policy_calls_per_case``, ``rollouts_per_case``); plus the
paired difference hypermcts - uct (and hypermcts - each other method run) with a 95%
normal-approximation interval on the per-task differences.

Parameter selection protocol: defaults are chosen on the dev seed range ``DEV_SEEDS``
(seeds 0-999) and reported on seeds >= 1000 (``hyperplan eval mcts --seed 1000`` ...); pass
``--seed`` in the dev range only for tuning. So far (shopping, heuristic policy, B = 32, b = 3):
c = 0.5 (UCT case accuracy on dev seed 0: 0.317 at c = 0.3, 0.233 at c = 1.0; 0.30 at c = 0.5
on dev seed 1), ``info_prior="neutral"`` (dev seed 1, 120 tasks: "zero" loses 7.5 points to
UCT, 95% CI excludes 0; "neutral" -0.8), lambda = 0.5 and Agg = "balanced" (no aggregator or
lambda in {0.3, 0.5, 0.7, 1.0, 1.5} differed significantly on dev seeds 0-1; "balanced" is kept
on design grounds, see :mod:`hyperplan.search.trajectory_hypergraph`).

2026-11-30 (branching at decision points): ``branch_on="commit"`` is the default as the
HyperMCTS paper's problem setup says; ``rollout_guidance`` switched on after dev seeds 1 and 2
(B = 32, b = 3, lam = 0.5; 80 shopping / 60 travel tasks each): paired hypermcts - uct with
guidance +13.3 points on travel (mean of +20.0 and +6.7) and -1.2 on shopping, without it +2.5
and +1.2; lam = 1.0 was no better than 0.5 (shopping seed 1, travel seed 2). The same dev runs
favour ``branch_on="all"`` with guidance on shopping (+6.9 points, and higher absolute accuracy
for both methods: HyperMCTS 0.30 / 0.39 vs 0.11 / 0.21 with "commit"), so both modes are
reported on the test seeds (docs/benchmarks.md).

2026-11-30, later (progressive widening): ``widen = 0.25`` became the default after
dev seeds 1, 2 and 3 only (60 tasks each, B = 32, b = 3, lam = 0.5, other defaults; pooled
paired hypermcts - uct over the 180 tasks, shopping / travel, points): widen 0 (off) +2.8 /
+14.4, 2 +13.3 / +19.4, 1 +13.3 / +18.3, 0.5 +21.7 / +14.4, 0.25 +20.0 / +22.2, 0.1 +13.9 /
+17.2 (largest sum at 0.25; HyperMCTS 0.511 / 0.811 vs UCT 0.311 / 0.589 there). Ablation at
0.25 with ``widen_prior=False`` (HyperMCTS widens by policy order like UCT): +3.3 / +19.4, so
on shopping the gain comes from the hypergraph choosing the added decision.

2026-12-03 (issue 25, the strongest tree design): the full-path design
(:class:`~hyperplan.search.mcts.TreeDesign`; every rollout step in the tree, the policy's top b
of any kind, no widening, no rollout guidance) became the default after dev seeds 11-12 (100
tasks each, B = 32, b = 3): its UCT reaches 0.735 / 0.810 / 0.390 on shopping / travel / qa
against 0.310 / 0.610 / 0.330 for UCT in the commit-widen design, and is the strongest plain
MCTS measured here (LATS-style: 0.510 / 0.635 / 0.365). The evidence widening
(``evidence_widening``) and the composed rollouts (``compose_every``) were adopted on the same
seeds and checked on seeds 13-14, and later the evidence pruning (``evidence_pruning``: +1.0 /
+10.0 / +13.5 points on shopping / travel / qa over the default before it on seeds 11-12, and
+1.0 / +10.5 / +14.5 on seeds 13-14), and on 2026-12-05 free decisions last (``free_last``:
+6.0 / 0.0 / 0.0 on seeds 11-12 and +5.5 on shopping seeds 13-14), and ending decisions last
(``ending_last``, at every lam: HyperMCTS +2.5 / 0.0 / +21.5 on seeds 11-12 and -2.5 / 0.0 /
+18.5 on 13-14, UCT within 1.5 points of its own default) and the evidence widening three
wide (``evidence_width``: +2.0 / -0.5 / +1.5 on seeds 11-12, +5.5 / -0.5 / 0.0 on 13-14); the
other uses of the hypergraph that were tried there did not help and are written up in
docs/benchmarks.md, "The strongest tree design", "Evidence pruning", "Scored picks", "Free
decisions last", "Product combinations on shopping", "Ending decisions last" and "Evidence
widening for the parts still open".
"""

from __future__ import annotations

import importlib
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from time import perf_counter
from typing import Any

from hyperplan.search import compiled_core
from hyperplan.search.baselines import beam, best_of_n, greedy, uct
from hyperplan.search.env import SearchEnv
from hyperplan.search.flare import flare, flare_split
from hyperplan.search.lats import lats
from hyperplan.search.mcts import HyperMCTS, MCTSConfig, SearchResult
from hyperplan.search.policies import Policy, make_policy
from hyperplan.search.reflexion import cot, reflexion
from hyperplan.search.tot import tot

DEV_SEEDS = range(0, 1000)
"""Seeds reserved for choosing c, lambda and Agg; report results on other seeds."""

METHODS = ("hypermcts", "uct", "best_of_n", "greedy", "beam", "lats")
"""The methods ``search run`` runs by default."""

ALL_METHODS = (*METHODS, "flare", "flare_split", "tot", "reflexion", "cot")
"""Every method :data:`METHOD_FUNCS` knows: the defaults and the other baselines of the
HyperMCTS paper (FLARE, ToT, Reflexion, CoT), which ``search run --methods`` and
``search figure`` name."""

Method = Callable[[SearchEnv, Policy, MCTSConfig, int], SearchResult]


def _hypermcts(env: SearchEnv, policy: Policy, config: MCTSConfig, seed: int) -> SearchResult:
    return HyperMCTS(env, policy, config, seed).run()


METHOD_FUNCS: Mapping[str, Method] = {
    "hypermcts": _hypermcts,
    "uct": uct,
    "best_of_n": best_of_n,
    "greedy": greedy,
    "beam": beam,
    "lats": lats,
    "flare": flare,
    "flare_split": flare_split,
    "tot": tot,
    "reflexion": reflexion,
    "cot": cot,
}

_SCORE_KEYS = ("score", "match_score", "composite_score", "comp_score")


def task_seed(seed: int, index: int) -> int:
    return seed * 1_000_003 + index


def load_tasks(suite: str, n: int, seed: int, level: int | None = None) -> list[SearchEnv]:
    """``toy`` is built in (:mod:`hyperplan_bench.eval.treesearch.toy`); every other suite comes
    from
    :func:`hyperplan_bench.eval.treesearch.suites.make_tasks`, imported lazily."""
    if suite == "toy":
        from hyperplan_bench.eval.treesearch.toy import make_toy_tasks

        return list(make_toy_tasks(n, seed, level))
    suites = importlib.import_module("hyperplan_bench.eval.treesearch.suites")  # lazy
    return list(suites.make_tasks(suite, n, seed, level))


def score_of(result: SearchResult) -> float:
    metrics = result.verdict.metrics
    for key in _SCORE_KEYS:
        if key in metrics:
            return float(metrics[key])
    return result.verdict.reward


def wilson(successes: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval for a proportion."""
    if n == 0:
        return (0.0, 0.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def paired_diff(a: Sequence[float], b: Sequence[float], z: float = 1.96) -> dict[str, Any]:
    """Mean of a_i - b_i with a normal-approximation 95% interval (sd / sqrt(n))."""
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    n = len(diffs)
    if n == 0:
        return {"diff": 0.0, "ci95": [0.0, 0.0], "n": 0}
    mean = sum(diffs) / n
    sd = statistics.stdev(diffs) if n > 1 else 0.0
    half = z * sd / math.sqrt(n)
    return {"diff": mean, "ci95": [mean - half, mean + half], "n": n,
            "wins": sum(d > 0 for d in diffs), "losses": sum(d < 0 for d in diffs)}


@dataclass
class MethodRuns:
    results: list[SearchResult]

    def summary(self) -> dict[str, Any]:
        n = len(self.results)
        successes = [float(r.success) for r in self.results]
        lo, hi = wilson(sum(successes), n)
        return {
            "case_acc": sum(successes) / n if n else 0.0,
            "ci95": [lo, hi],
            "score": statistics.fmean(score_of(r) for r in self.results) if n else 0.0,
            "rollouts": statistics.fmean(r.rollouts for r in self.results) if n else 0.0,
            # median over tasks: robust to scheduler spikes on a shared machine
            "us_per_iter": statistics.median(r.us_per_iter for r in self.results) if n else 0.0,
            "us_per_iter_mean": statistics.fmean(r.us_per_iter for r in self.results)
            if n else 0.0,
            "failures": sum(r.failures for r in self.results),
            # cost as the HyperMCTS paper reports it (Figure 3): per case, what a model policy
            # would be asked and the evaluated rollouts
            "policy_calls_per_case": statistics.fmean(r.policy_calls for r in self.results)
            if n else 0.0,
            "rollouts_per_case": statistics.fmean(r.rollouts for r in self.results)
            if n else 0.0,
            **_notes(self.results),
        }


def _notes(results: Sequence[SearchResult]) -> dict[str, str]:
    """Method-specific remarks (``SearchResult.notes``), each value once (distinct values
    joined by "; ")."""
    keys = sorted({k for r in results for k in r.notes})
    return {k: "; ".join(sorted({r.notes[k] for r in results if k in r.notes})) for k in keys}


Progress = Callable[[str, int, int], None]


def evaluate(
    tasks: Sequence[SearchEnv],
    config: MCTSConfig,
    *,
    policy: str | Callable[[], Policy] = "heuristic",
    seed: int = 0,
    methods: Sequence[str] = METHODS,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run ``methods`` on every task; the JSON-ready benchmark object (module doc)."""
    started = perf_counter()
    if isinstance(policy, str):
        policy_name = policy

        def make() -> Policy:
            return make_policy(policy_name)
    else:
        make = policy
    runs: dict[str, list[SearchResult]] = {m: [] for m in methods}
    total = len(tasks) * len(methods)
    done = 0
    for i, env in enumerate(tasks):
        for name in methods:
            runs[name].append(METHOD_FUNCS[name](env, make(), config, task_seed(seed, i)))
            done += 1
            if progress is not None:
                progress(f"{name} task {i + 1}/{len(tasks)}", done, total)
    out: dict[str, Any] = {
        "n_tasks": len(tasks),
        "budget": config.budget,
        "branching": config.branching,
        "lam": config.lam,
        "c": config.c,
        "agg": config.agg,
        "methods": {name: MethodRuns(rs).summary() for name, rs in runs.items()},
        "compiled": compiled_core(),  # which build timed us_per_iter (setup.py)
    }
    if "hypermcts" in runs and "uct" in runs:
        h = [float(r.success) for r in runs["hypermcts"]]
        u = [float(r.success) for r in runs["uct"]]
        out["paired"] = {"hypermcts_minus_uct": paired_diff(h, u)}
    if "hypermcts" in runs:  # and against every other baseline (added keys)
        h = [float(r.success) for r in runs["hypermcts"]]
        for name in (m for m in runs if m not in {"hypermcts", "uct"}):
            other = [float(r.success) for r in runs[name]]
            out.setdefault("paired", {})[f"hypermcts_minus_{name}"] = paired_diff(h, other)
    out["seconds"] = perf_counter() - started
    return out


def sweep(
    tasks: Sequence[SearchEnv],
    config: MCTSConfig,
    budgets: Sequence[int],
    lams: Sequence[float],
    *,
    policy: str = "heuristic",
    seed: int = 0,
    progress: Progress | None = None,
    methods: Sequence[str] = (),
) -> dict[str, Any]:
    """HyperMCTS case accuracy on a (budget x lambda) grid (lambda = 0 is UCT), plus
    best-of-N per budget as a reference line, plus each of ``methods`` (other baselines of
    :data:`METHODS`, at ``config``) per budget: accuracy against budget for every method, with
    its cost (``policy_calls_per_case``) in every row."""
    grid: list[dict[str, Any]] = []
    total = len(budgets) * (len(lams) + 1 + len(methods))
    done = 0
    for budget in budgets:
        for lam in [*lams, None]:
            if lam is None:
                cfg = replace(config, budget=budget)
                result = evaluate(tasks, cfg, policy=policy, seed=seed, methods=["best_of_n"])
                summary = result["methods"]["best_of_n"]
                grid.append({"budget": budget, "method": "best_of_n", "lam": None, **summary})
            else:
                cfg = replace(config, budget=budget, lam=lam, hypergraph=lam > 0,
                              rollout_guidance=config.rollout_guidance and lam > 0)
                result = evaluate(tasks, cfg, policy=policy, seed=seed, methods=["hypermcts"])
                summary = result["methods"]["hypermcts"]
                grid.append({"budget": budget, "method": "hypermcts", "lam": lam, **summary})
            done += 1
            if progress is not None:
                progress(f"budget {budget}", done, total)
        for name in methods:
            result = evaluate(tasks, replace(config, budget=budget), policy=policy, seed=seed,
                              methods=[name])
            grid.append({"budget": budget, "method": name, "lam": None,
                         **result["methods"][name]})
            done += 1
            if progress is not None:
                progress(f"budget {budget} {name}", done, total)
    return {"n_tasks": len(tasks), "branching": config.branching, "c": config.c,
            "agg": config.agg, "budgets": list(budgets), "lams": list(lams), "grid": grid,
            "methods": list(methods)}


def _cell(grid: Sequence[Mapping[str, Any]], budget: int, lam: float | None,
          method: str) -> Mapping[str, Any]:
    """The sweep row of one budget and one lambda (HyperMCTS) or one method (lam None)."""
    return next(g for g in grid if g["budget"] == budget and g["lam"] == lam
                and (lam is not None or g["method"] == method))


def sweep_table(result: Mapping[str, Any]) -> str:
    """The sweep as a Markdown table: rows = budgets, columns = lambda values, best-of-N and
    the other methods swept."""
    lams, extra = result["lams"], list(result.get("methods", ()))
    header = ("| budget | " + " | ".join(f"λ={lam:g}" for lam in lams) + " | best-of-N |"
              + "".join(f" {m} |" for m in extra))
    sep = "|---:|" + "---:|" * (len(lams) + 1 + len(extra))
    rows = [header, sep]
    columns = [(lam, "hypermcts") for lam in lams] + [(None, m) for m in ["best_of_n", *extra]]
    for budget in result["budgets"]:
        cells = [f"{100 * _cell(result['grid'], budget, lam, m)['case_acc']:.1f}"
                 for lam, m in columns]
        rows.append(f"| {budget} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _series(result: Mapping[str, Any]) -> list[tuple[str, list[Mapping[str, Any]], str]]:
    """One (label, rows in budget order, line style) per curve of the sweep: each lambda of
    HyperMCTS (0 = UCT), best-of-N, then each other method swept."""
    grid = result["grid"]
    out: list[tuple[str, list[Mapping[str, Any]], str]] = []
    named = "HyperMCTS " if result.get("methods") else ""  # beside other methods: say whose
    for lam in result["lams"]:
        label = "UCT (λ=0)" if lam == 0 else f"{named}λ={lam:g}"
        out.append((label, [g for g in grid if g["lam"] == lam], "-"))
    for name in ["best_of_n", *result.get("methods", ())]:
        label = "best-of-N" if name == "best_of_n" else name
        out.append((label, [g for g in grid if g["lam"] is None and g["method"] == name], "--"))
    return out


def _plot_lines(ax: Any, series: Sequence[tuple[str, Sequence[Mapping[str, Any]], str]],
                x_key: str) -> None:
    """Case accuracy (%) against ``x_key`` of the rows, one line per series."""
    for label, rows, style in series:
        ax.plot([g[x_key] for g in rows], [100 * g["case_acc"] for g in rows], marker="o",
                label=label, linestyle=style)
    ax.set_ylabel("case accuracy (%)")
    ax.legend(fontsize=8)


def sweep_plot(result: Mapping[str, Any], path: str, title: str = "") -> None:
    """Case accuracy vs budget (one line per lambda and per method) and vs lambda (one line per
    budget); with other methods swept, a third panel: case accuracy vs policy calls per case
    (the HyperMCTS paper's cost comparison, Figure 3)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise RuntimeError(
            "plotting needs matplotlib: pip install 'hyperplan[plot]'"
        ) from exc
    grid, series = result["grid"], _series(result)
    cost = bool(result.get("methods"))
    fig, axes = plt.subplots(1, 3 if cost else 2, figsize=(15 if cost else 10, 4))
    ax1, ax2 = axes[0], axes[1]
    _plot_lines(ax1, series, "budget")
    ax1.set_xscale("log", base=2)
    ax1.set_xlabel("rollout budget B")
    for budget in result["budgets"]:
        pts = [(g["lam"], 100 * g["case_acc"]) for g in grid
               if g["budget"] == budget and g["lam"] is not None]
        ax2.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"B={budget}")
    ax2.set_xlabel("λ (hypergraph weight)")
    ax2.set_ylabel("case accuracy (%)")
    ax2.legend(fontsize=8)
    if cost:
        _plot_lines(axes[2], series, "policy_calls_per_case")
        axes[2].set_xscale("log")
        axes[2].xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        axes[2].set_xlabel("policy calls per case")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
