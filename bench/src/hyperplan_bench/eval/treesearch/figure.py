"""The HyperMCTS paper's cost comparison (its Figure 3): Case Accuracy against the cost per
case of the MCTS-family methods at several branching factors b, with the other baselines as
rows (``hyperplan search figure``).

Methods (:data:`FIGURE_METHODS`):

* the MCTS family the paper plots -- HyperMCTS, RAP (llm-reasoners' MCTS through
  :mod:`~hyperplan_bench.eval.treesearch.reasoners_bridge`; skipped, and the result says so, when
  the
  optional package ``reasoners`` is not installed), the LATS-style search and FLARE
  (:mod:`hyperplan.search.flare`, a full MCTS per committed decision);
* other structured methods that depend on b -- UCT (our plain MCTS), FLARE with B in all
  (``flare_split``) and ToT-BFS (:mod:`hyperplan.search.tot`);
* the unstructured ones, which do not depend on b and run once -- CoT and Reflexion
  (:mod:`hyperplan.search.reflexion`).

Every method runs on the same tasks with the same per-task seed (``task_seed``, as
:func:`~hyperplan_bench.eval.treesearch.runner.evaluate`), the same rollout budget B and a fresh
policy per run. Cost per case: ``policy_calls_per_case`` (every proposal, rollout choice, value
request and reflection: what a model policy is asked) and, with a model policy, the output
(completion) tokens per case: each method then gets its own policy factory (no answer cache
shared with another method, so one method's answers never make another's free) and its tokens
are the difference of the client's totals around its run. Paired 95% intervals
(:func:`~hyperplan_bench.eval.treesearch.runner.paired_diff`, on the per-task successes): HyperMCTS
against each method at the same b, and HyperMCTS at each b against each method at the largest
b (the paper's "HyperMCTS at b = 3 is more accurate and less costly than every baseline at
b = 6").
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from time import perf_counter
from typing import Any

from hyperplan.search.common import SearchResult
from hyperplan.search.config import MCTSConfig
from hyperplan.search.env import SearchEnv
from hyperplan.search.policies import Policy
from hyperplan_bench.eval.treesearch.runner import METHOD_FUNCS, MethodRuns, Progress, paired_diff
from hyperplan_bench.eval.treesearch.runner import task_seed as run_seed

MCTS_FAMILY = ("hypermcts", "rap", "lats", "flare")
"""The methods the paper's Figure 3 plots."""

BY_BRANCHING = (*MCTS_FAMILY, "uct", "flare_split", "tot")
"""The methods run at every b."""

UNSTRUCTURED = ("cot", "reflexion")
"""The methods that do not depend on b (run once)."""

FIGURE_METHODS = (*BY_BRANCHING, *UNSTRUCTURED)

LABELS = {"hypermcts": "HyperMCTS", "rap": "RAP (llm-reasoners)", "lats": "LATS",
          "flare": "FLARE", "uct": "UCT", "flare_split": "FLARE (B in all)", "tot": "ToT",
          "cot": "CoT", "reflexion": "Reflexion"}

Method = Callable[[SearchEnv, Policy, MCTSConfig, int], SearchResult]


def rap_available() -> bool:
    """Whether llm-reasoners (package ``reasoners``) is installed, without importing it (its
    import loads torch)."""
    return importlib.util.find_spec("reasoners") is not None


def method_func(name: str) -> Method:
    """The run function of a figure method (RAP imported lazily)."""
    if name == "rap":
        from hyperplan_bench.eval.treesearch.reasoners_bridge import reasoners_mcts

        return reasoners_mcts
    return METHOD_FUNCS[name]


@dataclass
class PolicySource:
    """Where each method's policies come from: ``fresh()`` gives a policy maker for one
    method's run (a model policy: a new factory, its own answer cache), ``usage()`` the model
    client's running totals (empty for policies without a model)."""

    fresh: Callable[[], Callable[[], Policy]]
    usage: Callable[[], Mapping[str, float]]


def _cost(before: Mapping[str, float], after: Mapping[str, float], n: int) -> dict[str, float]:
    """The model usage of one method's run, per case."""
    if not before or not n:
        return {}
    return {f"{key}_per_case": (after[key] - before[key]) / n for key in after}


def run_method(name: str, tasks: Sequence[SearchEnv], config: MCTSConfig, seed: int,
               source: PolicySource) -> tuple[list[SearchResult], dict[str, float]]:
    """One method on every task (per-task seeds as ``evaluate``); its results and model
    usage per case."""
    func, make = method_func(name), source.fresh()
    before = dict(source.usage())
    results = [func(env, make(), config, run_seed(seed, i)) for i, env in enumerate(tasks)]
    return results, _cost(before, source.usage(), len(tasks))


def _row(name: str, b: int | None, results: list[SearchResult],
         usage: Mapping[str, float]) -> dict[str, Any]:
    return {"method": name, "b": b, **MethodRuns(results).summary(), **usage}


def _successes(results: Sequence[SearchResult]) -> list[float]:
    return [float(r.success) for r in results]


def figure_suite(
    tasks: Sequence[SearchEnv], config: MCTSConfig, branchings: Sequence[int], *,
    seed: int, source: PolicySource, methods: Sequence[str] = FIGURE_METHODS,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Every method of ``methods`` on ``tasks`` (at each b of ``branchings`` for the methods
    of :data:`BY_BRANCHING`, once for the others) and the paired intervals (module doc)."""
    started = perf_counter()
    skipped: dict[str, str] = {}
    chosen = list(methods)
    if "rap" in chosen and not rap_available():
        chosen.remove("rap")
        skipped["rap"] = ("llm-reasoners is not installed (pip install torch==2.13.0 "
                          "transformers && pip install --no-deps llm-reasoners==1.0.2)")
    runs: dict[tuple[str, int | None], list[SearchResult]] = {}
    rows: list[dict[str, Any]] = []
    jobs: list[tuple[str, int | None]] = [(m, b) for b in branchings for m in chosen
                                          if m in BY_BRANCHING]
    jobs += [(m, None) for m in chosen if m not in BY_BRANCHING]
    for done, (name, b) in enumerate(jobs, 1):
        cfg = replace(config, branching=b) if b is not None else config
        results, usage = run_method(name, tasks, cfg, seed, source)
        runs[(name, b)] = results
        rows.append(_row(name, b, results, usage))
        if progress is not None:
            progress(f"{name} b={b if b is not None else '-'}", done, len(jobs))
    return {"n_tasks": len(tasks), "budget": config.budget, "branchings": list(branchings),
            "rows": rows, "paired": _paired(runs, list(branchings)), "skipped": skipped,
            "seconds": perf_counter() - started}


def _paired(runs: Mapping[tuple[str, int | None], list[SearchResult]],
            branchings: list[int]) -> dict[str, Any]:
    """HyperMCTS - each method at the same b (a method run once: against it at every b), and
    HyperMCTS at each b - each other method at the largest b (and the ones run once)."""
    same: dict[str, dict[str, Any]] = {}
    largest: dict[str, dict[str, Any]] = {}
    top = max(branchings)
    for b in branchings:
        ours = runs.get(("hypermcts", b))
        if ours is None:
            continue
        mine = _successes(ours)
        same[str(b)] = {name: paired_diff(mine, _successes(rs))
                        for (name, at), rs in runs.items()
                        if name != "hypermcts" and at in (b, None)}
        largest[str(b)] = {name: {**paired_diff(mine, _successes(rs)),
                                  "calls_hypermcts": MethodRuns(ours).summary()[
                                      "policy_calls_per_case"],
                                  "calls_other": MethodRuns(rs).summary()[
                                      "policy_calls_per_case"]}
                           for (name, at), rs in runs.items()
                           if name != "hypermcts" and at in (top, None)}
    return {"same_b": same, f"against_b{top}": largest}


def figure_table(suite: str, result: Mapping[str, Any]) -> str:
    """One suite's rows as a Markdown table: method, b, Case Accuracy with its 95% Wilson
    interval, policy calls and rollouts per case (output tokens with a model), and HyperMCTS -
    the method at the same b with its paired 95% interval."""
    tokens = any("completion_tokens_per_case" in r for r in result["rows"])
    head = ("| suite | method | b | Case Acc (95% CI) | calls/case | rollouts/case |"
            + (" out tokens/case |" if tokens else "") + " HyperMCTS − it (95% CI) |")
    lines = [head, "|---|---|---:|---|---:|---:|" + ("---:|" if tokens else "") + "---|"]
    same = result["paired"]["same_b"]
    for row in result["rows"]:
        b = row["b"]
        lo, hi = row["ci95"]
        cells = [suite, LABELS.get(row["method"], row["method"]), "–" if b is None else str(b),
                 f"{100 * row['case_acc']:.1f} ({100 * lo:.1f}–{100 * hi:.1f})",
                 f"{row['policy_calls_per_case']:.0f}", f"{row['rollouts_per_case']:.1f}"]
        if tokens:
            cells.append(f"{row.get('completion_tokens_per_case', 0.0):.0f}")
        cells.append(_diff_cell(same, row["method"], b, result["branchings"]))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _diff_cell(same: Mapping[str, Mapping[str, Any]], name: str, b: int | None,
               branchings: Sequence[int]) -> str:
    if name == "hypermcts":
        return ""
    keys = [str(b)] if b is not None else [str(x) for x in branchings]
    parts = []
    for key in keys:
        d = same.get(key, {}).get(name)
        if d is not None:
            lo, hi = d["ci95"]
            tag = "" if b is not None else f"b={key}: "
            parts.append(f"{tag}{100 * d['diff']:+.1f} ({100 * lo:+.1f}, {100 * hi:+.1f})")
    return "; ".join(parts)


def headline_table(suite: str, result: Mapping[str, Any]) -> str:
    """HyperMCTS at each b against every other method at the largest b: the accuracy
    difference with its paired 95% interval and both methods' policy calls per case."""
    key = next(k for k in result["paired"] if k.startswith("against_b"))
    top = key.removeprefix("against_b")
    lines = [f"| suite | HyperMCTS b | vs (b={top}) | Δ Case Acc (95% CI) | calls HyperMCTS | "
             "calls it |", "|---|---:|---|---|---:|---:|"]
    for b, others in result["paired"][key].items():
        for name, d in others.items():
            lo, hi = d["ci95"]
            lines.append(f"| {suite} | {b} | {LABELS.get(name, name)} | {100 * d['diff']:+.1f} "
                         f"({100 * lo:+.1f}, {100 * hi:+.1f}) | {d['calls_hypermcts']:.0f} | "
                         f"{d['calls_other']:.0f} |")
    return "\n".join(lines)


def _series(result: Mapping[str, Any], x_key: str) -> list[tuple[str, list[tuple[float, float,
                                                                                 int | None]]]]:
    """Per method (figure order), its (cost, Case Accuracy %, b) points in b order."""
    out = []
    for name in FIGURE_METHODS:
        rows = [r for r in result["rows"] if r["method"] == name and x_key in r]
        if rows:
            rows.sort(key=lambda r: r["b"] or 0)
            out.append((name, [(float(r[x_key]), 100 * r["case_acc"], r["b"]) for r in rows]))
    return out


def figure_plot(results: Mapping[str, Mapping[str, Any]], path: str, title: str = "") -> None:
    """Case Accuracy against policy calls per case, one panel per suite (and against output
    tokens per case in a second row when a model ran): a line per method over b (each point
    labelled with its b), the methods run once as single points. Needs matplotlib (the
    ``plot`` extra)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise RuntimeError("plotting needs matplotlib: pip install 'hyperplan[plot]'") from exc
    suites = list(results)
    costs = [("policy_calls_per_case", "policy calls per case")]
    if any("completion_tokens_per_case" in r for res in results.values() for r in res["rows"]):
        costs.append(("completion_tokens_per_case", "output tokens per case"))
    fig, axes = plt.subplots(len(costs), len(suites), squeeze=False,
                             figsize=(5.5 * len(suites) + 1.5, 4.2 * len(costs)))
    for col, suite in enumerate(suites):
        for row, (key, label) in enumerate(costs):
            ax = axes[row][col]
            for name, points in _series(results[suite], key):
                family = name in MCTS_FAMILY
                ax.plot([p[0] for p in points], [p[1] for p in points],
                        marker="o" if family else "s", linestyle="-" if family else ":",
                        linewidth=2 if name == "hypermcts" else 1,
                        label=LABELS.get(name, name))
                for x, y, b in points:
                    if b is not None:
                        ax.annotate(f"b={b}", (x, y), fontsize=6, xytext=(3, 3),
                                    textcoords="offset points")
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.set_xlabel(label)
            ax.set_ylabel("Case Accuracy (%)")
            ax.set_title(f"{suite} ({results[suite]['n_tasks']} tasks)", fontsize=10)
            ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
