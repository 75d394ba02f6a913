"""Tree-search benchmarks (the commands ``hyperplan search ...``, formerly ``hyperplan eval
mcts*``): the generated and DeepPlanning suites (:mod:`~hyperplan_bench.eval.treesearch.suites`),
the
toy environment, the benchmark runner and sweeps, the HyperMCTS paper's cost comparison
(:mod:`~hyperplan_bench.eval.treesearch.figure`), the bookkeeping bench with its record/replay
isolation, and the side-by-side bridge to llm-reasoners' MCTS. The algorithm they measure is
:mod:`hyperplan.search`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hyperplan._lazy import lazy_exports

if TYPE_CHECKING:
    from hyperplan_bench.eval.treesearch.bench import bench_bookkeeping
    from hyperplan_bench.eval.treesearch.figure import figure_suite
    from hyperplan_bench.eval.treesearch.runner import evaluate, load_tasks, sweep
    from hyperplan_bench.eval.treesearch.toy import ToyShopEnv

_EXPORTS = {
    "ToyShopEnv": "toy", "bench_bookkeeping": "bench", "evaluate": "runner",
    "figure_suite": "figure",
    "load_tasks": "runner", "sweep": "runner",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = ["ToyShopEnv", "bench_bookkeeping", "evaluate", "figure_suite", "load_tasks",
           "sweep"]
