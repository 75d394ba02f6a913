"""The corpus of real MCP servers in ``benchmarks/mcp-corpus`` is well-formed.

Reads only the repository: every ``tools/<slug>.json`` loads with the MCP importer, every request
names configured servers and gold tools that exist, and the corpus is as large as issue 37 asks.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from hyperplan.importers.mcp import load_mcp_tools

CORPUS = Path(__file__).resolve().parents[1] / "benchmarks" / "mcp-corpus"
RECORD_KEYS = {"server", "package", "registry", "version", "licence", "collected", "tools"}


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _tool_files() -> list[Path]:
    return sorted((CORPUS / "tools").glob("*.json"))


def _tool_names() -> dict[str, set[str]]:
    return {path.stem: {tool["name"] for tool in _json(path)["tools"]} for path in _tool_files()}


def _requests() -> list[dict[str, Any]]:
    requests: list[dict[str, Any]] = _json(CORPUS / "requests.json")["requests"]
    return requests


def test_at_least_25_servers_with_their_tools() -> None:
    assert len(_tool_files()) >= 25


@pytest.mark.parametrize("path", _tool_files(), ids=lambda p: p.stem)
def test_tools_file_is_a_record_the_importer_loads(path: Path) -> None:
    record = _json(path)
    assert record.keys() >= RECORD_KEYS, f"{path.name} lacks {RECORD_KEYS - record.keys()}"
    assert record["server"] == path.stem
    assert record["registry"] in ("pypi", "npm")
    assert record["licence"] and record["licence"] != "UNKNOWN"
    catalog = load_mcp_tools(record["tools"])
    assert len(catalog.tools) == len(record["tools"]) > 0


def test_servers_json_lists_every_collected_server_pinned() -> None:
    servers = {entry["slug"]: entry for entry in _json(CORPUS / "servers.json")["servers"]}
    for path in _tool_files():
        record = _json(path)
        entry = servers.get(path.stem)
        assert entry is not None, f"{path.name} has no entry in servers.json"
        assert (entry["package"], entry["version"]) == (record["package"], record["version"])


def test_the_six_server_setup_is_part_of_the_corpus() -> None:
    collected = {path.stem for path in _tool_files()}
    assert {"git", "fetch", "time", "filesystem", "memory", "everything"} <= collected


def test_requests_are_enough_and_split_by_id_parity() -> None:
    requests = _requests()
    assert len(requests) >= 80
    ids = [request["id"] for request in requests]
    assert len(ids) == len(set(ids)), "request ids must be unique"
    for request in requests:
        assert request["split"] == ("dev" if request["id"] % 2 == 0 else "heldout")
    splits = Counter(request["split"] for request in requests)
    assert splits["dev"] > 0 and splits["heldout"] > 0


def test_gold_names_tools_of_the_configured_servers() -> None:
    names = _tool_names()
    for request in _requests():
        rid, servers = request["id"], request["servers"]
        assert request["request"].strip(), f"request {rid} has no text"
        assert 3 <= len(servers) <= 8 and len(set(servers)) == len(servers), rid
        assert set(servers) <= names.keys(), f"request {rid}: unknown servers"
        assert request["gold"], f"request {rid} has no gold slot"
        for slot in request["gold"]:
            assert slot, f"request {rid} has an empty slot"
            for alternative in slot:
                slug, _, tool = alternative.partition(":")
                assert slug in servers, f"request {rid}: {alternative} is not a configured server"
                assert tool in names[slug], f"request {rid}: no tool {tool!r} in {slug}"


def test_must_not_names_configured_tools_outside_the_gold() -> None:
    names = _tool_names()
    unsafe_cases = 0
    for request in _requests():
        gold = {alternative for slot in request["gold"] for alternative in slot}
        for forbidden in request.get("must_not", []):
            slug, _, tool = forbidden.partition(":")
            assert slug in request["servers"] and tool in names[slug], (request["id"], forbidden)
            assert forbidden not in gold, f"request {request['id']}: {forbidden} is also gold"
        unsafe_cases += bool(request.get("must_not"))
    assert unsafe_cases >= 10


def test_about_half_of_the_requests_need_a_chain() -> None:
    requests = _requests()
    chains = sum(1 for request in requests if len(request["gold"]) >= 2)
    assert 0.35 <= chains / len(requests) <= 0.75
