"""Task interpretation d_t = (d_op, d_sch) of a raw request (HyperAgent, Task-Level Planning,
"Task Interpretation").

The paper prompts an LLM for the structured interpretation; :func:`interpret_request` is a
deterministic, model-free stand-in and :func:`from_llm_json` validates an LLM's answer in the
same shape. ``operations`` (d_op) are verb-led phrases ("find the most-liked song", "send an
email"): the request is cut at sentence punctuation, at clause connectives (", then",
" and then", ", and", ", but", "so that") and at ", " / " and " when the next word is an
operation verb; a clause is an operation when it starts (after fillers such as "please",
"I need to" or "I'd like to") with an operation verb or a question word, or when a short
lead-in of at most five words opened by a sequencing word ("After that, run ...", "Following
the extraction, I'd like to check ...") is followed by such a start; one whose object is
a pronoun ("delete them") gets the preceding clause appended as its antecedent, and every
verb-led operation also contributes its core, the verb with its first content chunk ("Like
songs played"). The verbs are a closed list of common task verbs (AppWorld's and generic ones
such as "rent", "analyze", "monitor"). ``schemas`` (d_sch) are the entities and values:
quoted strings, emails, URLs, paths, numbers, capitalised names and the content-word chunks of
every clause (stopwords, pronouns and the leading operation verb cut chunks apart).
References to people (a relationship noun such as "my roommates", or a single capitalised name
after "to/from/with/for" or before "has/asked/said") are typed with an extra schema phrase
"contact information of <who>", the entity type an LLM interpretation would name.

Questions. ``question`` is set when the request has at least one operation clause and every
one of them starts with a question word ("What is the title of ...", "How long is ..."): a
pure information request, which the context graph uses to demote tools with side effects.

Lookups. A plan has to find the entities a request refers to before acting on them, a step an
LLM interpretation spells out and a verb-led split misses; so d_op also gets "search contacts of
<who>" for every reference to people and "search <chunk>" for every named entity: a content
chunk holding a capitalised name besides other words ("the Velvet Underground album"), or a bare
name after "by" ("song by Zoey James" -> "search played song by Zoey James").

Apps. Given the names of the apps (tool namespaces such as ``spotify``, ``simple_note``), the
interpretation lists the ones the request names (``apps``, words matched case-insensitively:
"Simple Note", "spotify's"); app names are not entities to look up.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from hyperplan.errors import HyperplanError
from hyperplan.graph.text import name_tokens

__all__ = ["InterpretationError", "TaskInterpretation", "from_llm_json", "interpret_request",
           "match_apps"]


class InterpretationError(HyperplanError):
    """A task interpretation (e.g. an LLM's JSON answer) is malformed."""


@dataclass(frozen=True)
class TaskInterpretation:
    """d_t = (d_op, d_sch): operation phrases and schema/entity/value phrases, plus the apps
    (tool namespaces) the request names and whether it only asks questions (``question``: every
    operation clause is a wh-question, none asks for an action)."""

    operations: tuple[str, ...]
    schemas: tuple[str, ...]
    apps: tuple[str, ...] = ()
    question: bool = False

    @property
    def operation_text(self) -> str:
        """d_op as one text (phrases joined by "; "), the query of Eq. 1."""
        return "; ".join(self.operations)

    @property
    def schema_text(self) -> str:
        """d_sch as one text (phrases joined by "; ")."""
        return "; ".join(self.schemas)


# Verbs that start an operation in tool-use requests (lower case, base forms).
OPERATION_VERBS = frozenset(
    """accept add answer approve archive arrange ask assign book buy calculate call cancel change
    check clean cleanup clear close comment compare complete compress compute confirm convert copy
    count create decline decrease delete deny disable download edit email enable estimate export
    fetch find follow forward generate get give identify import increase invite keep like
    list locate log login look make mark merge message move name notify open order organize pay
    pause pin place play post print rate read receive recommend record refund reject remind
    remove rename reorder reply report request reschedule reserve reset restore retrieve return
    review save schedule search sell send set share show sort start stop submit subscribe
    summarize tell terminate text transfer translate turn unfollow unlike unpin unsubscribe update
    upload verify view withdraw write split settle attach purchase replace modify
    empty
    analyze analyse append apply assess authenticate borrow build collect compile compose
    conduct configure construct craft deploy design detect determine develop diagnose draft
    enroll evaluate examine explore extend extract gather hire initiate inspect install
    investigate launch lease load manage measure monitor normalize obtain operate optimize plan
    predict prepare process procure provide publish query recruit register renew rent repair
    research run scan screen select simulate suggest supervise track validate""".split()
)
QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how is are does do did".split()
)
# Leading words dropped before looking for the operation verb.
_FILLERS = frozenset(
    """please kindly also then and but so now just first finally lastly next i we you can could
    would will need want like have has to help me us should must let also i'd we'd i'll
    we'll""".split()
)
# Words opening a short lead-in before the operation ("After that, ...", "Following this, ...").
_LEAD_IN = frozenset(
    "after following once when before then next finally lastly subsequently afterwards".split()
)
# Words that cut noun-phrase chunks apart (besides punctuation and operation verbs).
_CHUNK_STOP = frozenset(
    """a an the of to for in on at by with from into onto via per as and or but not no nor if so
    than then that this these those there here it its it's itself my me mine our ours we us i i've
    i'm you your yours he she him her his they them their theirs what which who whom whose when
    where why how is are was were be been being am do does did done have has had having will
    would can could should shall may might must all any each every some such only just also very
    too more most less least already yet still ever even about after before since until while
    because during over under between among up down out off again once please kindly one ones
    sure like need needs want wants going go goes went made supposed appears asked got
    get""".split()
)

# Spans kept whole (and reported as schema values): quotes, emails, URLs, paths, numbers.
_PROTECTED = re.compile(
    r"\"[^\"]+\"|“[^”]+”|‘[^’]+’|(?<![\w'])'[^']+'(?![\w'])"
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
    r"|https?://\S+[^\s.,;:!?)]"
    r"|(?<!\w)~?/[\w./<>~-]*[\w/>]"
    r"|\$?\d+(?:[.,:/-]\d+)*(?:st|nd|rd|th)?%?(?![\w-])"
)
_SENTENCE = re.compile(r"[.!?;:]+(?=\s|$)|\n+")
_CONNECTIVE = re.compile(
    r",\s*(?:and\s+)?then\s+|\s+and\s+then\s+|,\s*and\s+|,\s*but\s+|\s+so\s+that\s+",
    re.IGNORECASE,
)
_SOFT = re.compile(r",\s*|\s+and\s+|\s+or\s+", re.IGNORECASE)
_WORD = re.compile(r"[\w][\w'&-]*|\x00\d+\x00")
RELATION_NOUNS = frozenset(
    """roommate roommates coworker coworkers colleague colleagues friend friends sibling siblings
    brother brothers sister sisters mother father mom dad parent parents family partner wife
    husband boss manager son sons daughter daughters cousin cousins uncle aunt neighbor
    neighbors neighbour neighbours classmate classmates teammate teammates""".split()
)
_NAME_BEFORE = frozenset("to from with for".split())
_NAME_AFTER = frozenset("has have had asked said says wants needs sent owes".split())
_HOLE = re.compile(r"\x00(\d+)\x00")
# A pronoun as the object of the operation verb (within the next two words).
_PRONOUN = re.compile(r"^\S+\s+(?:\S+\s+)?(?:them|it|those|these)\b", re.IGNORECASE)


def interpret_request(text: str, apps: Iterable[str] = ()) -> TaskInterpretation:
    """Split a raw request into d_op (operation phrases) and d_sch (schema phrases), and
    list which of ``apps`` (namespace names such as ``"simple_note"``) it names.

    Deterministic and model-free; see the module doc for the rules. A request without any
    verb-led clause keeps its first clause as its single operation, so d_op is never empty
    for a non-empty request.
    """
    if not isinstance(text, str):
        raise InterpretationError(f"request must be a string, got {type(text).__name__}")
    values: list[str] = []
    masked = _PROTECTED.sub(lambda m: _hole(values, m.group(0)), text.strip())
    clauses = [c for s in _SENTENCE.split(masked) for c in _clauses(s)]
    operations: list[str] = []
    asks = acts = 0
    for k, clause in enumerate(clauses):
        op = _operation(clause)
        if op is None:
            continue
        if _lower_words(op)[0] in QUESTION_WORDS:
            asks += 1
        else:
            acts += 1
        previous = clauses[k - 1] if k else ""
        operations.append(_restore(_resolve(op, previous), values))
        core = _core(op, previous if _PRONOUN.search(op) else "")
        if core:
            operations.append(_restore(core, values))
    if not operations and clauses:
        operations = [_restore(clauses[0], values)]
    app_words = _app_words(apps)
    for clause in clauses:
        operations += [_restore(op, values) for op in _lookups(clause, app_words)]
    people = [who for who in _people(clauses) if (who.lower(),) not in app_words]
    operations += [f"search contacts of {who}" for who in people]
    schemas = [_unquote(v) for v in values if any(ch.isalnum() for ch in v)]
    schemas += _capitalised(clauses, values)
    schemas += [f"contact information of {who}" for who in people]
    for clause in clauses:
        schemas += [_restore(chunk, values) for chunk in _chunks(clause)]
    return TaskInterpretation(
        _unique(operations), _unique(s for s in schemas if s), _mentioned_apps(text, app_words),
        question=asks > 0 and acts == 0,
    )


def from_llm_json(obj: Any) -> TaskInterpretation:
    """Validate ``{"operations": [...], "schemas": [...], "apps": [...]}`` (a dict or its
    JSON text).

    ``operations`` and ``schemas`` are required and must be lists of strings, ``apps`` (the
    namespaces the request involves) is optional; blank entries are dropped, at least one
    operation must remain. Raises :class:`InterpretationError` naming the offending field.
    """
    if isinstance(obj, str | bytes):
        try:
            obj = json.loads(obj)
        except json.JSONDecodeError as exc:
            raise InterpretationError(f"task interpretation is not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise InterpretationError(
            f"task interpretation must be a JSON object, got {type(obj).__name__}"
        )
    unknown = sorted(set(obj) - {"operations", "schemas", "apps"})
    if unknown:
        raise InterpretationError(f"task interpretation has unknown keys {unknown}")
    fields: dict[str, tuple[str, ...]] = {}
    for key in ("operations", "schemas"):
        items = obj.get(key)
        if not isinstance(items, list):
            raise InterpretationError(f"task interpretation field {key!r} must be a list")
        for i, item in enumerate(items):
            if not isinstance(item, str):
                raise InterpretationError(
                    f"task interpretation field {key}[{i}] must be a string, "
                    f"got {type(item).__name__}"
                )
        fields[key] = _unique(" ".join(s.split()) for s in items if s.strip())
    if not fields["operations"]:
        raise InterpretationError("task interpretation field 'operations' is empty")
    apps = obj.get("apps", [])
    if not isinstance(apps, list) or not all(isinstance(a, str) for a in apps):
        raise InterpretationError("task interpretation field 'apps' must be a list of strings")
    return TaskInterpretation(fields["operations"], fields["schemas"],
                              _unique(a.strip() for a in apps if a.strip()))


def match_apps(apps: Iterable[str], namespaces: Iterable[str]) -> tuple[str, ...]:
    """The namespaces that ``apps`` name (an LLM's "File System" or "Venmo" for the tool
    namespaces ``file_system`` and ``venmo``), compared without case, spaces, hyphens or
    underscores, in the order named; names matching no namespace are dropped."""

    def norm(name: str) -> str:
        return "".join(ch for ch in name.lower() if ch.isalnum())

    by_norm = {norm(ns): ns for ns in namespaces}
    found = (by_norm.get(norm(a)) for a in apps)
    return tuple(dict.fromkeys(ns for ns in found if ns is not None))


# ------------------------------------------------------------------------------- helpers
def _hole(values: list[str], span: str) -> str:
    values.append(span)
    return f"\x00{len(values) - 1}\x00"


def _restore(text: str, values: list[str]) -> str:
    return " ".join(_HOLE.sub(lambda m: values[int(m.group(1))], text).split())


def _unquote(value: str) -> str:
    return value[1:-1].strip() if value[:1] in "\"'“‘" else value


def _lower_words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _clauses(sentence: str) -> list[str]:
    """Clauses of one sentence: hard connectives always cut, soft ones (", ", " and ",
    " or ") only before an operation verb."""
    parts: list[str] = []
    for piece in _CONNECTIVE.split(sentence):
        start = 0
        for m in _SOFT.finditer(piece):
            following = _lower_words(piece[m.end():m.end() + 40])
            if following and following[0] in OPERATION_VERBS:
                parts.append(piece[start:m.start()])
                start = m.end()
        parts.append(piece[start:])
    return [p.strip(" ,") for p in parts if _WORD.search(p)]


def _operation(clause: str) -> str | None:
    """The clause from its operation verb on, or the whole clause for a question; after a
    short sequencing lead-in ("After that, run ...") the part after its comma."""
    words = list(_WORD.finditer(clause))
    for i, m in enumerate(words[:6]):
        low = m.group(0).lower()
        after = words[i + 1].group(0).lower() if i + 1 < len(words) else ""
        if low in ("like", "love") and after == "to":  # "I'd like to X": X is the operation
            continue
        if low in OPERATION_VERBS or (i == 0 and low in QUESTION_WORDS):
            return clause[m.start():].strip()
        if low not in _FILLERS:
            break
    comma = clause.find(",")
    if words and words[0].group(0).lower() in _LEAD_IN and comma > 0 and len(
        _WORD.findall(clause[:comma])
    ) <= 5:
        return _operation(clause[comma + 1:])
    return None


def _core(operation: str, antecedent: str = "") -> str | None:
    """Verb + first content chunk of a verb-led operation ("Like all the songs played so far
    ..." -> "Like songs played"; with a pronoun object, the antecedent's first chunk: "delete
    them" -> "delete phone text messages"), or None for questions and one-chunk operations."""
    words = _WORD.findall(operation)
    if not words or words[0].lower() not in OPERATION_VERBS:
        return None
    chunks = _chunks(operation) or _chunks(antecedent)
    if not chunks:
        return None
    core = f"{words[0]} {chunks[0]}"
    return core if core.lower() != operation.lower() else None


def _resolve(operation: str, previous: str) -> str:
    """An operation whose object is a pronoun ("delete them") gets the preceding clause
    appended in parentheses, the antecedent being most likely there."""
    if previous and _PRONOUN.search(operation):
        return f"{operation} ({previous})"
    return operation


def _capitalised(clauses: Iterable[str], values: list[str]) -> list[str]:
    """Runs of capitalised words that are not clause-initial (names: "Simple Note")."""
    names: list[str] = []
    for clause in clauses:
        run: list[str] = []
        for i, word in enumerate([*_WORD.findall(clause), ""]):
            if word[:1].isupper() and (i > 0 or run) and word.lower() not in _CHUNK_STOP:
                run.append(word)
                continue
            if run:
                names.append(_restore(" ".join(run), values))
            run = []
    return names


def _people(clauses: Iterable[str]) -> list[str]:
    """Relationship nouns ("my roommates") and single capitalised names in person position
    ("to Robert", "Christopher has asked")."""
    found: list[str] = []
    for clause in clauses:
        words = _WORD.findall(clause)
        for i, word in enumerate(words):
            if word.lower() in RELATION_NOUNS:
                found.append(f"my {word.lower()}")
                continue
            before = words[i - 1].lower() if i else ""
            after = words[i + 1].lower() if i + 1 < len(words) else ""
            name = word[:1].isupper() and word[1:].islower() and word.isalpha()
            next_capital = i + 1 < len(words) and words[i + 1][:1].isupper()
            prev_capital = i > 0 and words[i - 1][:1].isupper()
            if name and not next_capital and not prev_capital and (
                before in _NAME_BEFORE or after in _NAME_AFTER
            ):
                found.append(word)
    return found


def _chunks(clause: str) -> list[str]:
    """Content-word chunks of a clause: maximal runs of words that are neither stopwords,
    question words, protected values nor the clause's leading operation verb."""
    words = _WORD.findall(clause)
    return [" ".join(words[a:b]) for a, b in _chunk_spans(words)]


def _chunk_spans(words: list[str]) -> list[tuple[int, int]]:
    """(start, end) word positions of the content-word chunks of a clause's words."""
    spans: list[tuple[int, int]] = []
    lead = next((i for i, w in enumerate(words) if w.lower() not in _FILLERS), -1)
    if lead >= 0 and words[lead].lower() not in OPERATION_VERBS:
        lead = -1
    start = 0
    for i, word in enumerate([*words, ""]):
        low = word.lower()
        cut = (not word or i == lead or low in _CHUNK_STOP or low in QUESTION_WORDS
               or _HOLE.fullmatch(word) is not None)
        if cut:
            if i > start:
                spans.append((start, i))
            start = i + 1
    return spans


def _app_words(apps: Iterable[str]) -> Mapping[tuple[str, ...], str]:
    """Lower-case name words -> app, for every app with a word (``simple_note`` ->
    ``("simple", "note")``); read only, computed once per set of apps."""
    return _app_words_of(tuple(apps))


@lru_cache(maxsize=8)
def _app_words_of(apps: tuple[str, ...]) -> Mapping[tuple[str, ...], str]:
    out: dict[tuple[str, ...], str] = {}
    for app in apps:
        words = name_tokens(app)
        if words:
            out.setdefault(words, app)
    return MappingProxyType(out)


def _app_positions(words: list[str], app_words: Mapping[tuple[str, ...], str]) -> dict[int, str]:
    """Word position -> app, for every run of ``words`` spelling an app's name (case and a
    possessive 's ignored: "Spotify's", "simple note")."""
    low = [w.lower().removesuffix("'s") for w in words]
    found: dict[int, str] = {}
    for key, app in app_words.items():
        n = len(key)
        for i in range(len(low) - n + 1):
            if tuple(low[i:i + n]) == key:
                found.update((j, app) for j in range(i, i + n))
    return found


def _mentioned_apps(text: str, app_words: Mapping[tuple[str, ...], str]) -> tuple[str, ...]:
    """The apps named in ``text``, in the order of ``app_words``."""
    named = set(_app_positions(_WORD.findall(text), app_words).values())
    return tuple(app for app in app_words.values() if app in named)


def _lookups(clause: str, app_words: Mapping[tuple[str, ...], str]) -> list[str]:
    """Lookup operations for named entities, which a plan must find before using them:
    "search <chunk>" for a content chunk holding a capitalised name besides other words ("the
    Velvet Underground album" -> "search Velvet Underground album"), and "search <previous
    chunk> by <name>" for a bare name after "by" ("song by Zoey James"). App names and a
    clause's first word are not names."""
    words = _WORD.findall(clause)
    apps = _app_positions(words, app_words)
    spans = _chunk_spans(words)
    ops: list[str] = []
    for k, (a, b) in enumerate(spans):
        names = [i for i in range(a, b) if i and i not in apps and words[i][:1].isupper()]
        if not names:
            continue
        chunk = " ".join(words[a:b])
        if len(names) < b - a:
            ops.append(f"search {chunk}")
        elif k and words[a - 1].lower() == "by":
            before = spans[k - 1]
            ops.append(f"search {' '.join(words[before[0]:before[1]])} by {chunk}")
    return ops


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        key = item.lower()
        if key not in seen:
            seen.add(key)
            out.append(item)
    return tuple(out)
