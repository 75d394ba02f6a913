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
from typing import Any, Final

from mypy_extensions import mypyc_attr

from hyperplan.search.env import Action, ActionKind, SearchEnv, Verdict
from hyperplan.search.hypergraph import DEFAULT_AGG
from hyperplan.search.policies import Policy

FAILED = Verdict(reward=0.0, success=False, metrics={"failed": 1.0})
"""The verdict recorded for a rollout whose environment step raised."""

INFO: Final = ActionKind.INFO  # a module constant: enum attribute access is slow in the hot loops

BRANCH_ON = ("commit", "all")
"""Where the tree branches (``MCTSConfig.branch_on``, :mod:`hyperplan.search.mcts` doc, step 2)."""

DEFAULT_WIDEN = 0.25
"""Default progressive widening (``MCTSConfig.widen``), chosen on dev seeds 1-3."""


@dataclass(frozen=True)
class MCTSConfig:
    """Search hyperparameters. ``budget`` is B, the number of evaluated rollouts (= iterations);
    ``branching`` is b; ``horizon`` overrides the environment's H when set; ``hypergraph=False``
    skips hypergraph maintenance entirely (pure UCT; only valid with lam = 0).
    ``prior_tiebreak``: unvisited children all score +inf; the seed leaves their order open. With
    it (and lam > 0) the unvisited child with the highest prior goes first (ties: expansion
    order); without it, or with lam = 0, expansion order decides, as in UCT. ``info_prior``:
    see :meth:`HyperMCTS.priors`. ``branch_on``: "commit" (branch only at commit decision
    points, information steps are single children) or "all" (module doc, step 2).
    ``info_chain`` (with "commit"): an expansion whose single child is an information step goes
    on expanding that child in the same iteration, down to the next commit decision point (a
    chain of information steps costs no rollout; each node is still expanded once).

    ``widen`` -- progressive widening of commit decision points (our design; Algorithm 1 expands
    each node once with at most b children, and the seed names no widening). 0 is off
    (Algorithm 1); the default 0.25 was chosen on dev seeds 1-3
    (:mod:`hyperplan.eval.treesearch.runner` doc). With w > 0, an expanded node whose
    children are commits gets one more child, a commit
    decision of A_dec(h) not yet among them, each time N(h) >= w * (j + 1)^2 where j children
    were added so far: b + floor(sqrt(N(h) / w)) children, the square-root schedule of
    progressive widening (Coulom 2007; Chaslot et al. 2008). Which decision
    (:meth:`HyperMCTS.widen_choice`): with lam > 0 and ``widen_prior``, the one with the highest
    hypergraph prior among the remaining recorded decisions the hypergraph has evidence on --
    decisions evaluated elsewhere in the tree or in rollouts, which the tree cannot share
    across prefixes (the seed's aim: "evidence obtained from one rollout can inform other
    rollouts, including those that do not share the same action prefix"), policy order on
    ties; without such evidence, or at lam = 0 (UCT), the policy's top proposal among the
    remaining commits, so lam = 0 still uses no hypergraph statistics.

    ``expand_rollout`` -- the rollout runs inside the tree (our design, issue 5; Algorithm 1
    keeps nothing of the rollout below the expanded leaf except in the hypergraph). Motivated
    by llm-reasoners' plain MCTS (docs/benchmarks.md, "Beside llm-reasoners' MCTS"), which
    adds every node of every rollout to the tree, each expanded with the policy's top-b
    proposals, and beat HyperMCTS at equal evaluated rollouts on seed 3000 (shopping 0.69 vs
    0.52, travel 0.87 vs 0.76). With it, from the leaf reached by selection each rollout step
    expands the current history with the usual rule (b proposals under ``branch_on``; a
    single information child is taken as is, which is the information chain) and picks among
    that node's children with the rollout chooser (the policy's rollout action among the
    children's actions; with lam > 0 and ``rollout_guidance``, the hypergraph-guided choice),
    materialising the child, until terminal / horizon / no decisions. Verification, backup
    along the whole path (every node of the evaluated trajectory is a tree node) and the
    hypergraph update are as without it; one evaluated trajectory per iteration. Progressive
    widening applies to these nodes on later visits. At lam = 0 it is UCT with in-tree
    rollouts (no hypergraph read)."""

    budget: int = 32
    branching: int = 3
    c: float = 0.5
    lam: float = 0.5
    agg: str = DEFAULT_AGG
    horizon: int | None = None
    early_stop: bool = True
    hypergraph: bool = True
    trace: bool = False
    prior_tiebreak: bool = True
    info_prior: str = "neutral"
    rollout_guidance: bool = True
    branch_on: str = "commit"
    info_chain: bool = True
    widen: float = DEFAULT_WIDEN
    widen_prior: bool = True
    expand_rollout: bool = False

    def __post_init__(self) -> None:
        if self.budget < 1 or self.branching < 1:
            raise ValueError("budget and branching must be at least 1")
        if self.c < 0 or self.lam < 0:
            raise ValueError("c and lam must be non-negative")
        if self.lam > 0 and not self.hypergraph:
            raise ValueError("lam > 0 needs the hypergraph")
        if self.info_prior not in ("neutral", "zero"):
            raise ValueError("info_prior is 'neutral' or 'zero'")
        if self.branch_on not in BRANCH_ON:
            raise ValueError(f"branch_on is one of {BRANCH_ON}")
        if self.widen < 0:
            raise ValueError("widen must be non-negative (0 = off)")


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

    def _children(self, decisions: Sequence[Action], k: int) -> list[Action]:
        """The up to ``k`` distinct actions an expansion adds (``MCTSConfig.branch_on``):
        with "commit", the top proposal alone when it is information gathering, else the
        proposed commits, topped up from the remaining commits when information proposals
        were dropped (module doc, step 2)."""
        proposed = self._propose(decisions, k)
        if self.config.branch_on != "commit" or not proposed:
            return proposed
        if proposed[0].kind is INFO:
            return proposed[:1]
        commits = [a for a in proposed if a.kind is not INFO]
        if len(commits) < len(proposed) and len(commits) < k:
            keys = {a.key for a in commits}
            rest = [a for a in decisions if a.kind is not INFO and a.key not in keys]
            if rest:
                commits += [a for a in self._propose(rest, k - len(commits))
                            if a.key not in keys]
        return commits[:k]

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
