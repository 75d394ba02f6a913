"""``hyperplan run``, ``hyperplan trace show`` and ``hyperplan demo`` as a user runs them: an
OpenAPI notes service served on 127.0.0.1 by a real HTTP server, driven LLM-free."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from click.testing import Result
from typer.testing import CliRunner

from hyperplan.cli import app
from hyperplan.errors import HyperplanError
from hyperplan_bench.eval.store import RunStore

runner = CliRunner()
NOTES = {1: "groceries", 2: "gym plan"}
TOKEN = "tok-123456"

SPEC: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "notes", "version": "1"},
    "paths": {
        "/login": {"post": {
            "operationId": "notes.login", "summary": "Log in and get an access token.",
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["username", "password"],
                "properties": {"username": {"type": "string", "description": "User name."},
                               "password": {"type": "string", "description": "Password."}}}}}},
            "responses": {"200": {"description": "ok", "content": {"application/json": {
                "schema": {"type": "object", "properties": {
                    "access_token": {"type": "string", "description": "Access token."}}}}}}}}},
        "/notes": {"get": {
            "operationId": "notes.search_notes", "summary": "Search notes by title.",
            "parameters": [
                {"name": "access_token", "in": "query", "required": True,
                 "schema": {"type": "string"}, "description": "Access token from login."},
                {"name": "query", "in": "query", "required": True,
                 "schema": {"type": "string"}, "description": "Words in the title."}],
            "responses": {"200": {"description": "ok", "content": {"application/json": {
                "schema": {"type": "array", "items": {"type": "object", "properties": {
                    "note_id": {"type": "integer", "description": "Note id."},
                    "title": {"type": "string", "description": "Note title."}}}}}}}}}},
        "/notes/{note_id}": {"delete": {
            "operationId": "notes.delete_note", "summary": "Delete a note.",
            "parameters": [
                {"name": "note_id", "in": "path", "required": True,
                 "schema": {"type": "integer"}, "description": "The id of the note."},
                {"name": "access_token", "in": "query", "required": True,
                 "schema": {"type": "string"}, "description": "Access token from login."}],
            "responses": {"200": {"description": "ok", "content": {"application/json": {
                "schema": {"type": "object", "properties": {
                    "deleted": {"type": "boolean"}}}}}}}}},
    },
}


class _Notes(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if body.get("password") != "s3cret-pw":
            return self._send(401, {"error": "wrong password"})
        self._send(200, {"access_token": TOKEN})

    def do_GET(self) -> None:
        url = urlparse(self.path)
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        if q.get("access_token") != TOKEN:
            return self._send(401, {"error": "bad token"})
        self._send(200, [{"note_id": i, "title": t} for i, t in NOTES.items()
                         if q.get("query", "").lower() in t])

    def do_DELETE(self) -> None:
        url = urlparse(self.path)
        note_id = int(url.path.rsplit("/", 1)[1])
        if parse_qs(url.query).get("access_token") != [TOKEN] or note_id not in NOTES:
            return self._send(404, {"error": "no such note"})
        del NOTES[note_id]
        self._send(200, {"deleted": True})

    def _send(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Notes)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    path = tmp_path / "notes.json"
    path.write_text(json.dumps(SPEC))
    return path


GOAL = {"terminals": ["notes.delete_note"],
        "values": {"username": "me", "password": "s3cret-pw", "query": "groceries"}}


def test_run_goal_against_openapi_service_and_show_trace(server: str, spec: Path,
                                                          tmp_path: Path) -> None:
    trace = tmp_path / "run.jsonl"
    result = runner.invoke(app, ["run", "--tools", f"openapi:{spec}", "--base-url", server,
                                 "--goal", json.dumps(GOAL), "--embedder", "hashing",
                                 "--trace", str(trace), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["status"] == "success" and data["tool_calls"] == 3 and data["llm_calls"] == 0
    assert 1 not in NOTES
    assert "s3cret-pw" not in trace.read_text() and TOKEN not in trace.read_text()
    shown = runner.invoke(app, ["trace", "show", str(trace), "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["tool_calls"] == 3
    text = runner.invoke(app, ["trace", "show", str(trace)])
    assert "notes.search_notes" in text.stdout and "support graph" in text.stdout


def test_run_reports_tool_failure_with_exit_code(server: str, spec: Path) -> None:
    goal = {**GOAL, "values": {**GOAL["values"], "password": "wrong"}}
    result = runner.invoke(app, ["run", "--tools", f"openapi:{spec}", "--base-url", server,
                                 "--goal", json.dumps(goal), "--embedder", "hashing"])
    assert result.exit_code == 2
    assert "HTTP 401" in result.stdout or "401" in result.stdout


def test_run_needs_goal_or_llm(spec: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HYPERPLAN_LLM_BASE_URL", raising=False)
    result = runner.invoke(app, ["run", "--tools", f"openapi:{spec}", "delete my note"])
    assert result.exit_code != 0
    assert "--goal" in str(result.exception)


def test_demo_solves_unambiguous_tasks_llm_free(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HYPERPLAN_LLM_BASE_URL", raising=False)
    result = runner.invoke(app, ["demo", "--embedder", "hashing", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert len(rows) >= 20
    for row in rows:
        assert row["llm_calls"] == 0
        if not row["ambiguous"]:
            assert row["check"] and row["tool_calls"] == row["min_calls"], row


def test_demo_shows_support_graphs_and_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HYPERPLAN_LLM_BASE_URL", raising=False)
    result = runner.invoke(app, ["demo", "--embedder", "hashing", "--task", "t01_like_song"])
    assert result.exit_code == 0, result.output
    assert "support graph:" in result.stdout and "music.search_songs(" in result.stdout
    assert "context graph (" in result.stdout and "solved" in result.stdout


# A user's mistakes: one clear line naming the file or option, exit code 1, no traceback.

def _error(result: Result) -> str:
    """The one-line error ``main()`` prints: a hyperplan error's message or ``fail()``'s."""
    assert result.exit_code == 1, result.output
    if isinstance(result.exception, HyperplanError):
        return str(result.exception)
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    return result.output.strip()


def test_run_goal_mistakes(spec: Path, tmp_path: Path) -> None:
    binary = tmp_path / "goal.json"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n")
    base = ["run", "--tools", f"openapi:{spec}", "--embedder", "hashing", "--goal"]
    cases = {
        str(tmp_path / "none.json"): f"--goal '{tmp_path / 'none.json'}': no such file, and "
                                     "not a JSON object",
        str(binary): f"{binary}: not JSON (not UTF-8 text)",
        str(tmp_path): f"{tmp_path}: cannot read the goal file (Is a directory)",
        "  ": "--goal is empty: give a JSON object or a file holding one",
        '{"terminals": [': "--goal: not JSON: Expecting value (line 1)",
    }
    for goal, message in cases.items():
        assert _error(runner.invoke(app, [*base, goal])) == message


def test_run_long_inline_goal_is_not_taken_for_a_path(spec: Path) -> None:
    goal = {"terminals": ["notes.nosuch"], "description": "x" * 400}  # > NAME_MAX bytes
    result = runner.invoke(app, ["run", "--tools", f"openapi:{spec}", "--embedder", "hashing",
                                 "--goal", json.dumps(goal)])
    assert "unknown tool 'notes.nosuch'" in _error(result)


@pytest.mark.parametrize("budget", [("--max-tool-calls", "-1"), ("--max-seconds", "0"),
                                    ("--max-llm-calls", "0"), ("--max-tokens", "-5")])
def test_budgets_must_be_positive(spec: Path, tmp_path: Path, budget: tuple[str, str]) -> None:
    goal = json.dumps(GOAL)
    run = runner.invoke(app, ["run", "--tools", f"openapi:{spec}", "--goal", goal, *budget])
    expected = "error: budgets must be positive (leave one out for no limit): " \
               f"{budget[0]} {float(budget[1]) if budget[0] == '--max-seconds' else budget[1]}"
    assert _error(run) == expected
    store = tmp_path / "runs.sqlite"
    evaluated = runner.invoke(app, ["eval", "run", "--agents", "hyperagent-goal", "--store",
                                    str(store), *budget])
    assert _error(evaluated) == expected


def test_unreachable_llm_endpoint_fails_at_once(spec: Path, tmp_path: Path) -> None:
    url = "http://127.0.0.1:9/v1"  # port 9 (discard) refuses connections
    for args in (["run", "--tools", f"openapi:{spec}", "--llm", url, "--model", "m",
                  "delete my note"],
                 ["demo", "--llm", url, "--embedder", "hashing"],
                 ["eval", "run", "--agents", "react", "--llm", url, "--store",
                  str(tmp_path / "runs.sqlite")]):
        message = _error(runner.invoke(app, args))
        assert message.startswith(f"cannot reach the LLM endpoint {url}: "), message
        assert "refused" in message
    with RunStore(tmp_path / "runs.sqlite") as db:
        assert db.runs() == []  # no empty run left behind


def test_eval_run_option_mistakes(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    empty = tmp_path / "tasks.jsonl"
    empty.write_text("")
    base = ["eval", "run", "--store", str(store)]
    cases = {
        ("--agents", " , "): "error: --agents is empty; give one or more of hyperagent, "
                             "hyperagent-goal, react, planexec, variant1, variant2",
        ("--agents", "hyperagent-goal", "--limit", "0"):
            "error: --workers and --limit must be >= 1, got 2 and 0",
        ("--agents", "hyperagent-goal", "--workers", "0"):
            "error: --workers and --limit must be >= 1, got 0 and None",
        ("--agents", "hyperagent-goal", "--suite", "nestools", "--data", str(empty)):
            f"error: suite 'nestools' has no tasks in {empty}",
    }
    for extra, message in cases.items():
        assert _error(runner.invoke(app, [*base, *extra])) == message
    with RunStore(store) as db:
        assert db.runs() == []
    missing = tmp_path / "other.sqlite"
    assert _error(runner.invoke(app, ["eval", "run", "--resume", "abc", "--store",
                                      str(missing)])) == \
        f"error: {missing}: run store not found (--resume abc)"
    assert not missing.exists()


def test_trace_show_mistakes(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text('{"type": "tool_call", "tool": "a"}\n')
    assert _error(runner.invoke(app, ["trace", "show", str(foreign)])) == (
        f"error: {foreign}: not a trace written by hyperplan run/demo: event 1 has no 't'")
    partial = tmp_path / "partial.jsonl"
    partial.write_text('{"t": 0.5, "type": "run_end"}\n')
    assert _error(runner.invoke(app, ["trace", "show", str(partial)])) == (
        f"error: {partial}: not a trace written by hyperplan run/demo: event 1 is a 'run_end' "
        "event without its required fields")
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n")
    assert _error(runner.invoke(app, ["trace", "show", str(binary)])) == \
        f"{binary}: cannot read trace events: not UTF-8 text"


def test_trace_show_prints_values_that_look_like_markup(tmp_path: Path) -> None:
    trace = tmp_path / "run.jsonl"
    trace.write_text(json.dumps({"t": 0.1, "type": "tool_call", "tool": "a", "ok": True,
                                 "arguments": {"q": "[/red]"}, "value": "[/bold] x"}) + "\n")
    result = runner.invoke(app, ["trace", "show", str(trace)])
    assert result.exit_code == 0, result.output
    assert 'a("q": "[/red]") ok "[/bold] x"' in result.stdout


def test_run_on_a_saved_graph_uses_its_overrides(tmp_path: Path) -> None:
    from hyperplan.examples import bookstore

    tools = "python:hyperplan.examples.bookstore"
    goal = json.dumps({"terminals": ["checkout"], "values": {
        "username": "ada", "password": "open sesame", "query": "messiah"}})
    graph = tmp_path / "bookstore.json"
    built = runner.invoke(app, ["graph", "build", tools, "-o", str(graph), "--embedder",
                                "hashing"])
    assert built.exit_code == 0, built.output
    bookstore.reset()
    ok = runner.invoke(app, ["run", "--tools", tools, "--graph", str(graph), "--goal", goal,
                             "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["tool_calls"] == 4 and bookstore.orders() == {"o1": ["b3"]}
    # without the link from the cart to the checkout, the goal cannot be planned: the same
    # override given to `graph build` (then --graph) or to `run --overrides`
    cut = tmp_path / "cut.yaml"
    cut.write_text("remove:\n  - {from_tool: add_to_cart, to_tool: checkout}\n")
    assert runner.invoke(app, ["graph", "build", tools, "-o", str(graph), "--embedder",
                               "hashing", "--overrides", str(cut)]).exit_code == 0
    for extra in (["--graph", str(graph)], ["--overrides", str(cut)]):
        bookstore.reset()
        failed = runner.invoke(app, ["run", "--tools", tools, *extra, "--goal", goal, "--json"])
        assert failed.exit_code == 2, failed.output
        assert bookstore.orders() == {}


def test_run_rejects_a_graph_of_other_tools(tmp_path: Path) -> None:
    other = tmp_path / "music.json"
    assert runner.invoke(app, ["graph", "build", "demo", "-o", str(other), "--embedder",
                               "none"]).exit_code == 0
    result = runner.invoke(app, ["run", "--tools", "python:hyperplan.examples.bookstore",
                                 "--graph", str(other), "--goal", '{"terminals": ["checkout"]}'])
    assert _error(result).startswith(
        f"--graph {other} was not built from these tools: 4 of the tools are not in it "
        "(add_to_cart, checkout, login, search_books); it has 12 other tools (")
    both = runner.invoke(app, ["run", "--tools", "python:hyperplan.examples.bookstore",
                               "--graph", str(other), "--overrides", str(other),
                               "--goal", '{"terminals": ["checkout"]}'])
    assert "already has its overrides" in _error(both)
