"""Planning (HyperAgent): the Task DAG a planner proposes ("Task-Level Planning"), Deficit-Oriented
Expansion over the hypergraph ("Tool-Level Planning", Definitions 5-6), the one planning policy
built on it (:func:`plan_support`) and the grounding of the agent state (Definition 4).

Every name loads on first use (:mod:`hyperplan._lazy`); ``Selection``, the old name of
:class:`SupportGraphChoice`, still resolves, with a DeprecationWarning."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hyperplan._lazy import by_submodule, lazy_exports

if TYPE_CHECKING:
    from hyperplan.plan.doe import DOEConfig as DOEConfig
    from hyperplan.plan.doe import DOEResult as DOEResult
    from hyperplan.plan.doe import Resolution as Resolution
    from hyperplan.plan.doe import SupportGraph as SupportGraph
    from hyperplan.plan.doe import SupportGraphChoice as SupportGraphChoice
    from hyperplan.plan.doe import best_support_graph as best_support_graph
    from hyperplan.plan.doe import expand as expand
    from hyperplan.plan.doe import rank_support_graphs as rank_support_graphs
    from hyperplan.plan.doe import select_support_graph as select_support_graph
    from hyperplan.plan.grounding import Grounding as Grounding
    from hyperplan.plan.grounding import empty_grounding as empty_grounding
    from hyperplan.plan.grounding import ground as ground
    from hyperplan.plan.planner import plan_dag as plan_dag
    from hyperplan.plan.support import Goals as Goals
    from hyperplan.plan.support import Policy as Policy
    from hyperplan.plan.support import PolicyName as PolicyName
    from hyperplan.plan.support import SupportPlan as SupportPlan
    from hyperplan.plan.support import plan_support as plan_support
    from hyperplan.plan.taskdag import TaskDAG as TaskDAG

_EXPORTS = by_submodule({
    "doe": ("DOEConfig", "DOEResult", "Resolution", "SupportGraph", "SupportGraphChoice",
            "best_support_graph", "expand", "rank_support_graphs", "select_support_graph"),
    "grounding": ("Grounding", "empty_grounding", "ground"),
    "planner": ("plan_dag",),
    "support": ("Goals", "Policy", "PolicyName", "SupportPlan", "plan_support"),
    "taskdag": ("TaskDAG",),
})
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, renamed={"Selection": "SupportGraphChoice"})
__all__ = sorted(_EXPORTS)
