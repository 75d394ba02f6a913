"""HyperMCTS: hypergraph-augmented tree search for long-horizon planning (the HyperMCTS paper)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from hyperplan._lazy import lazy_exports

if TYPE_CHECKING:
    from hyperplan.search.baselines import beam, best_of_n, greedy, uct
    from hyperplan.search.common import SearchResult
    from hyperplan.search.config import MCTSConfig
    from hyperplan.search.env import Action, Objective, SearchEnv, Verdict
    from hyperplan.search.flare import FLARE, FLAREConfig, flare, flare_split
    from hyperplan.search.lats import LATS, LATSConfig
    from hyperplan.search.llm_policy import LLMPolicy
    from hyperplan.search.mcts import HyperMCTS, hypermcts
    from hyperplan.search.policies import HeuristicPolicy, Policy, RandomPolicy
    from hyperplan.search.reflexion import Reflexion, cot, reflexion
    from hyperplan.search.tot import ToT, tot
    from hyperplan.search.trajectory_hypergraph import TrajectoryHypergraph

COMPILED_MODULES = ("tree", "trajectory_hypergraph", "timing", "config", "common", "selection",
                    "mcts", "baselines", "parts.base", "parts.ledger", "parts.designs",
                    "parts.pruning", "parts.free_last", "parts.ending_last", "parts.progressive",
                    "parts.evidence_widening", "parts.open_parts", "parts.policy_rollout",
                    "parts.prior_guided", "parts.scored", "parts.composed")
"""The bookkeeping modules ``HYPERPLAN_COMPILE=1 pip install .`` compiles with mypyc."""


def compiled_core() -> bool:
    """Whether the search bookkeeping runs compiled: every module of :data:`COMPILED_MODULES`
    was loaded from a C extension rather than from its ``.py`` source."""
    for name in COMPILED_MODULES:
        path = getattr(importlib.import_module(f"hyperplan.search.{name}"), "__file__", "") or ""
        if path.endswith(".py"):
            return False
    return True


_EXPORTS = {
    "Action": "env", "HeuristicPolicy": "policies", "HyperMCTS": "mcts",
    "LLMPolicy": "llm_policy", "MCTSConfig": "config", "Objective": "env", "Policy": "policies",
    "RandomPolicy": "policies", "SearchEnv": "env", "SearchResult": "common",
    "TrajectoryHypergraph": "trajectory_hypergraph", "Verdict": "env", "beam": "baselines",
    "LATS": "lats", "LATSConfig": "lats",
    "FLARE": "flare", "FLAREConfig": "flare", "flare": "flare", "flare_split": "flare",
    "ToT": "tot", "tot": "tot", "Reflexion": "reflexion", "reflexion": "reflexion",
    "cot": "reflexion",
    "best_of_n": "baselines", "greedy": "baselines", "hypermcts": "mcts", "uct": "baselines",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "COMPILED_MODULES",
    "FLARE",
    "LATS",
    "Action",
    "FLAREConfig",
    "HeuristicPolicy",
    "HyperMCTS",
    "LATSConfig",
    "LLMPolicy",
    "MCTSConfig",
    "Objective",
    "Policy",
    "RandomPolicy",
    "Reflexion",
    "SearchEnv",
    "SearchResult",
    "ToT",
    "TrajectoryHypergraph",
    "Verdict",
    "beam",
    "best_of_n",
    "compiled_core",
    "cot",
    "flare",
    "flare_split",
    "greedy",
    "hypermcts",
    "reflexion",
    "tot",
    "uct",
]
