"""Progressive widening (our design; ``MCTSConfig.widen``, on in the commit-widen design, off
in Algorithm 1): on the way down, a commit decision point visited often enough gets one more
child before HyperUCT chooses there -- with lam > 0 the decision with the best hypergraph
prior among those evaluated elsewhere (other branches, rollouts), with lam = 0 the policy's
next proposal."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hyperplan.search.common import INFO
from hyperplan.search.env import Action
from hyperplan.search.parts.base import Mark, Widener
from hyperplan.search.tree import Edge, Node, Pending

if TYPE_CHECKING:
    from hyperplan.search.mcts import HyperMCTS

__all__ = ["ProgressiveWidening", "pending_at", "widen_index"]


def pending_at(search: HyperMCTS, node: Node) -> Pending:
    """The commit decisions of A_dec(h) that are not children of ``node``
    (:class:`~hyperplan.search.tree.Pending`)."""
    search.goto(node)
    decisions = search._decisions()
    have = {e.action.key for e in node.edges}
    rest = [a for a in decisions if a.kind is not INFO and a.key not in have]
    ids = search.env.recorded_ids(rest)
    return Pending(rest, ids, [v is not None for v in ids])


def widen_index(search: HyperMCTS, pending: Pending, at: Node | None, by_prior: bool) -> int:
    """The index in ``pending`` of the decision a widening adds: with lam > 0 and
    ``by_prior``, the highest prior(phi(a, h)) among the recorded decisions the hypergraph
    has seen (the policy breaks ties); otherwise, or when none was seen, the policy's top
    proposal. Only the pending identities the hypergraph has seen are read
    (:meth:`Pending.sync`), not every one at every widening."""
    rest, hypergraph = pending.actions, search.hypergraph
    if not (search.config.lam > 0 and by_prior and hypergraph is not None):
        return policy_pick(search, rest, range(len(rest)), at)
    seen = list(pending.sync(hypergraph.nodes, hypergraph.born))
    if not seen:
        return policy_pick(search, rest, range(len(rest)), at)
    values = hypergraph.priors_of(seen)
    top = max(values)
    best = [seen[i] for i, p in enumerate(values) if p == top]
    ids = pending.ids
    if len(best) == 1 and pending.distinct:
        return ids.index(best[0])
    tops = set(best)
    tied = [i for i, v in enumerate(ids) if v is not None and v in tops]
    if len(tied) == 1:
        return tied[0]
    return policy_pick(search, rest, tied, at)


def policy_pick(search: HyperMCTS, rest: Sequence[Action], among: Sequence[int],
                at: Node | None) -> int:
    """The policy's top proposal among ``rest[i] for i in among``, as an index in ``rest``
    (the first of them when it proposes nothing)."""
    if at is not None:
        search.goto(at)
    options = [rest[i] for i in among]
    proposed = search._propose(options, 1)
    if not proposed:
        return among[0]
    key = proposed[0].key
    return next((i for i in among if rest[i].key == key), among[0])


@dataclass(frozen=True)
class ProgressiveWidening(Widener):
    """A widener: one more commit child each time N(h) >= w (j + 1)^2 (j: the children
    widening added so far), chosen by :func:`widen_index`; the node is marked saturated when
    none is left. The candidates and their identities are listed once per node, at its first
    widening (``Node.pending``; A_dec(h) and phi(a, h) are fixed for h), and each widening
    takes its choice out of that list."""

    w: float
    by_prior: bool = True
    @property
    def reads(self) -> frozenset[Mark]:
        return frozenset()

    def visit(self, search: HyperMCTS, node: Node) -> None:
        if (node.saturated or node.edges[0].action.kind is INFO
                or node.n < self.w * (node.widened + 1) ** 2):
            return
        pending = node.pending
        if pending is None:
            pending = node.pending = pending_at(search, node)
        if not pending.actions:
            node.saturated = True
            return
        node.widen(*pending.take(widen_index(search, pending, node, self.by_prior)))

    def choice(self, search: HyperMCTS, rest: Sequence[Action],
               ids: Sequence[Hashable | None] | None = None, at: Node | None = None) -> int:
        """The index in ``rest`` of the decision a widening adds (:func:`widen_index` over
        ``rest``). ``ids`` are phi(a, h) per decision (None: not recorded), read from the
        environment when not given; the environment is at h, or is taken to ``at`` before
        the policy is asked."""
        if ids is None:
            ids = search.env.recorded_ids(rest)
        pending = Pending(list(rest), list(ids), [v is not None for v in ids])
        return widen_index(search, pending, at, self.by_prior)

    def wants_index(self, search: HyperMCTS) -> bool:
        return False

    def expanded(self, search: HyperMCTS, node: Node, decisions: Sequence[Action],
                 index: Mapping[str, int] | None, path: list[Edge]) -> None:
        return None
