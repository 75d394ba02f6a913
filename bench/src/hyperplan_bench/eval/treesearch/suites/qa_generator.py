"""Seeded generator of question-answering tasks over noisy evidence
(:func:`generate_qa_task`), modelled on SealQA's setting (HyperMCTS paper, Section 3,
"Benchmarks"): web search yields conflicting, stale or misleading results. The task model is
:mod:`hyperplan_bench.eval.treesearch.suites.qa_task`.

Evidence design (why search matters, and why the hint is fallible):

* a task has ``level + 1`` parts (2, 3 or 4 sub-questions); each part's question type fixes
  which source is *reliable* for it (:data:`QTYPES`: the statistics office for populations,
  the company filing for chief executives, ...), the same in every task, so a pattern such
  as "open the statistics office's page, then answer" recurs across trajectories;
* per part the documents are: one *gold* document (reliable source, recent, the gold value),
  one or two *stale* ones (the right entity, an older value, older dates), *conflicting* ones
  (forums and blogs, recent, agreeing on one wrong value at level 3) and, with probability
  1/2, 3/4, 1 by level, a *decoy* (a news story about a similarly named entity, the most
  recent date and a title as relevant as the gold one's);
* two queries per part: the exact query lists the gold document, the stale ones and one
  conflict (the decoy too, half the time); the "latest" query lists the decoy, the conflicts,
  one stale document and, at level 1 only, the gold one;
* the environment's hint favours recent documents, news and wiki sources and relevant titles,
  and the "latest" query: informative about stale and forum evidence, wrong about decoys.
"""

from __future__ import annotations

import random

from hyperplan_bench.eval.treesearch.suites.qa_task import Doc, Part, QATask, Query

# question type -> (question template, noun for titles, reliable source)
QTYPES: dict[str, tuple[str, str, str]] = {
    "population": ("What is the current population of {e}?", "population", "statistics office"),
    "ceo": ("Who is the current chief executive of {e}?", "chief executive", "company filing"),
    "height": ("How tall is {e} after its latest renovation?", "height", "engineering registry"),
    "price": ("What does a day pass to {e} cost now?", "day-pass price", "operator site"),
    "record": ("What is the current course record at {e}?", "course record", "federation site"),
}
UNRELIABLE = ("travel forum", "fan blog")
LURING = ("news wire", "city wiki")  # sources the hint rates highly, for decoys and stale pages
PLACES = ("Varna", "Oslen", "Kirrin", "Marlow", "Tessaly", "Brenn", "Corvo", "Halden", "Ysmir",
          "Lornis", "Pellam", "Quarry", "Rosk", "Sable", "Tamsin", "Udell")
SUFFIXES = {"population": "", "ceo": " Holdings", "height": " Tower", "price": " Park",
            "record": " Circuit"}
NEAR = (" North", " East", " Bay", " New Town")
FIRST = ("Ana", "Bram", "Chen", "Dara", "Emil", "Farah", "Goran", "Hana", "Ivo", "Jun")
LAST = ("Okafor", "Lindqvist", "Moreau", "Tanaka", "Reyes", "Novak", "Haddad", "Brandt")


def _values(rng: random.Random, qtype: str, n: int) -> list[str]:
    """``n`` distinct values of a question type (the first is the gold one)."""
    out: list[str] = []
    while len(out) < n:
        if qtype == "population":
            v = f"{rng.randint(12, 990) * 1000 + rng.randint(0, 999):,}"
        elif qtype == "ceo":
            v = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        elif qtype == "height":
            v = f"{rng.randint(120, 640)} m"
        elif qtype == "price":
            v = f"{rng.randint(8, 95)} EUR"
        else:
            v = f"{rng.randint(1, 2)} min {rng.randint(10, 59):02d}.{rng.randint(0, 9)} s"
        if v not in out:
            out.append(v)
    return out


def _date(year: int, month: int) -> str:
    return f"{year}-{month:02d}"


def _part_docs(rng: random.Random, part: Part, level: int, reliable: str) -> list[Doc]:
    """The documents of one part (module doc), ids assigned later."""
    noun = QTYPES[part.qtype][1]
    n_stale = 1 if level == 1 else 2
    values = _values(rng, part.qtype, 3 + n_stale)
    gold, conflict, decoy, stale = values[0], values[1], values[2], values[3:]
    gold_month = rng.randint(2, 9)
    docs = [Doc("", part.index, reliable, _date(2026, gold_month),
                f"{part.entity} {noun}: official figures", part.entity, gold, "gold")]
    for k, v in enumerate(stale):
        src = rng.choice((reliable, *LURING))
        docs.append(Doc("", part.index, src, _date(2021 + 2 * k, rng.randint(1, 12)),
                        f"{part.entity} {noun} ({2021 + 2 * k})", part.entity, v, "stale"))
    n_conflict = 2 if level == 3 else 1
    for _ in range(n_conflict):
        docs.append(Doc("", part.index, rng.choice(UNRELIABLE),
                        _date(2026, rng.randint(1, 11)),
                        f"what is the {noun} of {part.entity}? thread", part.entity, conflict,
                        "conflict"))
    if rng.random() < (0.5, 0.75, 1.0)[level - 1]:
        near = part.entity + rng.choice(NEAR)
        docs.append(Doc("", part.index, rng.choice(LURING), _date(2026, min(12, gold_month + 2)),
                        f"latest: {part.entity} {noun} update ({near})", near, decoy, "decoy"))
    return docs


def _queries(rng: random.Random, part: Part, docs: list[Doc], level: int) -> list[Query]:
    noun = QTYPES[part.qtype][1]
    by_kind: dict[str, list[str]] = {}
    for d in docs:
        by_kind.setdefault(d.kind, []).append(d.did)
    exact = [*by_kind["gold"], *by_kind["stale"], by_kind["conflict"][0]]
    latest = [*by_kind.get("decoy", []), *by_kind["conflict"], by_kind["stale"][0]]
    if "decoy" in by_kind and rng.random() < 0.5:
        exact.append(by_kind["decoy"][0])
    if level == 1:
        latest.append(by_kind["gold"][0])
    rng.shuffle(exact)
    rng.shuffle(latest)
    i = part.index
    return [Query(f"q{i}a", i, f"{part.entity} {noun}", tuple(exact)),
            Query(f"q{i}b", i, f"{part.entity} {noun} latest 2026", tuple(latest))]


def generate_qa_task(seed: int, level: int) -> QATask:
    """One task at ``level`` (1-3), deterministic in ``seed`` (module doc)."""
    rng = random.Random(f"qa:{seed}:{level}")
    types = list(QTYPES)
    places = rng.sample(PLACES, level + 1)
    parts: list[Part] = []
    docs: list[Doc] = []
    queries: list[Query] = []
    plan: list[tuple[str, str]] = []
    for i, place in enumerate(places):
        qtype = rng.choice(types)
        entity = place + SUFFIXES[qtype]
        template, _, reliable = QTYPES[qtype]
        part = Part(i, qtype, template.format(e=entity), entity, "")
        raw = _part_docs(rng, part, level, reliable)
        rng.shuffle(raw)
        named = [Doc(f"d{i}{chr(97 + k)}", d.part, d.source, d.date, d.title, d.entity,
                     d.value, d.kind) for k, d in enumerate(raw)]
        gold_doc = next(d for d in named if d.kind == "gold")
        assert gold_doc.value is not None
        parts.append(Part(i, qtype, part.question, entity, gold_doc.value))
        qs = _queries(rng, part, named, level)
        plan.append((next(q.qid for q in qs if gold_doc.did in q.docs), gold_doc.did))
        docs.extend(named)
        queries.extend(qs)
    query = "Answer every part from the evidence you find: " + " ".join(
        f"({p.index + 1}) {p.question}" for p in parts) + " You may abstain."
    return QATask(seed, level, tuple(parts), tuple(queries), tuple(docs), tuple(plan), query)
