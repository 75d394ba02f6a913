"""What a parameter name says about where its value comes from, for link inference
(:mod:`hyperplan.graph.links`): the rules that keep the dependency links D of the HyperAgent
paper ("Preliminaries") free of junk when they are inferred from names.

* ``CONTROL``: paging, sorting and size knobs (``page``, ``limit``, ``max_results``,
  ``sort_by``...). The user sets them; no tool's output feeds them, so they get no producer.
* ``GENERIC``: words every API uses for different things (``message``, ``content``,
  ``query``, ``path``, ``name``, ``result``...). A shared generic word is no evidence of a
  data flow on its own: such an input is linked inside its own namespace (one server, app or
  API resource) on a name match, across the apps of one catalog only to an output of the
  very same name (``text`` <- ``text``), never between two servers (``message`` of a memory
  server is no commit message), never on description similarity alone.
* ``IDENTIFIER``: an identifier of a named resource (``tv_id``, ``ticket_ids``). It links
  only to the same resource's identifier: the canonical key must match (``movie.id`` ->
  ``movie_id``, never ``tv_id``).
* Across namespaces every input links on a specific canonical key, or on a role suffix
  (:func:`role_suffixes`: ``receiver_email`` takes any ``email``).
* ``SPECIFIC``: everything else, scored as before.

Ours (issue 37, "links that are never junk"); the word lists are plain English API
vocabulary, not fitted to a benchmark.
"""

from __future__ import annotations

from enum import StrEnum
from functools import lru_cache

from hyperplan.graph.text import name_tokens, singular


class FieldRole(StrEnum):
    CONTROL = "control"
    GENERIC = "generic"
    IDENTIFIER = "identifier"
    SPECIFIC = "specific"


#: Whole parameter names (tokens joined by ``_``) that set paging, order or size.
CONTROL_NAMES = frozenset({
    "page", "page_number", "page_num", "page_no", "page_size", "per_page", "pagesize",
    "limit", "offset", "skip", "max_results", "max_result", "max_count", "max_items",
    "max_length", "max_tokens", "max_depth", "num_results", "n_results", "top_k", "top_n",
    "sort", "sort_by", "sort_order", "order", "order_by", "direction", "ascending",
    "descending", "cursor", "page_token", "next_token", "next_page_token", "continuation",
    "start_index", "timeout", "verbose", "include_metadata", "pretty",
    "response_format", "output_format", "dry_run",
})

#: Words that name no particular thing: a parameter named by them alone is ``GENERIC``.
GENERIC_WORDS = frozenset({
    "message", "content", "contents", "text", "body", "data", "value", "values", "input",
    "output", "result", "response", "payload", "query", "q", "search", "term", "keyword",
    "keywords", "target", "source", "path", "file", "filename", "name", "title",
    "description", "type", "kind", "key", "item", "items", "object", "entry", "info",
    "details", "params", "options", "config", "args", "arguments", "url", "uri", "link",
    "string", "str", "number", "amount", "count", "mode", "status", "state", "label",
    "note", "comment", "tags", "tag", "category", "filter", "filters", "field", "fields",
    "new", "old", "old_text", "new_text", "start", "end", "from", "to", "date", "time",
})

#: Last words that make a name an identifier.
ID_WORDS = frozenset({"id", "uid", "uuid", "guid", "key", "code", "slug", "handle", "sha"})


@lru_cache(maxsize=100_000)
def role_suffixes(name: str) -> tuple[str, ...]:
    """The proper suffixes of an input name that name a specific kind of value, as keys:
    ``receiver_email`` -> ``("email",)``, ``receiver_phone_number`` -> ``("phone_number",)``
    (``number`` alone is generic), ``tv_id`` -> ``()`` (``id`` alone is generic). An output
    whose leaf is such a suffix holds a value of that kind: a role-qualified input
    (receiver, payer, owner...) takes it from any namespace."""
    tokens = name_tokens(name)
    out = []
    for cut in range(1, len(tokens)):
        tail = tokens[cut:]
        if not all(singular(t) in GENERIC_WORDS or singular(t) in ID_WORDS for t in tail):
            out.append("_".join(tail))
    return tuple(out)


def leaf_key(path: str) -> str:
    """The key of an output path's leaf (``contacts[].phone_number`` -> ``phone_number``)."""
    segments = [seg.replace("[]", "") for seg in path.split(".") if seg.replace("[]", "")]
    return "_".join(name_tokens(segments[-1])) if segments else ""


@lru_cache(maxsize=100_000)
def field_role(name: str) -> FieldRole:
    """The :class:`FieldRole` of the parameter ``name`` (module doc)."""
    tokens = tuple(singular(t) for t in name_tokens(name))
    if not tokens:
        return FieldRole.GENERIC
    if "_".join(name_tokens(name)) in CONTROL_NAMES or "_".join(tokens) in CONTROL_NAMES:
        return FieldRole.CONTROL
    if len(tokens) > 1 and tokens[-1] in ID_WORDS \
            and not all(t in GENERIC_WORDS or t in ID_WORDS for t in tokens[:-1]):
        return FieldRole.IDENTIFIER
    if all(t in GENERIC_WORDS or t in ID_WORDS for t in tokens):
        return FieldRole.GENERIC
    return FieldRole.SPECIFIC
