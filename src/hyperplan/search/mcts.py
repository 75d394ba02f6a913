"""HyperMCTS (HyperMCTS paper, Algorithm 1): MCTS over the ordered history tree whose selection rule
adds a cross-trajectory hypergraph prior.

One iteration k = one evaluated rollout:

1. **Selection** from h_0 by HyperUCT over the expanded children A_tree(h)::

       a* = argmax_a  Q_tree(h, a) + c * sqrt(ln N(h) / N(h, a)) + lambda * prior(phi(a, h))

   Unvisited expanded children score +inf and are taken first; among them the highest prior
   goes first (our tie-break, ``MCTSConfig.prior_tiebreak``; expansion order on ties). lambda = 0
   skips the prior, so the rule is exactly UCT (Kocsis & Szepesvari 2006), same code path.
   Information actions (not recorded in C(tau)) get a neutral prior (:meth:`HyperMCTS.priors`).
2. **Expansion** of the reached non-terminal leaf, once (:class:`~hyperplan.search.tree.Node`
   refuses a second expansion), with the policy's top b proposals; one child is then selected
   by the same rule. With ``branch_on="commit"`` the tree branches at decision points only (the
   paper, Section 2.1: "The tree branches at these decision points, retaining
   information-gathering steps in the history"): when the policy's top proposal is information
   gathering (``ActionKind.INFO``) it is the node's *single* child, otherwise the node branches
   over up to b distinct commit decisions (the information proposals dropped, topped up by a
   second proposal over the remaining commits); with ``info_chain`` single information
   children are expanded in the same iteration, down to the next decision point.
3. **Simulation** with the policy's rollout action until the history is terminal, has no
   decisions, or reaches the horizon H.
4. **Evaluation** by the verifier V (``env.verify()``) -> R(tau) (and rho_g).
5. **Backup** of R along the tree path, and the **hypergraph update** with Psi(tau, G)
   (iteration k reads statistics of the preceding k - 1 rollouts only).

What Algorithm 1 leaves open or we add is a *part* of the tree design
(:class:`~hyperplan.search.parts.base.Design`, :mod:`hyperplan.search.parts`): child filters
(evidence pruning, free decisions last, ending decisions last) before a choice, wideners
(progressive widening on the way down, evidence widening and its open parts at an
expansion), rollout choosers (prior-guided, scored, the policy's own), a composer (composed
rollouts), and ``in_tree``: the simulation runs inside the tree, every history it passes
expanded by step 2 and the rollout choosers picking among its children (the full-path
design). :func:`~hyperplan.search.parts.designs.design_of` reads the design from an
:class:`MCTSConfig`; ``HyperMCTS(..., design=...)`` takes one directly (experiments are new
parts, never subclasses). The designs: ``paper`` (Algorithm 1 as written), ``full-path`` (the
default), ``commit-widen`` (the default until 2026-12-03).

The answer is the evaluated trajectory with the best stored reward (the first one on ties);
the search stops early on a verified perfect trajectory (reward 1 and success). A rollout whose
environment step raises (e.g. ``ValueError`` for an invalid action) is recorded as a failed
rollout with reward 0 (backed up and fed to the hypergraph like any other), not an error.

Timing is not the algorithm's concern: the search runs on a timed environment and policy
(:mod:`hyperplan.search.timing`); bookkeeping = total - policy - env, so ``us_per_iter`` is the
search's own overhead per iteration.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Mapping, Sequence
from time import perf_counter

from hyperplan.search.common import FAILED, INFO, SearchBase, SearchResult, Timing
from hyperplan.search.config import (
    BRANCH_ON,
    DEFAULT_WIDEN,
    DESIGNS,
    BranchOn,
    InfoPrior,
    MCTSConfig,
    TreeDesign,
    design_config,
)
from hyperplan.search.env import Action, SearchEnv, Verdict
from hyperplan.search.parts.base import Composer, Design, reads
from hyperplan.search.parts.designs import design_of
from hyperplan.search.parts.ledger import Ledger
from hyperplan.search.parts.policy_rollout import PolicyRollout
from hyperplan.search.parts.scored import ScoredPicks
from hyperplan.search.policies import Policy
from hyperplan.search.selection import graph_priors, hyperuct_argmax, uct_argmax
from hyperplan.search.trajectory_hypergraph import TrajectoryHypergraph
from hyperplan.search.tree import Edge, HistoryTree, Node, backup

__all__ = ["BRANCH_ON", "DEFAULT_WIDEN", "DESIGNS", "FAILED", "BranchOn", "Design", "HyperMCTS",
           "InfoPrior", "MCTSConfig", "Pick", "SearchBase", "SearchResult", "Timing",
           "TreeDesign", "design_config", "design_of", "hypermcts"]


Pick = Callable[[SearchEnv, Sequence[Action], random.Random], Action]
"""A rollout chooser: one action of the decisions given, at the environment's history."""

_POLICY = PolicyRollout()


def _trajectory(path: list[Edge]) -> tuple[list[Action], list[Hashable]]:
    """The actions of a tree path and the identities C(tau) of its recorded decisions."""
    return [e.action for e in path], [e.identity for e in path if e.recorded]


class HyperMCTS(SearchBase):
    """Algorithm 1 (module doc) with the parts of ``design`` (by default the one ``config``
    names). After :meth:`run`, ``tree``, ``hypergraph`` and ``ledger`` stay inspectable;
    during it, ``path`` is the current iteration's tree path so far (for the parts)."""

    method = "hypermcts"

    def __init__(self, env: SearchEnv, policy: Policy, config: MCTSConfig, seed: int = 0,
                 design: Design | None = None) -> None:
        super().__init__(env, policy, config, seed)
        self.design = design if design is not None else design_of(config)
        self.hypergraph: TrajectoryHypergraph | None = (
            TrajectoryHypergraph(config.agg) if config.hypergraph else None)
        self.ledger = Ledger(env.objectives, reads(self.design))
        self.tree: HistoryTree | None = None
        self._at: Node | None = None  # the tree node the environment is currently at
        self.path: list[Edge] = []  # the current iteration's tree path so far
        d = self.design  # (the parts as attributes: no tuple lookups in the hot loops)
        self._at_commits = d.branch_on is BranchOn.COMMIT
        self._select_filters, self._rollout_filters = d.select_filters, d.rollout_filters
        self._wideners, self._choosers, self._composer = d.wideners, d.choosers, d.composer
        self._observers, self._prior = d.observers, d.prior
        # the scores of the latest expansion's first proposal, for the scored picks
        self._keep_scores = self.policy.scoring and any(
            isinstance(c, ScoredPicks) for c in d.choosers)
        self._below = tuple(c for c in d.choosers if not isinstance(c, ScoredPicks))
        self._proposal_scores: dict[str, float] | None = None
        # whether this iteration's expansions read A_dec(h) with its key index (:meth:`iterate`)
        self._index_wanted = False

    def priors(self, node: Node, edges: list[Edge] | None = None) -> list[float]:
        """prior(phi(a, h)) per child edge of ``node`` (or per edge of ``edges``, some of
        them): the design's prior rule's when it has one, else the hypergraph's
        (:func:`~hyperplan.search.selection.graph_priors`: 0 when unseen, as in the paper;
        information actions, which never enter C(tau), at the mean prior of their recorded
        siblings with ``info_prior="neutral"``, at 0 with ``"zero"``)."""
        kids = node.edges if edges is None else edges
        if self._prior is not None:
            return self._prior.priors(self, kids)
        assert self.hypergraph is not None
        return graph_priors(self.hypergraph, kids, self.config.info_prior is InfoPrior.NEUTRAL)

    def select(self, node: Node) -> Edge:
        """HyperUCT over the node's expanded children (at lam > 0 over the ones the design's
        selection filters leave); unvisited children first. A single child is the argmax
        whatever its score, so it is returned without scoring."""
        edges = node.edges
        if len(edges) == 1:
            return edges[0]
        c, lam = self.config.c, self.config.lam
        if not lam or self.hypergraph is None:  # UCT
            return uct_argmax(edges, node.n, c)
        for part in self._select_filters:
            edges = part.keep(self, edges)
            if len(edges) == 1:
                return edges[0]
        if not self.config.prior_tiebreak:
            for edge in edges:
                if edge.n == 0:
                    return edge  # unvisited first, in expansion order
        return hyperuct_argmax(edges, self.priors(node, edges), node.n, c, lam)

    def goto(self, node: Node) -> None:
        """Restore the environment to ``node``'s history unless it is already there."""
        if self._at is not node:
            self.env.restore(node.snapshot)
            self._at = node

    def _materialize(self, parent: Node, edge: Edge) -> None:
        """Take the edge's step once and snapshot the child (lazy, so expansion is free)."""
        child = edge.child
        self.goto(parent)
        # the step, the snapshot and the terminal check as one environment call
        reached = self.env.advance(edge.action, child.depth >= self.horizon)
        if reached is None:  # the step raised
            child.failed = child.terminal = True
            self._at = None
            return
        child.snapshot, child.terminal = reached
        self._at = child

    def _children(self, decisions: Sequence[Action], k: int) -> list[Action]:
        """The up to ``k`` distinct actions an expansion adds (step 2): with "commit", the top
        proposal alone when it is information gathering, else the proposed commits, topped up
        from the remaining commits when information proposals were dropped. With the scored
        picks the first proposal's scores are kept for the node being expanded."""
        if self._keep_scores:
            proposed, self._proposal_scores = self._propose_scored(decisions, k)
        else:
            proposed = self._propose(decisions, k)
        if not self._at_commits or not proposed:
            return proposed
        if proposed[0].kind is INFO:
            return proposed[:1]
        commits = [a for a in proposed if a.kind is not INFO]
        if len(commits) < len(proposed) and len(commits) < k:
            keys = {a.key for a in commits}
            rest = [a for a in decisions if a.kind is not INFO and a.key not in keys]
            if rest:
                commits += [a for a in self._propose(rest, k - len(commits))
                            if a.key not in keys]
        return commits[:k]

    def _descend(self, root: Node, path: list[Edge]) -> Node:
        """Step 1, selection: HyperUCT from h_0 down to the first unexpanded or terminal
        history (each expanded one first visited by the design's wideners), materialising
        children on the way; the chosen edges go to ``path``."""
        node, select, wideners = root, self.select, self._wideners
        while node.expanded and not node.terminal:
            for part in wideners:
                part.visit(self, node)
            edges = node.edges
            edge = edges[0] if len(edges) == 1 else select(node)
            node = self._enter(node, edge, path)
        return node

    def _enter(self, node: Node, edge: Edge, path: list[Edge]) -> Node:
        """Take ``edge`` from ``node``: append it to ``path`` and materialise its child on
        first entry (a failed child stays failed); returns the child."""
        path.append(edge)
        child = edge.child_node()
        if child.snapshot is None and not child.failed:
            self._materialize(node, edge)
        return child

    def _open(self, node: Node, path: list[Edge]) -> list[Edge]:
        """The children of ``node``, expanding it first unless it already is (step 2); a
        history without decisions (or none proposed) becomes terminal and has none.
        ``path`` is the tree path from h_0 to ``node`` (read by the wideners)."""
        if not node.expanded:
            self._expand(node, path)
        edges = node.edges
        if not edges:
            node.terminal = True
        return edges

    def _expand(self, node: Node, path: list[Edge]) -> None:
        """Step 2 at the unexpanded history h of ``node``: the policy's children of A_dec(h)
        (:meth:`_children`, none when h has no decisions), with the scores of its proposal,
        then the wideners' (A_dec(h) and its key index in one environment call when one of
        them asked for the index at the start of the iteration)."""
        self.goto(node)
        index: Mapping[str, int] | None = None
        if self._index_wanted:
            decisions, index = self.env.indexed_decisions()
        else:
            decisions = self.env.valid_decisions()
        if decisions:
            children = self.env.children(self._children(decisions, self.config.branching))
        else:
            children = []
        scores = self._proposal_scores  # kept by _children, read once, here
        self._proposal_scores = None
        if children:
            node.expand(children, self.config.branching)
            node.scores = scores
            for part in self._wideners:
                part.expanded(self, node, decisions, index, path)

    def _grow(self, node: Node, path: list[Edge]) -> Node:
        """Step 2, expansion (at most once per node; with ``info_chain``, through single
        information children down to the next commit decision point): expand, select one new
        child, materialise it; returns the history the simulation starts from."""
        chain = self.design.info_chain and self._at_commits
        while not node.terminal and not node.expanded:
            edges = self._open(node, path)
            if not edges:
                break
            edge = edges[0] if len(edges) == 1 else self.select(node)
            path.append(edge)
            self._materialize(node, edge)
            node = edge.child
            if not (chain and len(edges) == 1 and edge.action.kind is INFO):
                break
        return node

    def _walk(self, node: Node, path: list[Edge], composer: Composer | None) -> Node:
        """Steps 2-3 inside the tree (``in_tree``, and the composed rollouts): down from
        ``node`` to a terminal history (or one without decisions), expanding every history
        on the way (wideners included). Each history takes the ``composer``'s child when it
        names one; otherwise its single child, HyperUCT's choice when it was expanded before,
        else the rollout's pick among its new children (:meth:`_picked`). The edges go to
        ``path``; returns the final history."""
        while not node.terminal:
            expanded = node.expanded
            edges = self._open(node, path)
            if not edges:
                break
            edge = composer.child(self, edges) if composer is not None else None
            if edge is None:
                if len(edges) == 1:
                    edge = edges[0]
                elif expanded:
                    edge = self.select(node)
                else:
                    edge = self._picked(node, edges)
            node = self._enter(node, edge, path)
        return node

    def _picked(self, node: Node, edges: list[Edge]) -> Edge:
        """The child of ``node`` the rollout takes among ``edges``: among the ones the
        design's rollout filters leave (the only one left is taken without asking), the
        first pick of the design's rollout choosers, else the policy's own rollout choice
        (:meth:`choose` among the edges' actions)."""
        for part in self._rollout_filters:
            edges = part.keep(self, edges)
            if len(edges) == 1:
                return edges[0]
        for chooser in self._choosers:
            edge = chooser.pick(self, node, edges)
            if edge is not None:
                return edge
        edge = _POLICY.pick(self, node, edges)
        assert edge is not None
        return edge

    def choose(self, node: Node | None, actions: Sequence[Action]) -> Action:
        """The rollout's choice among ``actions`` at ``node`` (None: at the environment's
        history, below the tree): the first answer of the design's choosers, else the
        policy's own rollout choice."""
        for part in self._choosers:
            action = part.choose(self, node, actions)
            if action is not None:
                return action
        action = _POLICY.choose(self, node, actions)
        assert action is not None
        return action

    def _rollout_pick(self) -> Pick:
        """The simulation's chooser below the tree (:meth:`SearchBase.simulate`): the
        policy's own, or the design's choosers first when it has any that choose there (the
        scored picks choose inside the tree only, so they are not asked)."""
        choosers = self._below
        if not choosers:
            return self.policy.rollout
        rollout = self.policy.rollout

        def pick(env: SearchEnv, decisions: Sequence[Action], rng: random.Random) -> Action:
            for part in choosers:
                action = part.choose(self, None, decisions)
                if action is not None:
                    return action
            return rollout(env, decisions, rng)

        return pick

    def _evaluate(self, node: Node, actions: list[Action] | None,
                  recorded: list[Hashable]) -> Verdict:
        """Steps 3-4 from ``node``: with ``actions``, a simulation below the tree
        (:meth:`SearchBase.simulate`, which extends ``actions`` and ``recorded``), else the
        evaluation of the history itself (reached inside the tree). A failed history or a
        raising verifier gives :data:`FAILED`."""
        if node.failed:
            self.failures += 1
            return FAILED
        self.goto(node)
        if actions is not None:
            verdict = self.simulate(node.depth, actions, recorded)
        else:
            try:
                verdict = self.env.verify()
            except Exception:  # a failed rollout is data, not an error
                self.failures += 1
                verdict = FAILED
        self._at = None
        return verdict

    def iterate(self) -> None:
        """One iteration of Algorithm 1 (module doc, steps 1-5)."""
        assert self.tree is not None
        root = self.tree.root
        path: list[Edge] = []
        self.path = path
        # what the wideners read changes only after this iteration's update, so they are
        # asked once whether its expansions read the decision index
        self._index_wanted = False
        for widener in self._wideners:
            if widener.wants_index(self):
                self._index_wanted = True
                break
        composer = self._composer
        if composer is not None and composer.due(self):  # 1-4. a composed walk instead
            verdict = self._evaluate(self._walk(root, path, composer), None, [])
            actions, recorded = _trajectory(path)
        elif self.design.in_tree:  # 2-4. expansion and simulation inside the tree
            verdict = self._evaluate(self._walk(self._descend(root, path), path, None), None,
                                     [])
            actions, recorded = _trajectory(path)
        else:
            leaf = self._descend(root, path)  # 1. selection
            node = self._grow(leaf, path)  # 2. expansion
            actions, recorded = _trajectory(path)
            verdict = self._evaluate(node, actions, recorded)  # 3-4. simulation
        backup(path, root, verdict.reward)  # 5. back-propagation
        if self.hypergraph is not None:  # and the hypergraph update with Psi(tau, G)
            self.hypergraph.observe(recorded, verdict, self.env.objectives)
            self.ledger.note(self.hypergraph, self.env, path, actions, recorded, verdict)
        self.record(actions, verdict)
        for part in self._observers:
            part.observed(self, actions, verdict)

    def run(self) -> SearchResult:
        started = perf_counter()
        self.env.reset()
        self.tree = HistoryTree(self.env.snapshot(), self.config.branching)
        self._at = self.tree.root
        while not self.exhausted:
            self.iterate()
        return self.result(started)


def hypermcts(env: SearchEnv, policy: Policy, config: MCTSConfig | None = None, seed: int = 0,
              design: Design | None = None) -> SearchResult:
    """Run HyperMCTS on one environment (``design``: the parts, else the ones ``config``
    names)."""
    return HyperMCTS(env, policy, config or MCTSConfig(), seed, design).run()
