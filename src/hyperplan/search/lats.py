"""A LATS-style baseline: Language Agent Tree Search (Zhou et al., 2024, "Language Agent Tree
Search Unifies Reasoning, Acting, and Planning in Language Models", Section 4), one of the MCTS
variants the HyperMCTS paper compares with (its Experiments, "Baselines", and the cost
comparison of Figure 3).

One iteration = one evaluated rollout, so the budget B is accounted as for every other method
(:class:`~hyperplan.search.common.SearchBase`):

1. **Selection** -- UCT over the tree from the root (:func:`~hyperplan.search.selection.uct_argmax`
   on the backed-up values; an unvisited child first, children being kept in value order).
2. **Expansion** -- the reached leaf gets ``n`` sampled children (the policy's ``n = b``
   proposals; LATS samples n actions from the model).
3. **Evaluation** -- each new child is scored once by a value function. LATS asks the model;
   here it is the environment's :meth:`~hyperplan.search.env.SearchEnv.hint` of the child's
   action (as llm-reasoners' ``fast_reward`` is), counted as one policy call per child.
4. **Simulation** -- from the new child with the highest value, a rollout to a terminal
   history with the policy's rollout choice, then the verifier: reward r.
5. **Backpropagation** -- the mixed value ``w * v(child) + (1 - w) * r``
   (:attr:`LATSConfig.value_weight`) is backed up along the path
   (:func:`~hyperplan.search.tree.backup`), so Q(h, a) is its running mean as in LATS.
6. **Reflection** -- on a failed trajectory LATS asks the model for a self-reflection kept as
   context for later expansions. A policy offering ``reflect(env, actions, verdict)`` is asked
   (one policy call); a policy without a model (heuristic, random) has nothing to ask, so the
   step is skipped and the result says so (``notes["reflection"]``).
"""

from __future__ import annotations

from dataclasses import dataclass
from time import perf_counter

from hyperplan.search.common import FAILED, SearchResult
from hyperplan.search.config import MCTSConfig
from hyperplan.search.env import Action, SearchEnv, Verdict
from hyperplan.search.policies import Policy
from hyperplan.search.reflection import ReflectingSearch
from hyperplan.search.selection import uct_argmax
from hyperplan.search.tree import Edge, HistoryTree, Node, backup

DEFAULT_VALUE_WEIGHT = 0.5
"""The weight of the value function's score in the backed-up value: 0.5, our reading of the
weight lambda with which LATS (Section 4, evaluation) mixes its two scores, giving both equal
say (read from the paper, not checked against LATS' code)."""


@dataclass(frozen=True)
class LATSConfig:
    """LATS-specific settings (the shared ones, B, b, c, H, are :class:`MCTSConfig`'s).

    * ``value_weight`` -- w in ``w * v(child) + (1 - w) * r``, the mixed value backed up.
    """

    value_weight: float = DEFAULT_VALUE_WEIGHT

    def __post_init__(self) -> None:
        if not 0.0 <= self.value_weight <= 1.0:
            raise ValueError("value_weight must be in [0, 1]")


def mixed_value(value: float, reward: float, weight: float) -> float:
    """LATS' backed-up value: ``weight * value + (1 - weight) * reward``."""
    return weight * value + (1.0 - weight) * reward


class LATS(ReflectingSearch):
    """The LATS-style search (module doc). After :meth:`run`, ``tree`` and ``values`` (the
    value function's score of each edge's child) stay inspectable; ``reflections`` holds the
    model's reflections on failed trajectories (empty without a model)."""

    method = "lats"

    def __init__(self, env: SearchEnv, policy: Policy, config: MCTSConfig, seed: int = 0,
                 lats: LATSConfig | None = None) -> None:
        super().__init__(env, policy, config, seed)
        self.lats = lats or LATSConfig()
        self.tree: HistoryTree | None = None
        self.values: dict[Edge, float] = {}

    def value(self, action: Action) -> float:
        """Step 3: the value function's score of the child reached by ``action`` from the
        current history (:meth:`~hyperplan.search.timing.TimedPolicy.value`)."""
        return self.policy.value(self.env, action)

    def select(self, root: Node, path: list[Edge]) -> Node:
        """Step 1: UCT down the expanded part of the tree; the edges go to ``path``."""
        node = root
        while node.expanded and node.edges and not node.terminal:
            edge = uct_argmax(node.edges, node.n, self.config.c)
            path.append(edge)
            node = edge.child
        return node

    def expand(self, node: Node) -> list[Edge]:
        """Steps 2-3: n = b sampled children of ``node``, each stepped to, snapshotted and
        valued; kept best value first (ties in proposal order). A history without decisions,
        at the horizon or failed, becomes terminal."""
        if node.failed or node.depth >= self.horizon:
            node.terminal = True
            return []
        self.env.restore(node.snapshot)
        decisions = self._decisions()
        proposed = self._propose(decisions, self.config.branching) if decisions else []
        if not proposed:
            node.terminal = True
            return []
        scored = sorted(((-self.value(a), i, a) for i, a in enumerate(proposed)),
                        key=lambda item: (item[0], item[1]))
        edges = node.expand(self.env.children([a for _, _, a in scored]),
                            self.config.branching)
        for (negative, _, _), edge in zip(scored, edges, strict=True):
            self.values[edge] = -negative
            self._materialize(node, edge)
        return edges

    def _materialize(self, parent: Node, edge: Edge) -> None:
        """The child's snapshot (a raising step marks it failed)."""
        self.env.restore(parent.snapshot)
        try:
            self.env.step(edge.action)
            edge.child.snapshot = self.env.snapshot()
        except Exception:  # a failed step is data, not an error
            edge.child.failed = True

    def simulate_from(self, node: Node, actions: list[Action]) -> Verdict:
        """Step 4: rollout and verification from ``node`` (FAILED for a failed history)."""
        if node.failed:
            self.failures += 1
            return FAILED
        self.env.restore(node.snapshot)
        return self.simulate(node.depth, actions, [])

    def iterate(self) -> None:
        """One iteration (module doc, steps 1-6)."""
        assert self.tree is not None
        root = self.tree.root
        path: list[Edge] = []
        node = self.select(root, path)
        edges = self.expand(node) if not node.expanded and not node.terminal else []
        if edges:  # the highest-valued new child (edges are in value order)
            path.append(edges[0])
            node = edges[0].child
        actions = [e.action for e in path]
        verdict = self.simulate_from(node, actions)
        value = self.values[path[-1]] if path else 0.0
        backup(path, root, mixed_value(value, verdict.reward, self.lats.value_weight))
        self.record(actions, verdict)
        self.reflect(actions, verdict)

    def run(self) -> SearchResult:
        started = perf_counter()
        self.env.reset()
        self.tree = HistoryTree(self.env.snapshot(), self.config.branching)
        while not self.exhausted:
            self.iterate()
        return self.result(started)  # (with the reflection note)


def lats(env: SearchEnv, policy: Policy, config: MCTSConfig, seed: int = 0,
         options: LATSConfig | None = None) -> SearchResult:
    """Run the LATS-style baseline on one environment (module doc)."""
    return LATS(env, policy, config, seed, options).run()


__all__ = ["DEFAULT_VALUE_WEIGHT", "LATS", "LATSConfig", "lats", "mixed_value"]
