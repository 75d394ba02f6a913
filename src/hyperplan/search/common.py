"""What every search in :mod:`hyperplan.search` shares (HyperMCTS paper, Algorithm 1 and
the baselines): results and timing (:class:`SearchResult`, :class:`Timing`) and
:class:`SearchBase` -- rollouts to a terminal history, the budget in evaluated trajectories,
best-answer tracking and early stop, on an environment and a policy timed by
:mod:`hyperplan.search.timing`. HyperMCTS is in :mod:`hyperplan.search.mcts`,
its configuration in :mod:`hyperplan.search.config`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from time import perf_counter
from typing import Final

from mypy_extensions import mypyc_attr

from hyperplan.search.config import MCTSConfig
from hyperplan.search.env import Action, ActionKind, SearchEnv, Verdict
from hyperplan.search.policies import Policy
from hyperplan.search.timing import TimedEnv, TimedPolicy

FAILED = Verdict(reward=0.0, success=False, metrics={"failed": 1.0})
"""The verdict recorded for a rollout whose environment step raised."""

INFO: Final = ActionKind.INFO  # a module constant: enum attribute access is slow in the hot loops


def _distinct(proposed: list[Action], k: int) -> list[Action]:
    """The first ``k`` of ``proposed`` distinct by key (the first of each key kept)."""
    if len(proposed) < 2 or len({a.key for a in proposed}) == len(proposed):
        return proposed if len(proposed) <= k else proposed[:k]
    out: list[Action] = []
    keys: set[str] = set()
    for action in proposed:
        if action.key not in keys:
            keys.add(action.key)
            out.append(action)
    return out[:k]


_METHOD = "method"


def method_name(search: object) -> str:
    """``search.method`` read as Python reads it: a compiled :class:`SearchBase` reading its
    own slot would miss an interpreted subclass's class attribute (and the instance's value,
    which that class attribute makes Python store in the instance dict)."""
    return str(getattr(search, _METHOD))


class Best:
    """The best evaluated trajectory so far: its reward, actions and verdict."""

    __slots__ = ("actions", "reward", "verdict")

    def __init__(self, reward: float, actions: tuple[Action, ...], verdict: Verdict) -> None:
        self.reward = reward
        self.actions = actions
        self.verdict = verdict


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
    optionally the per-rollout action-key trace, the policy calls (``policy_calls``: every
    proposal, rollout choice and value request, what a model policy would be asked) and
    method-specific remarks (``notes``, e.g. LATS' ``reflection``)."""

    method: str
    actions: tuple[Action, ...]
    verdict: Verdict
    rollouts: int
    failures: int = 0
    stopped_early: bool = False
    timing: Timing = field(default_factory=Timing)
    trace: list[tuple[str, ...]] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    policy_calls: int = 0
    notes: dict[str, str] = field(default_factory=dict)

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
    """Shared machinery: rollouts to a terminal history, the budget in evaluated trajectories,
    best-answer tracking and early stop. The search runs on ``env`` and ``policy`` wrapped by
    :mod:`hyperplan.search.timing` (``raw_env`` and ``raw_policy`` are the caller's), which
    add up the environment and the policy time. Subclasses implement :meth:`run`."""

    method = "search"

    def __init__(
        self, env: SearchEnv, policy: Policy, config: MCTSConfig, seed: int = 0
    ) -> None:
        self.raw_env = env
        self.raw_policy = policy
        self.env = TimedEnv(env)
        self.policy = TimedPolicy(policy)
        self.config = config
        self.rng = random.Random(seed)
        self.horizon = config.horizon if config.horizon is not None else env.horizon
        self.rollouts = 0
        self.failures = 0
        self.best: Best | None = None
        self.solved = False
        self.trace: list[tuple[str, ...]] = []
        self.rewards: list[float] = []

    def _decisions(self) -> Sequence[Action]:
        """A_dec(h) at the environment's current history, empty when h is terminal."""
        return self.env.valid_decisions()

    def _propose(self, decisions: Sequence[Action], k: int) -> list[Action]:
        """The policy's up to ``k`` proposals among ``decisions``, distinct by key (the
        contract asks for distinct ones; duplicates are dropped, first kept)."""
        return _distinct(self.policy.propose(self.env, decisions, k, self.rng), k)

    def _propose_scored(
        self, decisions: Sequence[Action], k: int
    ) -> tuple[list[Action], dict[str, float] | None]:
        """:meth:`_propose` with the scores a scoring policy gave (None from any other),
        one policy call (:meth:`~hyperplan.search.timing.TimedPolicy.propose_scored`)."""
        proposed, scores = self.policy.propose_scored(self.env, decisions, k, self.rng)
        return _distinct(proposed, k), scores

    # -- rollouts ----------------------------------------------------------------------
    def simulate(
        self, depth: int, actions: list[Action], recorded: list[Hashable]
    ) -> Verdict:
        """Simulation and evaluation (Algorithm 1): roll out from the environment's current
        history (at ``depth``) with the rollout chooser until terminal / no decisions /
        horizon H, then verify. ``actions`` and ``recorded`` (C(tau) identities) are extended
        in place. A raising step gives :data:`FAILED`."""
        env, rng = self.env, self.rng
        horizon = self.horizon
        # hot loop: bound methods in locals
        valid_decisions, take, pick = env.valid_decisions, env.take, self._rollout_pick()
        try:
            while depth < horizon:
                decisions = valid_decisions()
                if not decisions:
                    break
                action = pick(env, decisions, rng)
                take(action, recorded)  # C(tau) gets phi(a, h) of a recorded decision
                actions.append(action)
                depth += 1
            return env.verify()
        except Exception:  # a failed rollout is data, not an error (Algorithm 1 / A.3)
            self.failures += 1
            return FAILED

    def follow_top(self) -> tuple[list[Action], Verdict]:
        """One trajectory from h_0 taking the policy's top proposal at every step (greedy's
        and CoT's rule, Reflexion's actor) until terminal / no decisions / horizon H, and its
        verdict (:data:`FAILED` when a step or the verifier raises)."""
        self.env.reset()
        actions: list[Action] = []
        try:
            while len(actions) < self.horizon:
                decisions = self._decisions()
                if not decisions:
                    break
                proposed = self._propose(decisions, 1)
                action = proposed[0] if proposed else decisions[0]
                self.env.step(action)
                actions.append(action)
            return actions, self.env.verify()
        except Exception:  # a failed step is a failed trajectory
            self.failures += 1
            return actions, FAILED

    def _rollout_pick(self) -> Callable[[SearchEnv, Sequence[Action], random.Random], Action]:
        """The rollout action chooser: the policy's, unless a subclass guides it."""
        return self.policy.rollout

    def record(self, actions: Sequence[Action], verdict: Verdict) -> None:
        """Count one evaluated rollout, keep it if it beats the stored best, note early stop."""
        self.rollouts += 1
        reward = verdict.reward
        self.rewards.append(reward)
        if self.config.trace:
            self.trace.append(tuple(a.key for a in actions))
        if self.best is None or reward > self.best.reward:
            self.best = Best(reward, tuple(actions), verdict)
        if self.config.early_stop and reward >= 1.0 and verdict.success:
            self.solved = True

    @property
    def exhausted(self) -> bool:
        return self.rollouts >= self.config.budget or self.solved

    def result(self, started: float) -> SearchResult:
        total = perf_counter() - started
        best = self.best
        return SearchResult(
            method=method_name(self),
            actions=best.actions if best is not None else (),
            verdict=best.verdict if best is not None else FAILED,
            rollouts=self.rollouts,
            failures=self.failures,
            stopped_early=self.solved,
            timing=Timing(total=total, policy=self.policy.seconds, env=self.env.seconds),
            trace=self.trace,
            rewards=self.rewards,
            policy_calls=self.policy.calls,
        )

    def run(self) -> SearchResult:
        raise NotImplementedError
