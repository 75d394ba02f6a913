"""The question-answering environment over noisy evidence (:class:`QAEnv`) and its verifier,
modelled on SealQA (HyperMCTS paper, Section 3, "Benchmarks"; the problem setup of Section 2.1:
information-gathering steps stay in the history, commit steps fix part of the answer).

The task model and case score live in :mod:`hyperplan_bench.eval.treesearch.suites.qa_task`, the
seeded generator in :mod:`hyperplan_bench.eval.treesearch.suites.qa_generator`; real SealQA records
are read by :mod:`hyperplan_bench.eval.treesearch.suites.sealqa`.

Actions (``Action.payload`` tuples; key = identity = ``decision_id`` of the payload): info
``("search", qid)`` (lists the query's documents: id, source, date, title); commits
``("open", did)`` (selects a listed document as evidence and reveals its entity and value: the
paper's commit "selects an item, document, or plan component", so the tree branches over which
evidence to read and the hypergraph records which documents led to right answers),
``("answer", part, value)`` (a value some opened document of that part states; each part is
answered once) and ``("abstain",)`` (ends the episode). The episode ends once every part is
answered. Horizon ``H = 3 * n_parts + 2``: one search, one open and one answer per part, plus
two spare information steps.

Verifier. Objectives ``part{i}`` (local), rho = 1 when part i is answered with its gold value
(:func:`~hyperplan_bench.eval.treesearch.suites.qa_task.normalise` match), else 0 (0 for every part
after an abstention). Reward R = mean of the rho (a wrong or missing part counts 0), and
R = 0.5 after an abstention; ``success`` = every part correct (R = 1).
``metrics["score"]`` is the case score the runner averages: 1 correct, 0.5 abstained, 0
otherwise (the SealQA Mean with half credit for abstention). ``metrics`` also carries
``correct_parts``, ``answered``, ``abstained`` and ``level``. ``objective_decisions`` maps each
part to its answer identity and the opens of its documents (objective-level credit for the
evidence). :meth:`QAEnv.recorded` is true for opens and answers; abstaining is not recorded (its
reward is the same constant in every trajectory, so its statistics would carry no
cross-trajectory evidence, only a pull towards abstaining).

Design note (dev seeds 5 and 6, 60 tasks each, B = 32, b = 3, defaults): with opens as
information steps (under ``branch_on="commit"`` the policy alone then picks the documents)
HyperMCTS / UCT case accuracy was 0.183 / 0.183 (abstention still recorded) and 0.300 /
0.317; with opens as commits
0.267 / 0.317 and 0.250 / 0.317. Neither shape lets the hypergraph beat UCT on dev; opens are
commits because only then can evidence choices be searched at all.

:meth:`QAEnv.hint` reads only listings and opened documents. A document weighs
``0.2 + 0.45 * recency + 0.35 * source prior`` (recency from its date, 2020-01 -> 0, 2026-12
-> 1; a generic source prior that rates news and wikis above official pages and forums lowest,
:data:`SOURCE_PRIOR`): this is an open's hint. An answer's hint is ``0.25 + 0.7 * share *
confidence``, where share is the summed weight of the opened documents of its part stating
that value over all opened documents of the part, and confidence is 1/2 with one opened
document, 1 with two or more or when no information step can be spared. Searches score 0.8
(exact query) and 0.85 ("latest" query) while the part has none, 0.45 after, 0.05 once the
part is answered; opens and searches score 0.05 when the remaining steps are needed to answer;
abstaining scores 0.05. So the hint sees through stale and forum evidence but is fooled by
decoys (recent news about a similarly named entity) and cannot know which source is reliable
for which question type; the verifier rewards (and the hypergraph's statistics record) that.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, replace
from typing import Any

from hyperplan.search.env import Action, ActionKind, Objective, Verdict
from hyperplan_bench.eval.treesearch.suites.base import StateEnv, decision_id
from hyperplan_bench.eval.treesearch.suites.qa_task import (
    Doc,
    QATask,
    case_score,
    is_correct,
    normalise,
)

SOURCE_PRIOR = {"news wire": 0.9, "city wiki": 0.8, "travel forum": 0.4, "fan blog": 0.4}
DEFAULT_PRIOR = 0.6  # official sources and anything unknown


@dataclass(frozen=True)
class QAState:
    searched: frozenset[str] = frozenset()
    opened: frozenset[str] = frozenset()
    answers: tuple[str | None, ...] = ()
    abstained: bool = False
    finished: bool = False
    steps: int = 0
    trace: tuple[str, ...] = ()


def recency(date: str) -> float:
    """0 at 2020-01, 1 at 2026-12 (clamped); 0.5 for an undated document."""
    try:
        year, month = (int(x) for x in date.split("-")[:2])
    except ValueError:
        return 0.5
    return min(1.0, max(0.0, ((year - 2020) * 12 + month - 1) / 83))


def doc_weight(doc: Doc) -> float:
    """What the hint thinks a document is worth, from its listing alone (module doc)."""
    return 0.2 + 0.45 * recency(doc.date) + 0.35 * SOURCE_PRIOR.get(doc.source, DEFAULT_PRIOR)


class QAEnv(StateEnv):
    """One question-answering task as a :class:`~hyperplan.search.env.SearchEnv` (module
    doc)."""

    state: QAState

    def __init__(self, task: QATask) -> None:
        self.task = task
        self._docs = {d.did: d for d in task.docs}
        self._queries = {q.qid: q for q in task.queries}
        self._objectives = tuple(Objective(f"part{p.index}", p.question) for p in task.parts)
        self._horizon = 3 * len(task.parts) + 2
        self._start(QAState(answers=(None,) * len(task.parts)))

    @property
    def query(self) -> str:
        return self.task.query

    def spec(self) -> dict[str, Any]:
        return self.task.spec()

    # -- decisions
    def _listed(self, st: QAState) -> list[Doc]:
        seen: dict[str, Doc] = {}
        for qid in sorted(st.searched):
            for did in self._queries[qid].docs:
                seen.setdefault(did, self._docs[did])
        return list(seen.values())

    def _revealed(self, st: QAState, part: int) -> dict[str, str]:
        """normalised value -> first spelling, for the opened documents of ``part``."""
        out: dict[str, str] = {}
        for did in sorted(st.opened):
            d = self._docs[did]
            if d.part == part and d.value is not None:
                out.setdefault(normalise(d.value), d.value)
        return out

    def _compute_decisions(self) -> list[Action]:
        if self.is_terminal():
            return []
        st = self.state
        out: list[Action] = []
        open_parts = {p.index for p in self.task.parts if st.answers[p.index] is None}
        for q in self.task.queries:
            if q.part in open_parts and q.qid not in st.searched:
                out.append(Action(f"search:{q.qid}", ActionKind.INFO, ("search", q.qid),
                                  f"search {q.text!r}"))
        for d in self._listed(st):
            if d.part in open_parts and d.did not in st.opened:
                out.append(Action(f"open:{d.did}", ActionKind.COMMIT, ("open", d.did),
                                  f"open {d.listing()}"))
        for i in sorted(open_parts):
            for value in self._revealed(st, i).values():
                payload = ("answer", i, value)
                out.append(Action(decision_id(payload), ActionKind.COMMIT, payload,
                                  f"answer part {i + 1}: {value}"))
        out.append(Action("abstain", ActionKind.COMMIT, ("abstain",), "abstain"))
        return out

    def _apply(self, st: QAState, action: Action) -> tuple[QAState, str]:
        kind = action.payload[0]
        if kind == "search":
            q = self._queries[action.payload[1]]
            obs = f"search {q.text!r}: " + "; ".join(self._docs[d].listing() for d in q.docs)
            return replace(st, searched=st.searched | {q.qid}), obs
        if kind == "open":
            d = self._docs[action.payload[1]]
            return replace(st, opened=st.opened | {d.did}), d.text()
        if kind == "answer":
            _, i, value = action.payload
            answers = list(st.answers)
            answers[i] = value
            done = all(a is not None for a in answers)
            return replace(st, answers=tuple(answers), finished=done), \
                f"part {i + 1}: answered {value}"
        return replace(st, abstained=True, finished=True), "abstained"

    def recorded(self, action: Action) -> bool:
        return action.kind is ActionKind.COMMIT and action.payload[0] != "abstain"

    # -- verifier
    def verify(self) -> Verdict:
        st = self.state
        golds = tuple(p.gold for p in self.task.parts)
        scores: dict[str, float] = {}
        decided: dict[str, frozenset[Hashable]] = {}
        for p in self.task.parts:
            answer = st.answers[p.index]
            ok = not st.abstained and is_correct(answer, p.gold)
            scores[f"part{p.index}"] = 1.0 if ok else 0.0
            ids: set[Hashable] = {f"open:{d}" for d in st.opened
                                  if self._docs[d].part == p.index}
            if answer is not None:
                ids.add(decision_id(("answer", p.index, answer)))
            decided[f"part{p.index}"] = frozenset(ids)
        correct = sum(scores.values())
        n = len(self.task.parts)
        reward = 0.5 if st.abstained else correct / n
        return Verdict(
            reward=reward, success=not st.abstained and correct == n,
            objective_scores=scores, objective_decisions=decided,
            metrics={"score": case_score(st.answers, golds, st.abstained),
                     "correct_parts": correct,
                     "answered": float(sum(a is not None for a in st.answers)),
                     "abstained": float(st.abstained), "level": float(self.task.level)},
        )

    # -- guidance
    def _spare_steps(self) -> bool:
        """True while one more information step leaves enough steps to answer every open
        part (a search, an open and an answer for a part with nothing revealed yet)."""
        st = self.state
        needed = 0
        for p in self.task.parts:
            if st.answers[p.index] is not None:
                continue
            if self._revealed(st, p.index):
                needed += 1
            elif any(self._queries[q].part == p.index for q in st.searched):
                needed += 2
            else:
                needed += 3
        return self._horizon - st.steps - 1 >= needed

    def hint(self, action: Action) -> float:
        st = self.state
        kind = action.payload[0]
        if kind == "abstain":
            return 0.05
        if kind == "answer":
            return self._answer_hint(action.payload[1], action.payload[2])
        if not self._spare_steps():
            return 0.05
        if kind == "open":
            return doc_weight(self._docs[action.payload[1]])
        q = self._queries[action.payload[1]]
        if st.answers[q.part] is not None:
            return 0.05
        if any(self._queries[s].part == q.part for s in st.searched):
            return 0.45
        return 0.85 if q.qid.endswith("b") else 0.8

    def _answer_hint(self, part: int, value: str) -> float:
        opened = [self._docs[d] for d in sorted(self.state.opened)
                  if self._docs[d].part == part and self._docs[d].value is not None]
        total = sum(doc_weight(d) for d in opened)
        support = sum(doc_weight(d) for d in opened
                      if normalise(d.value or "") == normalise(value))
        share = support / total if total else 0.0
        confidence = 1.0 if len(opened) >= 2 or not self._spare_steps() else 0.5
        return 0.25 + 0.7 * share * confidence

    def describe(self) -> str:
        return "\n".join(f"{k + 1}. {t}" for k, t in enumerate(self.state.trace))

    # -- gold plan (for tests and sanity checks; the verifier never reads it)
    def gold_actions(self) -> list[Action]:
        """Per part: search a query listing the gold document, open it, answer its value."""
        acts: list[Action] = []
        for p, (qid, did) in zip(self.task.parts, self.task.gold_plan, strict=True):
            acts.append(Action(f"search:{qid}", ActionKind.INFO, ("search", qid)))
            acts.append(Action(f"open:{did}", ActionKind.COMMIT, ("open", did)))
            payload = ("answer", p.index, self._docs[did].value)
            acts.append(Action(decision_id(payload), ActionKind.COMMIT, payload))
        return acts
