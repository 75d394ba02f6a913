"""Search suites with verifiers, modelled on DeepPlanning (HyperMCTS paper, Benchmarks).

* :mod:`.shopping` -- generated shopping tasks (items with attribute requirements, near-miss
  decoys, coupons, one coupled budget);
* :mod:`.travel` -- generated multi-day itineraries (transport, hotel, attractions, meals under
  time windows, opening hours and a budget; commonsense and personalised scores);
* :mod:`.qa` -- generated question answering over noisy evidence, modelled on SealQA (search
  results and documents that conflict, are stale or are decoys; answer or abstain, half credit
  for abstention); :mod:`.sealqa` reads SealQA's own records when a user has them;
* :mod:`.deepplanning` -- an adapter that runs the real DeepPlanning shopping cases when the
  database has been downloaded.

:func:`make_tasks` builds ``n`` environments for a suite, deterministically per seed. Every
environment also offers ``spec()`` (a JSON-serialisable task description) and
``gold_actions()`` (the generator's hidden gold plan; the verifier and ``hint`` never read it).
"""

from __future__ import annotations

from hyperplan.errors import HyperplanError
from hyperplan.search.env import SearchEnv
from hyperplan_bench.eval.treesearch.suites.qa import QAEnv
from hyperplan_bench.eval.treesearch.suites.qa_generator import generate_qa_task
from hyperplan_bench.eval.treesearch.suites.shopping import ShoppingEnv, generate_shopping_task
from hyperplan_bench.eval.treesearch.suites.travel import TravelEnv, generate_travel_task

SUITES = ("shopping", "travel", "qa")
LEVELS = (1, 2, 3)

__all__ = ["LEVELS", "SUITES", "QAEnv", "ShoppingEnv", "TravelEnv", "make_tasks", "task_seed"]


def task_seed(seed: int, index: int) -> int:
    """The generator seed of task ``index`` in a batch drawn with ``seed``."""
    return seed * 100_003 + index


def make_tasks(suite: str, n: int, seed: int, level: int | None = None) -> list[SearchEnv]:
    """``n`` task environments of ``suite``. ``level`` None cycles 1, 2, 3, 1, ... by task
    index. The same ``(suite, n, seed, level)`` always gives identical tasks, and task ``i`` is
    the same whatever ``n`` is."""
    if suite not in SUITES:
        raise HyperplanError(f"unknown suite {suite!r}; known suites: {', '.join(SUITES)}")
    if level is not None and level not in LEVELS:
        raise HyperplanError(f"unknown level {level!r}; levels are 1, 2 and 3")
    if n < 0:
        raise HyperplanError(f"the number of tasks must be >= 0, not {n}")
    envs: list[SearchEnv] = []
    for i in range(n):
        lvl = level if level is not None else LEVELS[i % len(LEVELS)]
        if suite == "shopping":
            envs.append(ShoppingEnv(generate_shopping_task(task_seed(seed, i), lvl)))
        elif suite == "qa":
            envs.append(QAEnv(generate_qa_task(task_seed(seed, i), lvl)))
        else:
            envs.append(TravelEnv(generate_travel_task(task_seed(seed, i), lvl)))
    return envs
