"""The child choices of the tree searches, as functions over a node's child edges: UCT
(Kocsis & Szepesvari 2006), HyperUCT (HyperMCTS paper, the HyperUCT rule) and the rollout
guidance's ranking by the hypergraph prior. Used by :mod:`hyperplan.search.mcts` and
:mod:`hyperplan.search.lats`."""

from __future__ import annotations

import math

from hyperplan.search.common import INFO
from hyperplan.search.env import Action
from hyperplan.search.trajectory_hypergraph import TrajectoryHypergraph
from hyperplan.search.tree import Edge

__all__ = ["graph_priors", "hyperuct_argmax", "rank_by_prior", "uct_argmax"]


def graph_priors(hypergraph: TrajectoryHypergraph, edges: list[Edge], neutral: bool) -> list[float]:
    """prior(phi(a, h)) per edge of ``edges`` from the hypergraph (0 when unseen, as in the
    paper). Non-recorded actions (information gathering) never enter C(tau), so the
    hypergraph has no evidence about them; with ``neutral`` they get the mean prior of their
    recorded siblings (0 when none) so the prior ranks commits against each other without a
    systematic bias against information gathering; otherwise 0 (the paper's rule read
    literally)."""
    values = hypergraph.priors_of([e.identity if e.recorded else None for e in edges])
    if neutral and -1.0 in values:
        known = [v for v in values if v >= 0.0]
        fill = sum(known) / len(known) if known else 0.0
        return [fill if v < 0.0 else v for v in values]
    return [0.0 if v < 0.0 else v for v in values]


def uct_argmax(edges: list[Edge], n_parent: int, c: float) -> Edge:
    """UCT (Kocsis & Szepesvari 2006): the first unvisited child, else the argmax of
    Q_tree(h, a) + c * sqrt(ln N(h) / N(h, a)) (first on ties)."""
    log_n = math.log(n_parent) if n_parent > 0 else 0.0
    best, best_score = edges[0], -math.inf
    for edge in edges:
        n = edge.n
        if n == 0:
            return edge
        score = edge.w / n + c * math.sqrt(log_n / n)
        if score > best_score:
            best, best_score = edge, score
    return best


def hyperuct_argmax(
    edges: list[Edge], priors: list[float], n_parent: int, c: float, lam: float
) -> Edge:
    """HyperUCT (HyperMCTS paper, the HyperUCT rule): unvisited children score +inf, the tie
    among them broken by the finite part lam * prior (the first highest prior); otherwise the
    argmax of Q_tree(h, a) + c * sqrt(ln N(h) / N(h, a)) + lam * prior(phi(a, h)) (first on ties).
    One pass over the children."""
    log_n = math.log(n_parent) if n_parent > 0 else 0.0
    best, best_score = edges[0], -math.inf
    fresh: Edge | None = None
    fresh_prior = -1.0
    if len(priors) != len(edges):
        raise ValueError("one prior per child edge expected")
    # enumerate over one list, not zip(..., strict=True): mypyc compiles this loop natively
    # (a zip with strict= is a generic call)
    for i, edge in enumerate(edges):
        p = priors[i]
        n = edge.n
        if n == 0:
            if p > fresh_prior:
                fresh, fresh_prior = edge, p
            continue
        if fresh is None:
            score = edge.w / n + c * math.sqrt(log_n / n) + lam * p
            if score > best_score:
                best, best_score = edge, score
    return best if fresh is None else fresh


def rank_by_prior(
    candidates: list[Action], values: list[float], neutral: bool, commits_only: bool
) -> Action:
    """The rollout-guidance choice: the candidate with the highest prior(phi(a, h))
    (``values``, -1 for a candidate without an identity, i.e. not recorded), the first one on
    ties (policy order). Candidates without an identity get the mean prior of the ranked ones
    that have one with ``neutral`` (0 when none), else 0; with ``commits_only`` information
    candidates are not ranked at all. One pass, then the filled-in value is compared with the
    best known one (the same choice as ranking the filled-in list)."""
    best_i, best_v, total, known = -1, -1.0, 0.0, 0
    first_unknown = -1
    if len(values) != len(candidates):
        raise ValueError("one prior per candidate expected")
    for i, action in enumerate(candidates):  # as in hyperuct_argmax
        value = values[i]
        if commits_only and action.kind is INFO:
            continue
        if value < 0.0:
            if first_unknown < 0:
                first_unknown = i
            continue
        total += value
        known += 1
        if value > best_v:
            best_i, best_v = i, value
    if first_unknown >= 0:
        fill = total / known if neutral and known else 0.0
        if fill > best_v or (fill == best_v and first_unknown < best_i):
            best_i = first_unknown
    return candidates[best_i]
