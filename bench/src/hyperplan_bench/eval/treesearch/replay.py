"""Record a search's environment and policy calls, then replay them: the search's own cost in
isolation (the bookkeeping target of docs/benchmarks.md, "excluding policy and environment
time").

``bookkeeping = total - policy - env`` subtracts the time spent *inside* environment and
policy calls, but the search code between them still runs after that work has evicted it from
the CPU caches: on a suite whose environment and policy take a millisecond per step, the same
bookkeeping code runs several times slower than against a cheap one. Replaying isolates it: a
:class:`Recorder` wraps the environment and the policy of one run and logs, in call order,
every result they return; :func:`replay_env` and :func:`replay_policy` then answer a second
run of the same search (same config and seed) from that log, in a few hundred nanoseconds per
call. A search is deterministic given those answers (the policies are the only users of the
search's rng), so the replayed run takes exactly the recorded decisions -- checked call by call
(a replay that asks for another method than the log holds raises :class:`ReplayError`) and by
the caller on the result. Its ``us_per_iter`` is the search's own work with warm caches; the
in-situ figure stays the headline (:mod:`hyperplan_bench.eval.treesearch.bench`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hyperplan.search.env import Action, Objective, SearchEnv, Verdict
from hyperplan.search.policies import Policy


class ReplayError(RuntimeError):
    """The replayed search asked for a different call than the recorded run made."""


@dataclass
class CallLog:
    """The results of one run's environment and policy calls, in order, as (method, result)."""

    calls: list[tuple[str, Any]] = field(default_factory=list)


class _RecordingEnv:
    """Forwards to ``env`` and logs every method result (properties are constant per task)."""

    def __init__(self, env: SearchEnv, log: CallLog) -> None:
        self._env, self._log = env, log.calls

    @property
    def query(self) -> str:
        return self._env.query

    @property
    def objectives(self) -> Sequence[Objective]:
        return self._env.objectives

    @property
    def horizon(self) -> int:
        return self._env.horizon

    def _call(self, name: str, *args: Any) -> Any:
        result = getattr(self._env, name)(*args)
        self._log.append((name, result))
        return result

    def reset(self) -> None:
        self._call("reset")

    def snapshot(self) -> Any:
        return self._call("snapshot")

    def restore(self, snapshot: Any) -> None:
        self._call("restore", snapshot)

    def decisions(self) -> Sequence[Action]:
        return self._call("decisions")  # type: ignore[no-any-return]

    def step(self, action: Action) -> str:
        return self._call("step", action)  # type: ignore[no-any-return]

    def is_terminal(self) -> bool:
        return self._call("is_terminal")  # type: ignore[no-any-return]

    def identity(self, action: Action) -> Any:
        return self._call("identity", action)

    def recorded(self, action: Action) -> bool:
        return self._call("recorded", action)  # type: ignore[no-any-return]

    def verify(self) -> Verdict:
        return self._call("verify")  # type: ignore[no-any-return]

    def hint(self, action: Action) -> float:
        return self._env.hint(action)  # the policy's business: replayed with the policy

    def describe(self) -> str:
        return self._env.describe()


class _RecordingPolicy:
    """Forwards to ``policy`` and logs its answers."""

    def __init__(self, policy: Policy, log: CallLog) -> None:
        self.name = policy.name
        self._policy, self._log = policy, log.calls

    def propose(self, env: SearchEnv, decisions: Sequence[Action], k: int,
                rng: random.Random) -> list[Action]:
        result = self._policy.propose(env, decisions, k, rng)
        self._log.append(("propose", result))
        return result

    def rollout(self, env: SearchEnv, decisions: Sequence[Action],
                rng: random.Random) -> Action:
        result = self._policy.rollout(env, decisions, rng)
        self._log.append(("rollout", result))
        return result


class _RecordingScoringPolicy(_RecordingPolicy):
    """A :class:`_RecordingPolicy` of a scoring policy, logging its scored proposals and its
    choices among scores too."""

    def propose_scored(self, env: SearchEnv, decisions: Sequence[Action], k: int,
                       rng: random.Random) -> tuple[list[Action], dict[str, float] | None]:
        result = self._policy.propose_scored(  # type: ignore[attr-defined]
            env, decisions, k, rng)
        self._log.append(("propose_scored", result))
        return result  # type: ignore[no-any-return]

    def choose(self, scores: Sequence[float], rng: random.Random) -> int:
        result = self._policy.choose(scores, rng)  # type: ignore[attr-defined]
        self._log.append(("choose", result))
        return result  # type: ignore[no-any-return]


def _scoring(policy: Policy) -> bool:
    """Whether ``policy`` is a :class:`~hyperplan.search.policies.ScoringPolicy` (as the
    search's :class:`~hyperplan.search.timing.TimedPolicy` tells)."""
    return callable(getattr(policy, "propose_scored", None)) and callable(
        getattr(policy, "choose", None))


@dataclass
class Recorder:
    """One recorded run's environment and policy (wrap them, run the search, keep ``env_log``
    and ``policy_log``)."""

    env: SearchEnv
    policy: Policy
    env_log: CallLog = field(default_factory=CallLog)
    policy_log: CallLog = field(default_factory=CallLog)

    def wrapped(self) -> tuple[SearchEnv, Policy]:
        kind = _RecordingScoringPolicy if _scoring(self.policy) else _RecordingPolicy
        return _RecordingEnv(self.env, self.env_log), kind(self.policy, self.policy_log)


def _answers(log: CallLog) -> Callable[[str], Any]:
    calls = iter(log.calls)

    def answer(name: str) -> Any:
        recorded = next(calls, None)
        if recorded is None or recorded[0] != name:
            got = "the end of the log" if recorded is None else repr(recorded[0])
            raise ReplayError(f"replay asked for {name!r} but the recorded run made {got}")
        return recorded[1]

    return answer


class _ReplayEnv:
    def __init__(self, recorder: Recorder) -> None:
        self._answer = _answers(recorder.env_log)
        self.query = recorder.env.query
        self.objectives = recorder.env.objectives
        self.horizon = recorder.env.horizon

    def reset(self) -> None:
        self._answer("reset")

    def snapshot(self) -> Any:
        return self._answer("snapshot")

    def restore(self, snapshot: Any) -> None:
        self._answer("restore")

    def decisions(self) -> Sequence[Action]:
        return self._answer("decisions")  # type: ignore[no-any-return]

    def step(self, action: Action) -> str:
        return self._answer("step")  # type: ignore[no-any-return]

    def is_terminal(self) -> bool:
        return self._answer("is_terminal")  # type: ignore[no-any-return]

    def identity(self, action: Action) -> Any:
        return self._answer("identity")

    def recorded(self, action: Action) -> bool:
        return self._answer("recorded")  # type: ignore[no-any-return]

    def verify(self) -> Verdict:
        return self._answer("verify")  # type: ignore[no-any-return]

    def hint(self, action: Action) -> float:
        raise ReplayError("a replayed environment gives no hints (the policy is replayed)")

    def describe(self) -> str:
        return ""


class _ReplayPolicy:
    def __init__(self, recorder: Recorder) -> None:
        self.name = recorder.policy.name
        self._answer = _answers(recorder.policy_log)

    def propose(self, env: SearchEnv, decisions: Sequence[Action], k: int,
                rng: random.Random) -> list[Action]:
        return self._answer("propose")  # type: ignore[no-any-return]

    def rollout(self, env: SearchEnv, decisions: Sequence[Action],
                rng: random.Random) -> Action:
        return self._answer("rollout")  # type: ignore[no-any-return]


class _ReplayScoringPolicy(_ReplayPolicy):
    def propose_scored(self, env: SearchEnv, decisions: Sequence[Action], k: int,
                       rng: random.Random) -> tuple[list[Action], dict[str, float] | None]:
        return self._answer("propose_scored")  # type: ignore[no-any-return]

    def choose(self, scores: Sequence[float], rng: random.Random) -> int:
        return self._answer("choose")  # type: ignore[no-any-return]


def replay_env(recorder: Recorder) -> SearchEnv:
    """A fresh environment answering from ``recorder``'s log, from its first call."""
    return _ReplayEnv(recorder)


def replay_policy(recorder: Recorder) -> Policy:
    """A fresh policy answering from ``recorder``'s log, from its first call (a scoring one
    when the recorded policy is)."""
    return (_ReplayScoringPolicy if _scoring(recorder.policy) else _ReplayPolicy)(recorder)
