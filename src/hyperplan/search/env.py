"""The environment protocol HyperMCTS searches (HyperMCTS paper, Section 2.1, the problem
setup).

An environment is one task: a user query x, objectives G = {g_1..g_m} (local requirements and
global constraints), and a history that advances by actions. At every non-terminal history it
lists the valid search decisions A_dec(h); an action is information-gathering (kept in the
history, e.g. "search monitors") or a commit (fixes part of a candidate solution, e.g. "choose
monitor M3"). The canonical identity phi(a, h) (:meth:`SearchEnv.identity`) keeps what matters
for the task and drops the tree position, so the same product chosen on different paths maps
to the same hypergraph node. A terminal verifier scores the finished trajectory with the reward
R(tau) in [0, 1] and, where available, objective-level scores rho_g(tau) in [0, 1].

Search needs to return to any tree node: :meth:`SearchEnv.snapshot` returns an opaque value and
:meth:`SearchEnv.restore` puts the environment back exactly (observable history included).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable


class ActionKind(StrEnum):
    INFO = "info"  # information gathering: acquires evidence, stays in the history
    COMMIT = "commit"  # fixes part of the candidate solution


class TreeError(RuntimeError):
    """A search tree invariant was violated (second expansion, duplicate decisions, too many
    children). Defined here, outside the modules the optional compiled build turns into C
    (mypyc compiles no subclass of a built-in exception); :mod:`hyperplan.search.tree`
    re-exports it."""


@dataclass(frozen=True, slots=True)
class Action:
    """A search decision. ``key`` is unique among the decisions at one history; ``payload`` is
    whatever the environment needs to execute it; ``label`` is for people and prompts."""

    key: str
    kind: ActionKind = ActionKind.COMMIT
    payload: Any = None
    label: str = ""


@dataclass(frozen=True, slots=True)
class Objective:
    """One objective g of G. ``scope`` is "local" (a requirement on one part of the solution)
    or "global" (a constraint over several decisions, e.g. a total budget)."""

    id: str
    description: str = ""
    scope: str = "local"


@dataclass(frozen=True, slots=True)
class Verdict:
    """The terminal verifier's judgement of a trajectory.

    ``reward`` is R(tau) in [0, 1] (search feedback); ``success`` is the benchmark's case
    criterion (every requirement and constraint satisfied); ``objective_scores`` are
    rho_g(tau) in [0, 1] where the environment can compute them; ``objective_decisions`` names,
    per objective, the decision identities the objective is about (for objective-level
    hyperedges; an objective missing here is associated with every recorded decision);
    ``metrics`` are suite-specific numbers (e.g. match score)."""

    reward: float
    success: bool
    objective_scores: Mapping[str, float] = field(default_factory=dict)
    objective_decisions: Mapping[str, frozenset[Hashable]] = field(default_factory=dict)
    metrics: Mapping[str, float] = field(default_factory=dict)


@runtime_checkable
class SearchEnv(Protocol):
    """One task's environment (module doc). Implementations are deterministic given the
    actions taken: the same actions from the same snapshot give the same observations."""

    @property
    def query(self) -> str: ...

    @property
    def objectives(self) -> Sequence[Objective]: ...

    @property
    def horizon(self) -> int:
        """H: the most actions a trajectory may take."""
        ...

    def reset(self) -> None:
        """Back to the initial history h_0."""
        ...

    def snapshot(self) -> Any:
        """An opaque value that :meth:`restore` accepts."""
        ...

    def restore(self, snapshot: Any) -> None: ...

    def decisions(self) -> Sequence[Action]:
        """A_dec(h) at the current history; empty when the history is terminal."""
        ...

    def step(self, action: Action) -> str:
        """Execute ``action`` (one of :meth:`decisions`) and return the observation text.
        An invalid action raises ``ValueError``."""
        ...

    def is_terminal(self) -> bool: ...

    def identity(self, action: Action) -> Hashable:
        """phi(a, h): the canonical decision identity of ``action`` at the current history.
        Any hashable; a string is the cheapest for the search, which looks identities up
        constantly (CPython caches a string's hash, not a tuple's)."""
        ...

    def recorded(self, action: Action) -> bool:
        """Whether ``action`` counts as a recorded search decision for C(tau) (commits by
        default in most suites)."""
        ...

    def verify(self) -> Verdict:
        """The terminal verifier V on the current trajectory (any history can be verified;
        an unfinished one simply scores what it has)."""
        ...

    def hint(self, action: Action) -> float:
        """Domain guidance for heuristic policies: a score in [0, 1] of how promising
        ``action`` looks from what the history has revealed (0.5 when unknown). Must not read
        the verifier's hidden answer."""
        ...

    def describe(self) -> str:
        """The current history as text, for LLM policies (which state the query
        separately): the steps taken so far, empty before the first."""
        ...
