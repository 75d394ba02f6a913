"""Lenient import (issue 37, item 4): a catalog's non-conforming field is repaired with one
warning naming the file, the tool and the field, the rest of the tool is kept, a tool is
dropped only when nothing usable is left of it, and a catalog is refused only when no tool is.

The fixtures in tests/data/lenient are small hand-made catalogs with the faults real ones have
(OpenAPI exports with ``additionalProperties: "true"``, MCP servers with ``required: "path"``
or a double-encoded input schema, function lists with ``type: "dict"``...)."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hyperplan.catalog import Catalog, CatalogWarning
from hyperplan.embed.hashing import HashingEmbedder
from hyperplan.errors import CatalogError
from hyperplan.graph.build import build_graph
from hyperplan.importers.mcp import load_mcp_tools
from hyperplan.importers.openai_functions import load_openai_functions
from hyperplan.importers.openapi import load_openapi
from hyperplan.importers.repair import summary
from hyperplan.importers.schema_refs import resolve_refs

DATA = Path(__file__).parent / "data" / "lenient"
FIXTURES = [(load_openapi, "openapi_messy.json"), (load_mcp_tools, "mcp_messy.json"),
            (load_openai_functions, "openai_messy.json"), (load_openapi, "swagger2_messy.yaml")]


def load(loader: Any, source: Any) -> tuple[Catalog, list[str]]:
    """The catalog and the CatalogWarning messages its import gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        catalog = loader(source)
    return catalog, [str(w.message) for w in caught if issubclass(w.category, CatalogWarning)]


def props(catalog: Catalog, tool: str) -> dict[str, Any]:
    return dict(catalog.get(tool).input_schema["properties"])


def test_openapi_export_keeps_every_operation_with_one_warning() -> None:
    catalog, said = load(load_openapi, DATA / "openapi_messy.json")
    assert catalog.names() == ["listPatients", "createPatient", "getPatient",
                               "bookAppointment", "cancelAppointment", "listDoctors"]
    assert len(said) == 1 and "openapi_messy.json" in said[0]
    # a field of a shared definition is said once, with the tools that use it
    assert ("#/components/schemas/Patient: field 'additionalProperties': the string 'true' "
            "read as true (in 3 tools") in said[0]
    patient = catalog.get("getPatient").output_schema
    assert patient is not None and patient["additionalProperties"] == {}
    assert patient["properties"]["birth_date"] == {"type": "string"}
    assert patient["properties"]["insurance"] == {}  # a $ref to nowhere: any value
    assert props(catalog, "getPatient")["patient_id"] == {"type": "string"}
    assert props(catalog, "listPatients")["page"] == {"type": "integer", "minimum": 1}
    assert catalog.get("listPatients").metadata["params"]["page"]["in"] == "query"
    book = props(catalog, "bookAppointment")
    assert catalog.get("bookAppointment").required_inputs == ("patient_id",)
    assert book["patient_id"] == {"type": "string"}
    assert book["duration"] == {"type": "integer", "enum": [15, 30], "exclusiveMinimum": 0}
    assert book["notes"] == {"type": "string", "maxLength": 2000}
    assert catalog.get("createPatient").required_inputs == ("name",)
    assert props(catalog, "createPatient")["phone"]["nullable"] is True
    # the parameter without a name is dropped, the operation kept
    assert list(props(catalog, "cancelAppointment")) == ["appointment_id"]


def test_one_bad_field_in_a_forty_operation_spec_is_one_warning() -> None:
    """The issue's real case: ``"additionalProperties": "true"`` refused the whole spec."""
    schema = {"type": "object", "additionalProperties": "true",
              "properties": {"id": {"type": "string"}}}
    paths = {f"/r{i}": {"get": {"operationId": f"op{i}", "responses": {"200": {
        "description": "", "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/Thing"}}}}}}} for i in range(40)}
    doc = {"openapi": "3.0.0", "paths": paths, "components": {"schemas": {"Thing": schema}}}
    catalog, said = load(load_openapi, doc)
    assert len(catalog) == 40 and len(said) == 1
    assert summary(catalog.repairs) == "repaired 1 field in 40 tools (see the warnings above)"
    assert "(in 40 tools: 'op0', 'op1', 'op2', ...)" in said[0]


def test_mcp_server_tools_repaired_and_the_unusable_ones_dropped() -> None:
    catalog, said = load(load_mcp_tools, DATA / "mcp_messy.json")
    assert catalog.names() == ["read_note", "write_note", "search_notes", "list_folders",
                               "tag_note"]
    assert len(said) == 2
    repaired, dropped = said
    assert "tool 'read_note': " in repaired
    assert "field 'inputSchema.required': 'path' read as the list ['path']" in repaired
    assert "dropped 3 tools" in dropped and "duplicate tool name (the first one is kept)" in dropped
    assert "tool 'render_note', field 'inputSchema': input schema must be an object" in dropped
    # the control character is refused (the tool, not the catalog) and never printed raw
    assert "control character '\\x1b'" in dropped and "\x1b" not in dropped
    assert catalog.get("read_note").required_inputs == ("path",)
    assert catalog.get("read_note").metadata["read_only"] is True
    assert catalog.get("read_note").metadata["annotations"]["readOnlyHint"] is True
    assert catalog.get("write_note").required_inputs == ("path", "text")
    assert catalog.get("write_note").metadata["destructive"] is False
    search = catalog.get("search_notes")
    assert search.required_inputs == ("query",)
    assert search.input_schema["properties"]["tags"] == {"type": "array",
                                                         "items": {"type": "string"}}
    assert search.output_schema == {"type": "object", "properties": {
        "paths": {"type": "array"}, "total": {"type": "integer"}}}
    assert catalog.get("list_folders").input_schema == {"type": "object", "properties": {}}
    tag = props(catalog, "tag_note")
    assert tag["tag"] == {} and tag["colour"]["type"] == ["string", "null"]
    assert tag["pinned"] == {"type": "boolean", "enum": [True, False]}
    dropped_tools = [r.tool for r in catalog.repairs if r.dropped]
    assert dropped_tools == ["read_note", "open\x1b[31m_vault", "render_note"]


def test_function_list_repaired() -> None:
    catalog, said = load(load_openai_functions, DATA / "openai_messy.json")
    assert catalog.names() == ["get_weather", "convert_units", "lookup_city"] and len(said) == 1
    weather = catalog.get("get_weather")
    assert weather.required_inputs == ("city", "days")  # "required": true on 'days' hoisted
    assert weather.input_schema["properties"]["unit"]["enum"] == ["celsius"]
    assert weather.output_schema is not None
    assert weather.output_schema["properties"]["temperature"] == {"type": "number"}
    convert = catalog.get("convert_units")
    assert convert.description == "" and convert.input_schema["type"] == "object"
    assert convert.effects == ("units.converted",)
    assert catalog.get("lookup_city").input_schema["anyOf"] == [{"required": ["name"]}]


def test_swagger2_repaired() -> None:
    catalog, said = load(load_openapi, DATA / "swagger2_messy.yaml")
    assert sorted(catalog.names()) == ["listFiles", "uploadFile"] and len(said) == 1
    assert catalog.get("listFiles").required_inputs == ("folder",)  # required: "true"
    assert catalog.get("uploadFile").required_inputs == ("name",)  # required: true, draft 3
    assert "'in: formData' parameters dropped" in said[0]


@pytest.mark.parametrize(("loader", "name"), FIXTURES)
def test_repaired_schemas_are_valid_json_schema_and_build_a_graph(loader: Any, name: str) -> None:
    catalog, _ = load(loader, DATA / name)
    for tool in catalog.tools:
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        if tool.output_schema is not None:
            jsonschema.Draft202012Validator.check_schema(tool.output_schema)
    graph = build_graph(catalog, embedder=HashingEmbedder())
    assert len(graph.tools) == len(catalog)


def test_refused_only_when_nothing_usable_is_left(tmp_path: Path) -> None:
    one = [{"name": "render", "inputSchema": {"type": "string"}}]
    with pytest.raises(CatalogError, match=r"tool 'render', field 'inputSchema': input schema"):
        load_mcp_tools(one)
    two = [*one, {"name": "a\x07b", "inputSchema": {}}]
    with pytest.raises(CatalogError, match=r"no usable tool: all 2 tools were refused"):
        load_mcp_tools(two)
    with pytest.raises(CatalogError, match=r"control character '\\x07'"):
        load_mcp_tools(two[1:])
    catalog, said = load(load_mcp_tools, [*two, {"name": "ok", "inputSchema": {}}])
    assert catalog.names() == ["ok"] and "dropped 2 tools" in said[0]


def test_strict_walk_still_refuses() -> None:
    """Without a repair log (the benchmark and Python importers) nothing changes."""
    with pytest.raises(CatalogError, match="schema must be a JSON object"):
        resolve_refs({"additionalProperties": "true"}, {}, file="f", tool="t", field="x")


def test_graph_build_prints_one_summary_line(tmp_path: Path) -> None:
    out = tmp_path / "g.json"
    code = "from hyperplan.cli import main; main()"
    result = subprocess.run(
        [sys.executable, "-c", code, "graph", "build", f"mcp:{DATA / 'mcp_messy.json'}", "-o",
         str(out), "--embedder", "hashing", "--no-warm"],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "imported 5 tools" in result.stderr
    assert "repaired 16 fields in 5 tools, dropped 3 tools (see the warnings above)" in (
        " ".join(result.stderr.split()))
    assert "repaired" not in result.stdout
    assert json.loads(out.read_text())["format"] == "hyperplan.graph"


# --- any mess: the import never crashes, and what it keeps is valid JSON Schema ---------------

MESS: st.SearchStrategy[Any] = st.sampled_from(
    [1, "str", "true", "False", None, [], "int", "{\"type\": \"integer\"}", {"type": 3},
     {"type": "bool"}, {"type": ["string", "nul"]}, {"$ref": 5}, {"$ref": "#/nope"},
     {"enum": "x"}, {"enum": []}, {"type": "integer", "enum": ["1", 2.5, "x", True]},
     {"required": "a"}, {"required": [1, "a", "a"]}, {"required": True}, {"minimum": "x"},
     {"maxLength": "-3"}, {"nullable": "yes"}, {"uniqueItems": "true"}, {"items": []},
     {"items": [{"type": "string"}, 4]}, {"anyOf": {"type": "string"}}, {"allOf": []},
     {"properties": [{"name": "a"}]}, {"properties": "x"}, {"description": 5},
     {"exclusiveMinimum": True, "minimum": 2}, {"additionalProperties": "true"}])


def messy_schemas() -> st.SearchStrategy[Any]:
    def extend(kids: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        obj = st.builds(lambda p, r: {"type": "object", "properties": p, "required": r},
                        st.dictionaries(st.sampled_from(["a", "b", "id"]), kids, max_size=3),
                        st.sampled_from([["a"], "a", [], ["zz", 3]]))
        array = st.builds(lambda k: {"type": "array", "items": k}, kids)
        either = st.builds(lambda ks: {"anyOf": ks}, st.lists(kids, max_size=3))
        return st.one_of(obj, obj, array, either)

    return st.recursive(MESS, extend, max_leaves=8)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inputs=messy_schemas(), outputs=messy_schemas())
def test_any_mess_loads_to_valid_schemas(inputs: Any, outputs: Any) -> None:
    entry = {"name": "t", "inputSchema": {"type": "object", "properties": {"p": inputs}},
             "outputSchema": outputs}
    catalog, _ = load(load_mcp_tools, [entry])
    (tool,) = catalog.tools
    jsonschema.Draft202012Validator.check_schema(tool.input_schema)
    if tool.output_schema is not None:
        jsonschema.Draft202012Validator.check_schema(tool.output_schema)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(param=messy_schemas(), body=messy_schemas(), shared=messy_schemas(),
       out=messy_schemas())
def test_any_mess_in_an_openapi_document_loads_to_valid_schemas(
    param: Any, body: Any, shared: Any, out: Any
) -> None:
    ref = {"$ref": "#/components/schemas/Shared"}
    op = {"operationId": "op", "parameters": [{"name": "p", "in": "query", "schema": param}],
          "requestBody": {"content": {"application/json": {"schema": {
              "type": "object", "properties": {"b": body, "s": ref}}}}},
          "responses": {"200": {"description": "", "content": {"application/json": {
              "schema": {"anyOf": [out, ref]}}}}}}
    doc = {"openapi": "3.0.3", "paths": {"/x": {"post": op}},
           "components": {"schemas": {"Shared": shared}}}
    catalog, _ = load(load_openapi, doc)
    (tool,) = catalog.tools
    jsonschema.Draft202012Validator.check_schema(tool.input_schema)
    if tool.output_schema is not None:
        jsonschema.Draft202012Validator.check_schema(tool.output_schema)
