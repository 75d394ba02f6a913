"""A ToT-style baseline: Tree of Thoughts with breadth-first search (Yao et al., 2023, "Tree of
Thoughts: Deliberate Problem Solving with Large Language Models", Section 3, ToT-BFS), one of
the structured test-time-scaling methods the HyperMCTS paper compares with (its Experiments,
"Baselines").

Breadth-first over decisions, the policy's values deciding what survives:

1. **Thought generation** -- every history on the frontier is extended by the policy's b
   proposals (ToT's ``k`` samples per state).
2. **State evaluation** -- each new child is scored by the value function: the policy's value
   of the action that reached it (:meth:`~hyperplan.search.timing.TimedPolicy.value`, the
   environment's hint, one policy call per child, as LATS' evaluation step). A child's value
   is the mean of its path's values, so children of different parents compare on the whole
   partial plan (ToT's evaluator reads the whole state).
3. **Selection** -- the ``width`` best children (default b, ToT's breadth limit) form the
   next frontier (ties in frontier and proposal order).

A child that is terminal (no decisions, a terminal history or the horizon H) is verified
there: it is an evaluated trajectory, counted against the budget B like every method's
(:class:`~hyperplan.search.common.SearchBase`), and leaves the frontier. The search ends when
the frontier is empty or the budget is spent; the answer is the best evaluated trajectory.

What it shares with :func:`~hyperplan.search.baselines.beam`: the frontier of ``width``
histories (:class:`~hyperplan.search.baselines.BeamEntry`), each extended by the policy's b
proposals, the best ``width`` children kept, the best evaluated trajectory returned. What
differs: beam scores every child by a rollout to the end (an evaluated trajectory each, so it
spends B fast), ToT by the value function without a rollout (so only finished histories are
verified, and its cost is value calls rather than rollouts).
"""

from __future__ import annotations

from time import perf_counter

from hyperplan.search.baselines import BeamEntry
from hyperplan.search.common import FAILED, SearchBase, SearchResult
from hyperplan.search.config import MCTSConfig
from hyperplan.search.env import SearchEnv
from hyperplan.search.policies import Policy

__all__ = ["ToT", "tot"]


class ToT(SearchBase):
    """The ToT-BFS search (module doc). After :meth:`run`, ``levels`` is the number of BFS
    levels expanded."""

    method = "tot"

    def __init__(self, env: SearchEnv, policy: Policy, config: MCTSConfig, seed: int = 0,
                 width: int | None = None) -> None:
        super().__init__(env, policy, config, seed)
        self.method = "tot"  # on the instance: the compiled base reads no subclass attribute
        self.width = width or config.branching
        if self.width < 1:
            raise ValueError("width must be at least 1")
        self.levels = 0

    def _finish(self, entry: BeamEntry) -> None:
        """Verify a finished history (the environment is at it): one evaluated trajectory."""
        try:
            verdict = self.env.verify()
        except Exception:  # a failed verification is data, not an error
            self.failures += 1
            verdict = FAILED
        self.record(entry.actions, verdict)

    def expand(self, entry: BeamEntry, value: float,
               scored: list[tuple[float, int, BeamEntry, float]]) -> None:
        """Steps 1-2 for one frontier history (its path's value sum ``value``): its valued
        children go to ``scored`` as (-mean value, order, child, value sum); a finished child
        is verified instead."""
        self.env.restore(entry.snapshot)
        decisions = self._decisions()
        if not decisions or entry.depth >= self.horizon:
            self._finish(entry)
            return
        for action in self._propose(decisions, self.config.branching):
            if self.exhausted:
                return
            self.env.restore(entry.snapshot)
            v = value + self.policy.value(self.env, action)
            actions = [*entry.actions, action]
            try:
                self.env.step(action)
            except Exception:  # a failed step is a failed trajectory
                self.failures += 1
                self.record(actions, FAILED)
                continue
            child = BeamEntry(self.env.snapshot(), actions, entry.depth + 1)
            if child.depth >= self.horizon or not self._decisions():
                self._finish(child)
                continue
            scored.append((-v / child.depth, len(scored), child, v))

    def run(self) -> SearchResult:
        started = perf_counter()
        self.env.reset()
        frontier = [(BeamEntry(self.env.snapshot(), [], 0), 0.0)]
        while frontier and not self.exhausted:
            scored: list[tuple[float, int, BeamEntry, float]] = []
            for entry, value in frontier:
                if self.exhausted:
                    break
                self.expand(entry, value, scored)
            scored.sort(key=lambda item: (item[0], item[1]))  # best first, ties in order
            frontier = [(child, v) for _, _, child, v in scored[: self.width]]
            self.levels += 1
        return self.result(started)


def tot(env: SearchEnv, policy: Policy, config: MCTSConfig, seed: int = 0,
        width: int | None = None) -> SearchResult:
    """Run the ToT-BFS baseline on one environment (module doc)."""
    return ToT(env, policy, config, seed, width).run()
