"""Outputs, preconditions and effects inferred where a catalog is silent (issue 37, items 1, 2)."""

from __future__ import annotations

from typing import Any

from hyperplan.catalog import ToolSpec, build_catalog, make_tool
from hyperplan.graph.build import build_graph
from hyperplan.graph.infer import infer_nodes
from hyperplan.graph.infer_conditions import catalog_conditions, merged
from hyperplan.graph.infer_outputs import CONF_DESCRIPTION, infer_outputs
from hyperplan.graph.model import Evidence, NodeKind
from hyperplan.graph.schema_paths import input_fields, output_fields


def _tool(name: str, description: str = "", params: dict[str, str] | None = None,
          output: dict[str, Any] | None = None, **metadata: Any) -> ToolSpec:
    props = {p: {"type": t} for p, t in (params or {}).items()}
    return make_tool(name=name, description=description,
                     input_schema={"type": "object", "properties": props,
                                   "required": list(props)},
                     output_schema=output, metadata=metadata)


def _outputs(tool: ToolSpec) -> dict[str, tuple[Evidence, float]]:
    nodes = infer_outputs(tool, input_fields(tool.input_schema),
                          output_fields(tool.output_schema, where=tool.name))
    return {n.path: (n.evidence, n.confidence) for n in nodes}


def _paths(tool: ToolSpec) -> set[str]:
    return set(_outputs(tool))


# ----------------------------------------------------------------------------- outputs
def test_name_gives_the_object_read() -> None:
    paths = _paths(_tool("get_system_timezone"))
    assert {"system_timezone", "timezone"} <= paths
    assert _outputs(_tool("get_system_timezone"))["timezone"][0] is Evidence.NAME


def test_list_gives_the_members_ids() -> None:
    paths = _paths(_tool("list_users"))
    assert {"users", "users[].id"} <= paths


def test_create_gives_the_new_id() -> None:
    assert _paths(_tool("create_ticket")) == {"ticket_id"}
    assert "chick_ids" in _paths(_tool("purchase_chicks"))


def test_search_files_gives_paths() -> None:
    assert "files[].file_path" in _paths(_tool("search_files", "Search for files."))


def test_description_beats_name() -> None:
    outputs = _outputs(_tool("fetch_thing", "Retrieves the current weather forecast of a city."))
    assert outputs["city_weather_forecast"] == (Evidence.DESCRIPTION, CONF_DESCRIPTION)
    assert outputs["forecast"][0] is Evidence.DESCRIPTION and "thing" not in outputs


def test_returns_clause_and_its_id() -> None:
    assert "cart_id" in _paths(_tool("add_to_cart", "Add a book to the cart; returns the cart id."))
    assert "order_id" in _paths(_tool("place_order", "Places an order and returns its id."))


def test_x_of_y_and_list_of() -> None:
    paths = _paths(_tool("calc", "Calculate the efficiency of a nuclear reactor."))
    assert {"reactor_efficiency", "efficiency"} <= paths
    paths = _paths(_tool("lib", "Get a list of books from a specific library."))
    assert {"books", "books[].id"} <= paths
    assert "song_id" in _paths(_tool("show_song", "Get details of a specific song."))


def test_generic_words_are_never_outputs() -> None:
    for name, text in [("get_result", "Get the result."), ("fetch_data", "Fetch data."),
                       ("get_status", "Returns the status."), ("get_page", "Get a page."),
                       ("read_message", "Read the message."), ("get_response", "")]:
        assert _paths(_tool(name, text)) == set(), name


def test_mcp_title_is_read_like_a_name() -> None:
    assert "timezone" in _paths(_tool("tz", title="Get Timezone"))


def test_a_search_echoes_its_specific_criteria() -> None:
    flat = _tool("SearchHotels", "", {"destination": "string"})  # no namespace: no echo
    assert not any(p.endswith("[].destination") for p in _paths(flat))
    tool = _tool("Hotels.SearchHotels", "Find hotels.",
                 {"destination": "string", "star_rating": "integer", "page": "integer",
                  "limit": "integer", "access_token": "string", "query": "string"})
    echoed = {p for p in _paths(tool) if p.startswith("hotels[].")}
    assert echoed == {"hotels[].destination", "hotels[].star_rating", "hotels[].id",
                      "hotels[].hotel"}


def test_login_gives_a_token_and_the_effect() -> None:
    tool = _tool("spotify.login", "Login to your account.", {"password": "string"})
    nodes = infer_nodes(tool, input_fields(tool.input_schema), [])
    assert any(n.kind is NodeKind.OUTPUT and n.path == "access_token" for n in nodes)
    assert any(n.kind is NodeKind.EFFECT and n.path == "spotify.authenticated" for n in nodes)


def test_declared_outputs_silence_the_rules() -> None:
    typed = _tool("get_system_timezone", output={"type": "object",
                                                 "properties": {"tz": {"type": "string"}}})
    assert _paths(typed) == set()
    bare = _tool("get_system_timezone", output={"type": "string"})  # a nameless result
    assert "timezone" in _paths(bare)


def test_inferred_output_links_with_its_confidence() -> None:
    catalog = build_catalog([
        _tool("create_ticket", "Create a support ticket."),
        _tool("close_ticket", "Close a ticket.", {"ticket_id": "string"}),
    ])
    graph = build_graph(catalog, embedder=None)
    (link,) = [lk for lk in graph.links() if lk.evidence == "inferred"]
    src = graph.nodes[link.source]
    assert src.path == "ticket_id" and src.evidence is Evidence.DESCRIPTION
    assert graph.nodes[link.target].path == "ticket_id"
    assert link.weight <= src.confidence


# ----------------------------------------------------------------------------- conditions
def _conditions(tool: ToolSpec) -> dict[tuple[NodeKind, str], float]:
    nodes = infer_nodes(tool, input_fields(tool.input_schema), [])
    return {(n.kind, n.path): n.confidence for n in nodes if n.kind is not NodeKind.OUTPUT}


def test_toggles_have_the_enabled_effect() -> None:
    assert (NodeKind.EFFECT, "bluetooth.enabled") in _conditions(_tool("enable_bluetooth"))
    assert (NodeKind.EFFECT, "wifi.enabled") in _conditions(_tool("turn_on_wifi"))
    on = _conditions(_tool("set_bluetooth_status", params={"on": "boolean"}))
    assert on[(NodeKind.EFFECT, "bluetooth.enabled")] < 0.9
    assert not any(p.endswith(".enabled") for _, p in _conditions(_tool("set_alarm")))


def test_validators_have_the_valid_effect() -> None:
    assert (NodeKind.EFFECT, "email.valid") in _conditions(_tool("validate_email"))
    assert (NodeKind.EFFECT, "email.valid") in _conditions(_tool("is_valid_email"))
    checked = _tool("check_email", "Checks whether a string is a valid e-mail address.")
    assert (NodeKind.EFFECT, "email.valid") in _conditions(checked)
    assert _conditions(_tool("check_vehicle_safety", "Check the safety of a vehicle.")) == {}


def test_read_only_tools_never_write_and_destructive_ones_always_do() -> None:
    assert (NodeKind.EFFECT, "delete_cache.done") in _conditions(_tool("delete_cache"))
    assert _conditions(_tool("delete_cache", read_only=True)) == {}
    assert (NodeKind.EFFECT, "purge.done") in _conditions(_tool("purge", destructive=True))


def _device_catalog() -> Any:
    return build_catalog([
        _tool("enable_bluetooth", "Turns bluetooth on."),
        _tool("get_bluetooth_status", "Reports whether bluetooth is on."),
        _tool("send_file_via_bluetooth", "Sends a file.", {"file": "string"}),
        _tool("validate_email", "Checks that a string is an e-mail address.",
              {"email": "string"}),
        _tool("send_location", "Sends the location to an e-mail address.",
              {"recipient_email": "string"}),
        _tool("app.login", "Sign in.", {"password": "string"}),
        _tool("app.show_inbox", "Show the inbox. Requires authentication."),
        _tool("other.show_inbox", "Show the inbox. Requires authentication."),
    ])


def test_catalog_preconditions_need_a_tool_that_meets_them() -> None:
    found = {name: {(n.kind, n.path) for n in nodes}
             for name, nodes in catalog_conditions(_device_catalog()).items()}
    assert found["send_file_via_bluetooth"] == {(NodeKind.PRECONDITION, "bluetooth.enabled")}
    assert found["send_location"] == {(NodeKind.PRECONDITION, "email.valid")}
    assert found["app.show_inbox"] == {(NodeKind.PRECONDITION, "app.authenticated")}
    # the status tool does not need bluetooth on; no sign-in in "other"; no self-precondition
    for name in ("get_bluetooth_status", "enable_bluetooth", "validate_email",
                 "other.show_inbox"):
        assert name not in found


def test_effects_link_to_the_catalog_preconditions() -> None:
    catalog = _device_catalog()
    graph = build_graph(catalog, embedder=None,
                        annotations=merged(catalog_conditions(catalog)))
    effect_links = {(graph.tools[graph.nodes[lk.source].tool].name,
                     graph.tools[graph.nodes[lk.target].tool].name)
                    for lk in graph.links() if lk.evidence == "effect"}
    assert ("enable_bluetooth", "send_file_via_bluetooth") in effect_links
    assert ("validate_email", "send_location") in effect_links
    assert ("app.login", "app.show_inbox") in effect_links
