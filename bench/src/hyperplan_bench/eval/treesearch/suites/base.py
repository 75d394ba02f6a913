"""Mechanics the suites' environments share.

Every suite keeps its whole history in one immutable dataclass with ``finished``, ``steps``
and ``trace`` fields, so a snapshot is the state object itself and restoring is an
assignment. :class:`StateEnv` implements the parts of the
:class:`~hyperplan.search.env.SearchEnv` protocol that follow from that: snapshots, reset,
the horizon check, decisions cached per state object, validated steps that count the step and
record the observation, and identities (:func:`decision_id`, which is also the action's
key). A suite supplies the
initial state, :meth:`StateEnv._compute_decisions` and :meth:`StateEnv._apply`.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import replace
from typing import Any

from hyperplan.search.env import Action, Objective


def decision_id(payload: Sequence[Any]) -> str:
    """phi(a, h) of a suite decision and its action key: the payload's parts joined by ":"
    (``("slot", 0, "lunch", "R1")`` -> ``"slot:0:lunch:R1"``). It names the plan component and
    choice, not the tree position. A string rather than the payload tuple because the search
    hashes identities constantly (tree, hypergraph, priors) and a string caches its hash
    while a tuple recomputes it on every lookup."""
    return ":".join([str(x) for x in payload])


class StateEnv:
    """Base class of the suites' environments (module doc)."""

    state: Any
    _objectives: tuple[Objective, ...]
    _horizon: int

    def _start(self, initial: Any) -> None:
        """Set the initial (immutable) state; call once from ``__init__``."""
        self._initial = initial
        self.state = initial
        self._cached: tuple[object, tuple[Action, ...], dict[str, int]] = (None, (), {})

    @property
    def objectives(self) -> Sequence[Objective]:
        return self._objectives

    @property
    def horizon(self) -> int:
        return self._horizon

    def reset(self) -> None:
        self.state = self._initial

    def snapshot(self) -> Any:
        return self.state

    def restore(self, snapshot: Any) -> None:
        if not isinstance(snapshot, type(self._initial)):
            raise ValueError(f"not a {type(self).__name__} snapshot")
        self.state = snapshot

    def is_terminal(self) -> bool:
        return bool(self.state.finished) or self.state.steps >= self._horizon

    def decisions(self) -> Sequence[Action]:
        """A_dec(h), cached for the current (immutable) state object."""
        if self._cached[0] is not self.state:
            acts = tuple(self._compute_decisions())
            self._cached = (self.state, acts, {a.key: i for i, a in enumerate(acts)})
        return self._cached[1]

    def decision_index(self) -> dict[str, int]:
        """Each key of A_dec(h) -> its position in :meth:`decisions`, the dict cached with
        them (read by the search's evidence widening,
        :meth:`~hyperplan.search.timing.TimedEnv.decision_index`)."""
        self.decisions()
        return self._cached[2]

    def step(self, action: Action) -> str:
        if self.is_terminal():
            raise ValueError("the episode is over")
        self.decisions()
        if action.key not in self._cached[2]:
            raise ValueError(f"invalid action {action.key!r} at this history")
        st, obs = self._apply(self.state, action)
        self.state = replace(st, steps=st.steps + 1, trace=(*st.trace, obs))
        return obs

    def identity(self, action: Action) -> Hashable:
        """phi(a, h) = :func:`decision_id` of the payload, which every suite also uses as the
        action's key (``tests/test_search_suites.py`` checks it on every decision listed)."""
        return action.key

    def _compute_decisions(self) -> list[Action]:
        raise NotImplementedError

    def _apply(self, state: Any, action: Action) -> tuple[Any, str]:
        """The state after ``action`` (before counting the step) and the observation."""
        raise NotImplementedError
