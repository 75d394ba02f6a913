"""LATS-style policy calls split into value requests (one per new child, the evaluation
step) and the rest (proposals, rollout choices), on the runner's tasks and task seeds
(docs/benchmarks.md, "Scored picks"): what LATS would cost if its value function read the
proposal's scores, as the searches' scored picks do.

    python scripts/dev/lats_value_calls.py SUITE SEED TASKS
"""

from __future__ import annotations

import sys

from hyperplan.search.lats import LATS
from hyperplan.search.mcts import MCTSConfig
from hyperplan.search.policies import make_policy
from hyperplan_bench.eval.treesearch.runner import load_tasks, task_seed


class CountedLATS(LATS):
    """LATS counting its value requests."""

    value_calls = 0

    def value(self, action):  # type: ignore[no-untyped-def]
        self.value_calls += 1
        return super().value(action)


def main(suite: str, seed: int, n: int) -> None:
    total = values = 0
    for i, env in enumerate(load_tasks(suite, n, seed)):
        search = CountedLATS(env, make_policy("heuristic"), MCTSConfig(), task_seed(seed, i))
        total += search.run().policy_calls
        values += search.value_calls
    print(f"{suite} seed {seed}: LATS policy calls per case {total / n:.0f}, of which value "
          f"requests {values / n:.0f}; without them {(total - values) / n:.0f}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
