"""OpenAPI importer against the shapes real documents have (found by sweeping the APIs.guru
directory), and Swagger 2.0 support.

Every document here is hand-written and reduced to the shape that broke; none is copied
from a real API.
"""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from hyperplan.catalog import CatalogWarning
from hyperplan.embed.hashing import HashingEmbedder
from hyperplan.errors import CatalogError
from hyperplan.graph.build import build_graph
from hyperplan.graph.schema_paths import SchemaWarning, output_fields
from hyperplan.importers.openapi import load_openapi
from hyperplan.importers.schema_refs import MAX_NODES, MAX_REF_DEPTH
from hyperplan.importers.swagger2 import swagger2_to_openapi3

CASES = Path(__file__).parent / "data" / "openapi_cases"
OBJ = "object"


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def json_content(schema: Any, media: str = "application/json") -> dict[str, Any]:
    return {"content": {media: {"schema": schema}}}


def oas(paths: dict[str, Any], schemas: dict[str, Any] | None = None,
        **extra: Any) -> dict[str, Any]:
    return {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": paths,
            "components": {"schemas": schemas or {}}, **extra}


def count_nodes(node: Any) -> int:
    if isinstance(node, dict):
        return 1 + sum(count_nodes(v) for v in node.values())
    if isinstance(node, list):
        return sum(count_nodes(v) for v in node)
    return 0


# --- names ------------------------------------------------------------------------------------

def test_blank_operation_id_falls_back_to_method_and_path() -> None:
    doc = oas({"/reports": {"get": {"operationId": "", "responses": {}}},
               "/items": {"get": {"operationId": "  ", "responses": {}}}})
    assert load_openapi(doc).names() == ["get_reports", "get_items"]


def test_non_string_operation_id_names_operation_and_field() -> None:
    doc = oas({"/r": {"get": {"operationId": ["x"]}}})
    with pytest.warns(CatalogWarning, match=r"tool 'get_r': field 'operationId'"):
        assert load_openapi(doc).names() == ["get_r"]


def test_generated_names_that_collide_get_a_suffix() -> None:
    # "/users" and "/users/~" both normalise to get_users; an explicit operationId keeps its
    # name even when a path listed earlier normalises to it
    doc = oas({
        "/users": {"get": {}},
        "/users/~": {"get": {}},
        "/aliases/trackingId": {"get": {}},
        "/aliases/{trackingId}": {"get": {"parameters": [
            {"name": "trackingId", "in": "path", "required": True, "schema": {"type": "string"}}]}},
        "/items": {"get": {}},
        "/things": {"get": {"operationId": "get_items"}},
    })
    cat = load_openapi(doc)
    assert cat.names() == ["get_users", "get_users_2", "get_aliases_trackingId",
                           "get_aliases_trackingId_2", "get_items_2", "get_items"]
    assert cat.get("get_aliases_trackingId_2").required_inputs == ("trackingId",)
    assert cat.get("get_items").metadata["path"] == "/things"


def test_repeated_operation_id_keeps_the_first_with_a_warning() -> None:
    doc = oas({"/a": {"get": {"operationId": "x"}}, "/b": {"get": {"operationId": "x"}}})
    with pytest.warns(CatalogWarning, match=r"dropped 1 tool.*tool 'x', field 'operationId': "
                                            "duplicate"):
        catalog = load_openapi(doc)
    assert catalog.names() == ["x"] and catalog.get("x").metadata["path"] == "/a"


def test_no_operations_is_an_error_naming_paths(tmp_path: Path) -> None:
    path = tmp_path / "hooks.yaml"
    path.write_text("openapi: 3.1.0\ninfo: {title: t, version: '1'}\n"
                    "webhooks:\n  ping: {post: {responses: {'200': {description: ok}}}}\n")
    with pytest.raises(CatalogError, match=r"hooks.yaml, field 'paths': no operations.*webhooks"):
        load_openapi(path)


# --- schemas ----------------------------------------------------------------------------------

def test_recursive_cuts_give_one_warning_per_document() -> None:
    tree = {"type": OBJ, "properties": {"name": {"type": "string"},
                                        "children": {"type": "array", "items": ref("Node")}}}
    paths = {f"/t{i}": {"get": {"operationId": f"tree{i}", "responses": {"200": json_content(
        ref("Node"))}}} for i in range(30)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cat = load_openapi(oas(paths, {"Node": tree}))
    assert len(cat) == 30
    messages = [str(w.message) for w in caught if issubclass(w.category, SchemaWarning)]
    assert len(messages) == 1
    assert "<openapi>: 30 schema reference(s) cut in 30 tool(s)" in messages[0]
    assert "tool 'tree0', field 'responses.200.properties.children.items'" in messages[0]
    assert "recursive reference #/components/schemas/Node cut; and 29 more" in messages[0]


def test_schema_met_again_through_a_deeper_pointer_is_recursion_not_a_cycle() -> None:
    # Server.ipConfiguration -> Pool -> "#/.../Server/properties/ipConfiguration": the same
    # object again, under another pointer (converters write such pointers); used to be
    # reported as a cyclic Python object
    schemas = {
        "Server": {"type": OBJ, "properties": {"ipConfiguration": {"type": OBJ, "properties": {
            "pools": {"type": "array", "items": ref("Pool")}}}}},
        "Pool": {"type": OBJ, "properties": {"configs": {"type": "array", "items": ref(
            "Server/properties/ipConfiguration")}}},
    }
    doc = oas({"/s": {"get": {"operationId": "getServer", "responses": {"200": json_content(
        ref("Server"))}}}}, schemas)
    with pytest.warns(SchemaWarning, match=r"recursive reference #/components/schemas/Pool cut"):
        cat = load_openapi(doc)
    paths = [f.path for f in output_fields(cat.get("getServer").output_schema)]
    pools = "ipConfiguration.pools"
    assert paths[:4] == ["ipConfiguration", pools, f"{pools}[].configs",
                         f"{pools}[].configs[].pools"]


def test_long_chain_of_distinct_refs_is_cut_not_an_error() -> None:
    # T0 -> T1 -> ... -> T99, each reference under properties.properties (as in large cloud
    # APIs whose types only recur after dozens of levels): used to exceed the nesting limit
    schemas = {f"T{i}": {"type": OBJ, "properties": {"properties": {"type": OBJ, "properties": {
        "next": ref(f"T{i + 1}")}}}} for i in range(100)}
    schemas["T100"] = {"type": "string"}
    doc = oas({"/x": {"get": {"operationId": "deep", "responses": {"200": json_content(
        ref("T0"))}}}}, schemas)
    with pytest.warns(SchemaWarning, match=rf"not inlined: schema nested deeper than "
                                           rf"{MAX_REF_DEPTH} levels"):
        cat = load_openapi(doc)
    node = cat.get("deep").output_schema
    levels = 0
    while isinstance(node, dict) and "properties" in node:
        node = node["properties"]["properties"]["properties"]["next"]
        levels += 1
    assert 10 < levels < 100 and isinstance(node, dict)
    assert node["description"] == f"reference to #/components/schemas/T{levels} (not inlined)"


def test_densely_connected_schemas_stay_small() -> None:
    # 14 types whose fields each may hold any other type ("expandable" ids): the number of
    # distinct non-recursive expansions is astronomical, so the node budget must stop them
    names = [f"R{i}" for i in range(14)]
    schemas = {n: {"type": OBJ, "properties": {
        f"f{j}": {"anyOf": [{"type": "string"}, ref(m)]} for j, m in enumerate(names)}}
        for n in names}
    paths = {f"/{n}": {"post": {"operationId": f"make{n}", "requestBody": json_content(ref(n)),
                                "responses": {"200": json_content(ref(n))}}} for n in names}
    with pytest.warns(SchemaWarning, match="cut in 14 tool"):
        cat = load_openapi(oas(paths, schemas))
    for tool in cat.tools:
        assert count_nodes(tool.output_schema) < 3 * MAX_NODES
        assert sorted(tool.input_schema["properties"]) == sorted(f"f{j}" for j in range(14))


def test_discriminator_mapping_is_dropped_from_inlined_copies() -> None:
    base = {"type": OBJ, "properties": {"kind": {"type": "string"}},
            "discriminator": {"propertyName": "kind",
                              "mapping": {"cat": "#/components/schemas/Cat"}}}
    cat_schema = {"allOf": [ref("Base"), {"properties": {"meows": {"type": "boolean"}}}]}
    doc = oas({"/c": {"get": {"operationId": "getCat", "responses": {"200": json_content(
        ref("Cat"))}}}}, {"Base": base, "Cat": cat_schema})
    out = load_openapi(doc).get("getCat").output_schema or {}
    assert out["allOf"][0]["discriminator"] == {"propertyName": "kind"}
    assert {f.path for f in output_fields(out)} == {"kind", "meows"}


def test_wildcard_response_media_type_gives_the_output() -> None:
    doc = oas({"/a": {"get": {"operationId": "a", "responses": {"200": json_content(
        {"type": OBJ, "properties": {"id": {"type": "integer"}}}, "*/*")}}},
               "/b": {"get": {"operationId": "b", "responses": {"200": {"content": {
                   "application/xml": {"schema": {"type": "string"}},
                   "*/*": {"schema": {"type": OBJ, "properties": {"x": {"type": "string"}}}},
                   "application/json": {"schema": {"type": OBJ, "properties": {
                       "y": {"type": "string"}}}}}}}}},
               "/c": {"get": {"operationId": "c", "responses": {"200": json_content(
                   {"type": "string"}, "text/xml")}}}})
    cat = load_openapi(doc)
    assert [f.path for f in output_fields(cat.get("a").output_schema)] == ["id"]
    assert [f.path for f in output_fields(cat.get("b").output_schema)] == ["y"]
    assert cat.get("c").output_schema is None


def test_server_variables_take_their_defaults() -> None:
    servers = [{"url": "https://{region}.api.example.com:{port}/{version}/{unknown}",
                "variables": {"region": {"default": "eu", "enum": ["eu", "us"]},
                              "port": {"default": "8443"}, "version": {"default": "v2"}}}]
    doc = oas({"/a": {"get": {"operationId": "a"}},
               "/b": {"servers": [{"url": "/relative"}], "get": {"operationId": "b"}}},
              servers=servers)
    cat = load_openapi(doc)
    assert cat.get("a").metadata["server"] == "https://eu.api.example.com:8443/v2/{unknown}"
    assert cat.get("b").metadata["server"] == "/relative"


# --- Swagger 2.0 ------------------------------------------------------------------------------

PET = "#/definitions/Pet"
SWAGGER: dict[str, Any] = {
    "swagger": "2.0",
    "info": {"title": "Tiny pets", "version": "1.0"},
    "host": "pets.example.com",
    "basePath": "/v1",
    "schemes": ["https", "http"],
    "consumes": ["application/json"],
    "produces": ["application/json", "application/xml"],
    "x-audience": "internal",
    "security": [{"key": []}],
    "paths": {
        "/pets": {
            "get": {
                "operationId": "listPets",
                "summary": "List pets",
                "parameters": [
                    {"$ref": "#/parameters/Limit"},
                    {"name": "tags", "in": "query", "type": "array", "items": {
                        "type": "string", "enum": ["cat", "dog"]}, "collectionFormat": "multi"},
                    {"name": "X-Trace", "in": "header", "type": "string", "x-nullable": True},
                ],
                "responses": {
                    "200": {"description": "pets", "schema": {
                        "type": "array", "items": {"$ref": PET}}, "examples": {
                        "application/json": [{"id": 1, "name": "Rex"}]}},
                    "default": {"$ref": "#/responses/Error"},
                },
            },
            "post": {
                "operationId": "createPet",
                "parameters": [{"name": "pet", "in": "body", "required": True,
                                "description": "the new pet",
                                "schema": {"$ref": "#/definitions/NewPet"}}],
                "responses": {"201": {"description": "created", "schema": {"$ref": PET}}},
                "x-rate-limit": 5,
            },
        },
        "/pets/{petId}": {
            "parameters": [{"$ref": "#/parameters/PetId"}],
            "get": {"operationId": "showPet",
                    "responses": {"200": {"description": "a pet", "schema": {"$ref": PET}},
                                  "404": {"$ref": "#/responses/Error"}}},
            "put": {"operationId": "updatePet",
                    "parameters": [{"$ref": "#/parameters/PetBody"}],
                    "responses": {"200": {"description": "ok", "schema": {"$ref": PET}}}},
            "delete": {"schemes": ["http"], "responses": {"204": {"description": "gone"}}},
        },
        "/pets/{petId}/photo": {
            "parameters": [{"$ref": "#/parameters/PetId"},
                           {"name": "caption", "in": "formData", "type": "string"}],
            "post": {
                "operationId": "uploadPhoto",
                "consumes": ["multipart/form-data"],
                "produces": ["text/plain"],
                "parameters": [{"name": "photo", "in": "formData", "type": "file",
                                "required": True, "description": "the image"}],
                "responses": {"200": {"description": "stored", "schema": {"type": "string"}}},
            },
        },
        "/login": {
            "post": {
                "operationId": "login",
                "security": [],
                "consumes": ["application/x-www-form-urlencoded"],
                "parameters": [
                    {"name": "user", "in": "formData", "type": "string", "required": True},
                    {"name": "password", "in": "formData", "type": "string", "format": "password",
                     "required": True},
                    {"name": "remember", "in": "formData", "type": "boolean", "default": False},
                ],
                "responses": {"200": {"description": "session", "schema": {
                    "type": "object", "properties": {"access_token": {"type": "string"}}}}},
            },
        },
    },
    "definitions": {
        "NewPet": {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string"}, "tag": {"type": "string", "x-nullable": True}}},
        "Pet": {"allOf": [{"$ref": "#/definitions/NewPet"}, {
            "type": "object", "required": ["id"], "discriminator": "kind", "properties": {
                "id": {"type": "integer", "format": "int64"}, "kind": {"type": "string"},
                "photo": {"type": "file"},
                "example": {"$ref": "#/definitions/NewPet"}}}]},
        "Error": {"type": "object", "properties": {"message": {"type": "string"}}},
    },
    "parameters": {
        "PetId": {"name": "petId", "in": "path", "required": True, "type": "integer",
                  "format": "int64", "minimum": 1},
        "Limit": {"name": "limit", "in": "query", "type": "integer", "maximum": 100,
                  "default": 20, "description": "page size"},
        "PetBody": {"name": "body", "in": "body", "required": True, "schema": {"$ref": PET}},
    },
    "responses": {"Error": {"description": "an error", "schema": {
        "$ref": "#/definitions/Error"}}},
    "securityDefinitions": {
        "key": {"type": "apiKey", "name": "X-Key", "in": "header"},
        "basic": {"type": "basic", "description": "user and password"},
        "oauth": {"type": "oauth2", "flow": "accessCode",
                  "authorizationUrl": "https://pets.example.com/auth",
                  "tokenUrl": "https://pets.example.com/token", "scopes": {"read": "read"}},
    },
}


def test_swagger2_conversion_field_by_field() -> None:
    original = copy.deepcopy(SWAGGER)
    out = swagger2_to_openapi3(SWAGGER)
    assert original == SWAGGER  # pure: the input is left alone
    assert out["openapi"] == "3.0.3" and out["info"] == SWAGGER["info"]
    assert out["x-audience"] == "internal" and out["security"] == [{"key": []}]
    assert out["servers"] == [{"url": "https://pets.example.com/v1"},
                              {"url": "http://pets.example.com/v1"}]
    comp = out["components"]
    assert set(comp) == {"schemas", "parameters", "responses", "securitySchemes"}
    assert comp["schemas"]["Pet"]["allOf"][0] == {"$ref": "#/components/schemas/NewPet"}
    pet_own = comp["schemas"]["Pet"]["allOf"][1]
    assert pet_own["discriminator"] == {"propertyName": "kind"}
    assert pet_own["properties"]["photo"] == {"type": "string", "format": "binary"}
    # a property called "example" is a schema, not example data: its $ref is rewritten
    assert pet_own["properties"]["example"] == {"$ref": "#/components/schemas/NewPet"}
    assert comp["schemas"]["NewPet"]["properties"]["tag"] == {"type": "string", "nullable": True}
    assert comp["parameters"] == {  # the body parameter is inlined where used, not a component
        "PetId": {"name": "petId", "in": "path", "required": True,
                  "schema": {"type": "integer", "format": "int64", "minimum": 1}},
        "Limit": {"name": "limit", "in": "query", "description": "page size",
                  "schema": {"type": "integer", "maximum": 100, "default": 20}},
    }
    assert comp["responses"]["Error"] == {"description": "an error", "content": {
        m: {"schema": {"$ref": "#/components/schemas/Error"}}
        for m in ("application/json", "application/xml")}}
    assert comp["securitySchemes"] == {
        "key": {"type": "apiKey", "name": "X-Key", "in": "header"},
        "basic": {"type": "http", "scheme": "basic", "description": "user and password"},
        "oauth": {"type": "oauth2", "flows": {"authorizationCode": {
            "scopes": {"read": "read"}, "authorizationUrl": "https://pets.example.com/auth",
            "tokenUrl": "https://pets.example.com/token"}}},
    }

    pets = out["paths"]["/pets"]
    listing = pets["get"]
    assert listing["parameters"] == [
        {"$ref": "#/components/parameters/Limit"},
        {"name": "tags", "in": "query", "style": "form", "explode": True, "schema": {
            "type": "array", "items": {"type": "string", "enum": ["cat", "dog"]}}},
        {"name": "X-Trace", "in": "header", "schema": {"type": "string", "nullable": True}},
    ]
    ok = listing["responses"]["200"]
    assert set(ok["content"]) == {"application/json", "application/xml"}
    assert ok["content"]["application/json"] == {
        "schema": {"type": "array", "items": {"$ref": "#/components/schemas/Pet"}},
        "example": [{"id": 1, "name": "Rex"}]}
    assert listing["responses"]["default"] == {"$ref": "#/components/responses/Error"}
    create = pets["post"]
    assert "parameters" not in create and create["x-rate-limit"] == 5
    assert create["requestBody"] == {
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewPet"}}},
        "description": "the new pet", "required": True, "x-codegen-request-body-name": "pet"}

    one = out["paths"]["/pets/{petId}"]
    assert one["parameters"] == [{"$ref": "#/components/parameters/PetId"}]
    assert one["put"]["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Pet"}
    assert one["get"]["responses"]["404"] == {"$ref": "#/components/responses/Error"}
    assert one["delete"]["servers"] == [{"url": "http://pets.example.com/v1"}]

    photo = out["paths"]["/pets/{petId}/photo"]
    assert photo["parameters"] == [{"$ref": "#/components/parameters/PetId"}]  # formData moved
    assert photo["post"]["requestBody"] == {"required": True, "content": {"multipart/form-data": {
        "schema": {"type": "object", "required": ["photo"], "properties": {
            "caption": {"type": "string"},
            "photo": {"type": "string", "format": "binary", "description": "the image"}}}}}}
    assert list(photo["post"]["responses"]["200"]["content"]) == ["text/plain"]
    login = out["paths"]["/login"]["post"]["requestBody"]
    assert list(login["content"]) == ["application/x-www-form-urlencoded"]
    assert login["content"]["application/x-www-form-urlencoded"]["schema"]["required"] == [
        "user", "password"]


def test_swagger2_imports_to_the_expected_tools() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing recursive here: no warning at all
        cat = load_openapi(SWAGGER)
    assert cat.names() == ["listPets", "createPet", "showPet", "updatePet", "delete_pets_petId",
                           "uploadPhoto", "login"]
    listing = cat.get("listPets")
    assert listing.input_schema == {"type": OBJ, "properties": {
        "limit": {"type": "integer", "maximum": 100, "default": 20, "description": "page size"},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["cat", "dog"]}},
        "X-Trace": {"type": "string", "nullable": True}}}
    assert listing.metadata["params"] == {"limit": {"in": "query", "name": "limit"},
                                          "tags": {"in": "query", "name": "tags"},
                                          "X-Trace": {"in": "header", "name": "X-Trace"}}
    assert listing.metadata["server"] == "https://pets.example.com/v1"
    assert listing.metadata["method"] == "GET" and listing.description == "List pets"
    assert listing.preconditions == ("key.authenticated",)
    assert {f.path for f in output_fields(listing.output_schema)} == {
        "[].name", "[].tag", "[].id", "[].kind", "[].photo", "[].example", "[].example.name",
        "[].example.tag"}

    create = cat.get("createPet")
    assert create.required_inputs == ("name",)
    assert create.metadata["params"] == {"name": {"in": "body", "name": "name"},
                                         "tag": {"in": "body", "name": "tag"}}
    assert {f.path for f in output_fields(create.output_schema)} >= {"id", "name", "kind"}

    show = cat.get("showPet")
    assert show.input_schema["properties"] == {
        "petId": {"type": "integer", "format": "int64", "minimum": 1}}
    assert show.required_inputs == ("petId",)
    update = cat.get("updatePet")  # body given by a #/parameters/ reference
    assert update.required_inputs == ("petId", "name", "id")
    assert update.metadata["params"]["petId"] == {"in": "path", "name": "petId"}
    assert update.metadata["params"]["kind"] == {"in": "body", "name": "kind"}
    delete = cat.get("delete_pets_petId")
    assert delete.metadata["server"] == "http://pets.example.com/v1"
    assert delete.output_schema is None and delete.required_inputs == ("petId",)

    upload = cat.get("uploadPhoto")  # path-level formData + operation formData
    assert upload.input_schema["properties"]["photo"] == {
        "type": "string", "format": "binary", "description": "the image"}
    assert upload.required_inputs == ("petId", "photo")
    assert upload.metadata["params"]["caption"] == {"in": "body", "name": "caption"}
    assert upload.output_schema is None  # text/plain only

    login = cat.get("login")
    assert login.required_inputs == ("user", "password")
    assert login.input_schema["properties"]["remember"] == {"type": "boolean", "default": False}
    assert login.preconditions == () and set(login.effects) == {
        "key.authenticated", "basic.authenticated", "oauth.authenticated"}
    graph = build_graph(cat, embedder=HashingEmbedder())
    assert len(graph.tools) == 7


def test_swagger2_yaml_file_with_unquoted_version() -> None:
    cat = load_openapi(CASES / "swagger2_unquoted_version.yaml")
    notes = cat.get("listNotes")
    assert notes.metadata["server"] == "https://notes.example.org/api"  # no schemes: https
    assert notes.input_schema["properties"] == {
        "tag": {"type": "array", "items": {"type": "string"}}}
    assert {f.path: f.type for f in output_fields(notes.output_schema)} == {
        "[].id": "integer", "[].text": "string"}


@pytest.mark.parametrize(("doc", "field", "message"), [
    ({"swagger": "1.2", "paths": {}}, "swagger", "unsupported Swagger version '1.2'"),
    ({"swagger": "2.0", "paths": {}}, "paths", "no operations under 'paths' in this swagger 2.0"),
])
def test_swagger2_errors_name_file_operation_and_field(
    tmp_path: Path, doc: dict[str, Any], field: str, message: str
) -> None:
    path = tmp_path / "s2.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(CatalogError) as info:
        load_openapi(path)
    text = str(info.value)
    assert str(path) in text and f"field '{field}'" in text and message in text


@pytest.mark.parametrize(("doc", "field", "message"), [
    ({"swagger": "2.0", "paths": {"/f": {"post": {"operationId": "both", "parameters": [
        {"name": "b", "in": "body", "schema": {}},
        {"name": "f", "in": "formData", "type": "string"}]}}}}, "parameters",
     "'in: formData' parameters dropped"),
    ({"swagger": "2.0", "paths": {"/f": {"get": {"operationId": "odd", "parameters": [
        {"name": "q", "in": "query", "type": "string"}, 7]}}}}, "parameters[1]",
     "expected a JSON object: parameter dropped"),
    ({"swagger": "2.0", "paths": {"/f": {"get": {"operationId": "lost", "responses": {
        "200": {"description": "", "schema": {"$ref": "#/definitions/Missing"}}}}}}},
     "responses.200.$ref", "unresolvable $ref '#/components/schemas/Missing': dropped"),
])
def test_swagger2_repairs_name_file_operation_and_field(
    tmp_path: Path, doc: dict[str, Any], field: str, message: str
) -> None:
    path = tmp_path / "s2.json"
    path.write_text(json.dumps(doc))
    with pytest.warns(CatalogWarning) as caught:
        catalog = load_openapi(path)
    text = str(caught[0].message)
    assert str(path) in text and f"field '{field}'" in text and message in text
    (op,) = doc["paths"]["/f"].values()
    assert catalog.names() == [op["operationId"]] and f"tool '{op['operationId']}'" in text


def test_swagger2_servers_from_host_base_path_and_schemes() -> None:
    def server(**top: Any) -> Any:
        doc = {"swagger": "2.0", "paths": {"/p": {"get": {"operationId": "p"}}}, **top}
        return load_openapi(doc).get("p").metadata["server"]

    assert server(host="h.example", basePath="v2", schemes=["wss", "http"]) == "http://h.example/v2"
    assert server(host="h.example", schemes=["wss"]) == "wss://h.example"
    assert server(host="http://h.example/", basePath="/b") == "http://h.example/b"
    assert server(basePath="/relative") == "/relative"
    assert server() is None


def test_swagger2_too_deep_is_a_clean_error() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(5000):
        deep = {"type": "object", "properties": {"x": deep}}
    doc = {"swagger": "2.0", "paths": {}, "definitions": {"Deep": deep}}
    with pytest.raises(CatalogError, match="nested too deeply"):
        load_openapi(doc)


# --- the resource a response describes ---------------------------------------------------------

def test_root_ids_are_qualified_by_the_path_resource() -> None:
    from hyperplan.importers.openapi import path_entity

    assert path_entity("/repos/{owner}/{repo}/pulls/{pull_number}") == "pulls"
    assert path_entity("/gists") == "gists" and path_entity("/") == ""
    item = {"type": OBJ, "properties": {"id": {"type": "string"}, "number": {"type": "integer"}}}
    path_param = [{"name": "gist_id", "in": "path", "required": True,
                   "schema": {"type": "string"}}]
    doc = oas({
        "/gists": {"get": {"operationId": "gists/list", "responses": {
            "200": json_content({"type": "array", "items": item})}}},
        "/gists/{gist_id}/comments": {"post": {
            "operationId": "gists/create-comment", "parameters": path_param,
            "responses": {"201": json_content(item)}}},
    })
    cat = load_openapi(doc)
    assert cat.get("gists/list").metadata["entity"] == "gists"
    graph = build_graph(cat, embedder=None)
    links = {(graph.node_name(int(s)), graph.node_name(int(t)))
             for s, t in zip(graph.link_source, graph.link_target, strict=True)}
    # the list's items are gists, so their root id is the gist id (the tool name,
    # "gists/list", would have made it a "list id")
    assert ("gists/list:out:[].id", "gists/create-comment:in:gist_id") in links
