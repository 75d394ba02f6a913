"""The tools of one synthetic app, in priority order (so a small quota keeps the core tools):
the account tools (login, profile, logout), the five core tools of each entity (search,
show, create, update, delete) and its extra tools (list by parent, share, export, archive).

Each function draws its text from the app's random stream in a fixed order (argument order
included), which is what keeps a seed's catalog the same.
"""

from __future__ import annotations

from dataclasses import dataclass

from hyperplan.catalog import ToolSpec
from hyperplan_bench.synthetic.app import (
    App,
    Entity,
    Field,
    attributes,
    fmt,
    id_field,
    list_output,
    obj,
    paging,
    prop,
    record,
    token_input,
    tool,
)
from hyperplan_bench.synthetic.templates import (
    CREATE_DESCS,
    DELETE_DESCS,
    SEARCH_DESCS,
    SHOW_DESCS,
    UPDATE_DESCS,
)


@dataclass(frozen=True)
class _Entry:
    """What the tools over one entity share: the app, the entity, the token input and the
    name of the entity's id input."""

    app: App
    entity: Entity
    token: Field
    id_name: str

    @property
    def token_name(self) -> str:
        return self.token[0]


def account_tools(app: App) -> list[ToolSpec]:
    """``login`` (user and password in, a token out), ``show_profile`` and ``logout``."""
    s = app.style
    token, token_prop = token_input(app)
    user = s.field("email") if app.rng.random() < 0.5 else s.field("username")
    login = tool(
        app, "login", None, f"Log in to {s.brand} and get an access token.", "POST",
        {user: prop("string", "Your account email or user name."),
         s.field("password"): prop("string", "Your account password.")},
        [user, s.field("password")],
        obj({
            token: prop("string", f"{' '.join(s.token).capitalize()} for {s.brand}."),
            s.field("token", "type"): prop("string", "Always 'bearer'."),
            s.field("expires", "at"): prop("string", "Expiry time of the token."),
        }))
    profile = tool(
        app, "show_profile", None, f"Show the profile of the logged-in {s.brand} user.", "GET",
        {token: token_prop}, [token],
        obj({
            s.field("user", "id"): prop(s.id_type, "Your user id."),
            s.field("email"): prop("string", "Your email address."),
            s.field("full", "name"): prop("string", "Your full name."),
        }))
    logout = tool(app, "logout", None, f"Log out of {s.brand}.", "POST",
                  {token: token_prop}, [token], obj({s.field("success"): prop("boolean", "")}))
    return [login, profile, logout]


def _search(x: _Entry) -> ToolSpec:
    app, e = x.app, x.entity
    query = prop("string", fmt(app, ("Search text matched against {w} titles.",
                                     "Keywords to look for.", "Free-text query."), e))
    inputs = {x.token_name: x.token[1], app.style.field("query"): query, **paging(app)}
    if e.parent is not None:
        pid, pprop = id_field(app, e.parent, output=False, verb="filter by")
        inputs[pid] = pprop
    return tool(app, "search", None, fmt(app, SEARCH_DESCS, e), "GET", inputs,
                [x.token_name], list_output(app, e), name=f"search_{'_'.join(e.plural_words)}")


def _show(x: _Entry, id_in: Field) -> ToolSpec:
    app, e = x.app, x.entity
    return tool(app, "show", e, fmt(app, SHOW_DESCS, e), "GET",
                {x.token_name: x.token[1], x.id_name: id_in[1]}, [x.token_name, x.id_name],
                record(app, e, full=True))


def _create(x: _Entry) -> tuple[ToolSpec, Field]:
    """create, and the output id field that update reuses (drawn after create's inputs)."""
    app, e = x.app, x.entity
    inputs = {x.token_name: x.token[1], **attributes(app, e)}
    required = [x.token_name, *list(inputs)[1:2]]
    if e.parent is not None:
        pid, pprop = id_field(app, e.parent, output=False, verb="attach to")
        inputs[pid] = pprop
        required.append(pid)
    out_id = id_field(app, e, output=True)
    return tool(app, "create", e, fmt(app, CREATE_DESCS, e), "POST", inputs, required,
                obj({out_id[0]: out_id[1],
                     app.style.field("created", "at"): prop("string", "Creation time.")})
                ), out_id


def _update(x: _Entry, out_id: Field) -> ToolSpec:
    app, e = x.app, x.entity
    inputs = {x.token_name: x.token[1],
              x.id_name: id_field(app, e, output=False, verb="update")[1],
              **attributes(app, e)}
    return tool(app, "update", e, fmt(app, UPDATE_DESCS, e), "PATCH", inputs,
                [x.token_name, x.id_name],
                obj({out_id[0]: out_id[1],
                     app.style.field("updated", "at"): prop("string", "Last change.")}))


def _delete(x: _Entry) -> ToolSpec:
    app, e = x.app, x.entity
    s = app.style
    description = fmt(app, DELETE_DESCS, e)
    inputs = {x.token_name: x.token[1],
              x.id_name: id_field(app, e, output=False, verb="delete")[1]}
    return tool(app, "delete", e, description, "DELETE", inputs, [x.token_name, x.id_name],
                obj({s.field("success"): prop("boolean", "True when deleted."),
                     s.field("message"): prop("string", "")}))


def core_tools(app: App, e: Entity) -> list[ToolSpec]:
    """search, show, create, update and delete over ``e``."""
    token = token_input(app)
    id_in = id_field(app, e, output=False, verb="show")
    x = _Entry(app, e, token, id_in[0])
    search = _search(x)
    show = _show(x, id_in)
    create, out_id = _create(x)
    return [search, show, create, _update(x, out_id), _delete(x)]


def _list_by_parent(x: _Entry, parent: Entity) -> ToolSpec:
    app, e = x.app, x.entity
    pid, pprop = id_field(app, parent, output=False, verb="list")
    return tool(app, "list", None, f"List the {e.plural_text} of a {parent.text}.", "GET",
                {x.token_name: x.token[1], pid: pprop, **paging(app)}, [x.token_name, pid],
                {"type": "array", "items": record(app, e, full=False)},
                name=f"list_{parent.snake}_{'_'.join(e.plural_words)}")


def _share(x: _Entry) -> ToolSpec:
    app, e = x.app, x.entity
    s = app.style
    recipient = s.field("recipient", "email")
    inputs = {x.token_name: x.token[1],
              x.id_name: id_field(app, e, output=False, verb="share")[1],
              recipient: prop("string", "Email of the person to share with.")}
    return tool(app, "share", e, f"Share a {e.text} with someone by email.", "POST", inputs,
                [x.token_name, x.id_name, recipient],
                obj({s.field("share", "url"): prop("string", f"Link to the shared {e.text}.")}))


def _export(x: _Entry) -> ToolSpec:
    app, e = x.app, x.entity
    s = app.style
    return tool(app, "export", None, f"Export {e.plural_text} as CSV or JSON.", "GET",
                {x.token_name: x.token[1],
                 s.field("format"): prop("string", "File format.", enum=["csv", "json"])},
                [x.token_name],
                obj({s.field("download", "url"): prop("string", "Where to download the export."),
                     s.field("expires", "at"): prop("string", "")}),
                name=f"export_{'_'.join(e.plural_words)}")


def _archive(x: _Entry) -> ToolSpec:
    app, e = x.app, x.entity
    inputs = {x.token_name: x.token[1],
              x.id_name: id_field(app, e, output=False, verb="archive")[1]}
    return tool(app, "archive", e, f"Archive a {e.text} so it no longer shows in searches.",
                "POST", inputs, [x.token_name, x.id_name],
                obj({app.style.field("archived"): prop("boolean", "")}))


def extra_tools(app: App, e: Entity) -> list[ToolSpec]:
    """list (by parent, when ``e`` has one), share, export and archive over ``e``."""
    token = token_input(app)
    x = _Entry(app, e, token, id_field(app, e, output=False)[0])
    tools = [] if e.parent is None else [_list_by_parent(x, e.parent)]
    return [*tools, _share(x), _export(x), _archive(x)]


def report_tool(app: App, k: int) -> ToolSpec:
    """Padding for tiny entity draws: ``run_report_<k>``, no inputs."""
    return tool(app, "report", None, f"Run saved report {k} of {app.style.brand}.", "GET",
                {}, [], obj({"rows": {"type": "array", "items": {"type": "string"}}}),
                name=f"run_report_{k}")
