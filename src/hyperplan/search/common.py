"""What every search in :mod:`hyperplan.search` shares (seed 003, Algorithm 1 and the
baselines): the search configuration (:class:`MCTSConfig`), results and timing
(:class:`SearchResult`, :class:`Timing`), and :class:`SearchBase` -- timed environment and
policy calls, rollouts to a terminal history, the budget in evaluated trajectories, best-answer
tracking and early stop. HyperMCTS itself is in :mod:`hyperplan.search.mcts`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from time import perf_counter
from typing import TYPE_CHECKING, Any, Final

from mypy_extensions import mypyc_attr

from hyperplan.search.env import Action, ActionKind, SearchEnv, Verdict
from hyperplan.search.policies import Policy

if TYPE_CHECKING:  # mcts imports this module; MCTSConfig lives beside HyperMCTS
    from hyperplan.search.mcts import MCTSConfig

FAILED = Verdict(reward=0.0, success=False, metrics={"failed": 1.0})
"""The verdict recorded for a rollout whose environment step raised."""

INFO: Final = ActionKind.INFO  # a module constant: enum attribute access is slow in the hot loops

@dataclass
class Timing:
    """Seconds spent in total, in the policy, and in the environment."""

    total: float = 0.0
    policy: float = 0.0
    env: float = 0.0

    @property
    def bookkeeping(self) -> float:
        return max(0.0, self.total - self.policy - self.env)


@dataclass
class SearchResult:
    """A search's answer: the best evaluated trajectory (``actions``) and its ``verdict``,
    the rollouts used (``rollouts`` = evaluated trajectories, failed ones included), timing,
    and optionally the per-rollout action-key trace."""

    method: str
    actions: tuple[Action, ...]
    verdict: Verdict
    rollouts: int
    failures: int = 0
    stopped_early: bool = False
    timing: Timing = field(default_factory=Timing)
    trace: list[tuple[str, ...]] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)

    @property
    def reward(self) -> float:
        return self.verdict.reward

    @property
    def success(self) -> bool:
        return self.verdict.success

    @property
    def us_per_iter(self) -> float:
        """Bookkeeping microseconds per iteration (policy and environment time excluded)."""
        return self.timing.bookkeeping / self.rollouts * 1e6 if self.rollouts else 0.0


@mypyc_attr(allow_interpreted_subclasses=True)
class SearchBase:
    """Shared machinery: timed environment/policy calls, rollout to terminal, best-answer
    tracking and early stop. Subclasses implement :meth:`run`."""

    method = "search"

    def __init__(
        self, env: SearchEnv, policy: Policy, config: MCTSConfig, seed: int = 0
    ) -> None:
        self.env = env
        self.policy = policy
        self.config = config
        self.rng = random.Random(seed)
        self.horizon = config.horizon if config.horizon is not None else env.horizon
        self.t_policy = 0.0
        self.t_env = 0.0
        self.rollouts = 0
        self.failures = 0
        self.best: tuple[float, tuple[Action, ...], Verdict] | None = None
        self.solved = False
        self.trace: list[tuple[str, ...]] = []
        self.rewards: list[float] = []
        self.t_inner = 0.0  # search time spent inside the rollout chooser (not policy time)
        self.t_inner_env = 0.0  # of which environment calls

    # -- timed calls -------------------------------------------------------------------
    def _restore(self, snapshot: Any) -> None:
        t = perf_counter()
        self.env.restore(snapshot)
        self.t_env += perf_counter() - t

    def _snapshot(self) -> Any:
        t = perf_counter()
        snap = self.env.snapshot()
        self.t_env += perf_counter() - t
        return snap

    def _decisions(self) -> Sequence[Action]:
        """A_dec(h), empty when the history is terminal."""
        t = perf_counter()
        env = self.env
        decisions: Sequence[Action] = () if env.is_terminal() else env.decisions()
        self.t_env += perf_counter() - t
        return decisions

    def _propose(self, decisions: Sequence[Action], k: int) -> list[Action]:
        t = perf_counter()
        proposed = self.policy.propose(self.env, decisions, k, self.rng)
        self.t_policy += perf_counter() - t
        if len({a.key for a in proposed}) == len(proposed):  # distinct, as the contract says
            return proposed[:k]
        out: list[Action] = []
        keys: set[str] = set()
        for action in proposed:
            if action.key not in keys:
                keys.add(action.key)
                out.append(action)
        return out[:k]

    # -- rollouts ----------------------------------------------------------------------
    def simulate(
        self, depth: int, actions: list[Action], recorded: list[Hashable]
    ) -> Verdict:
        """Roll out from the environment's current history (at ``depth``) with the policy's
        rollout action until terminal / no decisions / horizon; then verify. ``actions`` and
        ``recorded`` (C(tau) identities) are extended in place. A raising step gives
        :data:`FAILED`."""
        env, rng = self.env, self.rng
        horizon = self.horizon
        # hot loop: bound methods in locals, three clock reads per step (the list append and
        # loop test between two env calls are attributed to the env, < 0.1 us per step)
        is_terminal, decisions_of, step = env.is_terminal, env.decisions, env.step
        is_recorded, identity, pick = env.recorded, env.identity, self._rollout_pick()
        t_env = t_policy = 0.0
        t0 = perf_counter()
        try:
            while depth < horizon:
                decisions = () if is_terminal() else decisions_of()
                t1 = perf_counter()
                t_env += t1 - t0
                if not decisions:
                    t0 = t1
                    break
                action = pick(env, decisions, rng)
                t0 = perf_counter()
                t_policy += t0 - t1
                if is_recorded(action):
                    recorded.append(identity(action))
                step(action)
                actions.append(action)
                depth += 1
            verdict = env.verify()
        except Exception:  # a failed rollout is data, not an error (Algorithm 1 / A.3)
            self.failures += 1
            verdict = FAILED
        self.t_env += t_env + (perf_counter() - t0)
        self.t_policy += t_policy - self.t_inner
        self.t_env += self.t_inner_env
        self.t_inner = self.t_inner_env = 0.0
        return verdict

    def _rollout_pick(self) -> Callable[[SearchEnv, Sequence[Action], random.Random], Action]:
        """The rollout action chooser (the policy's, unless a subclass guides it). Time a
        subclass spends inside it goes to ``t_inner`` (not policy time), the environment calls
        among that to ``t_inner_env`` (environment time)."""
        return self.policy.rollout

    def record(self, actions: Sequence[Action], verdict: Verdict) -> None:
        """Count one evaluated rollout, keep it if it beats the stored best, note early stop."""
        self.rollouts += 1
        reward = verdict.reward
        self.rewards.append(reward)
        if self.config.trace:
            self.trace.append(tuple(a.key for a in actions))
        if self.best is None or reward > self.best[0]:
            self.best = (reward, tuple(actions), verdict)
        if self.config.early_stop and reward >= 1.0 and verdict.success:
            self.solved = True

    @property
    def exhausted(self) -> bool:
        return self.rollouts >= self.config.budget or self.solved

    def result(self, started: float) -> SearchResult:
        total = perf_counter() - started
        reward, actions, verdict = self.best if self.best is not None else (0.0, (), FAILED)
        del reward
        return SearchResult(
            method=self.method,
            actions=actions,
            verdict=verdict,
            rollouts=self.rollouts,
            failures=self.failures,
            stopped_early=self.solved,
            timing=Timing(total=total, policy=self.t_policy, env=self.t_env),
            trace=self.trace,
            rewards=self.rewards,
        )

    def run(self) -> SearchResult:
        raise NotImplementedError
