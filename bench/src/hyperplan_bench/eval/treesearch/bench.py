"""Bookkeeping overhead of HyperMCTS: microseconds per iteration, policy and environment time
excluded (target: <= 50 us, docs/benchmarks.md).

Suites: ``toy`` (the synthetic :class:`~hyperplan_bench.eval.treesearch.toy.ToyShopEnv` with a
random policy, no early stop, so every run uses the whole budget) and the generated ``shopping`` and
``travel`` suites with the heuristic policy (the ``hyperplan eval mcts`` setting: early stop
on a verified perfect plan). Per task the search runs ``repeat`` times with the same seed --
the same iterations each time, the search being deterministic -- and the task's figure is the
minimum over the repeats (as :mod:`timeit` advises: scheduler noise only ever adds time); the
report gives the median and mean over tasks. Times are wall-clock (``perf_counter``), so the
load average is reported too: with more runnable processes than cores every number inflates
alike -- compare HyperMCTS with the UCT line of the same run. ``compiled`` says which build of
the search core ran (``HYPERPLAN_COMPILE=1 pip install .``, see setup.py).

``isolate`` measures the search's own work with warm caches instead: per task one run is
recorded and the ``repeat`` timed runs replay its environment and policy answers from the log
(:mod:`hyperplan_bench.eval.treesearch.replay`; the replayed runs must take the recorded decisions).
In situ, the bookkeeping between environment and policy calls runs with caches those calls have
just filled with their own data; the gap between the two figures is that effect."""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from hyperplan.search import compiled_core
from hyperplan.search.baselines import uct
from hyperplan.search.common import SearchResult
from hyperplan.search.env import SearchEnv
from hyperplan.search.mcts import HyperMCTS, MCTSConfig
from hyperplan.search.policies import Policy, RandomPolicy, make_policy
from hyperplan_bench.eval.treesearch.replay import Recorder, ReplayError, replay_env, replay_policy
from hyperplan_bench.eval.treesearch.toy import ToyShopEnv

Run = Callable[[SearchEnv, Policy, MCTSConfig, int], SearchResult]

BENCH_SUITES = ("toy", "shopping", "travel")


def _tasks(suite: str, tasks: int, seed: int, n_items: int, n_products: int) -> list[SearchEnv]:
    if suite == "toy":
        return [ToyShopEnv(i, n_items, n_products) for i in range(tasks)]
    if suite not in BENCH_SUITES:
        raise ValueError(f"unknown bench suite {suite!r}; choose one of {BENCH_SUITES}")
    from hyperplan_bench.eval.treesearch.runner import load_tasks

    return load_tasks(suite, tasks, seed)


def _per_task(
    run: Run, envs: list[SearchEnv], policy: Callable[[], Policy], config: MCTSConfig,
    seeds: list[int], repeat: int, isolate: bool = False,
) -> list[float]:
    if isolate:
        return [_isolated(run, env, policy(), config, s, repeat)
                for env, s in zip(envs, seeds, strict=True)]
    return [min(run(env, policy(), config, s).us_per_iter for _ in range(repeat))
            for env, s in zip(envs, seeds, strict=True)]


def _isolated(run: Run, env: SearchEnv, policy: Policy, config: MCTSConfig, seed: int,
              repeat: int) -> float:
    """The minimum us/iteration of ``repeat`` replays of one recorded run (module doc)."""
    recorder = Recorder(env, policy)
    recorded = run(*recorder.wrapped(), config, seed)
    keys = [a.key for a in recorded.actions]
    best = float("inf")
    for _ in range(repeat):
        result = run(replay_env(recorder), replay_policy(recorder), config, seed)
        if [a.key for a in result.actions] != keys or result.rollouts != recorded.rollouts:
            raise ReplayError("the replayed search took other decisions than the recorded run")
        best = min(best, result.us_per_iter)
    return best


def bench_bookkeeping(
    tasks: int = 20,
    budget: int = 256,
    branching: int = 3,
    n_items: int = 5,
    n_products: int = 6,
    lam: float = 0.5,
    agg: str = "balanced",
    widen: float | None = None,
    suite: str = "toy",
    seed: int = 1,
    repeat: int = 1,
    isolate: bool = False,
    config: MCTSConfig | None = None,
    design: str = "full-path",
) -> dict[str, Any]:
    """Median and mean us/iteration of HyperMCTS and UCT over ``tasks`` tasks of ``suite``
    (module doc). ``config`` is the tree design's configuration (default: :class:`MCTSConfig`'s,
    the full-path design, named ``design`` in the output); budget, branching, lam, agg and
    early stop are set from the arguments, and ``widen`` (progressive widening) when given.
    ``seed`` picks the generated tasks (shopping, travel) and their search seeds as
    ``hyperplan search run --seed`` does."""
    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    from hyperplan_bench.eval.treesearch.runner import task_seed

    toy = suite == "toy"
    config = replace(config or MCTSConfig(), budget=budget, branching=branching, lam=lam,
                     agg=agg, early_stop=not toy)
    if widen is not None:
        config = replace(config, widen=widen)
    envs = _tasks(suite, tasks, seed, n_items, n_products)
    seeds = list(range(tasks)) if toy else [task_seed(seed, i) for i in range(tasks)]
    policy: Callable[[], Policy] = RandomPolicy if toy else (lambda: make_policy("heuristic"))
    out: dict[str, Any] = {"suite": suite, "tasks": tasks, "budget": budget,
                           "branching": branching, "agg": agg, "design": design,
                           "widen": config.widen,
                           "repeat": repeat, "isolate": isolate}
    if toy:
        out.update(items=n_items, products=n_products)
    else:
        out["seed"] = seed

    def hyper(env: SearchEnv, pol: Policy, cfg: MCTSConfig, s: int) -> SearchResult:
        return HyperMCTS(env, pol, cfg, s).run()

    for name, run in (("hypermcts", hyper), ("uct", uct)):
        per_task = _per_task(run, envs, policy, config, seeds, repeat, isolate)
        out[name] = {"us_per_iter_median": statistics.median(per_task),
                     "us_per_iter_mean": statistics.fmean(per_task)}
    out["compiled"] = compiled_core()
    # wall-clock timings: on a machine with more runnable processes than cores they inflate
    out["loadavg_1min"] = os.getloadavg()[0]
    out["cpus"] = os.cpu_count()
    return out
