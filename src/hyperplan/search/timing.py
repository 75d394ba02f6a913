"""Where a search's time goes: the environment and the policy wrapped so that each adds up the
duration of the calls into it, leaving the algorithm free of timing code.

A search (:class:`~hyperplan.search.common.SearchBase`) runs on a :class:`TimedEnv` and a
:class:`TimedPolicy` over the caller's environment and policy. Environment time is every call
into the environment the search makes (a few compound calls of the hot loops are timed as one,
so that the clock is read less often); policy time is every proposal and rollout choice,
including the policy's own :meth:`~hyperplan.search.env.SearchEnv.hint` calls (a
:class:`TimedPolicy` hands the policy the unwrapped environment, so those count once, as
policy time). Bookkeeping is the rest: ``total - policy - env``
(:class:`~hyperplan.search.common.Timing`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Mapping, Sequence
from time import perf_counter
from typing import Any, TypeVar

from mypy_extensions import mypyc_attr

from hyperplan.search.env import Action, Objective, SearchEnv, Verdict
from hyperplan.search.policies import Policy
from hyperplan.search.tree import Child, child

T = TypeVar("T")


@mypyc_attr(allow_interpreted_subclasses=True)
class EnvView:
    """A :class:`~hyperplan.search.env.SearchEnv` that passes every call and attribute to
    ``raw``: the base of the views a search runs on, which change some of them (the timed
    calls, :class:`TimedCalls`; a history taken as h_0, FLARE's
    :class:`~hyperplan.search.flare.Rerooted`)."""

    __slots__ = ("raw",)

    def __init__(self, raw: SearchEnv) -> None:
        self.raw = raw

    @property
    def query(self) -> str:
        return self.raw.query

    @property
    def objectives(self) -> Sequence[Objective]:
        return self.raw.objectives

    @property
    def horizon(self) -> int:
        return self.raw.horizon

    def reset(self) -> None:
        self.raw.reset()

    def snapshot(self) -> Any:
        return self.raw.snapshot()

    def restore(self, snapshot: Any) -> None:
        self.raw.restore(snapshot)

    def decisions(self) -> Sequence[Action]:
        return self.raw.decisions()

    def step(self, action: Action) -> str:
        return self.raw.step(action)

    def is_terminal(self) -> bool:
        return self.raw.is_terminal()

    def identity(self, action: Action) -> Hashable:
        return self.raw.identity(action)

    def recorded(self, action: Action) -> bool:
        return self.raw.recorded(action)

    def verify(self) -> Verdict:
        return self.raw.verify()

    def hint(self, action: Action) -> float:
        return self.raw.hint(action)

    def describe(self) -> str:
        return self.raw.describe()


class TimedCalls(EnvView):
    """The calls of a :class:`~hyperplan.search.env.SearchEnv` into ``raw``, each adding its
    duration to ``seconds``, a raising call included (the attributes ``query``,
    ``objectives`` and ``horizon`` are read through, untimed). :class:`TimedEnv` adds the
    search's compound calls."""

    __slots__ = ("seconds",)

    def __init__(self, raw: SearchEnv) -> None:
        super().__init__(raw)
        self.seconds = 0.0

    def timed(self, call: Callable[..., T], *args: Any) -> T:
        """``call(*args)``, its duration added to ``seconds``."""
        t = perf_counter()
        try:
            return call(*args)
        finally:
            self.seconds += perf_counter() - t

    def reset(self) -> None:
        self.timed(self.raw.reset)

    def snapshot(self) -> Any:
        return self.timed(self.raw.snapshot)

    def restore(self, snapshot: Any) -> None:
        self.timed(self.raw.restore, snapshot)

    def decisions(self) -> Sequence[Action]:
        return self.timed(self.raw.decisions)

    def step(self, action: Action) -> str:
        return self.timed(self.raw.step, action)

    def is_terminal(self) -> bool:
        return self.timed(self.raw.is_terminal)

    def identity(self, action: Action) -> Hashable:
        return self.timed(self.raw.identity, action)

    def recorded(self, action: Action) -> bool:
        return self.timed(self.raw.recorded, action)

    def verify(self) -> Verdict:
        return self.timed(self.raw.verify)

    def hint(self, action: Action) -> float:
        return self.timed(self.raw.hint, action)

    def describe(self) -> str:
        return self.timed(self.raw.describe)


class TimedEnv(TimedCalls):
    """A :class:`~hyperplan.search.env.SearchEnv` whose ``seconds`` add up the duration of its
    calls into ``raw`` (:class:`TimedCalls`), with the search's compound calls, each timed
    once (fewer clock reads in the hot loops)."""

    __slots__ = ("_own_index",)

    def __init__(self, raw: SearchEnv) -> None:
        super().__init__(raw)
        # the environment's own decision_index() when it has one (:meth:`decision_index`)
        self._own_index: Callable[[], Mapping[str, int]] | None = getattr(
            raw, "decision_index", None)

    def valid_decisions(self) -> Sequence[Action]:
        """A_dec(h) at the current history, empty when h is terminal."""
        t = perf_counter()
        try:
            raw = self.raw
            return () if raw.is_terminal() else raw.decisions()
        finally:
            self.seconds += perf_counter() - t

    def take(self, action: Action, recorded: list[Hashable]) -> None:
        """Step with ``action``; first, when it is a recorded decision, append its identity
        phi(a, h) to ``recorded`` (C(tau) keeps it even when the step raises)."""
        t = perf_counter()
        try:
            raw = self.raw
            if raw.recorded(action):
                recorded.append(raw.identity(action))
            raw.step(action)
        finally:
            self.seconds += perf_counter() - t

    def advance(self, action: Action, past_horizon: bool) -> tuple[Any, bool] | None:
        """Step with ``action``, then the snapshot of the new history and whether it is
        terminal (without asking the environment when ``past_horizon``); None when the step
        raises (an error of the snapshot or the terminal check propagates)."""
        t = perf_counter()
        try:
            raw = self.raw
            try:
                raw.step(action)
            except Exception:
                return None
            return raw.snapshot(), past_horizon or raw.is_terminal()
        finally:
            self.seconds += perf_counter() - t

    def indexed_decisions(self) -> tuple[Sequence[Action], Mapping[str, int]]:
        """:meth:`valid_decisions` and :meth:`decision_index` of the current history as one
        call (both empty when it is terminal)."""
        t = perf_counter()
        try:
            raw = self.raw
            if raw.is_terminal():
                return (), {}
            decisions = raw.decisions()
            own = self._own_index
            if own is not None:
                return decisions, own()
            return decisions, {a.key: i for i, a in enumerate(decisions)}
        finally:
            self.seconds += perf_counter() - t

    def decision_index(self) -> Mapping[str, int]:
        """Each key of A_dec(h) at the current history -> its position in ``decisions()``
        (empty when h is terminal): the environment's own ``decision_index()`` when it has
        one (a cached dict), else one built from its decisions (:meth:`indexed_decisions`)."""
        return self.indexed_decisions()[1]

    def recorded_id(self, action: Action) -> Hashable | None:
        """phi(a, h) of ``action`` when it is a recorded decision, else None."""
        t = perf_counter()
        try:
            raw = self.raw
            return raw.identity(action) if raw.recorded(action) else None
        finally:
            self.seconds += perf_counter() - t

    def recorded_ids(self, actions: Sequence[Action]) -> list[Hashable | None]:
        """phi(a, h) of each recorded decision of ``actions``, None for the others."""
        t = perf_counter()
        try:
            raw = self.raw
            return [raw.identity(a) if raw.recorded(a) else None for a in actions]
        finally:
            self.seconds += perf_counter() - t

    def children(self, actions: Sequence[Action]) -> list[Child]:
        """The :class:`~hyperplan.search.tree.Child` of each action (an expansion's children)."""
        t = perf_counter()
        try:
            raw = self.raw
            return [child(Child, (a, raw.identity(a), raw.recorded(a))) for a in actions]
        finally:
            self.seconds += perf_counter() - t


def unwrapped(env: SearchEnv) -> SearchEnv:
    """The environment under a :class:`TimedEnv`, or ``env`` itself."""
    return env.raw if isinstance(env, TimedEnv) else env


class TimedPolicy:
    """A :class:`~hyperplan.search.policies.Policy` whose ``seconds`` add up the duration of
    its calls into ``raw`` and whose ``calls`` count them (every proposal and every rollout
    choice: what a model policy would be asked, the HyperMCTS paper's per-case LLM calls; a
    :meth:`choose` among candidates the policy has already scored asks nothing, so it is
    timed but not counted); ``raw`` sees the unwrapped environment (module doc)."""

    __slots__ = ("_choose", "_propose_scored", "calls", "name", "raw", "scoring", "seconds")

    def __init__(self, raw: Policy) -> None:
        self.raw = raw
        self.name = raw.name
        self.seconds = 0.0
        self.calls = 0
        # the raw policy's ScoringPolicy methods, when it has both (:meth:`propose_scored`)
        scored = getattr(raw, "propose_scored", None)
        choose = getattr(raw, "choose", None)
        both = callable(scored) and callable(choose)
        self._propose_scored: Callable[..., tuple[list[Action], dict[str, float] | None]] | None = (
            scored if both else None)
        self._choose: Callable[[Sequence[float], random.Random], int] | None = (
            choose if both else None)
        # whether the raw policy is a ScoringPolicy (an attribute: read at every scored pick)
        self.scoring = both

    def propose(
        self, env: SearchEnv, decisions: Sequence[Action], k: int, rng: random.Random
    ) -> list[Action]:
        self.calls += 1
        t = perf_counter()
        try:
            return self.raw.propose(unwrapped(env), decisions, k, rng)
        finally:
            self.seconds += perf_counter() - t

    def propose_scored(
        self, env: SearchEnv, decisions: Sequence[Action], k: int, rng: random.Random
    ) -> tuple[list[Action], dict[str, float] | None]:
        """The raw policy's proposal and its scores by key, one call (None scores from a
        policy that is not a :class:`~hyperplan.search.policies.ScoringPolicy`)."""
        ask = self._propose_scored
        if ask is None:
            return self.propose(env, decisions, k, rng), None
        self.calls += 1
        t = perf_counter()
        try:
            return ask(unwrapped(env), decisions, k, rng)
        finally:
            self.seconds += perf_counter() - t

    def choose(self, scores: Sequence[float], rng: random.Random) -> int:
        """The raw policy's rollout rule over scores it gave (policy time, not a call:
        nothing is asked); only for a scoring policy."""
        choose = self._choose
        if choose is None:
            raise TypeError(f"the policy {self.name!r} gives no scores to choose from")
        t = perf_counter()
        try:
            return choose(scores, rng)
        finally:
            self.seconds += perf_counter() - t

    def rollout(
        self, env: SearchEnv, decisions: Sequence[Action], rng: random.Random
    ) -> Action:
        self.calls += 1
        t = perf_counter()
        try:
            return self.raw.rollout(unwrapped(env), decisions, rng)
        finally:
            self.seconds += perf_counter() - t

    def value(self, env: SearchEnv, action: Action) -> float:
        """A value function's score of the child ``action`` leads to: the environment's hint
        (LATS' evaluation step, as llm-reasoners' ``fast_reward``), counted as one call."""
        self.calls += 1
        t = perf_counter()
        try:
            return unwrapped(env).hint(action)
        finally:
            self.seconds += perf_counter() - t

    def reflect(self, env: SearchEnv, actions: Sequence[Action], verdict: Verdict) -> Any:
        """The raw policy's reflection on a failed trajectory (its optional ``reflect``, which
        asks a model), counted as one call; None when the policy has no such step."""
        ask = getattr(self.raw, "reflect", None)
        if not callable(ask):
            return None
        self.calls += 1
        t = perf_counter()
        try:
            return ask(unwrapped(env), list(actions), verdict)
        finally:
            self.seconds += perf_counter() - t
