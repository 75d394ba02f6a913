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
from typer.testing import CliRunner

from hyperplan.cli import app

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
