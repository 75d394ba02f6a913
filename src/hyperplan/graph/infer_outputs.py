"""Output nodes inferred for a tool that declares none (HyperAgent paper, "Hypergraph
construction": the output-schema nodes V_O of Definition 1, which the paper takes from an
annotated graph and most real catalogs do not declare).

Only a tool with no declared output schema, or only a bare nameless return value
(``result``, ``[]``: :data:`~hyperplan.graph.text.NAMELESS_OUTPUTS`), gets outputs here. They
come from, best evidence first:

* **the description** (:attr:`Evidence.DESCRIPTION`): its "returns ..." clause
  ("...; returns the cart id" -> ``cart_id``; "...and returns its id" -> ``<object>_id``),
  else the object of its leading verb ("Retrieves the current timezone of the system" ->
  ``system_timezone`` and ``timezone``; "Get a list of books from a library" -> ``books``,
  ``books[].id``; "Calculate the efficiency of a reactor" -> ``reactor_efficiency``,
  ``efficiency``);
* **the name**, or an MCP ``title`` (:attr:`Evidence.NAME`): ``get_system_timezone`` ->
  ``timezone``; ``list_users`` -> ``users``, ``users[].id``; ``create_ticket`` ->
  ``ticket_id``; ``search_files`` -> ``files[].file_path``;
* **the inputs a search echoes** (:attr:`Evidence.NAME`, lower confidence): a tool of a
  namespace (``Hotels.``, an app) that searches or finds entities returns records that carry
  the attributes it was searched by (``Hotels.SearchHotel(destination, star_rating)`` ->
  ``hotel[].destination``...); only specific inputs (never a generic leaf, a credential, a
  paging or query parameter).

Paths use the spelling link inference keys on (:func:`hyperplan.graph.text.output_keys`):
``ticket_id`` meets an input ``ticket_id``, ``users[].id`` meets ``user_id`` and ``user_ids``.
A generic word alone (``result``, ``data``, ``content``, ``message``, ``status``, ``page``,
``response``...) is never an output: it would only make junk links. A creating verb (create,
add, book...) returns the new object's id; a reading verb (get, find, calculate...) returns
the object itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hyperplan.catalog import ToolSpec
from hyperplan.graph.annotations import InferredNode
from hyperplan.graph.effects import is_credential, namespace
from hyperplan.graph.model import Evidence, NodeKind
from hyperplan.graph.schema_paths import SchemaField
from hyperplan.graph.text import GENERIC_LEAVES, NAMELESS_OUTPUTS, name_tokens, singular

#: Confidence of each kind of inferred output (chosen on the dev splits of the stripped
#: suites, see docs/benchmarks.md): a link through an inferred output weighs its score times
#: this, so only strong matches of a confident output reach the usual thresholds.
CONF_RETURNS = 0.95  # a "returns X" clause of the description
CONF_DESCRIPTION = 0.9  # the object of the description's leading verb
CONF_NAME = 0.85  # the object of the name's verb (or the MCP title's)
CONF_HEAD = 0.85  # the head noun alone of a multi-word object ("timezone" of system_timezone)
CONF_ECHO = 0.85  # a search's input echoed in its results
CONF_LOGIN = 0.9  # the access token of a sign-in

#: Verbs whose tool returns what it names.
READ_VERBS = frozenset(
    "get fetch retrieve read show find lookup search list query select choose pick identify "
    "detect calculate compute estimate generate predict analyze analyse scan convert "
    "translate extract measure determine obtain view describe recommend suggest evaluate "
    "assess summarize summarise count locate track discover load download parse compare "
    "forecast monitor inspect review browse explore design compose plan draft prepare "
    "collect gather receive check show display".split())
#: Verbs whose tool makes a new object and returns its id.
CREATE_VERBS = frozenset(
    "create add register insert upload submit open new post place book reserve schedule "
    "order purchase buy start launch initialize initialise make issue apply enroll enrol "
    "subscribe".split())
#: Verbs of a tool that picks one existing object (and so returns its id, too).
PICK_VERBS = frozenset("select choose pick find".split())
#: Verbs of a tool that signs in and returns a credential (``access_token``).
LOGIN_VERBS = frozenset("login signin authenticate authorize auth logon".split())
#: Verbs of a tool that searches and echoes its criteria in its results.
SEARCH_VERBS = frozenset("search find lookup list query browse".split())
_VERBS = READ_VERBS | CREATE_VERBS | LOGIN_VERBS

#: Words that are never an output on their own: they name no thing another tool could take.
GENERIC_OUTPUTS = frozenset(
    "result results data content contents message messages status page pages response "
    "responses output outputs info information detail details value values item items list "
    "lists object objects entry entries record records query request requests answer text "
    "summary report thing things stuff it them one ones".split()) | GENERIC_LEAVES
#: Generic heads that mean "the Y" in "X of the Y" / "X about Y" (details of a book = book).
_CONTAINER_HEADS = frozenset("list lists set collection info information detail details "
                             "data record records".split())
_DETERMINERS = frozenset(
    "a an the all any some its their his her our your my this these those current new "
    "specific given particular available existing single multiple several one each every "
    "suitable detailed random full complete latest relevant appropriate best optimal "
    "required necessary exact basic various different certain recent".split())
_STOP = frozenset(
    "of for from in on at by with to into via using based according within about over under "
    "between that which who whose where when if whether and or but as than so such given "
    "after before during per without".split())
#: Lead-ins before a description's verb: "This tool returns ...", "Used to get ...".
_LEAD_INS = frozenset("this tool function api endpoint method used use allows lets you to "
                      "can will helps help please".split())
_PATH_ENTITIES = frozenset("file folder directory document image photo attachment".split())
_NUMBER_HEADS = frozenset("count total amount price cost rate score level percentage ratio "
                          "number sum average temperature distance duration".split())
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_MAX_OBJECT_WORDS = 3
#: Inputs a search never echoes: paging, sorting, free-text query parameters.
_UNECHOED = frozenset("limit offset page size sort order query q keyword keywords search term "
                      "terms filter filters max min results count cursor token format lang "
                      "language index per reorder dont".split())


@dataclass(frozen=True, slots=True)
class _Phrase:
    """The verb of a tool's name or description and the object it acts on (word tokens)."""

    verb: str
    words: tuple[str, ...]


def infer_outputs(tool: ToolSpec, inputs: Sequence[SchemaField],
                  outputs: Sequence[SchemaField]) -> list[InferredNode]:
    """The outputs ``tool`` gets by rule (module doc); none when it declares named outputs."""
    if any(f.path not in NAMELESS_OUTPUTS for f in outputs):
        return []
    nodes: dict[str, InferredNode] = {}
    for node in (*_credential(tool), *_from_description(tool), *_from_name(tool),
                 *_echoed(tool, inputs)):
        held = nodes.get(node.path)
        if held is None or node.confidence > held.confidence:
            nodes[node.path] = node
    return list(nodes.values())


# ----------------------------------------------------------------------------- sources
def _from_description(tool: ToolSpec) -> list[InferredNode]:
    text = tool.description.strip()
    if not text:
        return []
    returned = _returns_phrase(text)
    said = f"inferred from the description: {text[:160]}"
    if returned is not None:
        nodes = _object_outputs(returned, CONF_RETURNS, Evidence.DESCRIPTION, said,
                                owner=_name_phrase(tool))
        if nodes:
            return nodes
    first = _SENTENCE.split(text, maxsplit=1)[0]
    phrase = _leading_phrase(_words(first))
    if phrase is None:
        return []
    return _object_outputs(phrase, CONF_DESCRIPTION, Evidence.DESCRIPTION, said)


def _from_name(tool: ToolSpec) -> list[InferredNode]:
    nodes = []
    for source in (tool.name.rsplit(".", 1)[-1], title_of(tool.metadata)):
        phrase = _phrase_of_name(source)
        if phrase is not None:
            said = f"inferred from the name {source!r}: {tool.description[:120]}".strip()
            nodes += _object_outputs(phrase, CONF_NAME, Evidence.NAME, said)
    return nodes


def _credential(tool: ToolSpec) -> list[InferredNode]:
    """``access_token`` of a tool that signs in (``login``, ``authenticate``...)."""
    phrase = _name_phrase(tool)
    if phrase is None or phrase.verb not in LOGIN_VERBS:
        return []
    return [InferredNode(NodeKind.OUTPUT, "access_token", "string",
                         "the access token of the session this sign-in opens",
                         Evidence.NAME, CONF_LOGIN)]


def _echoed(tool: ToolSpec, inputs: Sequence[SchemaField]) -> list[InferredNode]:
    """``<entities>[].<input>`` for each specific input of a search in a namespace (an app, an
    API: in a flat catalog its criteria would meet every tool taking the same parameter)."""
    phrase = _name_phrase(tool)
    if phrase is None or phrase.verb not in SEARCH_VERBS or not phrase.words \
            or not namespace(tool):
        return []
    if phrase.words[-1] in GENERIC_OUTPUTS:
        return []
    collection = "_".join(phrase.words)
    nodes = []
    for f in inputs:
        tokens = name_tokens(f.path)
        if "." in f.path or "[]" in f.path or not tokens:
            continue
        if set(tokens) & _UNECHOED or is_credential(f.path) \
                or (len(tokens) == 1 and tokens[0] in GENERIC_OUTPUTS):
            continue
        nodes.append(InferredNode(
            NodeKind.OUTPUT, f"{collection}[].{f.path}", f.type,
            f"the {' '.join(tokens)} of each of the {' '.join(phrase.words)} found",
            Evidence.NAME, CONF_ECHO))
    return nodes


# ----------------------------------------------------------------------------- phrases
def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _base_verb(word: str) -> str | None:
    """``word`` as one of the known verbs ("retrieves" -> "retrieve", "fetches" -> "fetch")."""
    for cand in (word, word[:-1] if word.endswith("s") else "",
                 word[:-2] if word.endswith("es") else ""):
        if cand in _VERBS:
            return cand
    return None


def _leading_phrase(words: list[str]) -> _Phrase | None:
    """The verb a description starts with (after lead-ins) and the object phrase after it."""
    k = 0
    while k < len(words) and words[k] in _LEAD_INS:
        k += 1
    if k >= len(words):
        return None
    verb = _base_verb(words[k])
    if verb is None:
        return None
    return _Phrase(verb, tuple(words[k + 1:]))


def _returns_phrase(text: str) -> _Phrase | None:
    """The object of a "returns X" clause as a reading phrase ("get" X), if any."""
    match = re.search(r"(?:^|[;,.:]\s*|\band\s+)returns?\s+([^;.]+)", text, re.IGNORECASE)
    if match is None:
        return None
    return _Phrase("get", tuple(_words(match.group(1))))


def _phrase_of_name(name: str) -> _Phrase | None:
    """The first known verb of an identifier and the words after it up to a preposition
    (``get_user_by_id`` -> get, [user]); the words before it when none follow
    (``user_create`` -> create, [user])."""
    tokens = list(name_tokens(name))
    for k, token in enumerate(tokens):
        verb = _base_verb(token)
        if verb is None:
            continue
        after = _cut(tokens[k + 1:])
        return _Phrase(verb, tuple(after or _cut(tokens[:k])))
    return None


def _name_phrase(tool: ToolSpec) -> _Phrase | None:
    return _phrase_of_name(tool.name.rsplit(".", 1)[-1])


def _cut(words: Sequence[str]) -> list[str]:
    out = []
    for w in words:
        if w in _STOP:
            break
        out.append(w)
    return out


def _noun_phrase(words: Sequence[str]) -> tuple[list[str], list[str]]:
    """The object noun phrase at the start of ``words`` (determiners skipped, cut at a
    preposition, its last :data:`_MAX_OBJECT_WORDS` words) and, after "of"/"about"/"for"/"on",
    the phrase it qualifies ("the efficiency of a reactor" -> [efficiency], [reactor])."""
    k = 1 if words and words[0] in ("for", "up", "out") else 0  # "search for", "look up"
    while k < len(words) and words[k] in _DETERMINERS:
        k += 1
    head: list[str] = []
    while k < len(words) and words[k] not in _STOP:
        if words[k] not in _DETERMINERS:
            head.append(words[k])
        k += 1
    owner: list[str] = []
    if k < len(words) and words[k] in ("of", "about", "on", "for"):
        k += 1
        while k < len(words) and words[k] in _DETERMINERS:
            k += 1
        while k < len(words) and words[k] not in _STOP:
            owner.append(words[k])
            k += 1
    return head[-_MAX_OBJECT_WORDS:], owner[-_MAX_OBJECT_WORDS:]


# ----------------------------------------------------------------------------- outputs
def _object_outputs(phrase: _Phrase, confidence: float, evidence: Evidence, said: str,
                    owner: _Phrase | None = None) -> list[InferredNode]:
    """The outputs of ``phrase``: the object itself for a reading verb, its id for a creating
    one; ``owner`` (the tool name's object) qualifies an "its id"."""
    if phrase.verb in LOGIN_VERBS:
        return []
    head, of = _noun_phrase(phrase.words)
    if head and head[-1] in ("its", "their") and owner is not None:
        head = [*owner.words, *head[:-1]]
    record = False
    if head and head[-1] in _CONTAINER_HEADS and of:
        record = head[-1] not in ("list", "lists", "set", "collection")
        head = of  # "a list of books", "details of the order": the thing itself
        of = []
    elif of and head:  # "the efficiency of a reactor": reactor_efficiency
        head = [*of[-1:], *head]
    head = [w for w in head if w not in ("its", "their")]
    if head and head[0] in ("id", "ids") and owner is not None and owner.words:
        head = [*owner.words[-1:], *head]
    if not head:
        return []
    if phrase.verb in CREATE_VERBS and head[-1] not in ("id", "ids"):
        return _created(head, confidence, evidence, said)
    nodes = _read(head, confidence, evidence, said)
    if (record or phrase.verb in PICK_VERBS) and singular(head[-1]) == head[-1] \
            and head[-1] not in GENERIC_OUTPUTS:
        # "details of a specific song", "select a bow": the object's record, with its id
        nodes.append(InferredNode(NodeKind.OUTPUT, f"{head[-1]}_id", "any",
                                  f"the id of the {' '.join(head)}: {said}", evidence,
                                  confidence))
    return nodes


def _created(head: list[str], confidence: float, evidence: Evidence,
             said: str) -> list[InferredNode]:
    """A new object's id: ``ticket_id``; ``chick_ids`` for several."""
    last = head[-1]
    if last in GENERIC_OUTPUTS:
        return []
    many = singular(last) != last
    path = f"{singular(last)}_ids" if many else f"{last}_id"
    return [InferredNode(NodeKind.OUTPUT, path, "array" if many else "string",
                         f"the id of the new {' '.join(head)}", evidence, confidence)]


def _read(head: list[str], confidence: float, evidence: Evidence,
          said: str) -> list[InferredNode]:
    """The object read: the whole phrase, its head noun alone, and for a plural the list
    with its members' ids (or paths, for files)."""
    last = head[-1]
    if len(head) == 1 and last in GENERIC_OUTPUTS:
        return []
    path = "_".join(head)
    many = singular(last) != last and last not in ("ids",)
    kind = _value_type(last, many)
    nodes = [InferredNode(NodeKind.OUTPUT, path, kind, said, evidence, confidence)]
    if len(head) > 1 and last not in GENERIC_OUTPUTS:
        nodes.append(InferredNode(NodeKind.OUTPUT, last, kind, said, evidence,
                                  min(confidence, CONF_HEAD)))
    if many:
        one = singular(last)
        members = [f"{one}_path"] if one in _PATH_ENTITIES else ["id", one]
        nodes += [InferredNode(NodeKind.OUTPUT, f"{last}[].{member}", "any",
                               f"the {member.replace('_', ' ')} of each {one}: {said}",
                               evidence, confidence) for member in members]
    return nodes


def _value_type(word: str, many: bool) -> str:
    if many:
        return "array"
    if word in ("id", "uuid", "key", "name", "email", "url"):
        return "string"
    return "number" if word in _NUMBER_HEADS else "any"


def title_of(metadata: Mapping[str, object]) -> str:
    """An MCP tool's ``title`` (metadata), or ""."""
    title = metadata.get("title")
    return title if isinstance(title, str) else ""
