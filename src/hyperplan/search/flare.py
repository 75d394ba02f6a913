"""A FLARE-style baseline: Future-aware Lookahead with Reward Estimation (Wang et al., 2026,
"Why Reasoning Fails to Plan"), one of the MCTS variants the HyperMCTS paper compares with
(its Experiments, "Baselines", and Figure 3: "FLARE requires the most LLM calls because it
runs MCTS again from the updated state after each committed action to select the next
action").

Receding-horizon planning with limited commitment. At the current committed history h_t:

1. **Lookahead** -- a fresh MCTS runs from h_t (plain UCT on the same code path as
   :func:`~hyperplan.search.baselines.uct`: :class:`~hyperplan.search.mcts.HyperMCTS` with
   lambda = 0 and no hypergraph, the caller's tree design), every rollout to a terminal
   history verified (reward estimation by the verifier R(tau), as every method here).
2. **Value propagation** -- the rollouts' rewards are backed up in that tree (UCT's means).
3. **Limited commitment** -- only the first action of the re-run's best evaluated
   trajectory is committed (the highest propagated reward below h_t; the first found on
   ties); the tree is thrown away and step 1 runs again from h_{t+1}. A history with a single
   decision commits it without a search (nothing to look ahead over).

The loop ends at a terminal history, one without decisions, or the horizon H.

**Budget** (the accounting of every method, :class:`~hyperplan.search.common.SearchBase`:
one unit = one evaluated trajectory, failed ones included), two ways
(:class:`FLAREConfig`):

* per decision (the default, ``method = "flare"``): each re-run gets
  :attr:`FLAREConfig.per_decision` evaluated trajectories, by default B itself -- a full MCTS
  of the configured budget per committed action, as the HyperMCTS paper runs FLARE beside the
  other MCTS variants at the same search settings. The total is up to
  ``per_decision x decisions`` + 1 (the committed trajectory is verified at the end).
* split (``FLAREConfig.split``, ``method = "flare_split"``): B in all, like every other
  method. One unit is kept for the committed trajectory; each re-run gets half of what is
  left, rounded up (B = 32: 16, 8, 4, 2, 1, 0), so the early commitments, which FLARE's
  thesis says matter most, get the most lookahead; with nothing left, the remaining decisions
  take the policy's top proposal (as CoT does).

Either way ``rollouts`` (``rollouts_per_case``) is the total over the re-runs and every
policy call of every re-run is counted (``policy_calls``). Each re-run stops early on a
verified perfect trajectory, and so does FLARE. The answer is the evaluated trajectory with
the best reward, as for every method (the committed trajectory among them);
``notes["budget"]`` states which accounting ran.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from time import perf_counter
from typing import Any

from hyperplan.search.common import FAILED, Best, SearchBase, SearchResult, Timing
from hyperplan.search.config import MCTSConfig
from hyperplan.search.env import Action, SearchEnv
from hyperplan.search.mcts import HyperMCTS
from hyperplan.search.policies import Policy
from hyperplan.search.timing import EnvView

__all__ = ["FLARE", "FLAREConfig", "Rerooted", "flare", "flare_split"]


@dataclass(frozen=True)
class FLAREConfig:
    """FLARE-specific settings (the shared ones, B, b, c, H, are :class:`MCTSConfig`'s).

    * ``per_decision`` -- evaluated trajectories per re-run (None: B, module doc).
    * ``split`` -- B in all, each re-run half of what is left (module doc); excludes
      ``per_decision``.
    """

    per_decision: int | None = None
    split: bool = False

    def __post_init__(self) -> None:
        if self.per_decision is not None and self.per_decision < 1:
            raise ValueError("per_decision must be at least 1")
        if self.split and self.per_decision is not None:
            raise ValueError("split spends B in all; per_decision is for the other way")


class Rerooted(EnvView):
    """``env`` with h_0 moved to a committed history: :meth:`reset` restores ``root`` (a
    snapshot of ``env``) and the horizon is what is left of ``env``'s after ``depth`` steps;
    everything else is ``env``'s (:class:`~hyperplan.search.timing.EnvView`; the verifier
    scores the whole trajectory, committed prefix included)."""

    def __init__(self, env: SearchEnv, root: Any, depth: int) -> None:
        super().__init__(env)
        self._root = root
        self._horizon = max(0, env.horizon - depth)

    @property
    def horizon(self) -> int:
        return self._horizon

    def reset(self) -> None:
        self.raw.restore(self._root)

    def __getattr__(self, name: str) -> Any:  # optional extras (e.g. decision_index)
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.raw, name)


class FLARE(SearchBase):
    """The FLARE-style search (module doc). After :meth:`run`, ``committed`` holds the
    committed actions and ``reruns`` the number of MCTS re-runs."""

    method = "flare"

    def __init__(self, env: SearchEnv, policy: Policy, config: MCTSConfig, seed: int = 0,
                 flare: FLAREConfig | None = None) -> None:
        super().__init__(env, policy, config, seed)
        options = flare or FLAREConfig()
        # on the instance: the compiled base reads no subclass attribute
        self.method = "flare_split" if options.split else "flare"
        self.split = options.split
        self.per_decision = options.per_decision or config.budget
        self.committed: list[Action] = []
        self.reruns = 0
        self._calls = 0  # the re-runs' policy calls
        self._policy_seconds = 0.0
        self._env_seconds = 0.0

    def rerun_budget(self) -> int:
        """The next re-run's evaluated trajectories (module doc, "Budget"); 0: none left."""
        if not self.split:
            return self.per_decision
        left = self.config.budget - 1 - self.rollouts  # one kept for the committed trajectory
        return max(0, (left + 1) // 2)

    def _inner_config(self, depth: int, budget: int) -> MCTSConfig:
        """The re-run's configuration: plain UCT (lambda 0, no hypergraph) with ``budget``
        and the horizon left."""
        horizon = None if self.config.horizon is None else max(1, self.config.horizon - depth)
        return replace(self.config, lam=0.0, hypergraph=False, budget=budget,
                       horizon=horizon, trace=False)

    def lookahead(self, depth: int, budget: int) -> SearchResult:
        """Steps 1-2: one MCTS re-run of ``budget`` evaluated trajectories from the current
        committed history (at ``depth``)."""
        root = self.env.snapshot()
        search = HyperMCTS(Rerooted(self.raw_env, root, depth), self.raw_policy,
                           self._inner_config(depth, budget), self.rng.randrange(2**31))
        search.method = "uct"
        result = search.run()
        self.reruns += 1
        self._absorb(result)
        self.env.restore(root)
        return result

    def _absorb(self, result: SearchResult) -> None:
        """Count a re-run's evaluated trajectories, calls and time; keep its best answer
        (the committed prefix + its actions)."""
        self.rollouts += result.rollouts
        self.failures += result.failures
        self.rewards.extend(result.rewards)
        self._calls += result.policy_calls
        self._policy_seconds += result.timing.policy
        self._env_seconds += result.timing.env
        if result.rollouts and (self.best is None or result.reward > self.best.reward):
            self.best = Best(result.reward, (*self.committed, *result.actions), result.verdict)
        if result.stopped_early:
            self.solved = True

    def commit(self, action: Action) -> bool:
        """Step 3: take ``action`` from the committed history; False when the step raised."""
        try:
            self.env.step(action)
        except Exception:  # a failed step is data, not an error
            self.failures += 1
            return False
        self.committed.append(action)
        return True

    def run(self) -> SearchResult:
        started = perf_counter()
        self.env.reset()
        depth, verdict = 0, None
        while depth < self.horizon and not self.solved:
            decisions = self._decisions()
            if not decisions:
                break
            budget = self.rerun_budget()
            if len(decisions) == 1:
                action = decisions[0]
            elif not budget:  # split budget spent: the policy's top proposal
                proposed = self._propose(decisions, 1)
                action = proposed[0] if proposed else decisions[0]
            else:
                result = self.lookahead(depth, budget)
                if self.solved or not result.actions:
                    break
                action = result.actions[0]
            if not self.commit(action):
                verdict = FAILED
                break
            depth += 1
        if not self.solved:  # the committed trajectory itself, one evaluated trajectory
            if verdict is None:
                try:
                    verdict = self.env.verify()
                except Exception:
                    self.failures += 1
                    verdict = FAILED
            self.record(self.committed, verdict)
        out = self.result(started)
        out.policy_calls += self._calls
        out.timing = Timing(total=out.timing.total, policy=out.timing.policy + self._policy_seconds,
                            env=out.timing.env + self._env_seconds)
        out.notes["budget"] = (f"B = {self.config.budget} in all, each re-run half of what is left"
                               if self.split else
                               f"{self.per_decision} rollouts per committed decision")
        return out


def flare(env: SearchEnv, policy: Policy, config: MCTSConfig, seed: int = 0,
          options: FLAREConfig | None = None) -> SearchResult:
    """Run the FLARE-style baseline on one environment (module doc)."""
    return FLARE(env, policy, config, seed, options).run()


def flare_split(env: SearchEnv, policy: Policy, config: MCTSConfig,
                seed: int = 0) -> SearchResult:
    """FLARE with B in all, split over the re-runs (module doc, "Budget")."""
    return FLARE(env, policy, config, seed, FLAREConfig(split=True)).run()
