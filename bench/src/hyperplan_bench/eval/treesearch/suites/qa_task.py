"""Task data model and scoring of the question-answering suite over noisy evidence, modelled on
SealQA (HyperMCTS paper, Section 3, "Benchmarks": fact-seeking question answering over noisy
evidence, reported as answer accuracy and a partial-credit Mean that gives abstentions half
credit). The environment is :mod:`hyperplan_bench.eval.treesearch.suites.qa`, the seeded generator
:mod:`hyperplan_bench.eval.treesearch.suites.qa_generator`, the reader of SealQA's own records
:mod:`hyperplan_bench.eval.treesearch.suites.sealqa`.

A task is one question of one or more *parts* (a multi-hop question: every part must be
answered right for the case to count). Each part has a question type, a gold value, a few
search queries and the documents those queries list. A document claims a value for the entity
it is about; its ``kind`` (gold, stale, conflict, decoy, other) is the generator's label, which
neither the hint nor the verifier reads: the verifier compares the committed value with the
gold one (:func:`normalise`), the hint sees only what a search listing or an opened document
shows.

Case score (:func:`case_score`): 1 for a correct answer to every part, 0.5 for abstaining,
0 otherwise (a wrong part, or no complete answer), the SealQA "Mean" with half credit for
abstention as the HyperMCTS paper describes it.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

DOC_KINDS = ("gold", "stale", "conflict", "decoy", "other")


def normalise(value: str) -> str:
    """Answer matching key: NFKC, lower case, punctuation other than ``.`` and ``%`` dropped,
    thousands separators removed, whitespace collapsed (``"1,204 m"`` -> ``"1204 m"``)."""
    text = unicodedata.normalize("NFKC", value).lower().strip()
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    text = re.sub(r"[^\w\s.%]", " ", text)
    text = re.sub(r"\s+", " ", text).strip()
    return text.removesuffix(".").strip()


@dataclass(frozen=True)
class Doc:
    """One document: what a search listing shows (``did``, ``source``, ``date`` as
    ``YYYY-MM``, ``title``) and what opening it reveals (``entity``, ``value``; ``value`` None
    when the document states no value)."""

    did: str
    part: int
    source: str
    date: str
    title: str
    entity: str
    value: str | None
    kind: str = "other"  # generator label (DOC_KINDS); never read by hint or verifier

    def listing(self) -> str:
        return f"{self.did} | {self.source} | {self.date or 'undated'} | {self.title}"

    def text(self) -> str:
        if self.value is None:
            return f"{self.did} ({self.source}, {self.date or 'undated'}): {self.title}; " \
                   f"no value for {self.entity} stated"
        return (f"{self.did} ({self.source}, {self.date or 'undated'}): {self.entity}: "
                f"{self.value}")

    def spec(self) -> dict[str, Any]:
        return {"did": self.did, "part": self.part, "source": self.source, "date": self.date,
                "title": self.title, "entity": self.entity, "value": self.value,
                "kind": self.kind}


@dataclass(frozen=True)
class Query:
    """A search query of one part and the documents it lists, in listing order."""

    qid: str
    part: int
    text: str
    docs: tuple[str, ...]

    def spec(self) -> dict[str, Any]:
        return {"qid": self.qid, "part": self.part, "text": self.text, "docs": list(self.docs)}


@dataclass(frozen=True)
class Part:
    """One sub-question: its type (e.g. ``population``), wording, entity and gold value."""

    index: int
    qtype: str
    question: str
    entity: str
    gold: str

    def spec(self) -> dict[str, Any]:
        return {"index": self.index, "qtype": self.qtype, "question": self.question,
                "entity": self.entity, "gold": self.gold}


@dataclass(frozen=True)
class QATask:
    seed: int
    level: int
    parts: tuple[Part, ...]
    queries: tuple[Query, ...]
    docs: tuple[Doc, ...]
    gold_plan: tuple[tuple[str, str], ...]  # per part (qid, did): a query listing a gold doc
    query: str
    source: str = "generated"  # or "sealqa" (the adapter)

    def spec(self) -> dict[str, Any]:
        return {"suite": "qa", "seed": self.seed, "level": self.level, "source": self.source,
                "parts": [p.spec() for p in self.parts],
                "queries": [q.spec() for q in self.queries],
                "docs": [d.spec() for d in self.docs],
                "gold_plan": [list(x) for x in self.gold_plan], "query": self.query}


def is_correct(answer: str | None, gold: str) -> bool:
    """Whether a committed value matches the gold value after :func:`normalise`."""
    return answer is not None and normalise(answer) == normalise(gold)


def case_score(answers: tuple[str | None, ...], golds: tuple[str, ...], abstained: bool) -> float:
    """The case's partial-credit score (module doc): 1 correct, 0.5 abstained, 0 otherwise."""
    if abstained:
        return 0.5
    ok = all(is_correct(a, g) for a, g in zip(answers, golds, strict=True))
    return 1.0 if ok else 0.0
