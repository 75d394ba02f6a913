"""Swagger 2.0 -> OpenAPI 3.0: a pure conversion of a parsed document (no I/O).

:func:`swagger2_to_openapi3` returns a new OpenAPI 3.0.3 document equivalent to a Swagger 2.0
one (the input is never modified), so that :mod:`hyperplan.importers.openapi` reads both. The
sections mapped, Swagger 2.0 (https://swagger.io/specification/v2/) -> OpenAPI 3.0.3
(https://spec.openapis.org/oas/v3.0.3):

* ``host`` / ``basePath`` / ``schemes`` (Swagger Object) -> ``servers`` (Server Object, §4.7.5):
  one ``{scheme}://{host}{basePath}`` per scheme in the document's order (``ws``/``wss`` only
  when nothing else is listed; ``https`` when ``schemes`` is absent, since the "scheme used
  to access the specification" is unknown here); without ``host`` the relative
  ``basePath`` alone; neither -> no ``servers``. An operation's own ``schemes`` become its
  ``servers`` (Operation Object, §4.7.10).
* ``definitions`` -> ``components/schemas``; top-level ``parameters`` -> ``components/
  parameters`` (body / formData ones are not parameters in 3.0: they are inlined where they
  are used); ``responses`` -> ``components/responses``; ``securityDefinitions`` ->
  ``components/securitySchemes`` (Components Object, §4.7.7; Security Scheme Object,
  §4.7.27: ``basic`` -> ``http``/``basic``, oauth2 ``flow`` -> ``flows``, ``application`` ->
  ``clientCredentials``, ``accessCode`` -> ``authorizationCode``). Every local ``$ref`` to
  ``#/definitions/``, ``#/parameters/``, ``#/responses/`` is rewritten to its new place
  (Reference Object, §4.7.26); ``example`` / ``default`` / ``enum`` values and ``x-``
  extensions are data and left alone.
* Parameter Object (2.0) -> Parameter Object (3.0, §4.7.12) for ``path``/``query``/``header``:
  ``type``, ``format``, ``items``, ``enum``, ``default``, the validation keywords and
  ``x-nullable`` move into ``schema`` (Schema Object, §4.7.24); ``collectionFormat`` becomes
  ``style``/``explode`` (``csv``, ``ssv``, ``pipes``, ``multi``; ``tsv`` has no equivalent and
  is dropped).
* ``in: body`` -> ``requestBody`` (Request Body Object, §4.7.13) with one media type per
  ``consumes`` entry (the operation's, else the document's, else ``application/json``),
  ``required`` and ``description`` kept, the parameter name kept as
  ``x-codegen-request-body-name``.
* ``in: formData`` parameters -> one ``requestBody`` whose schema is an object with a property
  per parameter and their ``required`` list (Considerations for File Uploads, §4.7.14.4):
  ``multipart/form-data`` when a parameter has ``type: file`` (which becomes ``type: string,
  format: binary``) or ``consumes`` only names multipart, else
  ``application/x-www-form-urlencoded``.
* Path Item ``parameters`` stay at path level except body / formData ones, which are folded
  into each operation's ``requestBody`` (an operation parameter with the same ``name`` and
  ``in`` wins, as both specifications say).
* Response Object: ``schema`` -> ``content`` with one media type per ``produces`` entry (the
  operation's, else the document's, else ``application/json``); ``examples`` (keyed by media
  type) -> that media type's ``example``; ``headers`` -> Header Objects with a ``schema``
  (Response Object, §4.7.17; Header Object, §4.7.21).
* Schema Object: a string ``discriminator`` -> ``{"propertyName": ...}`` (Discriminator Object,
  §4.7.25); ``x-nullable`` -> ``nullable``; ``type: file`` -> ``type: string, format: binary``.

Shapes the converter cannot read (a ``parameters`` that is not a list, a parameter that is
not an object...) are copied unchanged, so that the OpenAPI importer reports them with the
usual file / operation / field. Mixing ``in: body`` and ``in: formData`` in one operation
(forbidden by Swagger 2.0) keeps the body and drops the form parameters, said in the
operation's :data:`REPAIRS_KEY` list (the importer warns: :mod:`~hyperplan.importers.repair`).
"""

from __future__ import annotations

import copy
from typing import Any

from hyperplan.errors import CatalogError

__all__ = ["REPAIRS_KEY", "is_swagger2", "swagger2_to_openapi3"]

REPAIRS_KEY = "x-hyperplan-repairs"
"""Operation key listing what the conversion repaired (the importer warns about each)."""
FORM_AND_BODY = ("'in: formData' parameters dropped: an operation cannot also have an "
                 "'in: body' one (Swagger 2.0, Parameter Object)")

OPENAPI_VERSION = "3.0.3"
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch")

_REF_PREFIXES = (
    ("#/definitions/", "#/components/schemas/"),
    ("#/parameters/", "#/components/parameters/"),
    ("#/responses/", "#/components/responses/"),
)
# Keys whose object value maps names (not keywords) to sub-objects: every value is walked.
_NAME_MAPS = frozenset({
    "properties", "patternProperties", "definitions", "paths", "parameters", "responses",
    "headers", "securityDefinitions", "dependencies",
})
# Keys holding instance data, never references.
_DATA_KEYS = frozenset({"example", "examples", "default", "enum", "const"})
# Parameter / Items / Header keywords that describe the value: they go into ``schema``.
_SCHEMA_KEYS = (
    "type", "format", "items", "default", "maximum", "exclusiveMaximum", "minimum",
    "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
    "uniqueItems", "enum", "multipleOf",
)
_STYLES = {
    # collectionFormat -> (style, explode), by location; ``None``: no 3.0 equivalent.
    "csv": {"query": ("form", False), "path": ("simple", False), "header": ("simple", False)},
    "ssv": {"query": ("spaceDelimited", False)},
    "pipes": {"query": ("pipeDelimited", False)},
    "multi": {"query": ("form", True)},
}
_FLOWS = {
    "implicit": "implicit",
    "password": "password",
    "application": "clientCredentials",
    "accessCode": "authorizationCode",
}
_JSON = "application/json"
_FORM = "application/x-www-form-urlencoded"
_MULTIPART = "multipart/form-data"


def is_swagger2(doc: Any) -> bool:
    """Whether ``doc`` is a Swagger document (a ``swagger`` key, no ``openapi`` key);
    :func:`swagger2_to_openapi3` then accepts version ``"2.0"`` (or the float an unquoted
    YAML ``2.0`` gives) and rejects any other."""
    return isinstance(doc, dict) and "swagger" in doc and "openapi" not in doc


def swagger2_to_openapi3(doc: dict[str, Any], *, file: str | None = None) -> dict[str, Any]:
    """The OpenAPI 3.0 equivalent of the Swagger 2.0 document ``doc`` (see the module
    docstring); ``file`` only names the document in errors."""
    version = doc.get("swagger")
    if str(version) not in ("2.0", "2"):
        raise CatalogError(
            f"unsupported Swagger version {version!r} (only 2.0 is)", file=file, field="swagger"
        )
    try:
        return _convert(doc, file)
    except RecursionError:
        raise CatalogError("document nested too deeply", file=file, field="swagger") from None


def _convert(doc: dict[str, Any], file: str | None) -> dict[str, Any]:
    src = _rewrite_refs(doc, names=False)
    conv = _Converter(src, file)
    out: dict[str, Any] = {"openapi": OPENAPI_VERSION}
    for key, value in src.items():
        if key in ("swagger", "host", "basePath", "schemes", "consumes", "produces", "paths",
                   "definitions", "parameters", "responses", "securityDefinitions"):
            continue
        out[key] = value  # info, tags, security, externalDocs, x-*: same shape in 3.0
    out.setdefault("info", {"title": "", "version": ""})
    servers = _servers(src.get("host"), src.get("basePath"), src.get("schemes"))
    if servers:
        out["servers"] = servers
    out["paths"] = conv.paths(src.get("paths"))
    components = conv.components()
    if components:
        out["components"] = components
    return out


# --- references ---------------------------------------------------------------------------------

def _rewrite_ref(ref: str) -> str:
    for old, new in _REF_PREFIXES:
        if ref.startswith(old):
            return new + ref[len(old):]
    return ref


def _rewrite_refs(node: Any, *, names: bool) -> Any:
    """A deep copy of ``node`` with every Swagger-local ``$ref`` moved to its 3.0 place."""
    if isinstance(node, list):
        return [_rewrite_refs(v, names=False) for v in node]
    if not isinstance(node, dict):
        return copy.deepcopy(node)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if names:
            out[key] = _rewrite_refs(value, names=False)
        elif key == "$ref" and isinstance(value, str):
            out[key] = _rewrite_ref(value)
        elif isinstance(key, str) and (key in _DATA_KEYS or key.startswith("x-")):
            out[key] = copy.deepcopy(value)
        else:
            out[key] = _rewrite_refs(value, names=key in _NAME_MAPS and isinstance(value, dict))
    return out


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


# --- servers ------------------------------------------------------------------------------------

def _servers(host: Any, base_path: Any, schemes: Any) -> list[dict[str, str]]:
    base = base_path if isinstance(base_path, str) and base_path.strip() else ""
    if base and not base.startswith("/"):
        base = "/" + base
    if not isinstance(host, str) or not host.strip():
        return [{"url": base}] if base else []
    origin = host.strip().rstrip("/")
    if "://" in origin:  # not allowed, but written: the host already names its scheme
        return [{"url": origin + base}]
    names = [s for s in schemes if isinstance(s, str)] if isinstance(schemes, list) else []
    http = [s.lower() for s in names if s.lower() in ("http", "https")]
    chosen = http or [s.lower() for s in names] or ["https"]
    urls = dict.fromkeys(f"{scheme}://{origin}{base}" for scheme in chosen)
    return [{"url": url} for url in urls]


# --- schemas ------------------------------------------------------------------------------------

def _schema(node: Any) -> Any:
    """A Swagger Schema Object as a 3.0 Schema Object (refs already rewritten)."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("properties", "patternProperties") and isinstance(value, dict):
            out[key] = {name: _schema(sub) for name, sub in value.items()}
        elif key in ("allOf", "anyOf", "oneOf") and isinstance(value, list):
            out[key] = [_schema(sub) for sub in value]
        elif key in ("items", "additionalProperties", "not"):
            out[key] = [_schema(v) for v in value] if isinstance(value, list) else _schema(value)
        elif key == "discriminator" and isinstance(value, str):
            out[key] = {"propertyName": value}
        elif key == "x-nullable" and isinstance(value, bool):
            out["nullable"] = value
        else:
            out[key] = value
    if out.get("type") == "file":
        out["type"] = "string"
        out.setdefault("format", "binary")
    return out


def _items(node: Any) -> Any:
    """A Swagger Items Object as a Schema Object (``collectionFormat`` dropped)."""
    if not isinstance(node, dict):
        return node
    out = {k: v for k, v in node.items() if k != "collectionFormat"}
    if "items" in out:
        out["items"] = _items(out["items"])
    return _schema(out)


def _value_schema(param: dict[str, Any]) -> dict[str, Any]:
    """The ``schema`` of a non-body parameter or header: its value keywords."""
    schema: dict[str, Any] = {}
    for key in _SCHEMA_KEYS:
        if key in param:
            schema[key] = _items(param[key]) if key == "items" else param[key]
    if param.get("x-nullable") is True:
        schema["nullable"] = True
    if schema.get("type") == "file":
        schema["type"] = "string"
        schema.setdefault("format", "binary")
    return schema


# --- parameters, bodies, responses ----------------------------------------------------------------

def _media_types(raw: Any, default: list[str]) -> list[str]:
    if isinstance(raw, list):
        found = [m for m in raw if isinstance(m, str) and m.strip()]
        if found:
            return found
    return default


def _json_body(param: dict[str, Any], consumes: list[str]) -> dict[str, Any]:
    """The Request Body Object of an ``in: body`` parameter."""
    schema = _schema(param.get("schema", {}))
    media = [m for m in consumes if "form" not in m.lower()] or [_JSON]
    out: dict[str, Any] = {"content": {m: {"schema": schema} for m in media}}
    for key in ("description", "required"):
        if key in param:
            out[key] = param[key]
    if isinstance(param.get("name"), str):
        out["x-codegen-request-body-name"] = param["name"]
    return out


def _form_body(forms: list[dict[str, Any]], consumes: list[str]) -> dict[str, Any]:
    """The Request Body Object of an operation's ``in: formData`` parameters."""
    props: dict[str, Any] = {}
    required: list[str] = []
    for param in forms:
        name = param.get("name")
        if not isinstance(name, str):
            continue
        prop = _value_schema(param)
        if isinstance(param.get("description"), str):
            prop["description"] = param["description"]
        props[name] = prop
        if param.get("required") is True:
            required.append(name)
    has_file = any(p.get("type") == "file" for p in forms)
    only_multipart = _MULTIPART in consumes and _FORM not in consumes
    media_type = _MULTIPART if has_file or only_multipart else _FORM
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    body: dict[str, Any] = {"content": {media_type: {"schema": schema}}}
    if required:
        body["required"] = True
    return body


class _Converter:
    def __init__(self, src: dict[str, Any], file: str | None) -> None:
        self.src = src
        self.file = file
        self.consumes = _media_types(src.get("consumes"), [_JSON])
        self.produces = _media_types(src.get("produces"), [_JSON])
        self.host = src.get("host")
        self.base_path = src.get("basePath")

    # parameters

    def target(self, param: Any) -> Any:
        """A parameter with a (rewritten) ``#/components/parameters/X`` ref resolved against
        the Swagger ``parameters``; anything else unchanged."""
        if not isinstance(param, dict) or not isinstance(param.get("$ref"), str):
            return param
        ref: str = param["$ref"]
        prefix = "#/components/parameters/"
        table = self.src.get("parameters")
        if not ref.startswith(prefix) or not isinstance(table, dict):
            return param
        found = table.get(_unescape(ref[len(prefix):]))
        return found if isinstance(found, dict) else param

    def is_payload(self, param: Any) -> bool:
        """Whether ``param`` (maybe a ref) is a body or formData parameter."""
        target = self.target(param)
        return isinstance(target, dict) and target.get("in") in ("body", "formData")

    def parameter(self, param: Any) -> Any:
        """A non-body Parameter Object in 3.0 form (refs and odd shapes unchanged)."""
        if not isinstance(param, dict) or "$ref" in param or "schema" in param:
            return param
        out = {k: v for k, v in param.items() if k not in _SCHEMA_KEYS
               and k not in ("collectionFormat", "x-nullable")}
        out["schema"] = _value_schema(param)
        if param.get("type") == "array":  # collectionFormat defaults to csv
            fmt = param.get("collectionFormat", "csv")
            style = _STYLES.get(fmt, {}).get(str(param.get("in"))) if isinstance(fmt, str) else None
            if style is not None:
                out["style"], out["explode"] = style
        return out

    def key(self, param: Any) -> tuple[str, str] | None:
        target = self.target(param)
        if isinstance(target, dict) and isinstance(target.get("name"), str):
            return target["name"], str(target.get("in"))
        return None

    # operations

    def paths(self, raw: Any) -> Any:
        if not isinstance(raw, dict):
            return raw
        out: dict[str, Any] = {}
        for path, item in raw.items():
            out[path] = self.path_item(str(path), item) if not str(path).startswith("x-") else item
        return out

    def path_item(self, path: str, item: Any) -> Any:
        if not isinstance(item, dict):
            return item
        shared = item.get("parameters")
        shared_list = shared if isinstance(shared, list) else []
        payload = [p for p in shared_list if self.is_payload(p)]
        out: dict[str, Any] = {}
        for key, value in item.items():
            if key == "parameters":
                if isinstance(value, list):
                    kept = [self.parameter(p) for p in value if not self.is_payload(p)]
                    if kept:
                        out[key] = kept
                else:
                    out[key] = value
            elif key in HTTP_METHODS and isinstance(value, dict):
                out[key] = self.operation(path, key, value, payload)
            else:
                out[key] = value
        return out

    def operation(
        self, path: str, method: str, op: dict[str, Any], shared_payload: list[Any]
    ) -> dict[str, Any]:
        own = op.get("parameters")
        own_list = own if isinstance(own, list) else []
        own_keys = {self.key(p) for p in own_list}
        payload = [p for p in shared_payload if self.key(p) not in own_keys]
        payload += [p for p in own_list if self.is_payload(p)]
        out: dict[str, Any] = {}
        for key, value in op.items():
            if key in ("consumes", "produces", "schemes"):
                continue
            if key == "parameters" and isinstance(value, list):
                kept = [self.parameter(p) for p in value if not self.is_payload(p)]
                if kept:
                    out[key] = kept
            elif key == "responses" and isinstance(value, dict):
                produces = _media_types(op.get("produces"), self.produces)
                out[key] = {code: self.response(r, produces) for code, r in value.items()}
            else:
                out[key] = value
        consumes = _media_types(op.get("consumes"), self.consumes)
        targets = [self.target(p) for p in payload]
        if any(p.get("in") == "body" for p in targets) and any(
                p.get("in") == "formData" for p in targets):
            targets = [p for p in targets if p.get("in") != "formData"]
            out[REPAIRS_KEY] = [FORM_AND_BODY]
        body = self.request_body(targets, consumes)
        if body is not None:
            out["requestBody"] = body
        if isinstance(op.get("schemes"), list):
            servers = _servers(self.host, self.base_path, op["schemes"])
            if servers:
                out["servers"] = servers
        return out

    def request_body(
        self, payload: list[dict[str, Any]], consumes: list[str]
    ) -> dict[str, Any] | None:
        bodies = [p for p in payload if p.get("in") == "body"]
        forms = [p for p in payload if p.get("in") == "formData"]
        if bodies:
            return _json_body(bodies[-1], consumes)
        return _form_body(forms, consumes) if forms else None

    # responses

    def response(self, raw: Any, produces: list[str]) -> Any:
        if not isinstance(raw, dict) or "$ref" in raw:
            return raw
        out = {k: v for k, v in raw.items() if k not in ("schema", "examples", "headers")}
        out.setdefault("description", "")
        if "schema" in raw:
            schema = _schema(raw["schema"])
            raw_examples = raw.get("examples")
            examples = raw_examples if isinstance(raw_examples, dict) else {}
            content: dict[str, Any] = {}
            for media in produces:
                content[media] = {"schema": schema}
                if media in examples:
                    content[media]["example"] = examples[media]
            out["content"] = content
        if isinstance(raw.get("headers"), dict):
            out["headers"] = {name: self.header(h) for name, h in raw["headers"].items()}
        return out

    def header(self, raw: Any) -> Any:
        if not isinstance(raw, dict) or "$ref" in raw:
            return raw
        out = {k: v for k, v in raw.items() if k not in _SCHEMA_KEYS
               and k not in ("collectionFormat", "x-nullable")}
        out["schema"] = _value_schema(raw)
        return out

    # components

    def components(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        definitions = self.src.get("definitions")
        if isinstance(definitions, dict):
            out["schemas"] = {name: _schema(s) for name, s in definitions.items()}
        params = self.src.get("parameters")
        if isinstance(params, dict):
            kept = {name: self.parameter(p) for name, p in params.items()
                    if not (isinstance(p, dict) and p.get("in") in ("body", "formData"))}
            if kept:
                out["parameters"] = kept
        responses = self.src.get("responses")
        if isinstance(responses, dict):
            out["responses"] = {name: self.response(r, self.produces)
                                for name, r in responses.items()}
        security = self.src.get("securityDefinitions")
        if isinstance(security, dict):
            out["securitySchemes"] = {name: _security_scheme(s) for name, s in security.items()}
        return out


def _security_scheme(raw: Any) -> Any:
    if not isinstance(raw, dict):
        return raw
    kind = raw.get("type")
    rest = {k: v for k, v in raw.items() if k.startswith("x-") or k == "description"}
    if kind == "basic":
        return {"type": "http", "scheme": "basic", **rest}
    if kind == "apiKey":
        return {"type": "apiKey", "name": raw.get("name"), "in": raw.get("in"), **rest}
    if kind == "oauth2":
        flow: dict[str, Any] = {"scopes": raw.get("scopes") or {}}
        for key in ("authorizationUrl", "tokenUrl"):
            if key in raw:
                flow[key] = raw[key]
        name = _FLOWS.get(str(raw.get("flow")), "implicit")
        return {"type": "oauth2", "flows": {name: flow}, **rest}
    return raw
