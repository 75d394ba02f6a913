"""The tree designs as values of parts (:class:`~hyperplan.search.parts.base.Design`):
:data:`FULL_PATH` (the default), :data:`PAPER` (Algorithm 1 as written) and
:data:`COMMIT_WIDEN` (the default until 2026-12-03), and :func:`design_of`, the design an
:class:`~hyperplan.search.config.MCTSConfig` names through its switches (the command line's
and JSON's way in; :func:`~hyperplan.search.config.design_config` gives the switches of each
design). Why each is what it is: docs/benchmarks.md, "Tree-search configuration history"."""

from __future__ import annotations

from typing import Final

from hyperplan.search.config import BranchOn, MCTSConfig
from hyperplan.search.parts.base import ChildFilter, Design, RolloutChooser, Widener
from hyperplan.search.parts.composed import ComposedRollouts
from hyperplan.search.parts.ending_last import EndingLast
from hyperplan.search.parts.evidence_widening import EvidenceWidening
from hyperplan.search.parts.free_last import FreeLast
from hyperplan.search.parts.open_parts import OpenParts
from hyperplan.search.parts.prior_guided import PriorGuided
from hyperplan.search.parts.progressive import ProgressiveWidening
from hyperplan.search.parts.pruning import EvidencePruning
from hyperplan.search.parts.scored import ScoredPicks

__all__ = ["COMMIT_WIDEN", "FULL_PATH", "PAPER", "design_of"]

PAPER: Final = Design(choosers=(ScoredPicks(),))
"""Algorithm 1 as written: one expansion of b children per iteration, a policy rollout below
it kept only in the hypergraph, HyperUCT. (The scored picks choose inside the tree only, so
they never act here.)"""

FULL_PATH: Final = Design(
    in_tree=True,
    select_filters=(EvidencePruning(),),
    rollout_filters=(EndingLast(), FreeLast(), EvidencePruning()),
    wideners=(EvidenceWidening(OpenParts(3)),),
    choosers=(ScoredPicks(),),
    composer=ComposedRollouts(3))
"""The default: every history an evaluated rollout passes is added to the tree, with the
evidence widening three wide, a composed rollout every third iteration, the evidence
pruning, free decisions last and ending decisions last (at lam > 0; at lam = 0 only ending
decisions last)."""

COMMIT_WIDEN: Final = Design(
    branch_on=BranchOn.COMMIT,
    wideners=(ProgressiveWidening(0.25),),
    choosers=(PriorGuided(), ScoredPicks()))
"""Algorithm 1 branching at commit decision points with information chains, progressive
widening 0.25 by the prior, and rollout guidance."""


def design_of(config: MCTSConfig) -> Design:
    """The design ``config``'s switches name; the parts that read the hypergraph only at
    lam > 0 with the hypergraph (ending decisions last at every lam)."""
    graph = config.lam > 0 and config.hypergraph
    select_filters: list[ChildFilter] = []
    rollout_filters: list[ChildFilter] = []
    wideners: list[Widener] = []
    choosers: list[RolloutChooser] = []
    if config.ending_last:
        rollout_filters.append(EndingLast())
    if graph and config.free_last:
        rollout_filters.append(FreeLast())
    if graph and config.evidence_pruning:
        select_filters.append(EvidencePruning())
        rollout_filters.append(EvidencePruning())
    if config.widen:
        wideners.append(ProgressiveWidening(config.widen, config.widen_prior))
    if graph and config.evidence_widening:
        width = config.evidence_width
        wideners.append(EvidenceWidening(OpenParts(width) if width > 1 else None))
    if config.rollout_guidance:
        choosers.append(PriorGuided())
    if config.scored_picks:
        choosers.append(ScoredPicks())
    composer = ComposedRollouts(config.compose_every) if graph and config.compose_every else None
    return Design(BranchOn(config.branch_on), config.info_chain,
                  config.expand_rollout, tuple(select_filters), tuple(rollout_filters),
                  tuple(wideners), tuple(choosers), composer)

