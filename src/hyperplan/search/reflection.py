"""Self-reflection on a failed trajectory, the step LATS (Zhou et al., 2024, Section 4, step 6)
and Reflexion (Shinn et al., 2023, Section 3, "Self-reflection") share: the model is asked why
the trajectory failed and its answer is kept as context for what follows. A policy offering
``reflect(env, actions, verdict)`` is asked (one policy call,
:meth:`~hyperplan.search.timing.TimedPolicy.reflect`); a policy without a model (heuristic,
random) has nothing to ask, so the step is skipped and the result says so
(``notes["reflection"]``)."""

from __future__ import annotations

from collections.abc import Sequence

from hyperplan.search.common import SearchBase, SearchResult
from hyperplan.search.config import MCTSConfig
from hyperplan.search.env import Action, SearchEnv, Verdict
from hyperplan.search.policies import Policy

__all__ = ["ReflectingSearch"]


class ReflectingSearch(SearchBase):
    """A search with the reflection step (module doc): ``reflections`` holds the model's
    reflections (empty without a model) and the result notes what became of the step."""

    def __init__(self, env: SearchEnv, policy: Policy, config: MCTSConfig,
                 seed: int = 0) -> None:
        super().__init__(env, policy, config, seed)
        self.reflections: list[str] = []
        self.can_reflect = callable(getattr(policy, "reflect", None))

    def reflect(self, actions: Sequence[Action], verdict: Verdict) -> None:
        """On a failed trajectory: the model's reflection, when the policy has one."""
        if verdict.success or not self.can_reflect:
            return
        note = self.policy.reflect(self.env, actions, verdict)
        if note:
            self.reflections.append(str(note))

    def reflection_note(self) -> str:
        """What became of the reflection step, for the result."""
        if self.can_reflect:
            return f"{len(self.reflections)} reflections"
        return f"skipped ({self.raw_policy.name.split('(')[0]} policy)"

    def result(self, started: float) -> SearchResult:
        out = super().result(started)
        out.notes["reflection"] = self.reflection_note()
        return out
