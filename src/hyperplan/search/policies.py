"""Search policies: which decisions to expand and which to take in a rollout (HyperMCTS
paper, Algorithm 1).

The paper's policy (Section 2.1) is a frozen LLM pi_theta(a | h). A :class:`Policy` plays two
roles in Algorithm 1: ``propose`` picks up to k *distinct* candidates among A_dec(h) when a node
is expanded (k = b), and ``rollout`` picks one action per step of a simulation. All randomness
comes from the ``rng`` the search passes in, so a run is reproducible per seed.

Guidance is a property of the policy, not of the search: HyperMCTS and UCT get the same policy
object and the same rng stream, so "removing the hypergraph also requires disabling any such
guidance" holds by construction -- the only difference between the two is the lambda term.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from enum import StrEnum
from typing import Final, Protocol, runtime_checkable

from hyperplan.search.env import Action, SearchEnv


@runtime_checkable
class Policy(Protocol):
    """Proposes expansion candidates and rollout actions at the environment's current
    history."""

    name: str

    def propose(
        self, env: SearchEnv, decisions: Sequence[Action], k: int, rng: random.Random
    ) -> list[Action]:
        """Up to ``k`` distinct actions of ``decisions``, most promising first."""
        ...

    def rollout(
        self, env: SearchEnv, decisions: Sequence[Action], rng: random.Random
    ) -> Action:
        """One action of ``decisions`` (non-empty) for the simulation step."""
        ...


@runtime_checkable
class ScoringPolicy(Protocol):
    """A :class:`Policy` whose proposal also says how it scored the decisions, so a rollout
    choice among the candidates it has just scored is drawn from those scores by its own
    rollout rule instead of asking it again -- as llm-reasoners' MCTS reuses ``fast_reward``
    from expansion in its simulation (:class:`~hyperplan.search.mcts.MCTSConfig`,
    ``scored_picks``). One call of :meth:`propose_scored` is one question to the policy;
    :meth:`choose` asks nothing."""

    def propose_scored(
        self, env: SearchEnv, decisions: Sequence[Action], k: int, rng: random.Random
    ) -> tuple[list[Action], dict[str, float] | None]:
        """:meth:`Policy.propose`'s answer (drawing from ``rng`` exactly as it does) and the
        score of each decision the policy scored, by key (None: it gives none this time)."""
        ...

    def choose(self, scores: Sequence[float], rng: random.Random) -> int:
        """The index :meth:`Policy.rollout` would pick among candidates with these scores
        (its rule and its draws from ``rng``), without asking anything."""
        ...


class RandomPolicy:
    """Uniform: random distinct candidates, random rollout actions."""

    name = "random"

    def propose(
        self, env: SearchEnv, decisions: Sequence[Action], k: int, rng: random.Random
    ) -> list[Action]:
        return rng.sample(list(decisions), min(k, len(decisions)))

    def rollout(
        self, env: SearchEnv, decisions: Sequence[Action], rng: random.Random
    ) -> Action:
        return decisions[rng.randrange(len(decisions))]


def _gumbel_top_k(
    scores: Sequence[float], k: int, temperature: float, rng: random.Random
) -> list[int]:
    """Indices of k draws without replacement from softmax(scores / temperature) (Gumbel top-k);
    temperature 0 gives the deterministic top k (ties by position)."""
    if temperature <= 0.0:
        keyed = [(-s, i) for i, s in enumerate(scores)]
    else:
        keyed = []
        for i, s in enumerate(scores):
            u = rng.random()
            gumbel = -math.log(-math.log(u)) if 0.0 < u < 1.0 else 0.0
            keyed.append((-(s / temperature + gumbel), i))
    keyed.sort()
    return [i for _, i in keyed[:k]]


class HeuristicPolicy:
    """Non-LLM guidance from :meth:`SearchEnv.hint` (a score in [0, 1] per action).

    Candidates are k draws without replacement from softmax(hint / temperature) (Gumbel
    top-k); a rollout step takes a uniformly random action with probability ``epsilon``,
    otherwise one softmax draw. Hints are cached per (history, action) within one policy
    instance only through the environment's determinism -- this class keeps no state."""

    def __init__(self, temperature: float = 0.1, epsilon: float = 0.1) -> None:
        if temperature < 0 or not 0.0 <= epsilon <= 1.0:
            raise ValueError("temperature must be >= 0 and epsilon in [0, 1]")
        self.temperature = temperature
        self.epsilon = epsilon
        self.name = f"heuristic(t={temperature},eps={epsilon})"

    def propose(
        self, env: SearchEnv, decisions: Sequence[Action], k: int, rng: random.Random
    ) -> list[Action]:
        return self._draw(env, decisions, k, rng)[0]

    def _draw(
        self, env: SearchEnv, decisions: Sequence[Action], k: int, rng: random.Random
    ) -> tuple[list[Action], list[float]]:
        """The k proposals (Gumbel top-k over the hints) and the hints."""
        scores = [env.hint(a) for a in decisions]
        return [decisions[i] for i in _gumbel_top_k(scores, k, self.temperature, rng)], scores

    def rollout(
        self, env: SearchEnv, decisions: Sequence[Action], rng: random.Random
    ) -> Action:
        if len(decisions) == 1:
            return decisions[0]
        if rng.random() < self.epsilon:
            return decisions[rng.randrange(len(decisions))]
        scores = [env.hint(a) for a in decisions]
        return decisions[_gumbel_top_k(scores, 1, self.temperature, rng)[0]]

    def propose_scored(
        self, env: SearchEnv, decisions: Sequence[Action], k: int, rng: random.Random
    ) -> tuple[list[Action], dict[str, float] | None]:
        """:meth:`propose` and the hint of every decision (:class:`ScoringPolicy`): the
        hints are this policy's scores, so :meth:`choose` over them is :meth:`rollout`'s
        draw at the same history (hints depend on the history only)."""
        picked, scores = self._draw(env, decisions, k, rng)
        return picked, {a.key: s for a, s in zip(decisions, scores, strict=True)}

    def choose(self, scores: Sequence[float], rng: random.Random) -> int:
        """:meth:`rollout`'s rule over known hints: the same draws from ``rng``."""
        if len(scores) == 1:
            return 0
        if rng.random() < self.epsilon:
            return rng.randrange(len(scores))
        return _gumbel_top_k(scores, 1, self.temperature, rng)[0]


class PolicyName(StrEnum):
    """The policies :func:`make_policy` builds by name (a member equals its string)."""

    RANDOM = "random"
    HEURISTIC = "heuristic"


POLICIES: Final = tuple(p.value for p in PolicyName)
"""The names :func:`make_policy` accepts, as strings; ``llm``
(:class:`~hyperplan.search.llm_policy.LLMPolicy`) needs a model and is built by
:class:`~hyperplan.search.llm_policy.LLMPolicyFactory`."""


def make_policy(name: PolicyName | str) -> Policy:
    """A non-LLM policy by name: ``random`` or ``heuristic``."""
    if name == PolicyName.RANDOM:
        return RandomPolicy()
    if name == PolicyName.HEURISTIC:
        return HeuristicPolicy()
    raise ValueError(f"unknown policy {name!r}; choose one of {POLICIES}")
