"""Synthetic tool catalogs for scale benchmarks of graph construction.

:func:`synthetic_catalog` makes a deterministic catalog of ``n_tools`` tools that looks like a
large API marketplace: about ``n_tools / 40`` apps (namespaces ``app0``, ``app1``, ...), each
with a login tool and a handful of entities (``order``, ``playlist``, ``order_item``,
``shared_folder`` ...) and the usual tools over them (``app7.search_orders``,
``app7.show_order``, ``app7.create_order``, ``app7.update_order``, ``app7.delete_order``,
``app7.list_customer_orders`` ...). Entities are drawn Zipf-like from a pool of a few thousand
names (base words, ``base_modifier`` and ``adjective_base`` combinations), so common entities
recur across many apps and the vocabulary keeps growing with the catalog. Apps differ in
style: snake_case or camelCase fields, string or integer ids, paging parameter names,
envelope or bare-array responses. Field descriptions are templated sentences (some left
empty), with nested outputs such as ``orders[].order_id`` and ``orders[].customer.email``.

:func:`synthetic_expectations` reads ground-truth-ish data flows back from a catalog: every
required id input (``show_order.order_id``) and the tools of the same app that output that id
(``search_orders`` via ``orders[].order_id``, ``create_order`` ...).
:func:`id_inputs_with_producer` counts how many of them received an inferred link from one of
those producers.
"""

from __future__ import annotations

import bisect
import itertools
import random
from dataclasses import dataclass
from typing import Any

from hyperplan.catalog import Catalog, ToolSpec, build_catalog, make_tool
from hyperplan.graph.model import Hypergraph, NodeKind
from hyperplan.graph.schema_paths import output_fields
from hyperplan.graph.text import name_tokens, path_segments

__all__ = [
    "TOOLS_PER_APP",
    "IdExpectation",
    "id_inputs_with_producer",
    "synthetic_catalog",
    "synthetic_expectations",
]

TOOLS_PER_APP = 40

BASE_ENTITIES = (
    "order", "customer", "user", "product", "invoice", "ticket", "payment", "account",
    "message", "song", "playlist", "album", "artist", "file", "folder", "document", "event",
    "task", "project", "issue", "comment", "review", "booking", "reservation", "flight",
    "hotel", "room", "vehicle", "driver", "trip", "patient", "appointment", "doctor",
    "course", "student", "lesson", "recipe", "ingredient", "restaurant", "menu", "device",
    "sensor", "alert", "report", "dashboard", "campaign", "contact", "lead", "deal",
    "subscription", "plan", "coupon", "cart", "warehouse", "supplier", "employee", "team",
    "meeting", "note", "photo", "video", "podcast", "episode", "transaction", "budget",
    "expense", "contract", "shipment", "package", "store", "channel", "post", "repository",
    "branch", "build", "deployment", "container", "cluster", "database", "dataset", "model",
    "experiment", "survey", "question", "answer", "quiz", "badge", "reward", "wallet",
    "asset", "portfolio", "stock", "loan", "claim", "policy", "property", "listing", "tenant",
    "lease", "garden", "plant", "pet", "vaccine", "workout", "recording", "license",
)
MODIFIERS = (
    "item", "line", "attachment", "comment", "tag", "group", "template", "version", "member",
    "invite", "schedule", "batch", "draft", "snapshot", "rule", "label", "note", "request",
    "segment", "log", "setting", "review", "share", "category",
)
ADJECTIVES = (
    "shared", "archived", "recurring", "scheduled", "pending", "draft", "public", "private",
    "featured", "saved", "blocked", "favorite", "pinned", "external", "internal", "custom",
    "daily", "trial", "legacy", "premium",
)
_SYLLABLES = (
    "zen", "tri", "lo", "qua", "vex", "mar", "nor", "pix", "cal", "dro", "fin", "ly", "sto",
    "ra", "bel", "kin", "tor", "vi", "sa", "mo", "plu", "ex", "gra", "ni",
)
_CURRENCIES = ("USD", "EUR", "GBP", "JPY", "INR")

# (field words, JSON type, description templates; {w} = entity words, {b} = app brand)
_ATTRIBUTES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("title", "string", ("Title of the {w}.", "Short human-readable title shown for the {w}.")),
    ("name", "string", ("Name of the {w}.", "Display name of this {w}.")),
    ("description", "string", ("Free-text description of the {w}.",
                               "Longer description of the {w}, plain text or markdown.")),
    ("notes", "string", ("Private notes kept with the {w}.", "Internal remarks about the {w}.")),
    ("status", "string", ("Current status of the {w}.", "Lifecycle state of the {w}.")),
    ("amount", "number", ("Total amount of the {w} in {c}.", "Monetary value of the {w}.")),
    ("quantity", "integer", ("How many units the {w} covers.", "Quantity of the {w}.")),
    ("is public", "boolean", ("Whether the {w} is visible to everyone.",)),
    ("tags", "array", ("Tags attached to the {w}.", "Free-form labels of the {w}.")),
    ("due date", "string", ("Due date of the {w} (YYYY-MM-DD).", "When the {w} is due.")),
    ("priority", "integer", ("Priority of the {w}, 1 (highest) to 5.",)),
    ("email", "string", ("Contact email of the {w}.", "Email address associated with the {w}.")),
    ("address", "string", ("Postal address of the {w}.",)),
    ("rating", "number", ("Average rating of the {w} from 0 to 5.", "Score given to the {w}.")),
    ("duration seconds", "integer", ("Length of the {w} in seconds.",)),
    ("url", "string", ("Public link to the {w}.", "Web address where the {w} can be viewed.")),
    ("color", "string", ("Colour used to display the {w}.",)),
    ("price", "number", ("Unit price of the {w} in {c}.", "Price of the {w}.")),
    ("language", "string", ("Language code of the {w}, e.g. en or de.",)),
    ("location", "string", ("Where the {w} takes place or is stored.",)),
)

_SEARCH_DESCS = (
    "Search {p} in {b} by keyword, newest first.",
    "Find {p} matching a free-text query.",
    "List and filter the {p} of the current {b} user.",
    "Look up {p} whose title or description matches the query.",
)
_SHOW_DESCS = (
    "Show the details of one {w}.",
    "Get a single {w} by its id.",
    "Retrieve all fields of a {w} in {b}.",
)
_CREATE_DESCS = (
    "Create a new {w}.", "Add a {w} to {b} and return its id.", "Register a new {w}.",
)
_UPDATE_DESCS = ("Update fields of an existing {w}.", "Edit a {w}; omitted fields are kept.")
_DELETE_DESCS = ("Delete a {w} permanently.", "Remove a {w} from {b}.")
_ID_IN_DESCS = (
    "The id of the {w}.", "Unique identifier of the {w} to {v}.",
    "Identifier of the {w}, as returned by search or create.", "{W} id.", "",
)
_ID_OUT_DESCS = ("Unique identifier of the {w}.", "The {w} id.", "Id of the {w}.", "")


def _plural(word: str) -> str:
    if word.endswith("y") and word[-2:-1] not in ("a", "e", "o", "u"):
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    return word + "s"


@dataclass(frozen=True)
class _Entity:
    words: tuple[str, ...]  # ("order", "item")
    parent: _Entity | None = None

    @property
    def snake(self) -> str:
        return "_".join(self.words)

    @property
    def plural_words(self) -> tuple[str, ...]:
        return (*self.words[:-1], _plural(self.words[-1]))

    @property
    def text(self) -> str:
        return " ".join(self.words)

    @property
    def plural_text(self) -> str:
        return " ".join(self.plural_words)


@dataclass(frozen=True)
class _Style:
    camel: bool
    id_type: str
    token: tuple[str, ...]
    page: tuple[tuple[str, ...], tuple[str, ...]]
    bare_arrays: bool
    brand: str
    currency: str

    def field(self, *words: str) -> str:
        parts = [p for w in words for p in w.split()]
        if not self.camel:
            return "_".join(parts)
        return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


def _entity_pool(rng: random.Random) -> list[tuple[str, ...]]:
    """Entity names ordered from common to rare: base words, then combinations."""
    bases = list(BASE_ENTITIES)
    rng.shuffle(bases)
    combos: list[tuple[str, ...]] = [(b, m) for b in BASE_ENTITIES for m in MODIFIERS if b != m]
    combos += [(a, b) for a in ADJECTIVES for b in BASE_ENTITIES]
    rng.shuffle(combos)
    singles: list[tuple[str, ...]] = [(b,) for b in bases]
    return singles + combos


class _Zipf:
    def __init__(self, n: int, s: float = 1.0) -> None:
        self.cum = list(itertools.accumulate(1.0 / (k + 1) ** s for k in range(n)))

    def draw(self, rng: random.Random) -> int:
        return bisect.bisect_left(self.cum, rng.random() * self.cum[-1])


def _quotas(n_tools: int, rng: random.Random) -> list[int]:
    """Tools per app: about TOOLS_PER_APP each (varied), summing to ``n_tools``."""
    n_apps = max(1, round(n_tools / TOOLS_PER_APP))
    raw = [rng.uniform(0.6, 1.4) for _ in range(n_apps)]
    scale = n_tools / sum(raw)
    quotas = [max(1, int(r * scale)) for r in raw]
    k = 0
    while sum(quotas) != n_tools:  # fix rounding, keeping every app non-empty
        i = k % n_apps
        if sum(quotas) < n_tools:
            quotas[i] += 1
        elif quotas[i] > 1:
            quotas[i] -= 1
        k += 1
    return quotas


def _schema(props: dict[str, dict[str, Any]], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required}


def _prop(kind: str, description: str, **extra: Any) -> dict[str, Any]:
    prop: dict[str, Any] = {"type": kind, **extra}
    if kind == "array" and "items" not in prop:
        prop["items"] = {"type": "string"}
    if description:
        prop["description"] = description
    return prop


class _AppBuilder:
    """Tools of one app, in priority order (so a small quota keeps the core tools)."""

    def __init__(self, index: int, entities: list[_Entity], rng: random.Random) -> None:
        self.app = f"app{index}"
        self.rng = rng
        self.entities = entities
        brand = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3)))
        pages = ((("page", "index"), ("page", "limit")), (("page",), ("per", "page")),
                 (("offset",), ("limit",)))
        self.style = _Style(
            camel=rng.random() < 0.2,
            id_type="integer" if rng.random() < 0.3 else "string",
            token=("access", "token") if rng.random() < 0.85 else ("session", "token"),
            page=pages[rng.randrange(len(pages))],
            bare_arrays=rng.random() < 0.25,
            brand=brand.capitalize(),
            currency=rng.choice(_CURRENCIES),
        )
        self.attrs = {
            e.snake: rng.sample(range(len(_ATTRIBUTES)), rng.randint(2, 5)) for e in entities
        }

    # ------------------------------------------------------------------ text helpers
    def _fmt(self, templates: tuple[str, ...], entity: _Entity | None = None, verb: str = "",
             ) -> str:
        w = entity.text if entity else ""
        text = self.rng.choice(templates).format(
            w=w, W=w[:1].upper() + w[1:], p=entity.plural_text if entity else "",
            b=self.style.brand, c=self.style.currency, v=verb,
        )
        return text

    def _tool(self, verb: str, entity: _Entity | None, description: str, method: str,
              inputs: dict[str, dict[str, Any]], required: list[str],
              output: dict[str, Any] | None, name: str = "") -> ToolSpec:
        short = name or (f"{verb}_{entity.snake}" if entity else verb)
        return make_tool(
            name=f"{self.app}.{short}",
            description=description,
            input_schema=_schema(inputs, required),
            output_schema=output,
            source="synthetic",
            metadata={"app": self.app, "method": method},
        )

    def _token_input(self) -> tuple[str, dict[str, Any]]:
        name = self.style.field(*self.style.token)
        desc = self.rng.choice((
            f"{' '.join(self.style.token).capitalize()} from {self.app}.login.",
            f"Credential returned by the {self.style.brand} login.", "",
        ))
        return name, _prop("string", desc)

    def _id_field(self, entity: _Entity, *, output: bool, verb: str = "") -> tuple[
            str, dict[str, Any]]:
        name = self.style.field(*entity.words, "id")
        templates = _ID_OUT_DESCS if output else _ID_IN_DESCS
        return name, _prop(self.style.id_type, self._fmt(templates, entity, verb))

    def _attributes(self, entity: _Entity, limit: int = 99) -> dict[str, dict[str, Any]]:
        props = {}
        for k in self.attrs[entity.snake][:limit]:
            words, kind, templates = _ATTRIBUTES[k]
            desc = self._fmt(templates, entity) if self.rng.random() < 0.85 else ""
            props[self.style.field(words)] = _prop(kind, desc)
        return props

    def _record(self, entity: _Entity, full: bool) -> dict[str, Any]:
        """Object schema of one entity: its id, attributes, its parent nested."""
        key, prop = self._id_field(entity, output=True)
        props: dict[str, Any] = {key: prop}
        props.update(self._attributes(entity, 99 if full else 2))
        props[self.style.field("created", "at")] = _prop(
            "string", f"When the {entity.text} was created (ISO 8601).")
        parent = entity.parent
        if parent is not None:
            pkey, pprop = self._id_field(parent, output=True)
            nested = {pkey: pprop, **self._attributes(parent, 2)}
            props[self.style.field(*parent.words)] = {
                "type": "object", "description": f"The {parent.text} this {entity.text} "
                f"belongs to.", "properties": nested}
        if full and self.rng.random() < 0.5:
            props[self.style.field("owner")] = {
                "type": "object", "description": f"Who owns the {entity.text}.",
                "properties": {
                    self.style.field("user", "id"): _prop(self.style.id_type, "Owner user id."),
                    self.style.field("email"): _prop("string", "Owner email address."),
                    self.style.field("full", "name"): _prop("string", ""),
                }}
        return {"type": "object", "properties": props}

    def _list_output(self, entity: _Entity, extra_total: bool = True) -> dict[str, Any]:
        items = {"type": "array", "items": self._record(entity, full=False),
                 "description": f"Matching {entity.plural_text}."}
        if self.style.bare_arrays:
            return items
        props: dict[str, Any] = {self.style.field(*entity.plural_words): items}
        if extra_total:
            props[self.style.field("total", "count")] = _prop(
                "integer", f"Number of {entity.plural_text} in all pages.")
        return {"type": "object", "properties": props}

    def _paging(self) -> dict[str, dict[str, Any]]:
        index, size = self.style.page
        return {
            self.style.field(*index): _prop("integer", self.rng.choice((
                "Page of results to return, starting at 0.", "Result page number.", ""))),
            self.style.field(*size): _prop("integer", "Maximum number of results per page."),
        }

    # ------------------------------------------------------------------ tools
    def app_tools(self) -> list[ToolSpec]:
        s = self.style
        token, token_prop = self._token_input()
        user = s.field("email") if self.rng.random() < 0.5 else s.field("username")
        login = self._tool(
            "login", None, f"Log in to {s.brand} and get an access token.", "POST",
            {user: _prop("string", "Your account email or user name."),
             s.field("password"): _prop("string", "Your account password.")},
            [user, s.field("password")],
            {"type": "object", "properties": {
                token: _prop("string", f"{' '.join(s.token).capitalize()} for {s.brand}."),
                s.field("token", "type"): _prop("string", "Always 'bearer'."),
                s.field("expires", "at"): _prop("string", "Expiry time of the token."),
            }})
        profile = self._tool(
            "show_profile", None, f"Show the profile of the logged-in {s.brand} user.", "GET",
            {token: token_prop}, [token],
            {"type": "object", "properties": {
                s.field("user", "id"): _prop(s.id_type, "Your user id."),
                s.field("email"): _prop("string", "Your email address."),
                s.field("full", "name"): _prop("string", "Your full name."),
            }})
        logout = self._tool("logout", None, f"Log out of {s.brand}.", "POST",
                            {token: token_prop}, [token],
                            {"type": "object", "properties": {
                                s.field("success"): _prop("boolean", "")}})
        return [login, profile, logout]

    def core_tools(self, e: _Entity) -> list[ToolSpec]:
        s = self.style
        token, token_prop = self._token_input()
        id_name, id_in = self._id_field(e, output=False, verb="show")
        search_in = {token: token_prop, s.field("query"): _prop(
            "string", self._fmt(("Search text matched against {w} titles.",
                                 "Keywords to look for.", "Free-text query."), e))}
        search_in.update(self._paging())
        if e.parent is not None:
            pid, pprop = self._id_field(e.parent, output=False, verb="filter by")
            search_in[pid] = pprop
        search = self._tool("search", None, self._fmt(_SEARCH_DESCS, e), "GET", search_in,
                            [token], self._list_output(e),
                            name=f"search_{'_'.join(e.plural_words)}")
        show = self._tool("show", e, self._fmt(_SHOW_DESCS, e), "GET",
                          {token: token_prop, id_name: id_in}, [token, id_name],
                          self._record(e, full=True))
        create_in = {token: token_prop, **self._attributes(e)}
        create_req = [token, *list(create_in)[1:2]]
        if e.parent is not None:
            pid, pprop = self._id_field(e.parent, output=False, verb="attach to")
            create_in[pid] = pprop
            create_req.append(pid)
        out_id, out_prop = self._id_field(e, output=True)
        create = self._tool("create", e, self._fmt(_CREATE_DESCS, e), "POST", create_in,
                            create_req, {"type": "object", "properties": {
                                out_id: out_prop,
                                s.field("created", "at"): _prop("string", "Creation time.")}})
        update_in = {token: token_prop, id_name: self._id_field(e, output=False, verb="update")[1],
                     **self._attributes(e)}
        update = self._tool("update", e, self._fmt(_UPDATE_DESCS, e), "PATCH", update_in,
                            [token, id_name], {"type": "object", "properties": {
                                out_id: out_prop,
                                s.field("updated", "at"): _prop("string", "Last change.")}})
        delete = self._tool("delete", e, self._fmt(_DELETE_DESCS, e), "DELETE",
                            {token: token_prop, id_name: self._id_field(
                                e, output=False, verb="delete")[1]}, [token, id_name],
                            {"type": "object", "properties": {
                                s.field("success"): _prop("boolean", "True when deleted."),
                                s.field("message"): _prop("string", "")}})
        return [search, show, create, update, delete]

    def extra_tools(self, e: _Entity) -> list[ToolSpec]:
        s = self.style
        token, token_prop = self._token_input()
        id_name, _ = self._id_field(e, output=False)
        tools = []
        if e.parent is not None:
            pid, pprop = self._id_field(e.parent, output=False, verb="list")
            tools.append(self._tool(
                "list", None, f"List the {e.plural_text} of a {e.parent.text}.", "GET",
                {token: token_prop, pid: pprop, **self._paging()}, [token, pid],
                {"type": "array", "items": self._record(e, full=False)},
                name=f"list_{e.parent.snake}_{'_'.join(e.plural_words)}"))
        tools.append(self._tool(
            "share", e, f"Share a {e.text} with someone by email.", "POST",
            {token: token_prop, id_name: self._id_field(e, output=False, verb="share")[1],
             s.field("recipient", "email"): _prop("string", "Email of the person to share "
                                                           "with.")},
            [token, id_name, s.field("recipient", "email")],
            {"type": "object", "properties": {
                s.field("share", "url"): _prop("string", f"Link to the shared {e.text}.")}}))
        tools.append(self._tool(
            "export", None, f"Export {e.plural_text} as CSV or JSON.", "GET",
            {token: token_prop, s.field("format"): _prop(
                "string", "File format.", enum=["csv", "json"])}, [token],
            {"type": "object", "properties": {
                s.field("download", "url"): _prop("string", "Where to download the export."),
                s.field("expires", "at"): _prop("string", "")}},
            name=f"export_{'_'.join(e.plural_words)}"))
        tools.append(self._tool(
            "archive", e, f"Archive a {e.text} so it no longer shows in searches.", "POST",
            {token: token_prop, id_name: self._id_field(e, output=False, verb="archive")[1]},
            [token, id_name], {"type": "object", "properties": {
                s.field("archived"): _prop("boolean", "")}}))
        return tools


def _app_entities(pool: list[tuple[str, ...]], zipf: _Zipf, count: int,
                  rng: random.Random) -> list[_Entity]:
    """``count`` distinct entities (a ``base_modifier`` entity brings its base as parent);
    some base entities get another entity of the app as parent."""
    chosen: dict[tuple[str, ...], _Entity] = {}
    tries = 0
    while len(chosen) < count and tries < 50 * count:
        tries += 1
        words = pool[zipf.draw(rng)]
        if words in chosen:
            continue
        parent = None
        if len(words) == 2 and words[1] in MODIFIERS and words[0] in BASE_ENTITIES:
            base = (words[0],)
            parent = chosen.setdefault(base, _Entity(base))
        elif chosen and rng.random() < 0.4:
            parent = rng.choice(list(chosen.values()))
            if parent.parent is not None:  # keep nesting shallow
                parent = None
        chosen[words] = _Entity(words, parent)
    return list(chosen.values())


def synthetic_catalog(n_tools: int, seed: int = 0) -> Catalog:
    """A deterministic catalog of exactly ``n_tools`` tools (see the module docstring).

    The same ``(n_tools, seed)`` always gives the same catalog, in any process.
    """
    if n_tools < 0:
        raise ValueError(f"n_tools must be >= 0, got {n_tools}")
    rng = random.Random(f"hyperplan-synthetic:{seed}")
    pool = _entity_pool(rng)
    zipf = _Zipf(len(pool))
    tools: list[ToolSpec] = []
    for index, quota in enumerate(_quotas(n_tools, rng) if n_tools else []):
        app_rng = random.Random(f"hyperplan-synthetic:{seed}:{index}")
        n_entities = max(1, round((quota - 3) / 7))
        builder = _AppBuilder(index, _app_entities(pool, zipf, n_entities, app_rng), app_rng)
        candidates = builder.app_tools()[:1]
        for entity in builder.entities:
            candidates += builder.core_tools(entity)
        candidates += builder.app_tools()[1:]
        for entity in builder.entities:
            candidates += builder.extra_tools(entity)
        tools += candidates[:quota]
        missing = quota - min(quota, len(candidates))
        for k in range(missing):  # only for tiny entity draws: pad with report tools
            tools.append(builder._tool(
                "report", None, f"Run saved report {k} of {builder.style.brand}.", "GET",
                {}, [], {"type": "object", "properties": {"rows": {
                    "type": "array", "items": {"type": "string"}}}},
                name=f"run_report_{k}"))
    return build_catalog(tools, source=f"synthetic:{n_tools}:{seed}")


# ---------------------------------------------------------------------- expectations


@dataclass(frozen=True)
class IdExpectation:
    """A required id input (``app7.show_order`` / ``order_id``) and the other tools of the
    same app that output that id (``app7.search_orders``, ``app7.create_order`` ...)."""

    tool: str
    input: str
    producers: tuple[str, ...]


def _id_key(name: str) -> str | None:
    tokens = name_tokens(name)
    if len(tokens) >= 2 and tokens[-1] == "id":
        return "_".join(tokens)
    return None


def synthetic_expectations(catalog: Catalog) -> list[IdExpectation]:
    """Required id inputs with their same-app producers, read back from the catalog.

    An output produces ``order_id`` when its last path segment is ``order_id`` (or
    ``orderId``), at any depth (``orders[].order_id``, ``[].order.order_id``). Inputs with no
    producer in their app are left out.
    """
    by_app: dict[str, list[ToolSpec]] = {}
    for tool in catalog.tools:
        by_app.setdefault(str(tool.metadata.get("app", "")), []).append(tool)
    expectations = []
    for tools in by_app.values():
        producers: dict[str, list[str]] = {}
        for tool in tools:
            keys = set()
            for field in output_fields(tool.output_schema, where=tool.name):
                segments = path_segments(field.path)
                key = _id_key(segments[-1]) if segments else None
                if key:
                    keys.add(key)
            for key in sorted(keys):
                producers.setdefault(key, []).append(tool.name)
        for tool in tools:
            for name in tool.required_inputs:
                key = _id_key(name)
                found = tuple(p for p in producers.get(key or "", []) if p != tool.name)
                if found:
                    expectations.append(IdExpectation(tool.name, name, found))
    return expectations


def id_inputs_with_producer(graph: Hypergraph, expectations: list[IdExpectation]) -> int:
    """How many expected id inputs have an inferred link from one of their producers."""
    inputs: dict[tuple[int, str], int] = {
        (n.tool, n.path): n.id for n in graph.nodes if n.kind is NodeKind.INPUT
    }
    satisfied = 0
    for exp in expectations:
        tool = graph.tool_index.get(exp.tool)
        node = inputs.get((tool, exp.input)) if tool is not None else None
        if node is None:
            continue
        producers = {graph.tool_index[p] for p in exp.producers if p in graph.tool_index}
        if any(graph.nodes[lk.source].tool in producers for lk in graph.links_into(node)):
            satisfied += 1
    return satisfied
