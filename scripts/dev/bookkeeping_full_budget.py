"""Bookkeeping µs per iteration with every task run to its whole budget (no early stop), so
that a search that stops sooner is not charged for its costlier first iterations: HyperMCTS
with and without the evidence pruning, and UCT, on the tasks and seeds of ``hyperplan search
bench --suite S --tasks 20 --seed 1 --iterations 32`` (minimum of three runs per task; median
and mean over tasks). Pure-Python install (docs/benchmarks.md, "Evidence pruning").

    python scripts/dev/bookkeeping_full_budget.py
"""

from __future__ import annotations

import statistics

from hyperplan.search.baselines import uct
from hyperplan.search.common import SearchResult
from hyperplan.search.env import SearchEnv
from hyperplan.search.mcts import HyperMCTS, MCTSConfig
from hyperplan.search.policies import make_policy
from hyperplan_bench.eval.treesearch.runner import load_tasks, task_seed

CONFIGS = {
    "hypermcts": MCTSConfig(early_stop=False),
    "hypermcts, no pruning": MCTSConfig(early_stop=False, evidence_pruning=False),
    "uct": MCTSConfig(early_stop=False, lam=0.0),
}


def _run(name: str, env: SearchEnv, seed: int) -> SearchResult:
    config = CONFIGS[name]
    if name == "uct":
        return uct(env, make_policy("heuristic"), config, seed)
    return HyperMCTS(env, make_policy("heuristic"), config, seed).run()


def main() -> None:
    for suite in ("shopping", "travel"):
        envs = load_tasks(suite, 20, 1)
        for name in CONFIGS:
            per_task = [min(_run(name, env, task_seed(1, i)).us_per_iter for _ in range(3))
                        for i, env in enumerate(envs)]
            print(f"{suite:9s} {name:22s} median {statistics.median(per_task):6.0f} "
                  f"mean {statistics.fmean(per_task):6.0f}", flush=True)


if __name__ == "__main__":
    main()
