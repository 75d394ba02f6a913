"""What the parts of a HyperMCTS design read from earlier rollouts (:class:`Ledger`): the
identities phi the hypergraph verifies, refutes or knows to be free (:class:`Mark`), kept up to
date after each hypergraph update from the identities the rollout touched, and the local
objectives served on the current tree path (for the open parts of the evidence widening)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from hyperplan.search.env import Action, Objective, Verdict
from hyperplan.search.parts.base import Mark
from hyperplan.search.timing import TimedEnv
from hyperplan.search.trajectory_hypergraph import GLOBAL, TrajectoryHypergraph
from hyperplan.search.tree import Edge

__all__ = ["Ledger", "touched"]


def touched(recorded: list[Hashable], verdict: Verdict) -> set[Hashable]:
    """The identities one rollout's observations touch: C(tau) and the verdict's objective
    decision sets (the only hypergraph nodes whose statistics the rollout changed)."""
    out = set(recorded)
    for members in verdict.objective_decisions.values():
        out.update(members)
    return out


class Ledger:
    """The marks a design's parts read (``keeps``), over the hypergraph of one search:

    * ``verified`` -- action key -> (phi, the action) of the recorded decisions taken so far
      whose local objectives every rollout that took them met;
    * ``refuted`` -- the identities the hypergraph refutes on their local objectives
      (:meth:`TrajectoryHypergraph.refuted`);
    * ``free`` -- the identities it has scored under global objectives only
      (:meth:`TrajectoryHypergraph.free`).
    """

    __slots__ = ("_keeps_free", "_keeps_refuted", "_keeps_verified", "_served", "_served_path",
                 "_served_upto", "free", "keeps", "local", "objective_ids", "refuted",
                 "verified")

    def __init__(self, objectives: Sequence[Objective], keeps: frozenset[Mark]) -> None:
        self.keeps = keeps
        # (as booleans: an enum's hash is a Python-level call)
        self._keeps_verified = Mark.VERIFIED in keeps
        self._keeps_refuted = Mark.REFUTED in keeps
        self._keeps_free = Mark.FREE in keeps
        # the objectives about one part of the plan, and every objective but the global one
        self.local = frozenset(o.id for o in objectives if o.scope != "global")
        self.objective_ids = frozenset(o.id for o in objectives) - {GLOBAL}
        self.verified: dict[str, tuple[Hashable, Action]] = {}
        self.refuted: set[Hashable] = set()
        self.free: set[Hashable] = set()
        self._served_path: list[Edge] | None = None
        self._served_upto = 0
        self._served: set[str] = set()

    def note(self, hypergraph: TrajectoryHypergraph, env: TimedEnv, path: list[Edge],
             actions: list[Action], recorded: list[Hashable], verdict: Verdict) -> None:
        """After the hypergraph update: the marks kept, from the identities this rollout's
        observations touched (the only ones whose statistics changed)."""
        if not self.keeps:
            return
        changed = touched(recorded, verdict)
        if self._keeps_verified:
            self._note_verified(hypergraph, env, path, actions, changed)
        if self._keeps_refuted or self._keeps_free:
            self._note_marks(hypergraph, changed)

    def _note_verified(self, hypergraph: TrajectoryHypergraph, env: TimedEnv,
                       path: list[Edge], actions: list[Action],
                       changed: set[Hashable]) -> None:
        """Only the ``changed`` identities can leave ``verified``: the ones held among them
        are checked again, then this trajectory's new ones (the tree path, and the simulated
        steps below it) are added."""
        local, verified = self.local, self.verified
        stale = [k for k, (v, _) in verified.items()
                 if v in changed and not hypergraph.verified(v, local)]
        for key in stale:
            del verified[key]
        for edge in path:
            if edge.recorded and edge.action.key not in verified and hypergraph.verified(
                    edge.identity, local):
                verified[edge.action.key] = (edge.identity, edge.action)
        below = actions[len(path):]
        if below:
            for action, v in zip(below, env.recorded_ids(below), strict=True):
                if v is not None and action.key not in verified and hypergraph.verified(
                        v, local):
                    verified[action.key] = (v, action)

    def _note_marks(self, hypergraph: TrajectoryHypergraph, changed: set[Hashable]) -> None:
        """``refuted`` and ``free`` (the ones kept) for the ``changed`` identities, each read
        once for both (:meth:`TrajectoryHypergraph.local_marks`)."""
        marks, local = hypergraph.local_marks, self.local
        refuted = self.refuted if self._keeps_refuted else None
        free = self.free if self._keeps_free else None
        for v in changed:
            is_refuted, is_free = marks(v, local)
            if refuted is not None:
                if is_refuted:
                    refuted.add(v)
                else:
                    refuted.discard(v)
            if free is not None:
                if is_free:
                    free.add(v)
                else:
                    free.discard(v)

    def served(self, hypergraph: TrajectoryHypergraph, path: list[Edge]) -> set[str]:
        """The local objectives some recorded decision on ``path`` is about (its labels in
        the hypergraph), kept along the walk: within an iteration the path only grows and the
        hypergraph does not change (it is updated after the backup), so only the edges added
        since the last call are read; a new path (a new iteration) starts again."""
        if path is not self._served_path:
            self._served_path = path
            self._served_upto = 0
            self._served.clear()
        served, upto = self._served, self._served_upto
        if upto < len(path):
            local, nodes = self.local, hypergraph.nodes
            for k in range(upto, len(path)):
                edge = path[k]
                stats = nodes.get(edge.identity) if edge.recorded else None
                if stats is not None:
                    served.update(label for label in stats.by_label if label in local)
            self._served_upto = len(path)
        return served
