"""The Seal-Tools importer (``tool.jsonl`` + ``dev.jsonl``,
:mod:`hyperplan_bench.importers.sealtools`)
on small hand-made files and on the release under ../shared/data/sealtools, and the suites built
on it (retrieval, chains, links)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import shared_path
from hyperplan.catalog import CatalogWarning
from hyperplan.cli import app
from hyperplan.errors import CatalogError, HyperplanError
from hyperplan.graph.schema_paths import output_fields
from hyperplan.sources import load_source
from hyperplan_bench.eval import registry
from hyperplan_bench.eval.chains import evaluate_chains, terminals_of
from hyperplan_bench.eval.links import evaluate_links, load_suite, split_tasks
from hyperplan_bench.eval.retrieval import METHODS, load_retrieval_suite
from hyperplan_bench.importers.gold import GoldCall, GoldFlow
from hyperplan_bench.importers.sealtools import load_sealtools, load_sealtools_tasks


def _spec(kind: str, text: str = "") -> dict[str, str]:
    return {"type": kind, "description": text}


SEARCH = {"api_name": "searchFlights", "api_description": "Search flights between two cities",
          "field": "Travel/Air travel",
          "parameters": {"origin": _spec("str", "departure city"), "day": _spec("str")},
          "required": ["origin"],
          "responses": {"flight_id": _spec("str", "id of the flight"), "price": _spec("float")}}
BOOK = {"api_name": "bookFlight", "api_description": "Book a flight",
        "field": "Travel/Booking/Reservations",
        "parameters": {"flight_id": _spec("str"), "seats": _spec("int"), "note": _spec("str")},
        "required": ["flight_id", "seats"],
        "responses": {"booking_id": _spec("str")}}
PAY = {"api_name": "payBooking", "api_description": "Pay a booking", "field": "Finance/Payments",
       "parameters": {"booking_ids": _spec("str"), "amount": _spec("float")},
       "required": ["booking_ids"], "responses": {}}


def _call(api: str, responses: list[str], **parameters: Any) -> dict[str, Any]:
    return {"api": api, "parameters": parameters, "responses": responses}


NESTED = {"id": "dev-difficult-0", "query": "Find a flight from Oslo, book 2 seats and pay.",
          "calling": [
              _call("searchFlights", ["API_call_0", "API_call_1"], origin="Oslo"),
              _call("bookFlight", ["API_call_2"], flight_id="API_call_0", seats=2,
                    note="API_call_1 response"),
              _call("payBooking", [], booking_ids=["API_call_2", "x"], amount=10.5),
          ]}
SINGLE = {"id": "dev-easy-0", "query": "Search flights from Rome.",
          "calling": [_call("searchFlights", ["API_call_0", "API_call_1"], origin="Rome")]}


def _jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def release(tmp_path: Path) -> Path:
    """A Seal-Tools-shaped directory: tool.jsonl and dev.jsonl."""
    _jsonl(tmp_path / "tool.jsonl", [SEARCH, BOOK, PAY])
    _jsonl(tmp_path / "dev.jsonl", [NESTED, SINGLE])
    return tmp_path


# --- small files -----------------------------------------------------------------------------


def test_catalog_keeps_types_outputs_and_fields(release: Path) -> None:
    catalog = load_sealtools(release)
    assert catalog.names() == ["searchFlights", "bookFlight", "payBooking"]
    assert load_sealtools(release / "tool.jsonl") == catalog
    search = catalog.get("searchFlights")
    assert search.input_schema["properties"]["origin"] == {
        "type": "string", "description": "departure city"}
    assert search.required_inputs == ("origin",)
    assert search.output_schema is not None
    assert [(f.path, f.type) for f in output_fields(search.output_schema)] == [
        ("flight_id", "string"), ("price", "number")]
    assert search.metadata == {"field": "Travel/Air travel", "category": "Travel"}
    assert "app" not in search.metadata  # fields are domain labels, not namespaces
    assert catalog.get("bookFlight").metadata["category"] == "Travel"
    assert catalog.get("payBooking").output_schema is None
    assert load_source(f"sealtools:{release}") == catalog


def test_api_call_references_resolve_to_producer_and_response_key(release: Path) -> None:
    nested, single = load_sealtools_tasks(release)
    assert load_sealtools_tasks(release / "dev.jsonl") == [nested, single]
    assert nested.id == "dev-difficult-0" and nested.text.startswith("Find a flight")
    assert nested.tools == ("searchFlights", "bookFlight", "payBooking")
    # the counter runs across calls: API_call_2 is bookFlight's first response
    assert nested.flows == (
        GoldFlow("searchFlights", "flight_id", "bookFlight", "flight_id"),
        GoldFlow("searchFlights", "price", "bookFlight", "note"),  # inside a longer string
        GoldFlow("bookFlight", "booking_id", "payBooking", "booking_ids"),  # inside a list
    )
    assert nested.calls[1] == GoldCall("bookFlight", (("seats", "2"),), ("flight_id", "note"))
    assert nested.calls[2] == GoldCall("payBooking", (("amount", "10.5"),), ("booking_ids",))
    assert terminals_of(nested) == ["payBooking"]
    assert single.tools == ("searchFlights",) and single.flows == ()


def test_tasks_read_the_response_keys_of_the_given_pool(tmp_path: Path, release: Path) -> None:
    elsewhere = _jsonl(tmp_path / "queries.jsonl", [SINGLE])
    other = tmp_path / "pool"
    other.mkdir()
    swapped = SEARCH | {"responses": {"price": _spec("float"), "flight_id": _spec("str")}}
    _jsonl(other / "tool.jsonl", [swapped])
    query = {"id": 7, "query": "q", "calling": [
        _call("searchFlights", ["API_call_0"]), _call("searchFlights", [], day="API_call_0")]}
    (task,) = load_sealtools_tasks(_jsonl(tmp_path / "q.jsonl", [query]), tools=other)
    assert task.id == "7" and task.flows == (
        GoldFlow("searchFlights", "price", "searchFlights", "day"),)
    assert load_sealtools_tasks(elsewhere, tools=load_sealtools(release))[0].tools == (
        "searchFlights",)


def _error(load: Any, path: Path, *args: Any) -> CatalogError:
    with pytest.raises(CatalogError) as caught:
        load(path, *args)
    assert "\n" not in str(caught.value)
    return caught.value


def test_bad_tool_lines_name_file_line_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "tool.jsonl"
    bad.write_text(json.dumps(SEARCH) + "\n{not json\n")
    err = _error(load_sealtools, bad)
    assert str(err) == f"file {bad}: malformed JSON on line 2: Expecting property name " \
        "enclosed in double quotes"
    cases: list[tuple[Any, str | None, str]] = [
        ([1, 2], None, "line 2"),
        ({"api_description": "x"}, None, "line 2.api_name"),
        (BOOK | {"parameters": ["flight_id"]}, "bookFlight", "line 2.parameters"),
        (BOOK | {"responses": {"booking_id": "str"}}, "bookFlight", "line 2.responses.booking_id"),
        (BOOK | {"parameters": {"seats": {"type": 3}}}, "bookFlight",
         "line 2.parameters.seats.type"),
        (BOOK | {"required": "flight_id"}, "bookFlight", "line 2.required"),
        (BOOK | {"field": ["Travel"]}, "bookFlight", "line 2.field"),
        (BOOK | {"api_name": "book\x1bFlight"}, "book\x1bFlight", "line 2.name"),
    ]
    for row, tool, field in cases:
        err = _error(load_sealtools, _jsonl(bad, [SEARCH, row]))
        assert (err.file, err.tool, err.field) == (str(bad), tool, field), row
    assert "file not found" in str(_error(load_sealtools, tmp_path / "missing"))


def test_bad_queries_name_file_line_and_field(release: Path) -> None:
    dev = release / "dev.jsonl"
    calling = NESTED["calling"]
    cases: list[tuple[Any, str, str]] = [
        ("a string", "line 2", "query line is not a JSON object"),
        ({"id": "q", "query": "x"}, "line 2.calling", "a query needs a 'calling' list"),
        (SEARCH, "line 2.calling", "(is this the tool file? give the query file)"),
        ({"id": "q", "calling": []}, "line 2.query", "a query needs a 'query' string"),
        ({"id": ["q"], "query": "x", "calling": []}, "line 2.id", "must be a string"),
        (NESTED | {"calling": [calling[1]]}, "line 2.calling[0].parameters.flight_id",
         "API_call_0 names no output of an earlier call"),
        (NESTED | {"calling": [calling[1], calling[0]]},  # a reference to a later call
         "line 2.calling[0].parameters.flight_id", "names no output of an earlier call"),
        (NESTED | {"calling": [_call("bookFlight", ["API_call_0", "API_call_1"])]},
         "line 2.calling[0].responses", "lists 2 responses; the API has 1"),
        (NESTED | {"calling": [{"parameters": {}}]}, "line 2.calling[0].api", "missing api"),
        (NESTED | {"calling": [_call("bookFlight", ["API_call_0", 0])]},
         "line 2.calling[0].responses", "must be a list of API_call_k names"),
        (NESTED | {"calling": [{"api": "payBooking", "parameters": [1]}]},
         "line 2.calling[0].parameters", "must be an object"),
    ]
    for row, field, message in cases:
        err = _error(load_sealtools_tasks, _jsonl(dev, [SINGLE, row]))
        assert (err.file, err.field) == (str(dev), field), row
        assert message in str(err), (row, str(err))


def test_dropped_records_are_warned(release: Path) -> None:
    _jsonl(release / "tool.jsonl", [SEARCH, BOOK, SEARCH, PAY, BOOK | {"api_description": "y"},
                                    PAY | {"returns": {}}])
    with pytest.warns(CatalogWarning) as caught:
        catalog = load_sealtools(release)
    assert catalog.names() == ["searchFlights", "bookFlight", "payBooking"]
    assert catalog.get("bookFlight").description == "Book a flight"  # the first is kept
    messages = [str(w.message) for w in caught]
    assert messages[0] == (
        f"{release / 'tool.jsonl'}: 3 tool lines dropped, repeating an earlier api_name (the "
        "first is kept): 'searchFlights' on line 3 (same spec as line 1); 'bookFlight' on line "
        "5 (spec differs from line 2); 'payBooking' on line 6 (spec differs from line 4)")
    _jsonl(release / "tool.jsonl", [SEARCH, PAY | {"returns": {}}])
    with pytest.warns(CatalogWarning, match="tool 'payBooking': unknown key 'returns'"):
        load_sealtools(release)
    _jsonl(release / "tool.jsonl", [SEARCH, BOOK])
    with pytest.warns(CatalogWarning) as caught:
        tasks = load_sealtools_tasks(release)
    assert [t.id for t in tasks] == ["dev-easy-0"]
    assert str(caught[-1].message) == (
        f"{release / 'dev.jsonl'}: 1 query dropped, calling APIs not in "
        f"{release / 'tool.jsonl'}: dev-difficult-0 calls 'payBooking'")


def test_small_release_runs_through_every_suite(release: Path) -> None:
    suite = load_retrieval_suite("sealtools", release, release / "dev.jsonl")
    assert len(suite.catalog) == 3
    assert [t.tools for t in suite.tasks] == [
        ("searchFlights", "bookFlight", "payBooking"), ("searchFlights",)]
    data = load_suite("sealtools", release)
    assert load_suite("sealtools", release / "dev.jsonl") == data
    ((catalog, tasks),) = data.parts
    assert len(catalog) == 3 and len(tasks) == 2
    links = evaluate_links("sealtools", release, embedder=None, threshold=0.5)
    assert links["n_tasks"] == 2 and links["gold_links"] == 3 and links["n_tools"] == 3
    chains = evaluate_chains("sealtools", release, embedder=None)
    assert chains["n_tasks"] == 2 and set(chains["methods"]) == {
        "doe", "doe_agent_policy", "all_producers", "semantic_topk"}
    with pytest.raises(HyperplanError, match="'nestful', 'nestools', 'sealtools' or 'tau2'"):
        load_suite("nosuch", release)


def test_registry_lists_sealtools() -> None:
    for kind in ("retrieval", "chains", "links"):
        assert "sealtools" in registry.suites_of_kind(kind)
    assert "sealtools" not in registry.suites_of_kind("agent")


# --- the release under ../shared/data/sealtools -----------------------------------------------


def test_real_tool_pool() -> None:
    root = shared_path("sealtools")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is dropped from the release
        catalog = load_sealtools(root)
    assert len(catalog) == 4076
    assert all(t.metadata["field"] and t.output_schema for t in catalog.tools)
    assert len({t.metadata["category"] for t in catalog.tools}) == 146
    assert catalog.get("getPM2.5Level").output_schema == {"type": "object", "properties": {
        "pm2.5_level": {"type": "number",
                        "description": "The PM2.5 level at the specified location"}}}
    kinds = {p.get("type") for t in catalog.tools
             for p in t.input_schema["properties"].values()}
    assert kinds == {"string", "integer", "number", "boolean"}


def test_real_queries_and_data_flows() -> None:
    root = shared_path("sealtools")
    catalog = load_sealtools(root)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tasks = load_sealtools_tasks(root, tools=catalog)
    assert len(tasks) == 700 and len({t.id for t in tasks}) == 700
    assert sum(len(t.tools) > 1 for t in tasks) == 500
    assert sum(len(t.tools) == len(t.calls) for t in tasks) == 700  # no API called twice
    nested = [t for t in tasks if t.flows]
    assert len(nested) == 28 and sum(len(t.flows) for t in nested) == 34
    for task in nested:
        for flow in task.flows:
            producer, consumer = catalog.get(flow.producer), catalog.get(flow.consumer)
            assert flow.output_path in [f.path for f in output_fields(producer.output_schema)]
            assert flow.input_param in consumer.input_schema["properties"]
            assert task.tools.index(flow.producer) < task.tools.index(flow.consumer)
    first = next(t for t in tasks if t.id == "dev-difficult-200")
    assert first.flows == (
        GoldFlow("searchCrop", "crop_info", "getAvailableResources", "location"),)
    assert [len(split_tasks(tasks, s)) for s in ("dev", "heldout")] == [140, 560]


def test_real_retrieval_suite_cli_contract() -> None:
    root = shared_path("sealtools")
    result = CliRunner().invoke(app, [
        "eval", "retrieval", "--suite", "sealtools", "--catalog", str(root / "tool.jsonl"),
        "--tasks-file", str(root / "dev.jsonl"), "--embedder", "hashing", "--split", "dev",
        "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["suite"] == "sealtools" and doc["n_tools"] == 4076 and doc["n_tasks"] == 140
    assert set(doc["methods"]) == set(METHODS)
    for scores in doc["methods"].values():
        assert 0.0 <= scores["complete"] <= scores["recall"] <= 1.0
        assert 0 < scores["mean_tools"] <= 20
