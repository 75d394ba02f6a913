"""The kinds of HyperMCTS' parts and the tree design that names them
(:class:`Design`): what Algorithm 1 of the HyperMCTS paper leaves open, or what we add to it,
each as a small object the search (:class:`~hyperplan.search.mcts.HyperMCTS`) calls at one
place of the iteration.

* :class:`ChildFilter` -- which children of a history a choice is made among (evidence
  pruning, free decisions last, ending decisions last);
* :class:`Widener` -- children added beside the policy's (progressive widening on the way
  down, evidence widening and its open parts at an expansion);
* :class:`RolloutChooser` -- the rollout's choice at a new history (the policy's own, the
  prior-guided one, the proposal's scores);
* :class:`Composer` -- an iteration that walks the tree by another rule than HyperUCT (the
  composed rollouts);
* :class:`Observer` -- told of every evaluated rollout (an experiment's statistics);
* :class:`PriorRule` -- the prior HyperUCT reads, in place of the hypergraph's.

Each kind is a small base class a part subclasses (native classes in the compiled build, so
the search calls its parts without a generic Python call; interpreted subclasses, as the dev
scripts' experiments, are allowed). The defaults: no marks read, and a widener that does
nothing at a visit or an expansion. Parts hold no state of a search: what they read from
earlier rollouts is the search's
:class:`~hyperplan.search.parts.ledger.Ledger`, which keeps the marks (:class:`Mark`) the
design's parts say they read. Experiments are new parts in a :class:`Design`, never
subclasses of the search.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, NamedTuple

from mypy_extensions import mypyc_attr

from hyperplan.search.config import BranchOn
from hyperplan.search.env import Action, Verdict
from hyperplan.search.tree import Edge, Node, TreeError

if TYPE_CHECKING:
    from hyperplan.search.mcts import HyperMCTS

__all__ = ["ChildFilter", "Composer", "Design", "Mark", "Observer", "PriorRule", "RolloutChooser",
           "Widener", "edge_of", "reads", "without_marked"]


class Mark(StrEnum):
    """What the ledger keeps about the identities phi the hypergraph has scored, after each
    rollout (:class:`~hyperplan.search.parts.ledger.Ledger`)."""

    VERIFIED = "verified"  # every rollout that took it met its local objectives
    REFUTED = "refuted"  # every rollout that took it failed one of its local objectives
    FREE = "free"  # scored under global objectives only (a coupon)


@mypyc_attr(allow_interpreted_subclasses=True)
class ChildFilter:
    """Leaves some of a history's children to choose among: ``edges`` itself when it drops
    none (the common case: nothing is built), else the ones it keeps (never none)."""

    @property
    def reads(self) -> frozenset[Mark]:
        return frozenset()

    def keep(self, search: HyperMCTS, edges: list[Edge]) -> list[Edge]:
        raise NotImplementedError


def without_marked(edges: list[Edge], marked: set[Hashable]) -> list[Edge]:
    """``edges`` without the recorded children whose identity phi is ``marked`` (one of the
    ledger's sets), possibly none; ``edges`` itself when no child is marked (the common
    case: nothing is built)."""
    if not marked:
        return edges
    for edge in edges:
        if edge.recorded and edge.identity in marked:
            break
    else:
        return edges
    return [e for e in edges if not (e.recorded and e.identity in marked)]


@mypyc_attr(allow_interpreted_subclasses=True)
class Widener:
    """Adds children beside the policy's: ``visit`` at an expanded history on the way down
    (before HyperUCT chooses there), ``expanded`` right after a history's expansion
    (``decisions``: A_dec(h); ``index``: its key -> position index when :meth:`wants_index`
    asked for it, else None; ``path``: the tree path h_0 to h). :meth:`wants_index` is asked
    once per iteration, before its walk: what the parts read from earlier rollouts (the
    ledger, the hypergraph) changes only after the iteration's update."""

    @property
    def reads(self) -> frozenset[Mark]:
        return frozenset()

    def visit(self, search: HyperMCTS, node: Node) -> None:
        return None

    def wants_index(self, search: HyperMCTS) -> bool:
        return False

    def expanded(self, search: HyperMCTS, node: Node, decisions: Sequence[Action],
                 index: Mapping[str, int] | None, path: list[Edge]) -> None:
        return None


@mypyc_attr(allow_interpreted_subclasses=True)
class RolloutChooser:
    """The rollout's choice among ``actions`` at a history: ``node`` is its tree node when the
    rollout runs inside the tree (the actions are then its children's, in order), None in a
    simulation below the tree (the environment is then at the history). None passes the
    choice to the next chooser of the design. Inside the tree the search asks :meth:`pick`,
    the same choice among ``node``'s child edges: by default :meth:`choose` over their
    actions, a chooser that reads the edges themselves overriding it (no action list built,
    nothing looked up)."""

    @property
    def reads(self) -> frozenset[Mark]:
        return frozenset()

    def choose(self, search: HyperMCTS, node: Node | None,
               actions: Sequence[Action]) -> Action | None:
        raise NotImplementedError

    def pick(self, search: HyperMCTS, node: Node, edges: list[Edge]) -> Edge | None:
        action = self.choose(search, node, [e.action for e in edges])
        return None if action is None else edge_of(edges, action)


def edge_of(edges: list[Edge], action: Action) -> Edge:
    """The edge of ``edges`` whose action is ``action`` (the same object, else the same key);
    a :class:`~hyperplan.search.tree.TreeError` when none is."""
    for edge in edges:
        if edge.action is action:
            return edge
    key = action.key
    for edge in edges:
        if edge.action.key == key:
            return edge
    raise TreeError(f"the rollout chooser picked {key!r}, which is not among the actions it "
                    "was given")


@mypyc_attr(allow_interpreted_subclasses=True)
class Composer:
    """An iteration walked by its own rule: ``due`` says whether this iteration is one, then
    ``child`` is asked at every history of the walk before anything else (None: the walk
    goes on as a full-path rollout there)."""

    @property
    def reads(self) -> frozenset[Mark]:
        return frozenset()

    def due(self, search: HyperMCTS) -> bool:
        raise NotImplementedError

    def child(self, search: HyperMCTS, edges: list[Edge]) -> Edge | None:
        raise NotImplementedError


@mypyc_attr(allow_interpreted_subclasses=True)
class PriorRule:
    """prior(phi(a, h)) per edge of ``edges`` (children of one history) for HyperUCT, in
    place of the hypergraph's read with the neutral or zero information prior
    (:meth:`~hyperplan.search.mcts.HyperMCTS.priors`)."""

    @property
    def reads(self) -> frozenset[Mark]:
        return frozenset()

    def priors(self, search: HyperMCTS, edges: list[Edge]) -> list[float]:
        raise NotImplementedError


@mypyc_attr(allow_interpreted_subclasses=True)
class Observer:
    """Told of every evaluated rollout after the search recorded it (its actions and the
    verifier's verdict): an experiment's own statistics."""

    @property
    def reads(self) -> frozenset[Mark]:
        return frozenset()

    def observed(self, search: HyperMCTS, actions: Sequence[Action], verdict: Verdict) -> None:
        raise NotImplementedError


class Design(NamedTuple):
    """A tree design: Algorithm 1's expansion rule and where the simulation runs, plus the
    parts (:mod:`hyperplan.search.parts.designs` names the designs we measured).

    * ``branch_on`` -- where the tree branches (:class:`~hyperplan.search.config.BranchOn`);
    * ``info_chain`` -- with ``"commit"``, single information children are expanded in the
      same iteration;
    * ``in_tree`` -- the simulation runs inside the tree, every history on it expanded (the
      full-path design), instead of a policy rollout below the expanded leaf (Algorithm 1);
    * ``select_filters`` -- applied before HyperUCT chooses (lam > 0);
    * ``rollout_filters`` -- applied before the rollout chooses at a new history;
    * ``wideners``, ``choosers`` (asked in turn, the first answer taken; the policy's own
      rollout when none answers), ``composer`` (None: no composed iterations),
      ``observers``, ``prior`` (None: the hypergraph's, Algorithm 1).
    """

    branch_on: BranchOn = BranchOn.ALL
    info_chain: bool = True
    in_tree: bool = False
    select_filters: tuple[ChildFilter, ...] = ()
    rollout_filters: tuple[ChildFilter, ...] = ()
    wideners: tuple[Widener, ...] = ()
    choosers: tuple[RolloutChooser, ...] = ()
    composer: Composer | None = None
    observers: tuple[Observer, ...] = ()
    prior: PriorRule | None = None


def reads(design: Design) -> frozenset[Mark]:
    """Every mark some part of ``design`` reads (what the ledger keeps)."""
    parts: list[ChildFilter | Widener | RolloutChooser | Composer | Observer | PriorRule] = [
        *design.select_filters, *design.rollout_filters, *design.wideners, *design.choosers,
        *design.observers]
    if design.composer is not None:
        parts.append(design.composer)
    if design.prior is not None:
        parts.append(design.prior)
    out: frozenset[Mark] = frozenset()
    for part in parts:
        out = out | part.reads
    return out
