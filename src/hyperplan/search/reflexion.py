"""A Reflexion-style baseline (Shinn et al., 2023, "Reflexion: Language Agents with Verbal
Reinforcement Learning", Section 3), one of the unstructured test-time-scaling methods the
HyperMCTS paper compares with (its Experiments, "Baselines"); CoT is its first trial alone
(:func:`cot`).

Trials from h_0, each one evaluated trajectory of the budget B
(:class:`~hyperplan.search.common.SearchBase`):

1. **Actor** -- one trajectory taking the policy's top proposal at every step (the CoT
   trajectory, :func:`~hyperplan.search.baselines.greedy`'s rule), with the reflections so far
   in the policy's context (a model policy shows its latest reflections in every prompt,
   :meth:`~hyperplan.search.llm_policy.LLMPolicy.reflect`).
2. **Evaluator** -- the verifier: reward R(tau) and success (Reflexion's binary environment
   feedback).
3. **Self-reflection** -- on a failed trial, a policy offering ``reflect(env, actions,
   verdict)`` is asked for a reflection (one policy call) that it keeps as memory for the next
   trials. A policy without a model (heuristic, random) has nothing to ask, so the step is
   skipped and the result says so (``notes["reflection"]``, as LATS does); the trials then
   differ only by the policy's own draws.

Trials repeat until one succeeds (early stop on a verified perfect trajectory) or B trials
were run; the answer is the best evaluated trajectory.
"""

from __future__ import annotations

from time import perf_counter

from hyperplan.search.baselines import greedy
from hyperplan.search.common import SearchResult
from hyperplan.search.config import MCTSConfig
from hyperplan.search.env import Action, SearchEnv, Verdict
from hyperplan.search.policies import Policy
from hyperplan.search.reflection import ReflectingSearch

__all__ = ["Reflexion", "cot", "reflexion"]


class Reflexion(ReflectingSearch):
    """The Reflexion-style search (module doc). After :meth:`run`, ``reflections`` holds the
    model's reflections (empty without a model)."""

    method = "reflexion"

    def __init__(self, env: SearchEnv, policy: Policy, config: MCTSConfig,
                 seed: int = 0) -> None:
        super().__init__(env, policy, config, seed)
        self.method = "reflexion"  # on the instance: the compiled base reads no subclass attribute

    def trial(self) -> tuple[list[Action], Verdict]:
        """Steps 1-2: one actor trajectory from h_0 and its verdict
        (:meth:`~hyperplan.search.common.SearchBase.follow_top`)."""
        return self.follow_top()

    def run(self) -> SearchResult:
        started = perf_counter()
        while not self.exhausted:
            actions, verdict = self.trial()
            self.record(actions, verdict)
            if not self.exhausted:  # no reflection after the last trial: nothing would read it
                self.reflect(actions, verdict)
        return self.result(started)  # (with the reflection note)


def reflexion(env: SearchEnv, policy: Policy, config: MCTSConfig, seed: int = 0) -> SearchResult:
    """Run the Reflexion-style baseline on one environment (module doc)."""
    return Reflexion(env, policy, config, seed).run()


def cot(env: SearchEnv, policy: Policy, config: MCTSConfig, seed: int = 0) -> SearchResult:
    """CoT (Wei et al., 2022): one trajectory taking the policy's top proposal at every step,
    named as such -- :func:`~hyperplan.search.baselines.greedy` (1 rollout of the budget)."""
    result = greedy(env, policy, config, seed)
    result.method = "cot"
    return result
