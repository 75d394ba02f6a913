"""Bookkeeping overhead of HyperMCTS: microseconds per iteration, policy and environment time
excluded (issue 5 target: <= 50 us), on the synthetic :class:`~hyperplan.search.toy.ToyShopEnv`
whose steps cost next to nothing. Times are wall-clock (``perf_counter``), so the load average
is reported too: with more runnable processes than cores every number inflates alike -- compare
HyperMCTS with the UCT line of the same run."""

from __future__ import annotations

import os
import statistics
from dataclasses import replace
from typing import Any

from hyperplan.search.baselines import uct
from hyperplan.search.mcts import HyperMCTS, MCTSConfig
from hyperplan.search.policies import RandomPolicy
from hyperplan.search.toy import ToyShopEnv


def bench_bookkeeping(
    tasks: int = 20,
    budget: int = 256,
    branching: int = 3,
    n_items: int = 5,
    n_products: int = 6,
    lam: float = 0.5,
    agg: str = "balanced",
    widen: float | None = None,
) -> dict[str, Any]:
    """Median and mean us/iteration of HyperMCTS and UCT over ``tasks`` synthetic tasks (no
    early stop, so every run uses the full budget). ``widen`` (progressive widening) defaults
    to :class:`MCTSConfig`'s; ``widen=0`` measures Algorithm 1's fixed-width tree."""
    config = MCTSConfig(budget=budget, branching=branching, lam=lam, agg=agg, early_stop=False)
    if widen is not None:
        config = replace(config, widen=widen)
    out: dict[str, Any] = {"tasks": tasks, "budget": budget, "branching": branching,
                           "items": n_items, "products": n_products, "agg": agg,
                           "widen": config.widen}
    for name in ("hypermcts", "uct"):
        per_task: list[float] = []
        for i in range(tasks):
            env = ToyShopEnv(i, n_items, n_products)
            if name == "uct":
                result = uct(env, RandomPolicy(), config, seed=i)
            else:
                result = HyperMCTS(env, RandomPolicy(), config, seed=i).run()
            per_task.append(result.us_per_iter)
        out[name] = {"us_per_iter_median": statistics.median(per_task),
                     "us_per_iter_mean": statistics.fmean(per_task)}
    # wall-clock timings: on a machine with more runnable processes than cores they inflate
    out["loadavg_1min"] = os.getloadavg()[0]
    out["cpus"] = os.cpu_count()
    return out
