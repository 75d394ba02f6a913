"""The LLM policy of HyperMCTS (HyperMCTS paper, Section 2.1: "a frozen LLM with parameters theta
defines a policy pi_theta(a_t | h_t)"): candidate decisions scored by a model through the
:class:`~hyperplan.llm.types.LLM` protocol, and the factory a benchmark uses to give every
search run a fresh policy over one shared answer cache. The only search module that imports the
LLM layer (:mod:`hyperplan.search.policies` and the search core do not).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from enum import StrEnum
from typing import Any, Final

from hyperplan.llm.budget import BudgetExceeded
from hyperplan.llm.types import LLM, ContextLengthError, LLMError, Message
from hyperplan.search.env import Action, SearchEnv, Verdict
from hyperplan.search.policies import HeuristicPolicy, Policy, _gumbel_top_k

CANDIDATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "candidates": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "key": {"type": "string"},
                    "score": {"type": "number"},
                },
                "required": ["key", "score"],
            },
        }
    },
    "required": ["candidates"],
}
"""The JSON answer the LLM policy asks for: scored candidate decisions by key. The prompt asks
for scores in [0, 1], and :meth:`LLMPolicy.score` clamps them there. The schema does not bound
them: a grammar-constrained server (llama.cpp) does not enforce numeric bounds, and a
score of 2.0 would void a whole answer whose ranking is usable."""

CONTEXT_CUTS = 2
"""How many times :meth:`LLMPolicy.score` halves the listed decisions of a prompt the model's
context window refuses (SmolLM2 on the CI server has 4,096 tokens; a shopping history can list
40 decisions with long product titles)."""

_SYSTEM = (
    "You are the action policy of a tree-search planner. Given the task, the history so far "
    "and the valid next decisions, return the most promising decisions as JSON "
    '{"candidates": [{"key": <decision key>, "score": <0..1>}]}, best first. Use only keys '
    "from the list."
)

_REFLECT_SYSTEM = (
    "You review a failed attempt of a tree-search planner. In at most two sentences, say what "
    "went wrong and what to do differently next time."
)

MAX_REFLECTIONS = 3
"""How many of its latest reflections (:meth:`LLMPolicy.reflect`) a policy shows in a prompt."""


def decision_names(decisions: Sequence[Action]) -> dict[str, str]:
    """The names a model may give each decision, lower-cased, to its key: the key itself, its
    label, and the key without its kind prefix ("backpack" for ``search:backpack``) when no
    other decision has that name. A name two decisions share is dropped unless it is one's own
    key: a model answering "backpack" cannot be read when two keys end in it."""
    names: dict[str, str] = {}
    own = {a.key.lower() for a in decisions}
    counts: dict[str, int] = {}
    aliases: list[tuple[str, str]] = []
    for a in decisions:
        for alias in {(a.label or "").strip().lower(), a.key.split(":", 1)[-1].strip().lower()}:
            if alias and alias not in own:
                aliases.append((alias, a.key))
                counts[alias] = counts.get(alias, 0) + 1
    for alias, key in aliases:
        if counts[alias] == 1:
            names[alias] = key
    for a in decisions:
        names[a.key.lower()] = a.key
    return names


class LLMPolicy:
    """pi_theta through the :class:`~hyperplan.llm.types.LLM` protocol.

    One call per (history, decision list) scores candidates (``CANDIDATE_SCHEMA``); answers are
    cached on the prompt so a revisited history costs no call. ``propose`` keeps the k best
    valid distinct keys; ``rollout`` samples among the scored keys (softmax at
    ``temperature``), or, with ``rollout_policy`` set, delegates simulation to that policy
    (e.g. :class:`HeuristicPolicy`) to save calls. A decision may be named by its key, its
    label or its unprefixed key (:func:`decision_names`); unknown names are dropped; if the model
    yields no valid key (or the call fails, or the LLM budget is exhausted) the policy falls
    back to a uniform choice, so a bad answer never stops the search. ``calls`` counts model
    calls, ``fallbacks`` the answers that gave no valid key. Policies given the same ``cache``
    (a dict) share their answers: with a deterministic model (temperature 0) the methods of a
    benchmark then see the same answer for the same history and pay for it once."""

    def __init__(
        self,
        llm: LLM,
        *,
        temperature: float = 0.2,
        rollout_policy: Policy | None = None,
        component: str = "mcts-policy",
        max_decisions: int = 40,
        cache: dict[str, list[tuple[str, float]]] | None = None,
    ) -> None:
        self.llm = llm
        self.temperature = temperature
        self.rollout_policy = rollout_policy
        self.component = component
        self.max_decisions = max_decisions
        self.name = "llm"
        self.calls = 0
        self.fallbacks = 0
        self.reflections: list[str] = []
        self._cache: dict[str, list[tuple[str, float]]] = {} if cache is None else cache

    def _prompt(self, env: SearchEnv, decisions: Sequence[Action], k: int,
                limit: int | None = None) -> str:
        shown = self.shown(env, decisions, limit)
        listed = "\n".join(f"- {a.key} [{a.kind}]: {a.label or a.key}" for a in shown)
        heading = "Valid decisions"
        if len(shown) < len(decisions):
            heading += (f" ({len(shown)} of {len(decisions)}, the most promising by the "
                        "environment's hint)")
        notes = "".join(f"- {r}\n" for r in self.reflections[-MAX_REFLECTIONS:])
        lessons = f"Reflections on earlier failed attempts:\n{notes}\n" if notes else ""
        return (
            f"Task: {env.query}\n\nHistory:\n{env.describe().strip() or '(no steps yet)'}\n\n"
            f"{heading}:\n{listed}\n\n{lessons}Return up to {k} candidates."
        )

    def shown(self, env: SearchEnv, decisions: Sequence[Action],
              limit: int | None = None) -> list[Action]:
        """The decisions the prompt lists: all of them, or when there are more than ``limit``
        (default ``max_decisions``), the ``limit`` with the highest :meth:`SearchEnv.hint`
        (earlier ones first on ties), in the environment's order. A travel day can offer
        hundreds of decisions; listing the first ones only would hide the rest from the
        model for good."""
        cap = self.max_decisions if limit is None else limit
        if len(decisions) <= cap:
            return list(decisions)
        hints = [env.hint(a) for a in decisions]
        best = sorted(range(len(decisions)), key=lambda i: (-hints[i], i))[:cap]
        return [decisions[i] for i in sorted(best)]

    def score(self, env: SearchEnv, decisions: Sequence[Action], k: int) -> list[tuple[str, float]]:
        """The model's (key, score) list for the current history, valid distinct keys only.
        A prompt the model's context window refuses is asked again with half as many
        decisions listed (the best by hint), at most ``CONTEXT_CUTS`` times."""
        prompt = self._prompt(env, decisions, k)
        cached = self._cache.get(prompt)
        if cached is not None:
            return cached
        names = decision_names(decisions)
        out: list[tuple[str, float]] = []
        self.calls += 1
        try:
            parsed = self._ask(prompt)
            shown = min(len(decisions), self.max_decisions)
            for _ in range(CONTEXT_CUTS):
                if parsed is not None or shown <= 1:
                    break
                shown = max(1, shown // 2)
                parsed = self._ask(self._prompt(env, decisions, k, shown))
            seen: set[str] = set()
            for item in (parsed or {}).get("candidates", []):
                key = names.get(str(item.get("key", "")).strip().lower())
                if key is not None and key not in seen:
                    seen.add(key)
                    score = float(item.get("score", 0.0))
                    out.append((key, 0.0 if score < 0.0 else min(score, 1.0)))
        except (LLMError, BudgetExceeded, ValueError, AttributeError, TypeError):
            out = []
        if not out:
            self.fallbacks += 1
        self._cache[prompt] = out
        return out

    def _ask(self, prompt: str) -> Any:
        """The model's parsed answer to ``prompt``, or None when the prompt does not fit its
        context window (other failures raise)."""
        try:
            response = self.llm.complete(
                [Message.system(_SYSTEM), Message.user(prompt)],
                schema=CANDIDATE_SCHEMA,
                component=self.component,
            )
        except ContextLengthError:
            return None
        return response.parsed if response.parsed is not None else json.loads(response.text)

    def reflect(self, env: SearchEnv, actions: Sequence[Action], verdict: Verdict) -> str:
        """LATS' self-reflection (Zhou et al., 2024, "Language Agent Tree Search", Section 4)
        on a failed trajectory (the environment is at its end): the model's short account of
        what went wrong, kept in ``reflections`` and shown in this policy's later prompts (the
        last :data:`MAX_REFLECTIONS`; a policy that never reflects keeps its prompts as they
        were). One model call; a failed call gives no reflection."""
        steps = env.describe().strip() or " -> ".join(a.key for a in actions)
        prompt = (f"Task: {env.query}\n\nAttempt:\n{steps}\n\n"
                  f"The verifier scored it {verdict.reward:.2f} and it failed.")
        self.calls += 1
        try:
            reply = self.llm.complete([Message.system(_REFLECT_SYSTEM), Message.user(prompt)],
                                      component=self.component)
        except (LLMError, BudgetExceeded):
            return ""
        text = (reply.text or "").strip()
        if text:
            self.reflections.append(text)
        return text

    def propose(
        self, env: SearchEnv, decisions: Sequence[Action], k: int, rng: random.Random
    ) -> list[Action]:
        return self.propose_scored(env, decisions, k, rng)[0]

    def propose_scored(
        self, env: SearchEnv, decisions: Sequence[Action], k: int, rng: random.Random
    ) -> tuple[list[Action], dict[str, float] | None]:
        """:meth:`propose` and the model's scores by key (a
        :class:`~hyperplan.search.policies.ScoringPolicy`), so the search's rollout choice
        among the proposed children is drawn from this answer (:meth:`choose`) rather than
        from a second question. No scores when the answer gave no valid key (the uniform
        fallback) or when the rollouts are another policy's (``rollout_policy``)."""
        scored = self.score(env, decisions, k)
        if not scored:
            return rng.sample(list(decisions), min(k, len(decisions))), None
        by_key = {a.key: a for a in decisions}
        ranked = sorted(scored, key=lambda ks: -ks[1])
        proposed = [by_key[key] for key, _ in ranked[:k]]
        return proposed, None if self.rollout_policy is not None else dict(scored)

    def choose(self, scores: Sequence[float], rng: random.Random) -> int:
        """:meth:`rollout`'s rule over scores the model gave: one softmax draw at
        ``temperature`` (the only one of one)."""
        if len(scores) == 1:
            return 0
        return _gumbel_top_k(list(scores), 1, self.temperature, rng)[0]

    def rollout(
        self, env: SearchEnv, decisions: Sequence[Action], rng: random.Random
    ) -> Action:
        if self.rollout_policy is not None:
            return self.rollout_policy.rollout(env, decisions, rng)
        if len(decisions) == 1:
            return decisions[0]
        scored = self.score(env, decisions, len(decisions))
        if not scored:
            return decisions[rng.randrange(len(decisions))]
        by_key = {a.key: a for a in decisions}
        pick = _gumbel_top_k([s for _, s in scored], 1, self.temperature, rng)[0]
        return by_key[scored[pick][0]]


class Rollouts(StrEnum):
    """Who simulates the rollouts of an :class:`LLMPolicyFactory`'s policies."""

    HEURISTIC = "heuristic"  # :class:`HeuristicPolicy`; the model only proposes children
    LLM = "llm"  # the model at every rollout step too


LLM_ROLLOUTS: Final = tuple(r.value for r in Rollouts)
"""The values of :class:`Rollouts`, as strings."""


class LLMPolicyFactory:
    """Fresh :class:`LLMPolicy` objects (one per search run, as a benchmark asks) over one
    model and one shared answer cache. ``rollouts`` (:class:`Rollouts`, or its value as a
    string): ``"heuristic"`` is the cheap setting. ``calls`` and ``fallbacks`` add up those of
    every policy made."""

    def __init__(self, llm: LLM, *, rollouts: Rollouts | str = Rollouts.HEURISTIC) -> None:
        if rollouts not in LLM_ROLLOUTS:
            raise ValueError(f"rollouts must be 'heuristic' or 'llm', got {rollouts!r}")
        self.llm = llm
        self.rollouts = Rollouts(rollouts)
        self._cache: dict[str, list[tuple[str, float]]] = {}
        self._made: list[LLMPolicy] = []

    def __call__(self) -> LLMPolicy:
        simulate = HeuristicPolicy() if self.rollouts is Rollouts.HEURISTIC else None
        policy = LLMPolicy(self.llm, rollout_policy=simulate, cache=self._cache)
        self._made.append(policy)
        return policy

    @property
    def calls(self) -> int:
        return sum(p.calls for p in self._made)

    @property
    def fallbacks(self) -> int:
        return sum(p.fallbacks for p in self._made)

    @property
    def answers(self) -> int:
        """Distinct histories the model was asked about (the shared cache's size)."""
        return len(self._cache)
