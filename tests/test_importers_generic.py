"""Importers for generic formats: OpenAI functions, MCP tools/list, OpenAPI and Python callables."""

from __future__ import annotations

import enum
import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypedDict

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from conftest import shared_path
from hyperplan.catalog import Catalog, CatalogWarning
from hyperplan.errors import CatalogError
from hyperplan.graph.schema_paths import SchemaWarning, input_fields, output_fields
from hyperplan.importers.mcp import load_mcp_tools
from hyperplan.importers.openai_functions import load_openai_functions
from hyperplan.importers.openapi import load_openapi
from hyperplan.importers.python_callables import (
    get_callable,
    load_python_callables,
    load_python_target,
    parse_docstring,
)

OBJ, STR = "object", {"type": "string"}


def write(tmp_path: Path, name: str, data: Any) -> Path:
    path = tmp_path / name
    text = data if isinstance(data, str) else json.dumps(data)
    path.write_text(text, encoding="utf-8")
    return path


def fn(name: str, params: Any = None, **extra: Any) -> dict[str, Any]:
    body = {"name": name, "description": f"{name} tool", **extra}
    body["parameters"] = params or {"type": "object", "properties": {"q": {"type": "string"}}}
    return {"type": "function", "function": body}


# --- OpenAI functions -------------------------------------------------------------------------


def test_openai_wrapped_bare_returns_effects_and_defs(tmp_path: Path) -> None:
    song = {"type": "object", "properties": {"id": {"type": "integer"}}}
    login = fn("login", **{"x-effects": ["spotify.authenticated"]})
    search = fn("search_songs", returns={"type": "array", "items": {"$ref": "#/$defs/Song"},
                                         "$defs": {"Song": song}})
    search["function"]["x-preconditions"] = ["spotify.authenticated"]
    bare = {"name": "bare", "parameters": {"type": "object", "properties": {}}}
    cat = load_openai_functions(write(tmp_path, "f.json", {"tools": [login, search, bare]}))
    assert cat.names() == ["login", "search_songs", "bare"]
    assert cat.get("login").effects == ("spotify.authenticated",)
    tool = cat.get("search_songs")
    assert tool.preconditions == ("spotify.authenticated",)
    assert [f.path for f in output_fields(tool.output_schema)] == ["[].id"]
    assert "$defs" not in json.dumps(tool.output_schema)
    assert load_openai_functions({"functions": [bare]}).names() == ["bare"]
    assert load_openai_functions([bare]).get("bare").description == ""


@pytest.mark.parametrize(
    ("name", "count", "first"),
    [("shopping_tool_schema.json", 15, "search_products"),
     ("travel_tool_schema_en.json", 9, "query_train_info")],
)
def test_openai_reads_deepplanning(name: str, count: int, first: str) -> None:
    cat = load_openai_functions(shared_path("deepplanning", name))
    assert len(cat) == count and cat.names()[0] == first
    assert sum(1 for tool in cat.tools if input_fields(tool.input_schema)) >= count - 2
    for tool in cat.tools:
        assert tool.description and tool.output_schema is None
        assert all(f in tool.input_schema["properties"] for f in tool.required_inputs)


# --- MCP --------------------------------------------------------------------------------------

MCP_TOOLS = [
    {"name": "read_file", "description": "Read a file", "annotations": {"readOnlyHint": True},
     "inputSchema": {"type": "object", "properties": {"path": STR}, "required": ["path"]},
     "outputSchema": {"type": "object", "properties": {"content": STR}}},
    {"name": "delete_file", "inputSchema": {"type": OBJ}, "annotations": {"readOnlyHint": False}},
]


def test_mcp_jsonrpc_result_and_annotations(tmp_path: Path) -> None:
    doc = {"jsonrpc": "2.0", "id": 1, "result": {"tools": MCP_TOOLS}}
    cat = load_mcp_tools(write(tmp_path, "tools.json", doc))
    read, delete = cat.tools
    assert read.required_inputs == ("path",) and read.metadata["read_only"] is True
    assert [f.path for f in output_fields(read.output_schema)] == ["content"]
    assert delete.metadata["destructive"] is True and delete.description == ""
    assert load_mcp_tools(MCP_TOOLS).names() == load_mcp_tools({"tools": MCP_TOOLS}).names()


# --- OpenAPI ----------------------------------------------------------------------------------

def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def body(schema: Any, media: str = "application/json", **extra: Any) -> dict[str, Any]:
    return {"content": {media: {"schema": schema}}, **extra}


PETSTORE: dict[str, Any] = {
    "openapi": "3.0.3",
    "servers": [{"url": "https://pets.example.com/v1"}],
    "security": [{"bearer": []}],
    "paths": {
        "/pets/{petId}": {
            "parameters": [{"$ref": "#/components/parameters/PetId"},
                           {"name": "verbose", "in": "query", "schema": {"type": "string"}}],
            "get": {"summary": "Get a pet",
                    "parameters": [{"name": "verbose", "in": "query",
                                    "schema": {"type": "boolean"}},
                                   {"name": "Authorization", "in": "header"}],
                    "responses": {200: {"$ref": "#/components/responses/PetResponse"}}},
        },
        "/pets": {"post": {"operationId": "createPet",
                           "requestBody": body({"allOf": [ref("NewPet")]}, required=True),
                           "responses": {"201": body(ref("Pet"))}}},
        "/tags": {"put": {"operationId": "setTags",
                          "requestBody": body({"type": "array", "items": {"type": "string"}}),
                          "responses": {"204": {"description": "ok"}}}},
        "/login": {"post": {"operationId": "login", "security": [], "responses": {"200": body(
            {"type": OBJ, "properties": {"access_token": {"type": "string"}}},
            "application/vnd.api+json")}}},
        "/tree": {"get": {"operationId": "getTree", "responses": {"200": body(ref("Node"))}}},
    },
    "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        "parameters": {"PetId": {"name": "petId", "in": "path", "schema": {"type": "integer"}}},
        "responses": {"PetResponse": body(ref("Pet~1Full"), description="a pet")},
        "schemas": {
            "NewPet": {"type": OBJ, "required": ["name"],
                       "properties": {"name": {"type": "string"}, "tag": {"type": "string"}}},
            "Pet": {"allOf": [ref("NewPet"), {"properties": {"id": {"type": "integer"}}}]},
            "Pet/Full": {"type": OBJ, "properties": {
                "owner": {"type": OBJ, "properties": {"email": {"type": "string"}}}}},
            "Node": {"type": OBJ, "properties": {
                "name": {"type": "string"}, "children": {"type": "array", "items": ref("Node")}}},
        },
    },
}


def test_openapi_petstore_yaml(tmp_path: Path) -> None:
    path = write(tmp_path, "petstore.yaml", yaml.safe_dump(PETSTORE, sort_keys=False))
    with pytest.warns(SchemaWarning, match=r"getTree.*recursive reference"):
        cat = load_openapi(path)
    assert cat.names() == ["get_pets_petId", "createPet", "setTags", "login", "getTree"]
    get = cat.get("get_pets_petId")
    assert get.required_inputs == ("petId",)
    assert get.input_schema["properties"]["verbose"]["type"] == "boolean"
    assert "Authorization" not in get.input_schema["properties"]
    assert get.metadata["method"] == "GET" and get.metadata["path"] == "/pets/{petId}"
    assert get.metadata["server"] == "https://pets.example.com/v1"
    assert get.preconditions == ("bearer.authenticated",) and get.description == "Get a pet"
    assert [f.path for f in output_fields(get.output_schema)] == ["owner", "owner.email"]
    create = cat.get("createPet")
    assert create.required_inputs == ("name",) and create.metadata["params"]["tag"]["in"] == "body"
    assert {f.path for f in output_fields(create.output_schema)} == {"name", "tag", "id"}
    assert cat.get("setTags").input_schema["properties"]["body"]["type"] == "array"
    login = cat.get("login")
    assert login.preconditions == () and login.effects == ("bearer.authenticated",)
    tree = cat.get("getTree").output_schema or {}
    assert tree["properties"]["children"]["items"] == {
        "type": "object", "description": "recursive reference to #/components/schemas/Node"}
    with pytest.warns(SchemaWarning):
        assert load_openapi(PETSTORE).names() == cat.names()


# --- Python callables -------------------------------------------------------------------------


Color = enum.Enum("Color", {"RED": "red", "BLUE": "blue"})


class Song(BaseModel):
    id: int
    title: str


class Tree(BaseModel):
    name: str
    children: list[Tree] = []


class Address(TypedDict):
    city: str
    zip: int


@dataclass
class Point:
    x: float
    y: float = 0.0


def search_songs(query: str, limit: int = 10, color: Color | None = None,
                 mode: Literal["fast", "exact"] = "fast") -> list[Song]:
    """Search the song catalog.

    More text that is not the summary.

    Args:
        query: Free text to
            match against titles.
        limit (int): Maximum results.
    """
    return []


def locate(address: Address, point: Point, tags: list[str], extra: dict[str, Any]) -> Point:
    """Locate an address.

    :param address: The postal address.
    :param list[str] tags: Labels.
    :returns: The map point.
    """
    return point


def count(tree: Tree) -> int:
    """Count nodes."""
    return 1


def test_python_callables_schemas_and_docs() -> None:
    with pytest.warns(SchemaWarning, match="recursive"):
        cat = load_python_callables([search_songs, locate, count], source="unit")
    search = cat.get("search_songs")
    assert search.description == "Search the song catalog."
    props = search.input_schema["properties"]
    assert search.required_inputs == ("query",)
    assert props["query"]["description"] == "Free text to match against titles."
    assert props["limit"] == {"type": "integer", "description": "Maximum results.", "default": 10}
    assert props["mode"]["enum"] == ["fast", "exact"]
    assert input_fields(search.input_schema)[2].type == "string"
    assert [f.path for f in output_fields(search.output_schema)] == ["[].id", "[].title"]
    loc = cat.get("locate")
    lprops = loc.input_schema["properties"]
    assert set(lprops["address"]["properties"]) == {"city", "zip"}
    assert lprops["address"]["description"] == "The postal address."
    assert lprops["point"]["required"] == ["x"] and lprops["tags"]["items"] == {"type": "string"}
    assert loc.output_schema is not None and loc.output_schema["description"] == "The map point."
    assert cat.get("count").output_schema == {"type": "integer"}
    assert "$ref" not in json.dumps(cat.get("count").input_schema)
    assert get_callable(cat.get("count")) is count
    assert cat.get("count").metadata == {"module": __name__, "qualname": "count"}


def add_to_cart(book_id: str, access_token: str) -> str:
    """Add a book to the shopping cart; returns the cart id."""
    return "c1"


def find_books(query: str) -> list[str]:
    """Search the catalogue.

    Returns:
        The ids of the matching books.
    """
    return []


def total(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def test_python_callables_bare_returns_are_described() -> None:
    cat = load_python_callables([add_to_cart, find_books, total], source="unit")
    cart = cat.get("add_to_cart")
    assert cart.description == "Add a book to the shopping cart; returns the cart id."
    assert cart.output_schema == {"type": "string", "description": "the cart id"}
    assert [(f.path, f.description) for f in output_fields(cart.output_schema)] == [
        ("result", "the cart id")]
    books = cat.get("find_books").output_schema
    assert [(f.path, f.type, f.description) for f in output_fields(books)] == [
        ("[]", "string", "The ids of the matching books.")]
    assert cat.get("total").output_schema == {"type": "integer"}  # nothing to describe it by
    assert parse_docstring("Return the ids of the matching books.").returns == (
        "the ids of the matching books")
    assert parse_docstring("Show the returns policy of the store.").returns == ""
    assert parse_docstring("Pay, returns the order id. More.").returns == "the order id"


def test_python_target_forms() -> None:
    assert load_python_target("json:dumps").names() == ["dumps"]
    assert "read_json" in load_python_target("hyperplan.importers.common").names()
    with pytest.raises(CatalogError, match="attr"):
        load_python_target("json:no_such_thing")
    with pytest.raises(CatalogError, match="no_such_module"):
        load_python_target("no_such_module:f")
    with pytest.raises(CatalogError, match=r"test_importers_generic.py.*'bad_hint'.*annotations"):
        load_python_callables([bad_hint])


def bad_hint(x: NoSuchType) -> int:  # type: ignore[name-defined]  # noqa: F821
    return 1


# --- bad input --------------------------------------------------------------------------------


def cyclic() -> list[Any]:
    params: dict[str, Any] = {"type": "object", "properties": {}}
    params["properties"]["self"] = params
    return [fn("loop", params)]


def openapi_doc(**ops: Any) -> dict[str, Any]:
    return {"openapi": "3.1.0", "paths": {"/p": ops}, "components": {"schemas": {}}}


ref_op = {"operationId": "getThing", "responses": {"200": body(ref("Missing"))}}
BAD_CASES = [
    (load_openai_functions, "bad.json", "[{", None, None),
    (load_openai_functions, "f.json", [{"description": "x"}], "#0", "name"),
    (load_openai_functions, "f.json", [fn("s", {"type": "string"})], "s", "parameters"),
    (load_mcp_tools, "m.json", [{"name": "n", "inputSchema": STR}], "n", "inputSchema"),
    (load_openapi, "o.json", {"swagger": "2.0", "paths": {}}, None, "no operations under 'paths'"),
    (load_openapi, "o.yaml", "openapi: [unclosed", None, None),
]


@pytest.mark.parametrize(("loader", "fname", "content", "tool", "field"), BAD_CASES)
def test_bad_input_names_file_tool_field(
    tmp_path: Path, loader: Any, fname: str, content: Any, tool: str | None, field: str | None
) -> None:
    with pytest.raises(CatalogError) as info:
        loader(write(tmp_path, fname, content))
    message = str(info.value)
    assert fname in message
    for part in (tool, field):
        assert part is None or part in message


# What used to refuse the whole catalog and is now repaired (or the one tool dropped), with a
# warning naming the file, the tool and the field (lenient import, importers/repair.py).
REPAIRED_CASES = [
    (load_openai_functions, "f.json", [fn("a"), fn("a", {"type": OBJ})], "a", "name", 1),
    (load_openai_functions, "f.json", [fn("r", {"$ref": "#/$defs/X"})], "r", "parameters.$ref", 1),
    (load_openai_functions, "f.json", [fn("x", **{"x-effects": "a"})], "x", "x-effects", 1),
    (load_mcp_tools, "m.json", {"tools": [{"name": "t"}]}, "t", "inputSchema", 1),
    (load_mcp_tools, "m.json", [MCP_TOOLS[1], MCP_TOOLS[1]], "delete_file", "name", 1),
    (load_openapi, "o.json", openapi_doc(get=ref_op), "getThing", "responses.200.$ref", 1),
    (load_openapi, "o.json", openapi_doc(get={"operationId": "a"}, put={"operationId": "a"}),
     "a", "operationId", 1),
    (load_openapi, "o.json", openapi_doc(get={"parameters": [{"in": "query"}]}), "get_p",
     "parameters[0].name", 1),
]


@pytest.mark.parametrize(("loader", "fname", "content", "tool", "field", "count"),
                         REPAIRED_CASES)
def test_repaired_input_warns_naming_file_tool_field(
    tmp_path: Path, loader: Any, fname: str, content: Any, tool: str, field: str, count: int
) -> None:
    with pytest.warns(CatalogWarning) as caught:
        catalog = loader(write(tmp_path, fname, content))
    assert len(catalog) == count
    message = " ".join(str(w.message) for w in caught)
    assert fname in message and repr(tool) in message and repr(field) in message
    assert catalog.repairs and {r.tool for r in catalog.repairs} == {tool}


def test_cyclic_and_deep_parsed_input() -> None:
    with pytest.warns(CatalogWarning, match=r"'loop'.*'parameters.properties.self'.*cyclic"):
        assert load_openai_functions(cyclic()).names() == ["loop"]
    deep: dict[str, Any] = {"type": "object"}
    for _ in range(2000):
        deep = {"type": "object", "properties": {"x": deep}}
    with pytest.warns(CatalogWarning, match=r"'deep'.*deeper than 100 levels: cut here"):
        catalog = load_mcp_tools([{"name": "deep", "inputSchema": deep}])
    assert catalog.names() == ["deep"]


# --- property tests ---------------------------------------------------------------------------

NAMES = st.sampled_from(["a", "b", "id", "token", "$ref", "x~y/z"])
INVALID: st.SearchStrategy[Any] = st.sampled_from(
    [1, "str", None, [], {"type": 3}, {"$ref": 5}, {"enum": "x"}, {"required": "a"},
     {"$ref": "http://x/y"}, {"$ref": "#/nope"}])


def schemas(prefix: str) -> st.SearchStrategy[Any]:
    """JSON Schemas over types/properties/items/required/enum/$ref; about one node in ten
    has an invalid shape."""
    typed = st.builds(lambda t: {"type": t}, st.sampled_from(
        ["string", "integer", "number", "boolean", "null", "object", "array", ["string"]]))
    refs = st.builds(lambda n: {"$ref": prefix + n}, st.sampled_from(["A", "B", "x~0y~1z"]))
    enums = st.builds(lambda v: {"enum": v}, st.lists(st.integers() | st.text(max_size=3)))
    leaf = st.one_of(typed, typed, typed, refs, refs, enums, st.just({}), st.booleans(), INVALID)

    def extend(kids: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        props = st.dictionaries(NAMES, kids, max_size=3)
        required = st.lists(NAMES, max_size=2)
        obj = st.builds(lambda p, r: {"type": OBJ, "properties": p, "required": r}, props, required)
        array = st.builds(lambda k: {"type": "array", "items": k}, kids)
        any_of = st.builds(lambda ks: {"anyOf": ks}, st.lists(kids, max_size=3))
        all_of = st.builds(lambda ks: {"allOf": ks}, st.lists(kids, max_size=2))
        bad = st.builds(lambda k: {"properties": k, "allOf": k}, kids)
        sibling = st.builds(lambda k: {"$ref": prefix + "A", "description": "d", "items": k}, kids)
        return st.one_of(obj, obj, obj, array, array, any_of, all_of, sibling, bad)

    return st.recursive(leaf, extend, max_leaves=10)


def defs(prefix: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"A": schemas(prefix), "B": schemas(prefix)}, optional={"x~y/z": schemas(prefix)}
    )


def check(load: Any, data: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            catalog = load(data)
        except CatalogError:
            return
        assert isinstance(catalog, Catalog)
        for tool in catalog.tools:
            input_fields(tool.input_schema)
            output_fields(tool.output_schema, where=tool.name)


FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(params=schemas("#/$defs/"), returns=schemas("#/$defs/"), d=defs("#/$defs/"))
def test_property_openai(params: Any, returns: Any, d: dict[str, Any]) -> None:
    if isinstance(params, dict):
        params = {**params, "$defs": d}
    if isinstance(returns, dict):
        returns = {**returns, "$defs": d}
    check(load_openai_functions, [fn("f", params, returns=returns)])


@FAST
@given(inp=schemas("#/definitions/"), out=schemas("#/definitions/"), d=defs("#/definitions/"))
def test_property_mcp(inp: Any, out: Any, d: dict[str, Any]) -> None:
    if isinstance(inp, dict):
        inp = {"type": "object", "properties": {"p": inp}, "definitions": d}
    check(load_mcp_tools, {"tools": [{"name": "t", "inputSchema": inp, "outputSchema": out}]})


@FAST
@given(param=schemas("#/components/schemas/"), req=schemas("#/components/schemas/"),
       out=schemas("#/components/schemas/"), d=defs("#/components/schemas/"))
def test_property_openapi(param: Any, req: Any, out: Any, d: dict[str, Any]) -> None:
    op = {"parameters": [{"name": "id", "in": "path", "schema": param}],
          "requestBody": body(req), "responses": {"200": body(out)}}
    doc = {"openapi": "3.1.0", "paths": {"/x/{id}": {"post": op}}, "components": {"schemas": d}}
    check(load_openapi, doc)
