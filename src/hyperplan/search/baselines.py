"""Baselines on the same environments, policy and rollout budget as HyperMCTS.

Budget accounting is shared (:class:`~hyperplan.search.mcts.SearchBase`): one unit = one
evaluated trajectory (a verifier call on a finished rollout, failed rollouts included); every
method returns the evaluated trajectory with the best stored reward and stops early on a
verified perfect one.

* :func:`uct` -- HyperMCTS with lambda = 0 and no hypergraph: the same code path, so it differs
  from HyperMCTS only by the hypergraph (the policy's guidance is identical; with progressive
  widening, ``MCTSConfig.widen``, it adds the policy's next proposal where HyperMCTS adds the
  decision with the best prior; with in-tree rollouts, ``MCTSConfig.expand_rollout``, the
  config is passed through, so UCT runs them too).
* :func:`greedy` -- one trajectory taking the policy's first proposal at every step (1 rollout).
* :func:`best_of_n` -- B independent rollouts of the policy from h_0.
* :func:`beam` -- beam search of width w (default b): each beam history is extended by the
  policy's b proposals, each child is scored by one rollout to the end (an evaluated
  trajectory, so it counts against B and can be the answer), the w best children survive;
  when the budget runs out the best evaluated trajectory is returned.
"""

from __future__ import annotations

from dataclasses import replace
from time import perf_counter
from typing import Any, NamedTuple

from hyperplan.search.common import FAILED, SearchBase, SearchResult
from hyperplan.search.env import Action, SearchEnv
from hyperplan.search.mcts import HyperMCTS, MCTSConfig
from hyperplan.search.policies import Policy


def uct(env: SearchEnv, policy: Policy, config: MCTSConfig, seed: int = 0) -> SearchResult:
    """Plain UCT: HyperMCTS with lam = 0 and the hypergraph switched off."""
    search = HyperMCTS(env, policy, replace(config, lam=0.0, hypergraph=False), seed)
    search.method = "uct"
    return search.run()


class _Greedy(SearchBase):
    method = "greedy"

    def run(self) -> SearchResult:
        started = perf_counter()
        actions, verdict = self.follow_top()
        self.record(actions, verdict)
        return self.result(started)


def greedy(env: SearchEnv, policy: Policy, config: MCTSConfig, seed: int = 0) -> SearchResult:
    """One trajectory following the policy's top proposal (uses 1 rollout of the budget)."""
    return _Greedy(env, policy, config, seed).run()


class _BestOfN(SearchBase):
    method = "best_of_n"

    def run(self) -> SearchResult:
        started = perf_counter()
        self.env.reset()
        root = self.env.snapshot()
        while not self.exhausted:
            self.env.restore(root)
            actions: list[Action] = []
            verdict = self.simulate(0, actions, [])
            self.record(actions, verdict)
        return self.result(started)


def best_of_n(
    env: SearchEnv, policy: Policy, config: MCTSConfig, seed: int = 0
) -> SearchResult:
    """B independent policy rollouts from h_0; the best evaluated one."""
    return _BestOfN(env, policy, config, seed).run()


class BeamEntry(NamedTuple):
    """A history on the beam: its snapshot, the actions that reached it, its depth."""

    snapshot: Any
    actions: list[Action]
    depth: int


class _Beam(SearchBase):
    method = "beam"

    def __init__(
        self, env: SearchEnv, policy: Policy, config: MCTSConfig, seed: int, width: int
    ) -> None:
        super().__init__(env, policy, config, seed)
        self.width = width

    def run(self) -> SearchResult:
        started = perf_counter()
        self.env.reset()
        beam = [BeamEntry(self.env.snapshot(), [], 0)]
        while beam and not self.exhausted:
            scored: list[tuple[float, int, BeamEntry]] = []  # (-reward, order, child)
            for snapshot, prefix, depth in beam:
                if self.exhausted or depth >= self.horizon:
                    continue
                self.env.restore(snapshot)
                decisions = self._decisions()
                if not decisions:
                    continue
                for action in self._propose(decisions, self.config.branching):
                    if self.exhausted:
                        break
                    self.env.restore(snapshot)
                    try:
                        self.env.step(action)
                        child = self.env.snapshot()
                    except Exception:
                        self.failures += 1
                        self.record([*prefix, action], FAILED)
                        continue
                    actions = [*prefix, action]
                    trajectory = list(actions)  # simulate appends the rollout tail
                    verdict = self.simulate(depth + 1, trajectory, [])
                    self.record(trajectory, verdict)
                    scored.append((-verdict.reward, len(scored),
                                   BeamEntry(child, actions, depth + 1)))
            scored.sort(key=lambda item: (item[0], item[1]))  # best first, ties in order
            beam = [entry for _, _, entry in scored[: self.width]]
        return self.result(started)


def beam(
    env: SearchEnv,
    policy: Policy,
    config: MCTSConfig,
    seed: int = 0,
    width: int | None = None,
) -> SearchResult:
    """Beam search of width ``width`` (default b) with rollout-scored children."""
    return _Beam(env, policy, config, seed, width or config.branching).run()
