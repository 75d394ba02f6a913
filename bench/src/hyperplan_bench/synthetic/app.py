"""One synthetic app: its entities, its style (field case, id type, token and paging names,
envelope or bare arrays, brand, currency) and the schema pieces its tools are made of.

Every function draws from the app's own ``random.Random`` in a fixed order, so the same seed
gives the same catalog; :mod:`hyperplan_bench.synthetic.app_tools` assembles the tools.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from hyperplan.catalog import ToolSpec, make_tool
from hyperplan_bench.synthetic.templates import ATTRIBUTES, ID_IN_DESCS, ID_OUT_DESCS
from hyperplan_bench.synthetic.words import CURRENCIES, SYLLABLES, EntityWords, plural

Schema = dict[str, Any]
Props = dict[str, Schema]
Field = tuple[str, Schema]  # (field name, its schema)

_PAGES = ((("page", "index"), ("page", "limit")), (("page",), ("per", "page")),
          (("offset",), ("limit",)))


@dataclass(frozen=True)
class Entity:
    """An entity of an app (``order_item``), with the entity it belongs to, if any."""

    words: EntityWords  # ("order", "item")
    parent: Entity | None = None

    @property
    def snake(self) -> str:
        return "_".join(self.words)

    @property
    def plural_words(self) -> tuple[str, ...]:
        return (*self.words[:-1], plural(self.words[-1]))

    @property
    def text(self) -> str:
        return " ".join(self.words)

    @property
    def plural_text(self) -> str:
        return " ".join(self.plural_words)


@dataclass(frozen=True)
class Style:
    """How one app names and shapes its fields."""

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


@dataclass(frozen=True)
class App:
    """One app of the catalog: namespace ``app<index>``, its entities, style, the attribute
    indices of each entity, and the random stream all its text is drawn from."""

    name: str
    rng: random.Random
    entities: list[Entity]
    style: Style
    attrs: dict[str, list[int]]


def new_app(index: int, entities: list[Entity], rng: random.Random) -> App:
    """Draw an app's brand, style and per-entity attributes from ``rng``."""
    brand = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3)))
    style = Style(
        camel=rng.random() < 0.2,
        id_type="integer" if rng.random() < 0.3 else "string",
        token=("access", "token") if rng.random() < 0.85 else ("session", "token"),
        page=_PAGES[rng.randrange(len(_PAGES))],
        bare_arrays=rng.random() < 0.25,
        brand=brand.capitalize(),
        currency=rng.choice(CURRENCIES),
    )
    attrs = {e.snake: rng.sample(range(len(ATTRIBUTES)), rng.randint(2, 5)) for e in entities}
    return App(f"app{index}", rng, entities, style, attrs)


def schema(props: Props, required: list[str]) -> Schema:
    return {"type": "object", "properties": props, "required": required}


def prop(kind: str, description: str, **extra: Any) -> Schema:
    out: Schema = {"type": kind, **extra}
    if kind == "array" and "items" not in out:
        out["items"] = {"type": "string"}
    if description:
        out["description"] = description
    return out


def obj(props: Props) -> Schema:
    return {"type": "object", "properties": props}


def fmt(app: App, templates: tuple[str, ...], entity: Entity | None = None,
        verb: str = "") -> str:
    """One of ``templates`` (drawn) with the placeholders of
    :mod:`hyperplan_bench.synthetic.templates` filled in."""
    w = entity.text if entity else ""
    return app.rng.choice(templates).format(
        w=w, W=w[:1].upper() + w[1:], p=entity.plural_text if entity else "",
        b=app.style.brand, c=app.style.currency, v=verb,
    )


def tool(app: App, verb: str, entity: Entity | None, description: str, method: str,
         inputs: Props, required: list[str], output: Schema | None, name: str = "") -> ToolSpec:
    """The tool ``app<i>.<name>`` (default ``<verb>_<entity>``, or ``<verb>``)."""
    short = name or (f"{verb}_{entity.snake}" if entity else verb)
    return make_tool(
        name=f"{app.name}.{short}",
        description=description,
        input_schema=schema(inputs, required),
        output_schema=output,
        source="synthetic",
        metadata={"app": app.name, "method": method},
    )


def token_input(app: App) -> Field:
    """The access-token input every tool but login takes."""
    s = app.style
    desc = app.rng.choice((
        f"{' '.join(s.token).capitalize()} from {app.name}.login.",
        f"Credential returned by the {s.brand} login.", "",
    ))
    return s.field(*s.token), prop("string", desc)


def id_field(app: App, entity: Entity, *, output: bool, verb: str = "") -> Field:
    """``<entity>_id`` as an output, or as an input serving ``verb``."""
    templates = ID_OUT_DESCS if output else ID_IN_DESCS
    return (app.style.field(*entity.words, "id"),
            prop(app.style.id_type, fmt(app, templates, entity, verb)))


def attributes(app: App, entity: Entity, limit: int = 99) -> Props:
    """The first ``limit`` attributes of ``entity`` in this app (15% undescribed)."""
    props = {}
    for k in app.attrs[entity.snake][:limit]:
        words, kind, templates = ATTRIBUTES[k]
        desc = fmt(app, templates, entity) if app.rng.random() < 0.85 else ""
        props[app.style.field(words)] = prop(kind, desc)
    return props


def _parent_object(app: App, entity: Entity, parent: Entity) -> Schema:
    key, id_prop = id_field(app, parent, output=True)
    nested = {key: id_prop, **attributes(app, parent, 2)}
    return {"type": "object", "description": f"The {parent.text} this {entity.text} "
            f"belongs to.", "properties": nested}


def _owner_object(app: App, entity: Entity) -> Schema:
    s = app.style
    return {"type": "object", "description": f"Who owns the {entity.text}.",
            "properties": {
                s.field("user", "id"): prop(s.id_type, "Owner user id."),
                s.field("email"): prop("string", "Owner email address."),
                s.field("full", "name"): prop("string", ""),
            }}


def record(app: App, entity: Entity, full: bool) -> Schema:
    """Object schema of one entity: its id, attributes, its parent nested (and, in full
    records, half the time its owner)."""
    key, id_prop = id_field(app, entity, output=True)
    props: Props = {key: id_prop}
    props.update(attributes(app, entity, 99 if full else 2))
    props[app.style.field("created", "at")] = prop(
        "string", f"When the {entity.text} was created (ISO 8601).")
    if entity.parent is not None:
        props[app.style.field(*entity.parent.words)] = _parent_object(app, entity, entity.parent)
    if full and app.rng.random() < 0.5:
        props[app.style.field("owner")] = _owner_object(app, entity)
    return obj(props)


def list_output(app: App, entity: Entity, extra_total: bool = True) -> Schema:
    """A page of short records: a bare array, or an envelope with a total count."""
    items = {"type": "array", "items": record(app, entity, full=False),
             "description": f"Matching {entity.plural_text}."}
    if app.style.bare_arrays:
        return items
    props: Props = {app.style.field(*entity.plural_words): items}
    if extra_total:
        props[app.style.field("total", "count")] = prop(
            "integer", f"Number of {entity.plural_text} in all pages.")
    return obj(props)


def paging(app: App) -> Props:
    """The app's two paging inputs (page index, page size)."""
    index, size = app.style.page
    return {
        app.style.field(*index): prop("integer", app.rng.choice((
            "Page of results to return, starting at 0.", "Result page number.", ""))),
        app.style.field(*size): prop("integer", "Maximum number of results per page."),
    }
