"""Reader of SealQA's own records (HyperMCTS paper, Section 3, "Benchmarks": SealQA, Pham et al.,
fact-seeking questions where web search yields conflicting, noisy or unhelpful results).

SealQA is distributed only on a model hub (flavours Seal-0, Seal-Hard and LongSeal); nothing is
downloaded here. A user who has the records exported as JSON (a list of objects) or JSON Lines
(one object a line) reads them with :func:`load_sealqa_records`. The record format this reader
accepts, written from the public description of the benchmark (the field names of the hub's
files were not checked against a copy, so unknown fields are kept in ``extra`` and a few
spellings are accepted):

* ``question`` (str, required) and ``answer`` (str, required: the gold answer);
* optional metadata: ``topic`` (str), ``freshness`` (str, e.g. "never-changing",
  "slow-changing", "fast-changing"), ``question_types`` (str or list of str), ``urls`` (list of
  str or one str), ``effective_year`` (str or int);
* optional documents (LongSeal-style, needed to build an environment): ``documents`` or
  ``docs`` or ``search_results`` -- a list whose items are a str (the document text) or an
  object with ``text`` / ``content`` / ``snippet``, and optionally ``title``, ``url`` /
  ``source``, ``date``; and/or ``gold_doc`` (one such item) with ``hard_negative_docs`` (a
  list of them).

:func:`sealqa_env` turns a record with documents into a one-part
:class:`~hyperplan_bench.eval.treesearch.suites.qa.QAEnv`: one search (the question itself) lists
every document; a document whose text contains the gold answer (after
:func:`~hyperplan_bench.eval.treesearch.suites.qa_task.normalise`) states it, the others state no
value. SealQA grades free-text answers with a model-based grader; here an answer is graded by
normalised exact match (:func:`grade`): 1 correct, 0.5 abstained, 0 otherwise, the paper's
partial-credit Mean.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hyperplan.errors import HyperplanError
from hyperplan_bench.eval.treesearch.suites.qa import QAEnv
from hyperplan_bench.eval.treesearch.suites.qa_task import Doc, Part, QATask, Query, normalise

ABSTAIN_WORDS = frozenset({"", "i don't know", "i do not know", "unknown", "abstain",
                           "cannot answer", "no answer"})
_ABSTAIN = frozenset(normalise(w) for w in ABSTAIN_WORDS)
_DOC_LISTS = ("documents", "docs", "search_results")
_KNOWN = frozenset({"question", "answer", "topic", "freshness", "question_types", "urls",
                    "effective_year", "gold_doc", "hard_negative_docs", *_DOC_LISTS})


@dataclass(frozen=True)
class SealDoc:
    text: str
    title: str = ""
    source: str = ""
    date: str = ""


@dataclass(frozen=True)
class SealRecord:
    """One SealQA record in the accepted format (module doc)."""

    question: str
    answer: str
    topic: str = ""
    freshness: str = ""
    question_types: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    effective_year: str = ""
    docs: tuple[SealDoc, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)


def _strings(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,) if value else ()
    return tuple(str(v) for v in value)


def _doc(item: Any, where: str) -> SealDoc:
    if isinstance(item, str):
        return SealDoc(item)
    if not isinstance(item, Mapping):
        raise HyperplanError(f"{where}: a document must be a string or an object, not "
                             f"{type(item).__name__}")
    text = item.get("text") or item.get("content") or item.get("snippet") or ""
    return SealDoc(str(text), str(item.get("title", "")),
                   str(item.get("url") or item.get("source") or ""), str(item.get("date", "")))


def parse_record(raw: Any, where: str = "record") -> SealRecord:
    """One record (module doc); a missing or non-string ``question`` / ``answer`` raises
    :class:`~hyperplan.errors.HyperplanError` naming ``where``."""
    if not isinstance(raw, Mapping):
        raise HyperplanError(f"{where}: a SealQA record must be an object")
    for key in ("question", "answer"):
        if not isinstance(raw.get(key), str | int | float) or raw.get(key) in ("", None):
            raise HyperplanError(f"{where}: field {key!r} is missing or not a string")
    docs: list[SealDoc] = []
    if raw.get("gold_doc") is not None:
        docs.append(_doc(raw["gold_doc"], where))
    for key in ("hard_negative_docs", *_DOC_LISTS):
        items = raw.get(key) or []
        if not isinstance(items, Sequence) or isinstance(items, str):
            raise HyperplanError(f"{where}: field {key!r} must be a list")
        docs.extend(_doc(x, f"{where}.{key}") for x in items)
    return SealRecord(
        str(raw["question"]), str(raw["answer"]), str(raw.get("topic", "")),
        str(raw.get("freshness", "")), _strings(raw.get("question_types")),
        _strings(raw.get("urls")), str(raw.get("effective_year", "")), tuple(docs),
        {k: v for k, v in raw.items() if k not in _KNOWN})


def load_sealqa_records(path: str | Path) -> list[SealRecord]:
    """Records from a JSON list or a JSON Lines file (module doc)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise HyperplanError(f"cannot read SealQA records at {p}: {exc}") from exc
    try:
        if text.lstrip().startswith("["):
            raws = json.loads(text)
        else:
            raws = [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise HyperplanError(f"{p}: not JSON or JSON Lines: {exc}") from exc
    return [parse_record(r, f"{p}[{i}]") for i, r in enumerate(raws)]


def grade(prediction: str | None, record: SealRecord) -> float:
    """1 for the gold answer (normalised exact match), 0.5 for an abstention (None or one of
    :data:`ABSTAIN_WORDS`), 0 otherwise."""
    if prediction is None or normalise(prediction) in _ABSTAIN:
        return 0.5
    return 1.0 if normalise(prediction) == normalise(record.answer) else 0.0


def sealqa_env(record: SealRecord, index: int = 0) -> QAEnv:
    """A one-part environment over the record's documents (module doc); a record without
    documents raises :class:`~hyperplan.errors.HyperplanError` (Seal-0 and Seal-Hard rows
    carry none: grade a model's answers to them with :func:`grade`)."""
    if not record.docs:
        raise HyperplanError(f"SealQA record {index} ({record.question[:60]!r}) has no "
                             "documents to search; grade answers to it with grade()")
    gold = normalise(record.answer)
    docs = tuple(
        Doc(f"d0{k}", 0, d.source or "unknown source", d.date, d.title or d.text[:80],
            "the question's subject", record.answer if gold in normalise(d.text) else None,
            "gold" if gold in normalise(d.text) else "other")
        for k, d in enumerate(record.docs))
    gold_doc = next((d.did for d in docs if d.value is not None), None)
    if gold_doc is None:
        raise HyperplanError(f"SealQA record {index}: no document contains the answer "
                             f"{record.answer!r}, so the case cannot be solved from them")
    part = Part(0, ",".join(record.question_types) or "sealqa", record.question,
                "the question's subject", record.answer)
    query = Query("q0a", 0, record.question, tuple(d.did for d in docs))
    task = QATask(index, 1, (part,), (query,), docs, (("q0a", gold_doc),),
                  record.question + " You may abstain.", "sealqa")
    return QAEnv(task)


def load_sealqa(path: str | Path, n: int | None = None) -> list[QAEnv]:
    """Environments for the first ``n`` records (all when None) of a SealQA export that carry
    documents (module doc)."""
    records = load_sealqa_records(path)
    with_docs = [(i, r) for i, r in enumerate(records) if r.docs]
    return [sealqa_env(r, i) for i, r in with_docs[:n]]
