"""HyperMCTS (HyperMCTS paper, Algorithm 1): MCTS over the ordered history tree whose selection rule
adds a cross-trajectory hypergraph prior.

One iteration k = one evaluated rollout:

1. **Selection** from h_0 by HyperUCT over the expanded children A_tree(h)::

       a* = argmax_a  Q_tree(h, a) + c * sqrt(ln N(h) / N(h, a)) + lambda * prior(phi(a, h))

   Unvisited expanded children score +inf and are taken first; among them the highest prior
   goes first (our tie-break, ``MCTSConfig.prior_tiebreak``; expansion order on ties). lambda = 0
   skips the prior, so the rule is exactly UCT (Kocsis & Szepesvari 2006), same code path
   (rollout guidance is inactive at lambda = 0 too). Information actions (not recorded in C(tau))
   get a neutral prior (:meth:`HyperMCTS.priors`).

   **Progressive widening** (``MCTSConfig.widen``, our design, on in the commit-widen design): on
   the way down, a commit decision point visited often enough gets one more child before the choice
   -- with lambda > 0 the decision with the best hypergraph prior among those evaluated elsewhere
   (other branches, rollouts), with lambda = 0 the policy's next proposal. Algorithm 1 proper is
   ``widen=0``.
2. **Expansion** of the reached non-terminal leaf, once (:class:`~hyperplan.search.tree.Node`
   refuses a second expansion); one child is then selected by the same rule. Which children,
   ``MCTSConfig.branch_on``:

   ``"commit"`` (the commit-widen design) -- branching at decision points. The paper (Section 2.1):
   "In planning, information-gathering actions A_info acquire evidence, whereas commit actions A_com
   select an item, document, or plan component. The tree branches at these decision points,
   retaining information-gathering steps in the history." So the policy proposes up to b candidates;
   when its top proposal is information gathering (``ActionKind.INFO``) the node gets that action as
   its *single* child (no branching; the step stays in the history); otherwise the node branches
   over up to b distinct *commit* decisions: the policy's proposals with the information actions
   dropped, topped up (only when some were dropped) by a second proposal over the remaining commit
   decisions. Without information actions among A_dec(h) this is exactly ``"all"`` (same policy
   calls, same rng stream).

   With ``MCTSConfig.info_chain`` (default) such a single information child is expanded in
   the same iteration, and so on down to the next commit decision point, so the tree's
   branching nodes are the decision points and a rollout is not spent per information step.

   ``"all"`` (the default) -- the policy's top b proposals of any kind (the tree then also
   branches on the order of information steps).

   **Evidence widening** (``MCTSConfig.evidence_widening``, our design, on by default; lam > 0
   only): the just-expanded history also gets one commit decision whose own objectives every
   earlier rollout that took it met (:meth:`HyperMCTS._add_evidence`), and, up to
   ``MCTSConfig.evidence_width`` (3 by default), further such decisions about parts of the
   plan no recorded decision on its path is about yet (:meth:`HyperMCTS._add_open_parts`).
3. **Simulation** with the policy's rollout action until the history is terminal, has no
   decisions, or reaches the horizon H. Beyond Algorithm 1 (the paper's "domain-specific guidance",
   Appendix A.3), on in the commit-widen design: ``MCTSConfig.rollout_guidance`` lets the prior pick
   among the policy's b candidates (with ``branch_on="commit"`` only at commit points: an
   information top candidate is taken as is). With ``MCTSConfig.expand_rollout`` (on by default: the
   full-path design) the simulation runs inside the tree instead: every history of the rollout is
   expanded by the rule of step 2 and the rollout chooser picks among its children, so the whole
   evaluated trajectory becomes a tree path (:meth:`HyperMCTS._rollout_in_tree`).
4. **Evaluation** by the verifier V (``env.verify()``) -> R(tau) (and rho_g).
5. **Backup** of R along the tree path, and the **hypergraph update** with Psi(tau, G)
   (iteration k reads statistics of the preceding k - 1 rollouts only).

**Composed rollouts** (``MCTSConfig.compose_every``, our design, every third iteration by
default; lam > 0 only): instead of steps 1-3, a rollout from h_0 that takes at every history the
first child verified on every objective (:meth:`HyperMCTS._compose`).

**Evidence pruning** (``MCTSConfig.evidence_pruning``, our design, on by default; lam > 0 only):
selection and the rollout chooser skip a child whose decision failed one of its own (local)
objectives in every rollout that took it, while some other child is left
(:meth:`HyperMCTS._alive`); when one child is left it is taken without asking the policy.

**Free decisions last** (``MCTSConfig.free_last``, our design, on by default; lam > 0 only):
the rollout chooser leaves a new history's *free* decisions -- recorded decisions the
hypergraph has scored under global objectives only, never under an objective about one part
of the plan (a coupon, which matters only through the total) -- for later while a recorded
decision not known to be free is among the children (:meth:`HyperMCTS._bound_first`). A free
decision taken on a partial plan fixes a global resource before the plan it is judged on
exists (a coupon applied to a partial cart uses up threshold room a larger one needs).

**Ending decisions last** (``MCTSConfig.ending_last``, our design, on by default at every lam,
so lam = 0 has it too): the rollout chooser leaves a new history's *ending* children -- commits
that are not recorded, such as finishing or abstaining, which close the plan without adding a
decision the verifier scores -- for later while a recorded decision is among its children
(:func:`_recorded_first`). Without it the evidence pruning, which drops refuted recorded
children but never an ending one, can leave an ending child alone, taken without asking.

Tree designs (:class:`TreeDesign`, :func:`design_config`): the defaults are the full-path
design (``expand_rollout``, ``branch_on="all"``, no widening, no rollout guidance, evidence
widening, composed rollouts, evidence pruning, free decisions last, ending decisions last),
whose lam = 0 is the
strongest plain MCTS measured on the dev seeds; ``"paper"`` is Algorithm 1 as written;
``"commit-widen"`` is the default until 2026-12-03.

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
from hyperplan.search.hypergraph import GLOBAL, TrajectoryHypergraph
from hyperplan.search.policies import Policy
from hyperplan.search.selection import hyperuct_argmax, rank_by_prior, uct_argmax
from hyperplan.search.tree import Edge, HistoryTree, Node, Pending, TreeError, backup

__all__ = ["BRANCH_ON", "DEFAULT_WIDEN", "DESIGNS", "FAILED", "BranchOn", "HyperMCTS",
           "InfoPrior", "MCTSConfig", "SearchBase", "SearchResult", "Timing", "TreeDesign",
           "design_config", "hypermcts"]


Pick = Callable[[SearchEnv, Sequence[Action], random.Random], Action]
"""A rollout chooser: one action of the decisions given, at the environment's history."""


def _touched(recorded: list[Hashable], verdict: Verdict) -> set[Hashable]:
    """The identities one rollout's observations touch: C(tau) and the verdict's objective
    decision sets (the only hypergraph nodes whose statistics the rollout changed)."""
    touched = set(recorded)
    for members in verdict.objective_decisions.values():
        touched.update(members)
    return touched


def _recorded_first(edges: list[Edge]) -> list[Edge]:
    """Ending decisions last (``MCTSConfig.ending_last``, our design): ``edges`` without the
    ending children -- commits that are not recorded (finishing, abstaining) -- when a
    recorded decision is among them, else all of ``edges``. Information steps stay: they
    neither end the plan nor fix part of it."""
    for edge in edges:  # most histories have no ending child: nothing is built for them
        if not edge.recorded and edge.action.kind is not INFO:
            break
    else:
        return edges
    for edge in edges:
        if edge.recorded:
            return [e for e in edges if e.recorded or e.action.kind is INFO]
    return edges


def _trajectory(path: list[Edge]) -> tuple[list[Action], list[Hashable]]:
    """The actions of a tree path and the identities C(tau) of its recorded decisions."""
    return [e.action for e in path], [e.identity for e in path if e.recorded]


class HyperMCTS(SearchBase):
    """Algorithm 1 (module doc). After :meth:`run`, ``tree`` and ``hypergraph`` stay
    inspectable."""

    method = "hypermcts"

    def __init__(
        self, env: SearchEnv, policy: Policy, config: MCTSConfig, seed: int = 0
    ) -> None:
        super().__init__(env, policy, config, seed)
        self.hypergraph: TrajectoryHypergraph | None = (
            TrajectoryHypergraph(config.agg) if config.hypergraph else None)
        self.tree: HistoryTree | None = None
        self._at: Node | None = None  # the tree node the environment is currently at
        self._at_commits = config.branch_on is BranchOn.COMMIT  # (enum reads are slow)
        graph = config.lam > 0 and self.hypergraph is not None
        self._evidence = config.evidence_widening and graph
        self._evidence_width = config.evidence_width
        self._compose_every = config.compose_every if graph else 0
        # the objectives about one part of the plan (evidence widening reads only these)
        self._local_objectives = frozenset(o.id for o in env.objectives if o.scope != "global")
        self._objective_ids = frozenset(o.id for o in env.objectives) - {GLOBAL}
        # action key -> (phi, the action taken), :meth:`_note_verified`
        self._verified: dict[str, tuple[Hashable, Action]] = {}
        self._pruning = config.evidence_pruning and graph
        # the refuted identities phi, :meth:`_note_refuted`
        self._refuted: set[Hashable] = set()
        self._free_last = config.free_last and graph
        # the free identities phi, :meth:`_note_free`
        self._free: set[Hashable] = set()
        self._ending_last = config.ending_last
        # the local objectives served on the current path, :meth:`_served_labels`
        self._served_path: list[Edge] | None = None
        self._served_upto = 0
        self._served: set[str] = set()
        # rollout choices among new children from the proposal's scores (``scored_picks``);
        # the scores of the latest expansion's first proposal (:meth:`_children`)
        self._scored_picks = config.scored_picks and self.policy.scoring
        self._proposal_scores: dict[str, float] | None = None

    def priors(self, node: Node, edges: list[Edge] | None = None) -> list[float]:
        """prior(phi(a, h)) per child edge of ``node`` (or per edge of ``edges``, some of
        them). Recorded decisions read the hypergraph (0 when unseen, as in the paper).
        Non-recorded actions (information gathering) never enter C(tau), so the hypergraph
        has no evidence about them; with ``info_prior="neutral"`` they get the mean prior of
        their recorded siblings (0 when none) so the prior ranks commits against each other
        without a systematic bias against information gathering; with ``"zero"`` they get 0
        (the paper's rule read literally)."""
        assert self.hypergraph is not None
        values = self.hypergraph.priors_of([e.identity if e.recorded else None
                                            for e in (node.edges if edges is None else edges)])
        if self.config.info_prior is InfoPrior.NEUTRAL and -1.0 in values:
            known = [v for v in values if v >= 0.0]
            fill = sum(known) / len(known) if known else 0.0
            return [fill if v < 0.0 else v for v in values]
        return [0.0 if v < 0.0 else v for v in values]

    def select(self, node: Node) -> Edge:
        """HyperUCT over the node's expanded children (with the evidence pruning, over the
        ones it leaves: :meth:`_alive`); unvisited children first. A single child is the
        argmax whatever its score, so it is returned without scoring (information steps
        under ``branch_on="commit"``)."""
        edges = node.edges
        if len(edges) == 1:
            return edges[0]
        c, lam = self.config.c, self.config.lam
        if not lam or self.hypergraph is None:  # UCT
            return uct_argmax(edges, node.n, c)
        if self._refuted:
            alive = self._alive(edges)
            if len(alive) < len(edges):
                if len(alive) == 1:
                    return alive[0]
                return self._hyperuct(node, alive)
        return self._hyperuct(node, edges)

    def _hyperuct(self, node: Node, edges: list[Edge]) -> Edge:
        """HyperUCT over ``edges`` (the children of ``node``, or some of them)."""
        if not self.config.prior_tiebreak:
            for edge in edges:
                if edge.n == 0:
                    return edge  # unvisited first, in expansion order
        return hyperuct_argmax(edges, self.priors(node, edges), node.n, self.config.c,
                                self.config.lam)

    def _alive(self, edges: list[Edge]) -> list[Edge]:
        """Evidence pruning (``MCTSConfig.evidence_pruning``, our design): ``edges`` without
        the children whose decision is refuted -- it failed one of its own (local)
        objectives in every rollout that took it (:meth:`TrajectoryHypergraph.refuted`;
        global constraints, such as a total budget, are about the whole plan, so a failure
        there is not pinned on one decision) -- or all of ``edges`` when every one is. The
        counterpart of the evidence widening: what other trajectories showed to be wrong is
        not tried again at a prefix that has not seen it fail. Empty ``_refuted`` (before the
        first refutation, and at lam = 0) leaves every child."""
        refuted = self._refuted
        if not refuted:
            return edges
        for edge in edges:  # most histories have no refuted child: nothing is built for them
            if edge.recorded and edge.identity in refuted:
                break
        else:
            return edges
        alive = [e for e in edges if not (e.recorded and e.identity in refuted)]
        return alive if alive else edges

    def _rollout_pick(self) -> Pick:
        """With ``rollout_guidance`` (> 0) and a non-empty hypergraph, a rollout step asks the
        policy for its b candidates and takes the one with the highest prior (neutral for
        information actions, policy order on ties) -- a use of the hypergraph statistics
        beyond the HyperUCT term (the HyperMCTS paper's ablation removes "the hypergraph
        component as a whole"); inactive at lam = 0, so lam = 0 always means plain UCT."""
        hypergraph = self.hypergraph
        if not self._guiding() or hypergraph is None:
            return self.policy.rollout
        propose, k = self.policy.propose, self.config.branching
        priors_of = hypergraph.priors_of
        neutral = self.config.info_prior is InfoPrior.NEUTRAL
        at_commits = self.config.branch_on is BranchOn.COMMIT
        recorded_ids = self.env.recorded_ids

        def pick(env: SearchEnv, decisions: Sequence[Action], rng: random.Random) -> Action:
            candidates = propose(env, decisions, k, rng)
            if not candidates:
                return decisions[0]
            first = candidates[0]
            if len(candidates) == 1 or (at_commits and first.kind is INFO):
                return first  # nothing to rank (information steps as the policy ranks them)
            ids = recorded_ids(candidates)
            return rank_by_prior(candidates, priors_of(ids), neutral, at_commits)

        return pick

    def _guiding(self) -> bool:
        """Whether the rollout guidance is active now (:meth:`_rollout_pick`)."""
        hypergraph = self.hypergraph
        return (self.config.rollout_guidance and self.config.lam > 0
                and hypergraph is not None and not hypergraph.empty)

    def _goto(self, node: Node) -> None:
        """Restore the environment to ``node``'s history unless it is already there."""
        if self._at is not node:
            self.env.restore(node.snapshot)
            self._at = node

    def _materialize(self, parent: Node, edge: Edge) -> None:
        """Take the edge's step once and snapshot the child (lazy, so expansion is free)."""
        child = edge.child
        self._goto(parent)
        # the step, the snapshot and the terminal check as one environment call
        reached = self.env.advance(edge.action, child.depth >= self.horizon)
        if reached is None:  # the step raised
            child.failed = child.terminal = True
            self._at = None
            return
        child.snapshot, child.terminal = reached
        self._at = child

    def _children(self, decisions: Sequence[Action], k: int) -> list[Action]:
        """The up to ``k`` distinct actions an expansion adds (``MCTSConfig.branch_on``):
        with "commit", the top proposal alone when it is information gathering, else the
        proposed commits, topped up from the remaining commits when information proposals
        were dropped (module doc, step 2). With ``scored_picks`` the first proposal's scores
        are kept for the node being expanded (:meth:`_open`)."""
        if self._scored_picks:
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

    def _decisions_at(self, node: Node) -> Sequence[Action]:
        """A_dec(h) of ``node``'s history (the environment restored there unless it already
        is)."""
        self._goto(node)
        return self._decisions()

    def _descend(self, root: Node, path: list[Edge]) -> Node:
        """Step 1, selection: HyperUCT from h_0 down to the first unexpanded or terminal
        history, materialising children on the way; the chosen edges go to ``path``."""
        node, select, widen = root, self.select, self.config.widen
        while node.expanded and not node.terminal:
            edges = node.edges
            if (widen and not node.saturated and edges[0].action.kind is not INFO
                    and node.n >= widen * (node.widened + 1) ** 2):
                self._widen(node)
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

    def _widen(self, node: Node) -> None:
        """Progressive widening (``MCTSConfig.widen``): add one commit decision of A_dec(h)
        that is not yet a child of ``node`` (:meth:`_widen_index`); mark the node saturated
        when none is left. The candidates and their identities are listed once per node, at
        its first widening (``Node.pending``; A_dec(h) and phi(a, h) are fixed for h), and
        each widening takes its choice out of that list."""
        pending = node.pending
        if pending is None:
            pending = node.pending = self._pending(node)
        if not pending.actions:
            node.saturated = True
            return
        node.widen(*pending.take(self._widen_index(pending, node)))

    def _pending(self, node: Node) -> Pending:
        """The commit decisions of A_dec(h) that are not children of ``node``
        (:class:`~hyperplan.search.tree.Pending`)."""
        env = self.env
        decisions = self._decisions_at(node)
        have = {e.action.key for e in node.edges}
        rest = [a for a in decisions if a.kind is not INFO and a.key not in have]
        ids = env.recorded_ids(rest)
        return Pending(rest, ids, [v is not None for v in ids])

    def widen_choice(
        self, rest: Sequence[Action], ids: Sequence[Hashable | None] | None = None,
        at: Node | None = None,
    ) -> int:
        """The index in ``rest`` of the decision a widening adds (:meth:`_widen_index` over
        ``rest``). ``ids`` are phi(a, h) per decision (None: not recorded), read from the
        environment when not given; the environment is at h, or is taken to ``at`` before the
        policy is asked."""
        if ids is None:
            ids = self.env.recorded_ids(rest)
        pending = Pending(list(rest), list(ids), [v is not None for v in ids])
        return self._widen_index(pending, at)

    def _widen_index(self, pending: Pending, at: Node | None) -> int:
        """The index in ``pending`` of the decision a widening adds (``MCTSConfig.widen``):
        with lam > 0 and ``widen_prior``, the highest prior(phi(a, h)) among the recorded
        decisions the hypergraph has seen (the policy breaks ties); otherwise, or when none
        was seen, the policy's top proposal. Only the pending identities the hypergraph has
        seen are read (:meth:`Pending.sync`), not every one at every widening."""
        rest, hypergraph = pending.actions, self.hypergraph
        if not (self.config.lam > 0 and self.config.widen_prior and hypergraph is not None):
            return self._policy_pick(rest, range(len(rest)), at)
        seen = list(pending.sync(hypergraph.nodes, hypergraph.born))
        if not seen:
            return self._policy_pick(rest, range(len(rest)), at)
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
        return self._policy_pick(rest, tied, at)

    def _policy_pick(self, rest: Sequence[Action], among: Sequence[int], at: Node | None) -> int:
        """The policy's top proposal among ``rest[i] for i in among``, as an index in
        ``rest`` (the first of them when it proposes nothing)."""
        if at is not None:
            self._goto(at)
        options = [rest[i] for i in among]
        proposed = self._propose(options, 1)
        if not proposed:
            return among[0]
        key = proposed[0].key
        return next((i for i in among if rest[i].key == key), among[0])

    def _open(self, node: Node, path: list[Edge]) -> list[Edge]:
        """The children of ``node``, expanding it first unless it already is (step 2); a
        history without decisions (or none proposed) becomes terminal and has none.
        ``path`` is the tree path from h_0 to ``node`` (read by the evidence widening)."""
        if not node.expanded:
            self._expand(node, path)
        edges = node.edges
        if not edges:
            node.terminal = True
        return edges

    def _expand(self, node: Node, path: list[Edge]) -> None:
        """Step 2 at the unexpanded history h of ``node``: the policy's children of A_dec(h)
        (:meth:`_children`, none when h has no decisions), with the scores of its proposal,
        then the evidence widening's (:meth:`_add_evidence`, :meth:`_add_open_parts`). A_dec(h)
        and its key index are read in one environment call when the widening will need it."""
        self._goto(node)
        index: Mapping[str, int] | None = None
        if self._evidence and self._verified:
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
            if index is not None:
                rest = self._add_evidence(node, decisions, index)
                if rest and self._evidence_width > 1:
                    self._add_open_parts(node, rest, path)

    def _add_evidence(self, node: Node, decisions: Sequence[Action],
                      index: Mapping[str, int]) -> list[Action] | None:
        """Evidence widening (``MCTSConfig.evidence_widening``, our design): beside the
        policy's children of a just-expanded history h, one more child -- the first commit
        decision of A_dec(h), not yet a child, whose own objectives were met by every earlier
        rollout that took it (:meth:`TrajectoryHypergraph.verified` over the local objectives;
        global constraints, such as a total budget, are about the whole plan). This is where
        evidence from other trajectories reaches a prefix the tree cannot share it with: the
        HyperMCTS paper's aim that "evidence obtained from one rollout can inform other
        rollouts, including those that do not share the same action prefix". No policy call;
        nothing is added before the first rollout or at lam = 0. ``decisions`` is A_dec(h),
        as the expansion listed it. The verified decisions are kept by action key
        (:meth:`_note_verified`), so a history is only looked at when one of them is among
        its decisions (the caller only asks once one is), and only up to the first that
        qualifies; the candidates are put in A_dec(h) order by ``index``, the environment's
        position index read with A_dec(h)
        (:meth:`~hyperplan.search.timing.TimedEnv.indexed_decisions`), not by a scan.

        Returns None when no child was added, else the candidates after the added one, in
        A_dec(h) order: the only ones :meth:`_add_open_parts` can add (every candidate before
        it failed a test the further children pass too)."""
        verified = self._verified
        hits = verified.keys() & index.keys()
        if hits:
            for edge in node.edges:
                hits.discard(edge.action.key)
        if not hits:
            return None
        if len(hits) == 1:  # the only candidate, as it was taken: no lookup in A_dec(h)
            phi, action = verified[next(iter(hits))]
            return [] if self._widen_verified(node, action, phi) else None
        position = index.__getitem__
        ordered = [decisions[i] for i in sorted(map(position, hits))]
        for i, action in enumerate(ordered):
            if self._widen_verified(node, action, verified[action.key][0]):
                return ordered[i + 1:]
        return None

    def _widen_verified(self, node: Node, action: Action, known: Hashable) -> bool:
        """Widen ``node`` with ``action`` when it is a recorded commit decision verified on
        the local objectives (:meth:`_add_evidence`); whether it was. ``known`` is the
        identity ``_verified`` holds for the action's key, verified by construction
        (:meth:`_note_verified`), so the hypergraph is only asked about another one."""
        if action.kind is INFO:
            return False
        hypergraph = self.hypergraph
        assert hypergraph is not None
        v = self.env.recorded_id(action)
        if v is None or (v != known and not hypergraph.verified(v, self._local_objectives)):
            return False
        node.widen(action, v, True, fresh=True)  # not a child: hits exclude the children
        return True

    def _add_open_parts(self, node: Node, candidates: list[Action], path: list[Edge]) -> None:
        """The evidence widening's further children (``MCTSConfig.evidence_width`` w > 1, our
        design), after :meth:`_add_evidence` added one: up to w - 1 more recorded decisions
        of A_dec(h) among ``candidates`` (the ones after that child, in A_dec(h) order),
        verified on their local objectives like the first, and about parts of the plan still
        open at h -- none of their local objectives is one that a recorded decision on
        ``path`` (h_0 to h) is about (:meth:`_served_labels`). So a rollout can combine
        verified parts it has not yet fixed (alternative products for the items still to
        choose), not gather more evidence for a part already served."""
        hypergraph = self.hypergraph
        assert hypergraph is not None
        commits = [a for a in candidates if a.kind is not INFO]
        if not commits:
            return
        local, nodes, verified = self._local_objectives, hypergraph.nodes, self._verified
        served = self._served_labels(path)
        added = 1
        for action, v in zip(commits, self.env.recorded_ids(commits), strict=True):
            stats = nodes.get(v) if v is not None else None
            if stats is None or not served.isdisjoint(stats.by_label):
                continue
            if v != verified[action.key][0] and not hypergraph.verified(v, local):
                continue
            node.widen(action, v, True, fresh=True)  # (as in _add_evidence)
            added += 1
            if added >= self._evidence_width:
                return

    def _served_labels(self, path: list[Edge]) -> set[str]:
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
            assert self.hypergraph is not None
            local, nodes = self._local_objectives, self.hypergraph.nodes
            for k in range(upto, len(path)):
                edge = path[k]
                stats = nodes.get(edge.identity) if edge.recorded else None
                if stats is not None:
                    served.update(label for label in stats.by_label if label in local)
            self._served_upto = len(path)
        return served

    def _note_evidence(self, path: list[Edge], actions: list[Action],
                       recorded: list[Hashable], verdict: Verdict) -> None:
        """After the hypergraph update, what the evidence widening, the composed rollouts,
        the evidence pruning and free decisions last read (:meth:`_note_verified`,
        :meth:`_note_refuted`, :meth:`_note_free`), from the identities this rollout's
        observations touched (the only ones whose statistics changed)."""
        touched = _touched(recorded, verdict)
        if self._evidence or self._compose_every:
            self._note_verified(path, actions, touched)
        if self._pruning or self._free_last:
            self._note_marks(touched)

    def _note_verified(self, path: list[Edge], actions: list[Action],
                       touched: set[Hashable]) -> None:
        """``_verified`` (action key -> (phi, the action)) holds the recorded decisions taken
        so far whose local objectives every rollout that took them met. Only the ``touched``
        identities can change; the ones already held among them are checked again, then this
        trajectory's new ones (the tree path, and the simulated steps below it) are added."""
        hypergraph, local, verified = self.hypergraph, self._local_objectives, self._verified
        assert hypergraph is not None
        stale = [k for k, (v, _) in verified.items()
                 if v in touched and not hypergraph.verified(v, local)]
        for key in stale:
            del verified[key]
        for edge in path:
            if edge.recorded and edge.action.key not in verified and hypergraph.verified(
                    edge.identity, local):
                verified[edge.action.key] = (edge.identity, edge.action)
        below = actions[len(path):]
        if below:
            for action, v in zip(below, self.env.recorded_ids(below), strict=True):
                if v is not None and action.key not in verified and hypergraph.verified(
                        v, local):
                    verified[action.key] = (v, action)

    def _note_marks(self, touched: set[Hashable]) -> None:
        """``_refuted`` (with the evidence pruning) holds the identities the hypergraph
        refutes on their local objectives (:meth:`TrajectoryHypergraph.refuted`), ``_free``
        (with free decisions last) the ones it has scored under global objectives only
        (:meth:`TrajectoryHypergraph.free`); only the ``touched`` identities can change, and
        each is read once for both (:meth:`TrajectoryHypergraph.local_marks`)."""
        hypergraph, local = self.hypergraph, self._local_objectives
        assert hypergraph is not None
        marks = hypergraph.local_marks
        refuted = self._refuted if self._pruning else None
        free = self._free if self._free_last else None
        for v in touched:
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

    def _bound_first(self, edges: list[Edge]) -> list[Edge]:
        """Free decisions last (``MCTSConfig.free_last``, our design): ``edges`` without the
        children whose decision is free (:meth:`_note_free`) when a recorded decision that is
        not free is left among them, else all of ``edges``. Information steps and commits
        that are not recorded (finishing) do not hold the free ones back: they could be
        taken forever, or end the plan before its free decisions."""
        free = self._free
        for edge in edges:  # most histories have no free child: nothing is built for them
            if edge.recorded and edge.identity in free:
                break
        else:
            return edges
        rest = [e for e in edges if not (e.recorded and e.identity in free)]
        for edge in rest:
            if edge.recorded:
                return rest
        return edges

    def _grow(self, node: Node, path: list[Edge]) -> Node:
        """Step 2, expansion (at most once per node; with ``info_chain``, through single
        information children down to the next commit decision point): expand, select one new
        child, materialise it; returns the history the simulation starts from."""
        chain = self.config.info_chain and self.config.branch_on is BranchOn.COMMIT
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

    def _rollout_in_tree(self, node: Node, path: list[Edge]) -> Node:
        """Steps 2-3 with ``MCTSConfig.expand_rollout``: from the selected leaf, expand each
        history with the usual rule and take the rollout chooser's pick among its children
        (a single child as is), materialising it, until terminal / horizon / no decisions;
        the edges go to ``path``. Returns the final history (:meth:`_walk`)."""
        return self._walk(node, path, None)

    def _compose(self, root: Node, path: list[Edge]) -> Node:
        """A composed rollout (``MCTSConfig.compose_every``, our design: a use of the
        statistics to guide simulation, beyond HyperUCT): from h_0 down, each history takes its
        first child whose decision met every objective it was scored on in every rollout that
        took it (:meth:`TrajectoryHypergraph.verified` over all objectives, global
        constraints included), so the parts that different trajectories got right are put
        together in one; a history without such a child is walked as in the full-path rollout
        (:meth:`_walk`). The edges go to ``path``. Returns the final history."""
        return self._walk(root, path, self._objective_ids)

    def _walk(self, node: Node, path: list[Edge], verified_on: frozenset[str] | None) -> Node:
        """Down from ``node`` to a terminal history (or one without decisions), expanding
        every history on the way (evidence widening included). Each history takes, with
        ``verified_on``, its first child verified on those objectives; otherwise its single
        child, HyperUCT's choice when it was expanded before, else the rollout chooser's pick
        among its new children. The edges go to ``path``; returns the final history."""
        pick = self._rollout_pick()
        scored = self._scored_picks and not self._guiding()
        while not node.terminal:
            expanded = node.expanded
            edges = self._open(node, path)
            if not edges:
                break
            edge: Edge | None = None
            if verified_on is not None:
                edge = self._verified_child(edges, path, verified_on)
            if edge is None:
                if len(edges) == 1:
                    edge = edges[0]
                elif expanded:
                    edge = self.select(node)
                else:
                    edge = self._picked(node, edges, pick, scored)
            node = self._enter(node, edge, path)
        return node

    def _verified_child(self, edges: list[Edge], path: list[Edge],
                        verified_on: frozenset[str]) -> Edge | None:
        """The composed walk's choice among ``edges`` (``path``: the walk so far): the first
        child verified on the objectives ``verified_on``, None when there is none."""
        hypergraph = self.hypergraph
        if hypergraph is None:
            return None
        return next((e for e in edges if e.recorded
                     and hypergraph.verified(e.identity, verified_on)), None)

    def _picked(self, node: Node, edges: list[Edge], pick: Pick, scored: bool = False) -> Edge:
        """The child edge of ``node`` the rollout chooser ``pick`` takes among ``edges``
        (with ending decisions last, free decisions last and the evidence pruning, among the
        ones they leave, :func:`_recorded_first`, :meth:`_bound_first` and :meth:`_alive`;
        the only one left is taken without asking).
        With ``scored`` (``MCTSConfig.scored_picks``, the chooser being the policy's own
        rollout) and a score for every one of them from the proposal that expanded ``node``,
        the policy's rule draws among those scores
        (:meth:`~hyperplan.search.timing.TimedPolicy.choose`, no call): the draw ``pick`` would
        make when the scores are what it would compute at this history, as the heuristic's
        hints are."""
        if self._ending_last:
            edges = _recorded_first(edges)
            if len(edges) == 1:
                return edges[0]
        if self._free:
            edges = self._bound_first(edges)
            if len(edges) == 1:
                return edges[0]
        if self._refuted:
            edges = self._alive(edges)
            if len(edges) == 1:
                return edges[0]
        scores = node.scores
        if scored and scores is not None:
            known: list[float] = []
            for edge in edges:
                score = scores.get(edge.action.key)
                if score is None:
                    break
                known.append(score)
            else:
                i = self.policy.choose(known, self.rng)
                if not 0 <= i < len(edges):
                    raise TreeError(f"the policy {self.policy.name!r} chose index {i} among "
                                    f"{len(edges)} scored children")
                return edges[i]
        self._goto(node)
        key = pick(self.env, [e.action for e in edges], self.rng).key
        for edge in edges:
            if edge.action.key == key:
                return edge
        raise TreeError(f"the rollout chooser picked {key!r}, which is not among the "
                        "actions it was given")

    def _composing(self) -> bool:
        """Whether this iteration is a composed rollout: every ``compose_every``-th one
        (the 3rd, 6th, ...) once some decision is verified, with lam > 0."""
        m = self._compose_every
        return m > 0 and bool(self._verified) and self.rollouts % m == m - 1

    def _verify_at(self, node: Node) -> Verdict:
        """Evaluation of a history reached inside the tree (``expand_rollout``); a failed
        history or a raising verifier gives :data:`FAILED`."""
        if node.failed:
            self.failures += 1
            return FAILED
        self._goto(node)
        try:
            verdict = self.env.verify()
        except Exception:  # a failed rollout is data, not an error
            self.failures += 1
            verdict = FAILED
        self._at = None
        return verdict

    def _simulate_from(self, node: Node, actions: list[Action],
                       recorded: list[Hashable]) -> Verdict:
        """Steps 3-4, simulation and evaluation from ``node`` (:meth:`SearchBase.simulate`,
        which extends ``actions`` and ``recorded``); a failed history gives :data:`FAILED`."""
        if node.failed:
            self.failures += 1
            return FAILED
        self._goto(node)
        verdict = self.simulate(node.depth, actions, recorded)
        self._at = None
        return verdict

    def iterate(self) -> None:
        """One iteration of Algorithm 1 (module doc, steps 1-5)."""
        assert self.tree is not None
        root = self.tree.root
        path: list[Edge] = []
        if self._composing():  # 1-4. a composed rollout from the root instead
            verdict = self._verify_at(self._compose(root, path))
            actions, recorded = _trajectory(path)
        elif self.config.expand_rollout:  # 2-4. expansion and simulation inside the tree
            verdict = self._verify_at(self._rollout_in_tree(self._descend(root, path), path))
            actions, recorded = _trajectory(path)
        else:
            leaf = self._descend(root, path)  # 1. selection
            node = self._grow(leaf, path)  # 2. expansion
            actions, recorded = _trajectory(path)
            verdict = self._simulate_from(node, actions, recorded)  # 3-4. simulation
        backup(path, root, verdict.reward)  # 5. back-propagation
        if self.hypergraph is not None:  # and the hypergraph update with Psi(tau, G)
            self.hypergraph.observe(recorded, verdict, self.env.objectives)
            if self._evidence or self._compose_every or self._pruning or self._free_last:
                self._note_evidence(path, actions, recorded, verdict)
        self.record(actions, verdict)

    def run(self) -> SearchResult:
        started = perf_counter()
        self.env.reset()
        self.tree = HistoryTree(self.env.snapshot(), self.config.branching)
        self._at = self.tree.root
        while not self.exhausted:
            self.iterate()
        return self.result(started)


def hypermcts(
    env: SearchEnv, policy: Policy, config: MCTSConfig | None = None, seed: int = 0
) -> SearchResult:
    """Run HyperMCTS on one environment."""
    return HyperMCTS(env, policy, config or MCTSConfig(), seed).run()
