"""The configuration of HyperMCTS and the baselines (:class:`MCTSConfig`) and the tree designs
(:class:`TreeDesign`, :func:`design_config`): Algorithm 1 of the HyperMCTS paper as written, and
the designs chosen on the dev seeds (docs/benchmarks.md, "Tree-search configuration history").
The search itself is :mod:`hyperplan.search.mcts`, which re-exports these names."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from hyperplan.search.trajectory_hypergraph import AGGREGATORS, DEFAULT_AGG, Agg

__all__ = ["BRANCH_ON", "DEFAULT_WIDEN", "DESIGNS", "BranchOn", "InfoPrior", "MCTSConfig",
           "TreeDesign", "design_config"]


class BranchOn(StrEnum):
    """Where the tree branches (``MCTSConfig.branch_on``; :mod:`hyperplan.search.mcts`, step 2)."""

    COMMIT = "commit"  # at commit decision points; an information step is a single child
    ALL = "all"  # over the policy's top b proposals of any kind


class InfoPrior(StrEnum):
    """The prior of an information action, which never enters C(tau)
    (:meth:`~hyperplan.search.mcts.HyperMCTS.priors`)."""

    NEUTRAL = "neutral"  # the mean prior of its recorded siblings (0 when none)
    ZERO = "zero"  # 0, the HyperUCT rule read literally


BRANCH_ON: Final = tuple(b.value for b in BranchOn)
"""The values ``MCTSConfig.branch_on`` accepts, as strings."""

DEFAULT_WIDEN: Final = 0.0
"""The default progressive widening ``MCTSConfig.widen``: off in the full-path design (the
commit-widen design used 0.25; docs/benchmarks.md, "Tree-search configuration history")."""


class TreeDesign(StrEnum):
    """The tree designs :func:`design_config` knows (docs/benchmarks.md, "The strongest tree
    design"):

    * ``full-path`` (the default) -- every history an evaluated rollout passes is added to the
      tree, each expanded with the policy's top b proposals of any kind, the policy's rollout
      choice picking among them (llm-reasoners' MCTS shape), no widening; with lam > 0 also
      the HyperUCT prior, the evidence widening (three wide), a composed rollout every third
      iteration, the evidence pruning and free decisions last; at every lam, ending
      decisions last.
    * ``paper`` -- Algorithm 1 as written in the HyperMCTS paper: one expansion of b
      children per iteration, a policy rollout below it kept only in the hypergraph,
      HyperUCT; nothing of ours but the order of unvisited children, which the paper leaves
      open (``prior_tiebreak``, ``info_prior``).
    * ``commit-widen`` -- the default until 2026-12-03: Algorithm 1 branching at commit
      decision points with information chains, progressive widening 0.25 by the prior, and
      rollout guidance.
    """

    FULL_PATH = "full-path"
    PAPER = "paper"
    COMMIT_WIDEN = "commit-widen"


DESIGNS: Final[dict[TreeDesign, dict[str, object]]] = {
    TreeDesign.FULL_PATH: {"expand_rollout": True, "branch_on": "all", "widen": 0.0,
                           "rollout_guidance": False, "evidence_widening": True,
                           "compose_every": 3, "evidence_pruning": True, "free_last": True,
                           "ending_last": True, "evidence_width": 3},
    TreeDesign.PAPER: {"expand_rollout": False, "branch_on": "all", "widen": 0.0,
                       "rollout_guidance": False, "evidence_widening": False,
                       "compose_every": 0, "evidence_pruning": False, "free_last": False,
                       "ending_last": False},
    TreeDesign.COMMIT_WIDEN: {"expand_rollout": False, "branch_on": "commit", "widen": 0.25,
                              "rollout_guidance": True, "evidence_widening": False,
                              "compose_every": 0, "evidence_pruning": False, "free_last": False,
                              "ending_last": False, "info_chain": True},
}
"""The :class:`MCTSConfig` fields each design sets."""


@dataclass(frozen=True)
class MCTSConfig:
    """Search hyperparameters of HyperMCTS and the baselines (HyperMCTS paper, Algorithm 1 and
    the HyperUCT rule). The options typed as enums also accept their values as strings (from
    the command line or JSON). Why each default is what it is: docs/benchmarks.md,
    "Tree-search configuration history".

    * ``budget`` -- B, the number of evaluated rollouts (= iterations).
    * ``branching`` -- b, the most children one expansion adds.
    * ``c`` -- the exploration constant c of HyperUCT.
    * ``lam`` -- lambda, the weight of the hypergraph prior (0: UCT).
    * ``agg`` -- Agg, how prior(v) pools v's incident hyperedges (:class:`Agg`).
    * ``horizon`` -- H when set, else the environment's.
    * ``early_stop`` -- stop on a verified perfect trajectory (reward 1 and success).
    * ``hypergraph`` -- maintain the hypergraph at all (False: pure UCT, needs lam = 0).
    * ``trace`` -- keep each rollout's action keys (``SearchResult.trace``).
    * ``prior_tiebreak`` -- unvisited children in prior order (else in expansion order).
    * ``info_prior`` -- the prior of information actions (:class:`InfoPrior`).
    * ``rollout_guidance`` -- with lam > 0, the prior picks among the policy's b rollout picks
      (:mod:`hyperplan.search.parts.prior_guided`).
    * ``branch_on`` -- where the tree branches (:class:`BranchOn`).
    * ``info_chain`` -- with "commit", single information children expand in the same iteration.
    * ``widen`` -- progressive widening w: one more child each time N(h) >= w (j + 1)^2; 0 off
      (:mod:`hyperplan.search.parts.progressive`).
    * ``widen_prior`` -- with lam > 0, widening adds the best-prior decision seen elsewhere.
    * ``expand_rollout`` -- the rollout runs inside the tree (every history on it expanded).
    * ``evidence_widening`` -- with lam > 0, an expansion also adds one commit decision whose
      own objectives every earlier rollout that took it met
      (:mod:`hyperplan.search.parts.evidence_widening`).
    * ``evidence_width`` -- w: the evidence widening adds up to w decisions, the ones after the
      first only about parts of the plan still open on the path
      (:mod:`hyperplan.search.parts.open_parts`); 1: one, as first built.
    * ``compose_every`` -- m: with lam > 0 every m-th iteration is a composed rollout of the
      decisions verified so far (:mod:`hyperplan.search.parts.composed`); 0 off.
    * ``evidence_pruning`` -- with lam > 0, selection and the rollout chooser skip children
      whose decision failed one of its local objectives in every rollout that took it
      (:mod:`hyperplan.search.parts.pruning`).
    * ``free_last`` -- with lam > 0, the rollout chooser leaves a new history's free
      decisions (recorded decisions the hypergraph has scored under global objectives only,
      such as coupons) for later while a recorded decision not known to be free is among its
      children (:mod:`hyperplan.search.parts.free_last`).
    * ``ending_last`` -- the rollout chooser leaves a new history's ending children (commits
      that are not recorded, such as finishing or abstaining: they close the plan without a
      decision the verifier scores) for later while a recorded decision is among them
      (:mod:`hyperplan.search.parts.ending_last`); at every lam, so UCT keeps it.
    * ``scored_picks`` -- with a scoring policy
      (:class:`~hyperplan.search.policies.ScoringPolicy`), the unguided rollout choice among
      a new history's children is drawn from the scores its proposal gave, by the policy's
      own rollout rule, instead of a second policy call (llm-reasoners' MCTS reuses
      ``fast_reward`` so); a child without a score falls back to the call. For the heuristic
      policy the choice is the same, draw for draw
      (:mod:`hyperplan.search.parts.scored`).

    The defaults are the full-path design (:class:`TreeDesign`); :func:`design_config` gives
    every design, Algorithm 1 as written among them. The switches from ``rollout_guidance`` on
    name the parts of the tree design the search runs
    (:func:`~hyperplan.search.parts.designs.design_of`).
    """

    budget: int = 32
    branching: int = 3
    c: float = 0.5
    lam: float = 0.5
    agg: Agg | str = DEFAULT_AGG
    horizon: int | None = None
    early_stop: bool = True
    hypergraph: bool = True
    trace: bool = False
    prior_tiebreak: bool = True
    info_prior: InfoPrior | str = InfoPrior.NEUTRAL
    rollout_guidance: bool = False
    branch_on: BranchOn | str = BranchOn.ALL
    info_chain: bool = True
    widen: float = DEFAULT_WIDEN
    widen_prior: bool = True
    expand_rollout: bool = True
    evidence_widening: bool = True
    evidence_width: int = 3
    compose_every: int = 3
    evidence_pruning: bool = True
    free_last: bool = True
    ending_last: bool = True
    scored_picks: bool = True

    def __post_init__(self) -> None:
        if self.budget < 1 or self.branching < 1:
            raise ValueError("budget and branching must be at least 1")
        if self.c < 0 or self.lam < 0:
            raise ValueError("c and lam must be non-negative")
        if self.lam > 0 and not self.hypergraph:
            raise ValueError("lam > 0 needs the hypergraph")
        if self.info_prior not in tuple(i.value for i in InfoPrior):
            raise ValueError("info_prior is 'neutral' or 'zero'")
        if self.branch_on not in BRANCH_ON:
            raise ValueError(f"branch_on is one of {BRANCH_ON}")
        if self.widen < 0:
            raise ValueError("widen must be non-negative (0 = off)")
        if self.evidence_width < 1:
            raise ValueError("evidence_width must be at least 1")
        if self.compose_every < 0:
            raise ValueError("compose_every must be non-negative (0 = off)")
        # the string options as their enums (a frozen dataclass: set through object)
        object.__setattr__(self, "info_prior", InfoPrior(self.info_prior))
        object.__setattr__(self, "branch_on", BranchOn(self.branch_on))
        if self.agg in AGGREGATORS:  # an unknown one is refused by the hypergraph, as before
            object.__setattr__(self, "agg", Agg(self.agg))


def design_config(design: TreeDesign | str = TreeDesign.FULL_PATH, **overrides: Any) -> MCTSConfig:
    """The configuration of a tree design (:class:`TreeDesign`), with ``overrides`` (any
    :class:`MCTSConfig` field) applied on top."""
    try:
        fields = DESIGNS[TreeDesign(design)]
    except ValueError:
        raise ValueError(f"unknown tree design {design!r}; choose one of "
                         f"{', '.join(d.value for d in TreeDesign)}") from None
    return MCTSConfig(**{**fields, **overrides})
