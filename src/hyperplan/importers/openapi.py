"""Importer for OpenAPI 3.0 / 3.1 documents (JSON or YAML): one tool per operation.

A Swagger 2.0 document (``swagger: "2.0"``) is first converted to OpenAPI 3.0 by
:func:`hyperplan.importers.swagger2.swagger2_to_openapi3`. A document without any operation is
a :class:`~hyperplan.errors.CatalogError`.

* Name: ``operationId`` (a blank one counts as absent), else ``"{method} {path}"`` normalised
  (``get_pets_petId``), with a ``_2``, ``_3``... suffix when another operation already has
  that name (``/users`` and ``/users/~`` both normalise to ``get_users``). Two operations
  with the same ``operationId`` are an error: the specification requires them unique.
* Inputs: path/query/header/cookie parameters (path-level merged with operation-level, the
  operation winning on the same ``(name, in)``; ``Accept``/``Content-Type``/``Authorization``
  headers are skipped as the spec says) plus the request body: the properties of an object
  body (``application/json`` preferred, else any ``*json``, form or first media type) become
  top-level inputs (required as the body schema says, unless ``requestBody.required`` is
  false), any other body becomes one input ``body``. A body property whose name a
  parameter already uses is renamed ``<name>_body``; a parameter clashing with another
  location's parameter is renamed ``<name>_<in>``. ``metadata["params"]`` maps every input
  to ``{"in": path|query|header|cookie|body, "name": original}``.
* Output: the schema of the first 2xx (then ``2XX``) response's ``application/json`` (or any
  ``*json``, then ``*/*`` or ``application/*``) content; none -> no output schema.
* ``$ref`` are resolved within the document (JSON pointers with ``~0``/``~1``); recursive
  ones (and those nested too deep or past the size budget of
  :mod:`~hyperplan.importers.schema_refs`) are cut, with one
  :class:`~hyperplan.graph.schema_paths.SchemaWarning` per document that counts the cuts and
  names the first; unresolvable or external ones are a :class:`~hyperplan.errors.CatalogError`.
* Security (kept simple): the operation's ``security`` (else the document's) is a list of
  alternatives; the first alternative's schemes become preconditions
  ``"<scheme>.authenticated"``; an empty alternative ``{}`` means auth is optional, so no
  preconditions. An operation whose output has a token-like property (``access_token``,
  ``token``, ``session_id``, ``api_key``; up to 8 levels deep) gets the effect
  ``"<scheme>.authenticated"`` for every scheme in ``components.securitySchemes``.
* Metadata: ``method`` (upper case), ``path``, ``server`` (first ``servers`` url of the
  operation, path item or document, its ``{variables}`` replaced by their ``default``, else
  ``None``), ``params``, ``tags``, ``deprecated``, ``entity`` (:func:`path_entity`).
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from hyperplan.catalog import Catalog, ToolSpec, build_catalog, make_tool
from hyperplan.errors import CatalogError, yaml_problem
from hyperplan.graph.schema_paths import SchemaWarning
from hyperplan.importers.common import read_text
from hyperplan.importers.repair import RepairLog, import_tools, short
from hyperplan.importers.schema_refs import lookup_pointer, read_source, resolve_refs
from hyperplan.importers.swagger2 import REPAIRS_KEY, is_swagger2, swagger2_to_openapi3

SOURCE = "openapi"
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
TOKEN_FIELDS = frozenset({"access_token", "token", "session_id", "api_key"})
PARAM_LOCATIONS = ("path", "query", "header", "cookie")
_IGNORED_HEADERS = frozenset({"accept", "content-type", "authorization"})
_ANY_MEDIA = frozenset({"*/*", "application/*"})
"""Media ranges that admit JSON (Spring and other generators write ``*/*`` for JSON)."""


@dataclass(frozen=True)
class _Op:
    """One operation being imported, with everything error messages need."""

    doc: dict[str, Any]
    file: str
    name: str
    method: str
    path: str
    item: dict[str, Any]
    op: dict[str, Any]
    notes: list[str]
    log: RepairLog

    def error(self, message: str, field: str) -> CatalogError:
        return CatalogError(message, file=self.file, tool=self.name, field=field)

    def repaired(self, field: str, action: str) -> None:
        self.log.repaired(self.name, field, action)

    def deref(self, node: Any, field: str) -> dict[str, Any]:
        """Follow a chain of ``{"$ref": ...}`` objects to a JSON object."""
        for _ in range(32):
            if not isinstance(node, dict):
                raise self.error("expected a JSON object", field)
            ref = node.get("$ref")
            if ref is None:
                return node
            if not isinstance(ref, str):
                raise self.error("$ref must be a string", field)
            node = lookup_pointer(self.doc, ref, file=self.file, tool=self.name, field=field)
        raise self.error("$ref chain too long or circular", field)

    def schema(self, raw: Any, field: str) -> dict[str, Any]:
        return resolve_refs(raw, self.doc, file=self.file, tool=self.name, field=field,
                            notes=self.notes, log=self.log)


def load_openapi(path_or_doc: str | Path | dict[str, Any]) -> Catalog:
    """Load every operation of an OpenAPI 3.x or Swagger 2.0 document (a JSON/YAML path or a
    parsed dict)."""
    doc, file = _read(path_or_doc)
    version = f"openapi {doc.get('openapi')}"
    if is_swagger2(doc):
        version = f"swagger {doc.get('swagger')}"
        doc = swagger2_to_openapi3(doc, file=file)
    _check_version(doc, file)
    paths = doc.get("paths") or {}
    if not isinstance(paths, dict):
        raise CatalogError("'paths' must be an object", file=file, field="paths")
    log = RepairLog(file)
    found = []
    errors = []
    for raw_path, raw_item in paths.items():
        path = str(raw_path)
        if path.startswith("x-"):
            continue
        try:
            item = _path_item(doc, file, path, raw_item)
        except CatalogError as exc:
            errors.append(exc)
            log.dropped(f"paths.{path}", exc)
            continue
        found += [(path, method, item) for method in HTTP_METHODS if method in item]
    if not found:
        if errors:
            raise errors[0]
        hooks = " (webhooks are not imported)" if doc.get("webhooks") else ""
        raise CatalogError(f"no operations under 'paths' in this {version} document{hooks}",
                           file=file, field="paths")
    names = _tool_names(file, found, log)
    notes: list[str] = []
    tools = import_tools(
        list(zip(found, names, strict=True)),
        lambda entry, _: _operation(doc, file, entry, notes, log), log, field="operationId")
    _warn_cuts(file, notes)
    log.warn()
    return build_catalog(tools, source=file, repairs=log.records)


def _operation_id(path: str, method: str, op: Any, log: RepairLog) -> str | None:
    """The operation's ``operationId``; ``None`` when absent or blank (as some generators
    write ``""``) or not a string (recorded in ``log``: the operation gets a made name)."""
    op_id = op.get("operationId") if isinstance(op, dict) else None
    if op_id is None or (isinstance(op_id, str) and not op_id.strip()):
        return None
    if not isinstance(op_id, str):
        log.repaired(tool_name(method, path), "operationId",
                     f"{short(op_id)} is not a string: the operation is named by its path")
        return None
    return op_id.strip()


def _tool_names(file: str, found: list[tuple[str, str, dict[str, Any]]],
                log: RepairLog) -> list[str]:
    """One name per operation: its ``operationId``, else :func:`tool_name` made unique by a
    ``_2``, ``_3``... suffix when another operation already has it (``/users`` and
    ``/users/~`` both give ``get_users``). Of operations repeating an ``operationId`` (the
    specification requires them unique) :func:`import_tools` keeps the first."""
    ids = [_operation_id(path, method, item[method], log) for path, method, item in found]
    taken = {i for i in ids if i is not None}
    names = []
    for (path, method, _), op_id in zip(found, ids, strict=True):
        if op_id is not None:
            names.append(op_id)
            continue
        base = name = tool_name(method, path)
        count = 1
        while name in taken:
            count += 1
            name = f"{base}_{count}"
        taken.add(name)
        names.append(name)
    return names


def _warn_cuts(file: str, notes: list[str]) -> None:
    """One :class:`SchemaWarning` for all the references the document's schemas had cut."""
    if not notes:
        return
    tools = {n.split("', field ", 1)[0] for n in notes}
    more = f"; and {len(notes) - 1} more" if len(notes) > 1 else ""
    warnings.warn(
        f"file {file}: {len(notes)} schema reference(s) cut in {len(tools)} tool(s) to keep "
        f"schemas finite: {notes[0]}{more}",
        SchemaWarning,
        stacklevel=3,
    )


def _read(source: str | Path | dict[str, Any]) -> tuple[dict[str, Any], str]:
    if isinstance(source, dict):
        return source, "<openapi>"
    path = Path(source)
    if path.suffix.lower() == ".json":
        data, file = read_source(path, "")
    else:
        data, file = _read_yaml(path), str(path)
    if not isinstance(data, dict):
        raise CatalogError("an OpenAPI document must be an object", file=file, field="<root>")
    return data, file


class _YamlLoader(yaml.SafeLoader):
    """Safe loader that keeps dates as strings, so documents stay JSON-compatible."""


_YamlLoader.yaml_implicit_resolvers = {
    first: [r for r in resolvers if r[0] != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _read_yaml(path: Path) -> Any:
    """YAML is a superset of JSON, so this also reads ``.json``-less JSON files; dates stay
    strings."""
    text = read_text(path)
    try:
        return yaml.load(text, Loader=_YamlLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise CatalogError(f"malformed YAML: {yaml_problem(exc)}", file=str(path)) from None
    except RecursionError:
        raise CatalogError("YAML nested too deeply", file=str(path)) from None


def _check_version(doc: dict[str, Any], file: str) -> None:
    version = doc.get("openapi")
    if version is None:
        raise CatalogError("missing required key 'openapi'", file=file, field="openapi")
    if not str(version).startswith("3."):
        raise CatalogError(f"unsupported OpenAPI version {version!r}", file=file, field="openapi")


def _path_item(doc: dict[str, Any], file: str, path: str, raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict) and isinstance(raw.get("$ref"), str):
        raw = lookup_pointer(doc, raw["$ref"], file=file, tool=None, field=f"paths.{path}")
    if not isinstance(raw, dict):
        raise CatalogError("path item must be an object", file=file, field=f"paths.{path}")
    return raw


def tool_name(method: str, path: str) -> str:
    """``("get", "/pets/{petId}")`` -> ``"get_pets_petId"``."""
    return re.sub(r"[^0-9A-Za-z]+", "_", f"{method} {path}").strip("_")


def _operation(
    doc: dict[str, Any],
    file: str,
    entry: tuple[tuple[str, str, dict[str, Any]], str],
    notes: list[str],
    log: RepairLog,
) -> ToolSpec:
    """The tool of one operation: ``entry`` is ``((path, method, path item), name)``."""
    (path, method, item), name = entry
    if not isinstance(item[method], dict):
        raise CatalogError("operation must be an object", file=file, tool=name,
                           field=f"paths.{path}.{method}")
    ctx = _Op(doc, file, name, method, path, item, item[method], notes, log)
    for action in ctx.op.get(REPAIRS_KEY) or []:
        ctx.repaired("parameters", str(action))
    props, required, params = _parameters(ctx)
    _request_body(ctx, props, required, params)
    outputs = _response(ctx)
    inputs: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        inputs["required"] = required
    return make_tool(
        file=file,
        name=ctx.name,
        description=_description(ctx.op),
        input_schema=inputs,
        output_schema=outputs,
        effects=_effects(doc, outputs),
        preconditions=_preconditions(ctx),
        source=SOURCE,
        metadata=_metadata(ctx, params),
    )


def _description(op: dict[str, Any]) -> str:
    parts = [op.get(k) for k in ("summary", "description")]
    texts = [p.strip() for p in parts if isinstance(p, str) and p.strip()]
    if len(texts) == 2 and texts[1].startswith(texts[0]):
        texts = texts[1:]
    return "\n\n".join(texts)


def _param_list(ctx: _Op, owner: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """The parameters of an operation or path item; one that cannot be read is dropped (a
    location written ``"Query"`` is read as ``"query"``), recorded in ``ctx.log``."""
    raw = owner.get("parameters") or []
    if not isinstance(raw, list):
        ctx.repaired(f"{where}parameters", f"{short(raw)} is not a list: dropped")
        return []
    out = []
    for i, entry in enumerate(raw):
        field = f"{where}parameters[{i}]"
        try:
            param = ctx.deref(entry, field)
        except CatalogError as exc:
            ctx.repaired(exc.field or field, f"{exc.reason}: parameter dropped")
            continue
        where_in = param.get("in")
        if isinstance(where_in, str) and where_in.strip().lower() in PARAM_LOCATIONS \
                and where_in not in PARAM_LOCATIONS:
            ctx.repaired(f"{field}.in", f"{short(where_in)} read as "
                         f"{where_in.strip().lower()!r}")
            param = {**param, "in": where_in.strip().lower()}
        if isinstance(param.get("required"), str) and param["required"].lower() in (
                "true", "false"):
            ctx.repaired(f"{field}.required", f"the string {short(param['required'])} read "
                         f"as {param['required'].lower()}")
            param = {**param, "required": param["required"].lower() == "true"}
        if not isinstance(param.get("name"), str) or not param["name"]:
            ctx.repaired(f"{field}.name", "no name: parameter dropped")
        elif param.get("in") not in PARAM_LOCATIONS:
            ctx.repaired(f"{field}.in", f"{short(param.get('in'))} is not one of "
                         f"{', '.join(PARAM_LOCATIONS)}: parameter dropped")
        else:
            out.append(param)
    return out


def _parameters(ctx: _Op) -> tuple[dict[str, Any], list[str], dict[str, dict[str, str]]]:
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for param in _param_list(ctx, ctx.item, "path-level ") + _param_list(ctx, ctx.op, ""):
        merged[(param["name"], param["in"])] = param
    props: dict[str, Any] = {}
    required: list[str] = []
    params: dict[str, dict[str, str]] = {}
    for (name, where), param in merged.items():
        if where == "header" and name.lower() in _IGNORED_HEADERS:
            continue
        key = name if name not in props else f"{name}_{where}"
        props[key] = _param_schema(ctx, param, f"parameters.{name}")
        params[key] = {"in": where, "name": name}
        if param.get("required") is True or where == "path":
            required.append(key)
    return props, required, params


def _param_schema(ctx: _Op, param: dict[str, Any], field: str) -> dict[str, Any]:
    raw = param.get("schema")
    if raw is None and isinstance(param.get("content"), dict) and param["content"]:
        media = next(iter(param["content"].values()))
        raw = media.get("schema") if isinstance(media, dict) else None
    try:
        schema = ctx.schema(raw if raw is not None else {}, field)
    except CatalogError as exc:  # the parameter is kept, as taking any value
        ctx.repaired(exc.field or field, f"{exc.reason}: read as any value")
        schema = {}
    description = param.get("description")
    if isinstance(description, str) and description and "description" not in schema:
        schema["description"] = description
    return schema


def _media_schema(ctx: _Op, content: Any, field: str, *, json_only: bool) -> Any:
    """The raw schema of the preferred media type in a ``content`` map (or ``None``)."""
    if content is None:
        return None
    if not isinstance(content, dict):
        raise ctx.error("'content' must be an object", f"{field}.content")
    keys = [str(k) for k in content]
    ranked = [k for k in keys if k.split(";")[0].strip() == "application/json"]
    ranked += [k for k in keys if "json" in k and k not in ranked]
    ranked += [k for k in keys if k.split(";")[0].strip() in _ANY_MEDIA and k not in ranked]
    if not json_only:
        ranked += [k for k in keys if "form" in k and k not in ranked] + keys
    for key in ranked:
        media = content.get(key)
        if isinstance(media, dict) and "schema" in media:
            return media["schema"]
    return None


def _object_parts(schema: dict[str, Any]) -> tuple[dict[str, Any], list[str]] | None:
    """Properties and required names of an object schema (``allOf`` parts merged)."""
    props: dict[str, Any] = dict(schema.get("properties") or {})
    raw_required = schema.get("required")
    raw_required = raw_required if isinstance(raw_required, list) else []
    required = [r for r in raw_required if isinstance(r, str)]
    for part in schema.get("allOf") or []:
        sub = _object_parts(part)
        if sub is not None:
            props.update(sub[0])
            required += sub[1]
    kind = schema.get("type", "object")
    if not props or (kind != "object" and not (isinstance(kind, list) and "object" in kind)):
        return None
    return props, required


def _request_body(
    ctx: _Op, props: dict[str, Any], required: list[str], params: dict[str, dict[str, str]]
) -> None:
    """Add the request body's inputs; a body that cannot be read is dropped (recorded)."""
    try:
        _body_inputs(ctx, props, required, params)
    except CatalogError as exc:
        ctx.repaired(exc.field or "requestBody", f"{exc.reason}: request body dropped")


def _body_inputs(
    ctx: _Op, props: dict[str, Any], required: list[str], params: dict[str, dict[str, str]]
) -> None:
    if ctx.op.get("requestBody") is None:
        return
    body = ctx.deref(ctx.op["requestBody"], "requestBody")
    raw = _media_schema(ctx, body.get("content"), "requestBody", json_only=False)
    if raw is None:
        return
    schema = ctx.schema(raw, "requestBody")
    parts = _object_parts(schema)
    if parts is None:
        key = "body" if "body" not in props else "body_body"
        props[key] = schema
        params[key] = {"in": "body", "name": "body"}
        if body.get("required") is True:
            required.append(key)
        return
    for name, sub in parts[0].items():
        key = name if name not in props else f"{name}_body"
        props[key] = sub
        params[key] = {"in": "body", "name": name}
        if name in parts[1] and body.get("required") is not False and key not in required:
            required.append(key)


def _response(ctx: _Op) -> dict[str, Any] | None:
    """The output schema; one that cannot be read is dropped (recorded)."""
    try:
        return _response_schema(ctx)
    except CatalogError as exc:
        ctx.repaired(exc.field or "responses", f"{exc.reason}: output schema dropped")
        return None


def _response_schema(ctx: _Op) -> dict[str, Any] | None:
    responses = ctx.op.get("responses")
    if responses is None:
        return None
    if not isinstance(responses, dict):
        raise ctx.error("'responses' must be an object", "responses")
    codes = sorted(str(c) for c in responses)
    chosen = [c for c in codes if re.fullmatch(r"2\d\d", c)] + [
        c for c in codes if c.upper() == "2XX"
    ]
    if not chosen:
        return None
    code = chosen[0]
    field = f"responses.{code}"
    original = next(c for c in responses if str(c) == code)
    response = ctx.deref(responses[original], field)
    raw = _media_schema(ctx, response.get("content"), field, json_only=True)
    return None if raw is None else ctx.schema(raw, field)


def _security_schemes(doc: dict[str, Any]) -> list[str]:
    components = doc.get("components")
    schemes = components.get("securitySchemes") if isinstance(components, dict) else None
    return [str(k) for k in schemes] if isinstance(schemes, dict) else []


def _preconditions(ctx: _Op) -> tuple[str, ...]:
    field = "security"
    security = ctx.op.get("security")
    if security is None:
        security, field = ctx.doc.get("security"), "<document>.security"
    if security is None:
        return ()
    if not isinstance(security, list) or not all(isinstance(s, dict) for s in security):
        action = "not a list of requirement objects: dropped (no preconditions)"
        if field == "security":
            ctx.repaired(field, action)
        else:  # the document's: one field, however many operations use it
            ctx.log.repaired(ctx.name, "", action, definition="#/security")
        return ()
    if not security or any(not s for s in security):
        return ()
    return tuple(f"{scheme}.authenticated" for scheme in security[0])


def _has_token_field(schema: Any, depth: int = 0) -> bool:
    if not isinstance(schema, dict) or depth > 8:
        return False
    props = schema.get("properties")
    if isinstance(props, dict):
        if any(str(name).lower() in TOKEN_FIELDS for name in props):
            return True
        if any(_has_token_field(sub, depth + 1) for sub in props.values()):
            return True
    parts = [schema.get("items")]
    for key in ("allOf", "anyOf", "oneOf"):
        parts += schema.get(key) or []
    return any(_has_token_field(part, depth + 1) for part in parts)


def _effects(doc: dict[str, Any], outputs: dict[str, Any] | None) -> tuple[str, ...]:
    if outputs is None or not _has_token_field(outputs):
        return ()
    return tuple(f"{scheme}.authenticated" for scheme in _security_schemes(doc))


def _metadata(ctx: _Op, params: dict[str, dict[str, str]]) -> dict[str, Any]:
    tags = ctx.op.get("tags")
    return {
        "method": ctx.method.upper(),
        "path": ctx.path,
        "server": _server(ctx),
        "params": params,
        "tags": [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else [],
        "deprecated": ctx.op.get("deprecated") is True,
        "entity": path_entity(ctx.path),
        # the document marks the operation safe to repeat (``x-idempotent: true``): the runtime
        # may then retry it after a timeout (hyperplan.execute.repeat)
        **({"idempotent": True} if ctx.op.get("x-idempotent") is True else {}),
    }


def path_entity(path: str) -> str:
    """The resource an operation's response describes: the last literal segment of its path
    (``/repos/{owner}/{repo}/pulls/{pull_number}`` -> ``pulls``; ``/gists`` -> ``gists``;
    ``""`` for ``/``). Link inference qualifies the response's root ``id`` / ``number`` by it
    (``pull_number``, ``gist_id``): in REST, the collection ``/pulls`` and its item path
    ``/pulls/{pull_number}`` name the same resource."""
    literal = [s for s in path.split("/") if s and not (s.startswith("{") and s.endswith("}"))]
    return literal[-1] if literal else ""


def _server(ctx: _Op) -> str | None:
    for owner in (ctx.op, ctx.item, ctx.doc):
        servers = owner.get("servers")
        if isinstance(servers, list) and servers and isinstance(servers[0], dict):
            url = servers[0].get("url")
            if isinstance(url, str):
                return _expand_server(url, servers[0].get("variables"))
    return None


def _expand_server(url: str, variables: Any) -> str:
    """``url`` with every ``{name}`` that ``variables`` declares replaced by its ``default``
    (Server Variable Object: the default "SHALL be used for substitution"); unknown
    names stay as written."""
    if not isinstance(variables, dict):
        return url

    def value(match: re.Match[str]) -> str:
        var = variables.get(match.group(1))
        default = var.get("default") if isinstance(var, dict) else None
        return str(default) if isinstance(default, str | int | float) else match.group(0)

    return re.sub(r"\{([^{}]+)\}", value, url)
