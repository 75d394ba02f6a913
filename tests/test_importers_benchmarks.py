"""Benchmark importers (AppWorld, NESTFUL, NesTools, StableToolBench) on the real data under
../shared/data and on small hand-made files."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import shared_path
from hyperplan.catalog import Catalog
from hyperplan.errors import CatalogError
from hyperplan.graph.schema_paths import input_fields, output_fields
from hyperplan.importers.common import read_json
from hyperplan_bench.importers.appworld import load_appworld, load_appworld_tasks
from hyperplan_bench.importers.gold import GoldFlow, GoldTask, resolve_output_path
from hyperplan_bench.importers.nestful import load_nestful, load_nestful_tasks, references
from hyperplan_bench.importers.nestools import load_nestools, load_nestools_tasks
from hyperplan_bench.importers.stabletoolbench import (
    load_stabletoolbench,
    load_stabletoolbench_queries,
    parse_truncated_json,
)

# stem: folder, spec entries, tools, tasks, flows, flows whose field is not in the producer's
# outputs, flows whose argument is not in the consumer's inputs (both are errors in the data)
NESTFUL = {
    "executable": ("executable", 39, 39, 85, 154, 19, 12),
    "non-executable-glaive": ("non-executable", 70, 64, 169, 184, 6, 8),
    "non-executable-sgd": ("non-executable", 30, 30, 46, 90, 0, 0),
}


def _paths(catalog: Catalog, tool: str) -> list[str]:
    return [f.path for f in output_fields(catalog.get(tool).output_schema)]


def _mismatches(catalog: Catalog, tasks: list[GoldTask]) -> tuple[int, int]:
    """Checks every flow's ends, and counts flows with an unknown output path or parameter."""
    outputs = params = 0
    for task in tasks:
        for flow in task.flows:
            assert flow.producer in task.tools and flow.consumer in task.tools
            outputs += flow.output_path not in ["", *_paths(catalog, flow.producer)]
            params += flow.input_param not in catalog.get(flow.consumer).input_schema["properties"]
    return outputs, params


# --- real data -------------------------------------------------------------------------------


def test_appworld_catalog() -> None:
    catalog = load_appworld(shared_path("appworld", "api_docs"))
    assert len(catalog) == 457
    assert sum(n.startswith("spotify.") for n in catalog.names()) == 91
    login = catalog.get("spotify.login")
    assert login.required_inputs == ("username", "password")
    assert "access_token" in _paths(catalog, "spotify.login")
    assert login.metadata == dict(
        app="spotify", api_name="login", method="POST", path="/spotify/auth/token"
    )
    status = catalog.get("supervisor.complete_task").input_schema["properties"]["status"]
    assert status["enum"] == ["success", "fail"] and status["default"] == "success"
    emails = catalog.get("gmail.send_email").input_schema["properties"]["email_addresses"]
    assert emails["items"] == {"type": "string"}
    assert _paths(catalog, "file_system.show_directory") == ["[]"]
    tasks = load_appworld_tasks(shared_path("appworld", "tasks_train.jsonl"))
    assert len(tasks) == 90
    assert all(api in catalog.names() for task in tasks for api in task.gold_apis)


@pytest.mark.parametrize("stem", sorted(NESTFUL))
def test_nestful_specs_and_gold(stem: str) -> None:
    folder, entries, tools, task_count, flow_count, bad_outputs, bad_params = NESTFUL[stem]
    spec = shared_path("nestful", "data", folder, f"{stem}-spec.json")
    catalog = load_nestful(spec)
    assert len(read_json(spec)) == entries
    assert len(catalog) == tools
    tasks = load_nestful_tasks(spec.with_name(f"{stem}-data.json"))
    assert len(tasks) == task_count
    assert sum(len(t.flows) for t in tasks) == flow_count
    assert all(set(t.tools) <= set(catalog.names()) for t in tasks)
    assert "var_result" not in {tool for t in tasks for tool in t.tools}
    assert _mismatches(catalog, tasks) == (bad_outputs, bad_params)


def test_nestful_references_resolve_to_output_paths() -> None:
    spec = shared_path("nestful", "data", "executable", "executable-spec.json")
    tasks = {t.id: t for t in load_nestful_tasks(spec.with_name("executable-data.json"))}
    assert tasks["executable/0"].flows[0] == GoldFlow(
        "SkyScrapperSearchAirport", "skyId", "SkyScrapperFlightSearch", "originSkyId"
    )
    # "$var1.author[0].id$" and "$var1.locationId$" (nested under location)
    assert tasks["executable/32"].flows[0].output_path == "author[].id"
    assert tasks["executable/44"].flows[0].output_path == "location.locationId"
    # two references embedded in "$var1.localtime$ - $var2.localtime$" (same tool)
    assert [f.output_path for f in tasks["executable/34"].flows] == ["location.localtime"]
    sgd = shared_path("nestful", "data", "non-executable", "non-executable-sgd-spec.json")
    sgd_catalog = load_nestful(sgd)
    origin = sgd_catalog.get("Buses.FindBus").input_schema["properties"]["fare_type"]
    assert origin["enum"] == ["Economy", "Economy extra", "Flexible"]
    assert origin["default"] == "Economy"


def test_nestools_pool_and_gold() -> None:
    path = shared_path("nestools", "test_data_dev.jsonl")
    catalog = load_nestools(path)
    tasks = load_nestools_tasks(path)  # raises if an API_call_k reference does not resolve
    assert len(tasks) == 600
    assert len(catalog) == 1824
    suffixed = [n for n in catalog.names() if "~" in n]
    assert len(suffixed) == 95
    assert len({catalog.get(n).metadata["original_name"] for n in suffixed}) == 82
    assert catalog.get("get_policy_document~2").metadata["original_name"] == "get_policy_document"
    assert sum(len(t.flows) for t in tasks) == 1032
    assert all(set(t.tools) <= set(catalog.names()) for t in tasks)
    assert _mismatches(catalog, tasks) == (0, 0)
    first = tasks[0]
    assert first.tools == ("scan_isbn", "locate_book", "engage_ar_experience")
    assert GoldFlow("scan_isbn", "availability", "engage_ar_experience", "availability") in (
        first.flows
    )


STB = {"G1_category": (364, 153), "G1_instruction": (810, 163), "G1_tool": (499, 158)}
STB |= {"G2_category": (433, 124), "G2_instruction": (604, 106)}


@pytest.mark.parametrize("name", sorted(STB))
def test_stabletoolbench(name: str) -> None:
    tools, queries = STB[name]
    path = shared_path("stabletoolbench", f"{name}.json")
    catalog = load_stabletoolbench(path)
    found = load_stabletoolbench_queries(path)
    assert (len(catalog), len(found)) == (tools, queries)
    names = set(catalog.names())
    for query in found:
        assert set(query.relevant) <= set(query.api_names) <= names


def test_stabletoolbench_types_and_templates() -> None:
    catalog = load_stabletoolbench(shared_path("stabletoolbench", "G2_instruction.json"))
    word = catalog.get("Random Word API.Get Word by Length")
    assert word.input_schema["properties"]["length"] == {"type": "number", "default": "7"}
    assert _paths(catalog, "Random Word API.Get Word by Length") == ["word"]
    assert catalog.get("US ZIP Code to Income.ZIP code").output_schema is None
    # its template_response is JSON text cut at 1000 characters
    station = _paths(catalog, "AirVisual.stations/v2/get-information")
    assert station[:3] == ["status", "data", "data.id"] and len(station) == 54


# --- hand-made edge cases --------------------------------------------------------------------


def _write(path: Path, data: Any) -> Path:
    text = data if isinstance(data, str) else json.dumps(data)
    path.write_text(text, encoding="utf-8")
    return path


LOADERS: list[Callable[[Path], object]] = [
    load_appworld,
    load_nestful,
    load_nestful_tasks,
    load_nestools,
    load_nestools_tasks,
    load_stabletoolbench,
    load_stabletoolbench_queries,
    load_appworld_tasks,
]


@pytest.mark.parametrize("loader", LOADERS)
def test_malformed_json_names_the_file(loader: Callable[[Path], object], tmp_path: Path) -> None:
    bad = _write(tmp_path / "broken.json", '{"a": [1, 2,')
    with pytest.raises(CatalogError, match=r"broken\.json"):
        loader(bad)


def _api(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"app_name": "shop", "api_name": "buy", "path": "/shop/buy"}
    base |= {"parameters": [], "response_schemas": {"success": {"id": 1}}}
    return base | changes


def test_appworld_edge_cases(tmp_path: Path) -> None:
    doc = _api(parameters=[{"name": "n", "type": "integer", "constraints": ["value >= 1, < 5"]}])
    catalog = load_appworld(_write(tmp_path / "shop.json", {"buy": doc}))
    assert catalog.get("shop.buy").input_schema["properties"]["n"] == {
        "type": "integer",
        "minimum": 1.0,
        "exclusiveMaximum": 5.0,
    }
    with pytest.raises(CatalogError) as missing:
        load_appworld(_write(tmp_path / "a.json", {"buy": _api(api_name="")}))
    assert missing.value.field == "api_name" and missing.value.tool == "buy"
    with pytest.raises(CatalogError) as non_list:
        load_appworld(_write(tmp_path / "b.json", {"buy": _api(parameters={"n": {}})}))
    assert (non_list.value.tool, non_list.value.field) == ("shop.buy", "parameters")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CatalogError, match=r"no \*\.json"):
        load_appworld(tmp_path / "empty")


def test_nestful_edge_cases(tmp_path: Path) -> None:
    tool = {"name": "f", "parameters": {"x": {"type": "Enum", "required": True}}}
    other = {"name": "f", "query_parameters": {"y": {"type": "String"}}}
    out = {"output_parameters": {"data": {"type": "array", "items": {"properties": {"id": "int"}}}}}
    spec = _write(tmp_path / "t-spec.json", [tool | out, tool | out, other])
    catalog = load_nestful(spec)
    assert catalog.names() == ["f", "f~2"]
    assert catalog.get("f").required_inputs == ("x",)
    assert _paths(catalog, "f") == ["data", "data[].id"]
    calls = [
        {"name": "f", "arguments": {"x": "a"}, "label": "var1"},
        {"name": "g", "arguments": {}, "label": "var2"},
        {"name": "f", "arguments": {"x": ["3 * $var1.id$", "$var2.z$", "var1.data$"]}},
        {"name": "var_result", "arguments": {"r": "$var1$"}},
    ]
    _write(tmp_path / "t-data.json", [{"input": "do", "output": calls}])
    (task,) = load_nestful_tasks(tmp_path / "t-data.json")
    assert task.tools == ("f",)
    assert task.flows == (GoldFlow("f", "data[].id", "f", "x"), GoldFlow("f", "data", "f", "x"))
    with pytest.raises(CatalogError) as missing:
        load_nestful(_write(tmp_path / "m.json", [{"description": "no name"}]))
    assert missing.value.field == "name"
    with pytest.raises(CatalogError) as non_dict:
        load_nestful(_write(tmp_path / "n.json", [{"name": "f", "parameters": ["x"]}]))
    assert (non_dict.value.tool, non_dict.value.field) == ("f", "parameters")


def test_nestful_requiredness_conventions(tmp_path: Path) -> None:
    """A tool flagging ``required`` keeps exactly those; one flagging only ``optional`` makes
    every unflagged parameter required; one flagging neither requires nothing."""
    spec = _write(tmp_path / "r-spec.json", [
        {"name": "flags_required", "parameters": {
            "a": {"type": "string", "required": True}, "b": {"type": "string", "required": False},
            "c": {"type": "string", "optional": True}, "d": {"type": "string"}}},
        {"name": "flags_optional", "query_parameters": {
            "q": {"type": "String"}, "token": {"type": "String", "optional": True},
            "safe": {"type": "Boolean", "optional": False}}},
        {"name": "flags_nothing", "query_parameters": {"x": {"type": "string"}}},
    ])
    catalog = load_nestful(spec)
    assert catalog.get("flags_required").required_inputs == ("a",)
    assert catalog.get("flags_optional").required_inputs == ("q", "safe")
    assert catalog.get("flags_nothing").required_inputs == ()


def test_nestful_reference_shapes() -> None:
    value = {"a": ["$var1.skyId$", "x $var2$ y"], "b": "5 * $var3.Exchange Rate$ - var4.k$"}
    assert list(references(value)) == [
        ("var1", "skyId"),
        ("var2", ""),
        ("var3", "Exchange Rate"),
        ("var4", "k"),
    ]
    items = {"type": "object", "properties": {"id": {}}}
    schema = {"type": "object", "properties": {"data": {"type": "array", "items": items}}}
    assert resolve_output_path(schema, "id") == "data[].id"
    assert resolve_output_path(schema, "data[0].id") == "data[].id"
    assert resolve_output_path(schema, "") == ""
    assert resolve_output_path(schema, "missing") is None


def _nestools_row(test_id: int, api: list[dict[str, Any]], calls: list[Any]) -> str:
    return json.dumps({"test_id": test_id, "task": "t", "api": api, "call": calls})


def test_nestools_edge_cases(tmp_path: Path) -> None:
    a = {"api_name": "a", "parameters": {}, "required": [], "responses": {"u": {}, "v": {}}}
    b = {"api_name": "b", "parameters": {"p": {"type": "list"}}, "required": ["p"]}
    a2 = a | {"api_description": "other"}
    calls = [
        {"api_name": "a", "parameters": {}, "responses": ["API_call_0", "API_call_1"]},
        {"api_name": "b", "parameters": {"p": ["API_call_1", "lit"]}, "responses": []},
    ]
    rows = [_nestools_row(1, [a, b], calls), _nestools_row(2, [a2], []), _nestools_row(3, [a], [])]
    path = _write(tmp_path / "n.jsonl", "\n".join(rows))
    assert load_nestools(path).names() == ["a", "b", "a~2"]
    tasks = load_nestools_tasks(path)
    assert [t.tools for t in tasks] == [("a", "b"), ("a~2",), ("a",)]
    assert tasks[0].flows == (GoldFlow("a", "v", "b", "p"),)
    dangling = [{"api_name": "b", "parameters": {"p": "API_call_7"}, "responses": []}]
    bad = _write(tmp_path / "d.jsonl", _nestools_row(4, [b], dangling))
    with pytest.raises(CatalogError, match="API_call_7") as unresolved:
        load_nestools_tasks(bad)
    assert unresolved.value.field == "test_id 4.call[0].parameters.p"
    with pytest.raises(CatalogError) as missing:
        load_nestools(_write(tmp_path / "m.jsonl", _nestools_row(5, [{"parameters": {}}], [])))
    assert missing.value.field == "test_id 5.api[0].api_name"
    with pytest.raises(CatalogError) as non_dict:
        load_nestools(_write(tmp_path / "p.jsonl", _nestools_row(6, [b | {"parameters": [1]}], [])))
    assert (non_dict.value.tool, non_dict.value.field) == ("b", "parameters")


def test_stabletoolbench_edge_cases(tmp_path: Path) -> None:
    api = {"tool_name": " T ", "api_name": "x", "required_parameters": [], "method": "GET"}
    first = api | {"optional_parameters": [{"name": "q", "type": "ENUM", "default": ""}]}
    second = api | {"api_description": "later", "template_response": '{"a": "int", "b": {"c'}
    query = {"query_id": 7, "query": "q?", "api_list": [first, second]}
    query["relevant APIs"] = [["T", "x"]]
    path = _write(tmp_path / "G.json", [query])
    catalog = load_stabletoolbench(path)
    assert catalog.names() == ["T.x"] and catalog.get("T.x").output_schema is None
    assert input_fields(catalog.get("T.x").input_schema)[0].type == "string"
    (found,) = load_stabletoolbench_queries(path)
    assert (found.query_id, found.api_names, found.relevant) == ("7", ("T.x",), ("T.x",))
    assert parse_truncated_json('{"a": "int", "b": {"c') == {"a": "int", "b": {}}
    cut = parse_truncated_json('[{"k": "s\\"x", "_list_length": 2}, {"k')
    assert cut == [{"k": 's"x', "_list_length": 2}, {}]
    no_tool = [query | {"api_list": [{"api_name": "x"}]}]
    with pytest.raises(CatalogError) as missing:
        load_stabletoolbench(_write(tmp_path / "m.json", no_tool))
    assert missing.value.field == "[0].api_list[0].tool_name"
