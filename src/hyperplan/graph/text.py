"""Name handling for schema paths: tokens, singular forms and canonical keys.

These keys drive the name/path evidence of link inference: ``song_id`` <- ``songs[].song_id``
(same key), ``song_id`` <- ``songs[].id`` (``id`` of a ``song``), ``song_ids`` <- ``song_id``
(plural of the key).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from functools import lru_cache

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NON_ALNUM = re.compile(r"[^0-9a-zA-Z]+")

STOPWORDS = frozenset(
    "a an the of to for in on at by with from and or is are be this that these those it its "
    "your you my me we our their his her as if than then which who whom what when where how "
    "can will may should must not no yes all any each per via into onto up down out over "
    "given specified specific provided based about using use used such e g eg etc".split()
)

# Leaf names that only mean something together with the entity that owns them.
GENERIC_LEAVES = frozenset(
    "id ids name names title type key value code number num uid uuid url link email status "
    "date time count description label slug index".split()
)


# Paths of outputs that have no name of their own: a bare return value and a list of scalars
# (``schema_paths.output_fields``); link inference names them by their description.
NAMELESS_OUTPUTS = frozenset({"result", "[]"})

# "...; returns the cart id." / "Return the ids of the matching books." in a tool description
_RETURNS_CLAUSE = re.compile(r"(?:^|[;,.:]\s*|\band\s+)returns?\s+([^;.]+)", re.IGNORECASE)


def returns_clause(text: str) -> str:
    """What a "returns X" clause of a tool's description says it returns ("" when it has
    none): "Add a book to the cart; returns the cart id." -> "the cart id"."""
    match = _RETURNS_CLAUSE.search(text)
    return match.group(1).strip() if match else ""


# Characters of a tool description kept for retrieval and planner prompts (``concise``).
CONCISE_CHARS = 300
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


def concise(text: str, limit: int = CONCISE_CHARS, first_paragraph: bool = True) -> str:
    """The concise description of a tool (the HyperAgent paper, Task-Level Planning, "Task
    Decomposition", serializes schema nodes with a "concise description"): its first
    paragraph (an OpenAPI summary, a docstring's summary) with the whitespace collapsed, cut
    after the last sentence that ends within ``limit`` characters, or at a word with an
    ellipsis when no sentence ends past a third of the limit.

    >>> concise("Create an issue comment\\n\\nYou can use the REST API to ...")
    'Create an issue comment'
    """
    head = _PARAGRAPH_BREAK.split(text.strip(), maxsplit=1)[0] if first_paragraph else text
    flat = " ".join(head.split())
    if len(flat) <= limit:
        return flat
    ends = [m.start() for m in _SENTENCE_END.finditer(flat) if m.start() <= limit]
    if ends and ends[-1] >= limit // 3:
        return flat[: ends[-1]]
    cut = flat[: limit + 1].rsplit(" ", 1)[0] if " " in flat[: limit + 1] else flat[:limit]
    return cut.rstrip(" ,;:") + "…"


# Strength of a bare generic leaf (``id``) when a qualified key (``song_id``) exists.
GENERIC_ALONE = 0.6


@lru_cache(maxsize=200_000)
def name_tokens(name: str) -> tuple[str, ...]:
    """Lower-case tokens of an identifier: ``songIds``/``song_ids`` -> ``("song", "ids")``."""
    spaced = _CAMEL.sub(" ", name)
    return tuple(t.lower() for t in _NON_ALNUM.split(spaced) if t)


def text_tokens(text: str) -> tuple[str, ...]:
    """Content tokens of free text (identifier splitting, stopwords removed)."""
    return tuple(t for t in name_tokens(text) if t not in STOPWORDS and len(t) > 1)


@lru_cache(maxsize=100_000)
def singular(word: str) -> str:
    """A rough English singular, good enough for identifiers (``songs`` -> ``song``,
    ``playlists`` -> ``playlist``, ``categories`` -> ``category``, ``addresses`` -> ``address``)."""
    if word == "ids":  # the one short plural identifiers use ("uids" is long enough)
        return "id"
    if len(word) <= 3 or word.endswith(("ss", "us", "is")):
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("ses", "xes", "zes", "ches", "shes")):
        return word[:-2]
    if word.endswith("s"):
        return word[:-1]
    return word


def path_segments(path: str) -> list[str]:
    """Segments of an output path without array markers: ``songs[].id`` -> ``[songs, id]``."""
    return [seg.replace("[]", "") for seg in path.split(".") if seg.replace("[]", "")]


def key_of(tokens: tuple[str, ...]) -> str:
    return "_".join(tokens)


def input_keys(name: str) -> dict[str, float]:
    """Canonical keys of an input name with their strength: the name itself (1.0) and, for a
    plural last token, its singular (0.95): ``song_ids`` -> {song_ids: 1, song_id: .95}."""
    tokens = name_tokens(name)
    if not tokens:
        return {}
    keys = {key_of(tokens): 1.0}
    last = singular(tokens[-1])
    if last != tokens[-1]:
        keys.setdefault(key_of((*tokens[:-1], last)), 0.95)
    return keys


def output_keys(path: str, entity_hint: str = "") -> dict[str, float]:
    """Canonical keys of an output path: the leaf (1.0); for a generic leaf, the leaf
    qualified by its parent's singular (``songs[].id`` -> ``song_id``) or, at the root, by the
    ``entity_hint`` (the tool's entity, or its name); and plural forms for array paths."""
    segments = path_segments(path)
    if not segments:
        return {}
    leaf = name_tokens(segments[-1])
    if not leaf:
        return {}
    keys = {key_of(leaf): 1.0}
    parent = name_tokens(segments[-2]) if len(segments) > 1 else ()
    if len(leaf) == 1 and leaf[0] in GENERIC_LEAVES:
        owner = parent or name_tokens(entity_hint)
        if owner and singular(owner[-1]) != leaf[0]:
            keys[key_of((singular(owner[-1]), *leaf))] = 1.0
            keys[key_of(leaf)] = GENERIC_ALONE
    if "[]" in path:
        for key in list(keys):
            keys.setdefault(key + "s", 0.95)
    return keys


def similar_names(name: str, names: Iterable[str], limit: int = 3) -> list[str]:
    """The known names a mistyped or wrongly qualified ``name`` most likely means, best first:
    the same name under another qualification ("bookstore.checkout" / "checkout",
    "like_song" / "spotify.like_song"), then close spellings (``difflib``)."""
    pool = list(names)
    low = name.lower()
    tail = low.rsplit(".", 1)[-1]
    same = [n for n in pool if n.lower().rsplit(".", 1)[-1] == tail and n.lower() != low]
    close = difflib.get_close_matches(name, pool, n=limit, cutoff=0.75)
    return list(dict.fromkeys(same + close))[:limit]


def listed(items: Iterable[str], limit: int = 5) -> str:
    """``"a, b, c and 4 more"``: the first ``limit`` items, then how many were left out."""
    names = list(items)
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def did_you_mean(name: str, names: Iterable[str], fallback: Iterable[str] = ()) -> str:
    """The hint ``did you mean 'a', 'b'?`` for :func:`similar_names` (else the ``fallback``
    names, at most 10), or ``""`` when there is nothing to suggest. Every "unknown tool"
    message uses it."""
    like = similar_names(name, names) or list(fallback)[:10]
    return f"did you mean {', '.join(map(repr, like))}?" if like else ""
