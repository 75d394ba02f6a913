"""The ``hyperplan`` command line, driven as a user would: real subprocesses for error paths."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hyperplan.cli import app
from hyperplan.errors import HyperplanError

runner = CliRunner()


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    code = "from hyperplan.cli import main; main()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=120)


def test_demo_runs_the_demo_world() -> None:
    result = runner.invoke(app, ["demo", "--embedder", "hashing", "--quiet"])
    assert result.exit_code == 0, result.output
    assert "t01_like_song" in result.output
    assert "unambiguous tasks solved" in result.output
    assert result.output.count("(expected)") == 4  # "blocked (expected)": the ambiguous tasks


def test_missing_module_and_directory_sources_say_what_they_are(tmp_path: Path) -> None:
    out = str(tmp_path / "g.json")
    module = run_cli("graph", "build", "python:hyperplan.examples.bookstor", "-o", out)
    assert module.returncode == 1
    assert module.stderr.startswith("error: python:hyperplan.examples.bookstor: importing "
                                    "module 'hyperplan.examples.bookstor' failed")
    missing = tmp_path / "api_doc"
    directory = run_cli("graph", "build", f"appworld:{missing}", "-o", out)
    assert directory.returncode == 1
    assert directory.stderr.startswith(f"error: directory {missing}: not found")


def test_stats_json(demo_graph: Path) -> None:
    result = runner.invoke(app, ["graph", "stats", str(demo_graph), "--json"])
    stats = json.loads(result.stdout)
    assert stats["tools"] == 12
    assert stats["links"] > 0
    assert sum(stats["nodes_by_kind"].values()) == stats["nodes"]


def test_show_lists_producers(demo_graph: Path) -> None:
    result = runner.invoke(app, ["graph", "show", str(demo_graph), "music.show_song"])
    assert result.exit_code == 0
    assert "music.login.access_token" in result.output


def test_export_neighbourhood(demo_graph: Path, tmp_path: Path) -> None:
    dot = runner.invoke(app, ["graph", "export", str(demo_graph), "--tool", "music.login"])
    assert dot.stdout.startswith("digraph")
    assert "music.show_song" in dot.stdout and "mail.send_email" not in dot.stdout
    target = tmp_path / "g.mmd"
    mmd = runner.invoke(app, ["graph", "export", str(demo_graph), "-f", "mermaid", "-o",
                              str(target)])
    assert mmd.exit_code == 0
    assert target.read_text().startswith("flowchart LR")


def test_unknown_source_is_one_clear_line() -> None:
    result = run_cli("graph", "build", "nosuch:thing", "-o", "/tmp/x.json")
    assert result.returncode == 1
    assert "unknown catalog source 'nosuch:thing'" in result.stderr
    assert "Traceback" not in result.stderr


def test_malformed_catalog_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "tools.json"
    bad.write_text('[{"name": "a", "parameters": {')
    result = run_cli("graph", "build", f"openai:{bad}", "-o", str(tmp_path / "g.json"),
                     "--embedder", "none")
    assert result.returncode == 1
    assert str(bad) in result.stderr and "malformed JSON" in result.stderr
    assert "Traceback" not in result.stderr


def test_show_unknown_tool_suggests(demo_graph: Path) -> None:
    result = run_cli("graph", "show", str(demo_graph), "show_song")
    assert result.returncode == 1
    assert "music.show_song" in result.stderr


def test_missing_graph_file(tmp_path: Path) -> None:
    result = run_cli("graph", "stats", str(tmp_path / "none.json"))
    assert result.returncode == 1
    assert "graph file not found" in result.stderr


def test_plan_support_orders_producers(demo_graph: Path) -> None:
    result = runner.invoke(app, ["plan", "support", str(demo_graph), "music.like_song",
                                 "--known", "query,username,password", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["ok"] and doc["tools"][-1] == "music.like_song"
    assert doc["tools"].index("music.login") < doc["tools"].index("music.like_song")
    assert {"from": "music.login:out:access_token", "to": "music.like_song:in:access_token",
            "weight": 1.0} in doc["links"]


def test_plan_support_unsatisfiable_exits_2(demo_graph: Path) -> None:
    result = runner.invoke(app, ["plan", "support", str(demo_graph), "mail.send_email"])
    assert result.exit_code == 2
    assert "unsatisfiable: mail.send_email:in:subject" in result.output


def test_plan_context_json(demo_graph: Path) -> None:
    result = runner.invoke(app, ["plan", "context", str(demo_graph), "Like the song Yesterday",
                                 "--embedder", "hashing", "--budget", "5", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    names = [t["name"] for t in doc["tools"]]
    assert len(names) <= 5 and "music.like_song" in names
    assert doc["prompt_tokens"] > 0


def test_python_dash_m_runs_the_same_cli() -> None:
    result = subprocess.run([sys.executable, "-m", "hyperplan", "graph", "stats", "/nonexistent"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "/nonexistent" in result.stderr and "Traceback" not in result.stderr


def _leaf_commands(command: object, path: str = "") -> list[tuple[str, object]]:
    children = getattr(command, "commands", None)
    if children is None:
        return [(path, command)]
    return [leaf for name, child in children.items()
            for leaf in _leaf_commands(child, f"{path} {name}".strip())]


def test_every_command_help_is_unwrapped_prose() -> None:
    """Typer prints a docstring's line breaks as they are; every command's help must have
    its source wrapping removed, or ``--help`` and the command lists show ragged lines."""
    import typer.main

    leaves = _leaf_commands(typer.main.get_command(app))
    assert len(leaves) >= 20
    for path, command in leaves:
        text = getattr(command, "help", None) or ""
        assert text, f"{path} has no help"
        assert all("\n" not in p for p in text.split("\n\n")), f"{path}: {text!r}"


# A user's mistakes: one line naming the file and field, exit code 1, never a traceback.

def cli_error(*args: str) -> str:
    """The one-line error of an in-process run: ``fail()``'s output, or the message of the
    hyperplan error that ``main()`` prints."""
    result = runner.invoke(app, list(args))
    assert result.exit_code == 1, result.output
    if isinstance(result.exception, HyperplanError):
        return str(result.exception)
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.output.startswith("error: "), result.output
    return result.output


def test_unreadable_graph_files_name_the_file(demo_graph: Path, tmp_path: Path) -> None:
    binary = tmp_path / "image.json"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00")
    assert cli_error("graph", "stats", str(binary)) == \
        f"{binary}: not a hyperplan graph file (not UTF-8 text)"
    assert cli_error("graph", "stats", str(tmp_path)) == \
        f"{tmp_path}: cannot read graph file (Is a directory)"
    doc = json.loads(demo_graph.read_text())
    doc["nodes"] = doc["nodes"][:3]  # the stored producer matrix no longer fits
    corrupt = demo_graph.parent / "corrupt.json"
    corrupt.write_text(json.dumps(doc))
    assert cli_error("plan", "support", str(corrupt), "music.like_song") == (
        f"{corrupt}: field 'tools[0].outputs': node id 27 out of range (graph has 3 nodes)")


def test_graph_file_is_no_catalog(demo_graph: Path) -> None:
    message = cli_error("graph", "build", f"openai:{demo_graph}", "-o", "/tmp/x.json")
    assert message.startswith(f"file {demo_graph}, field 'format': a saved hyperplan graph")


def test_build_checks_the_catalog_and_min_weight(tmp_path: Path) -> None:
    empty = tmp_path / "tasks.jsonl"
    empty.write_text("")
    out_path = str(tmp_path / "g.json")
    assert f"nestools:{empty}: no tools found" in cli_error(
        "graph", "build", f"nestools:{empty}", "-o", out_path, "--embedder", "none")
    for weight in ("0", "-1", "5"):
        assert "--min-weight must be in (0, 1]" in cli_error(
            "graph", "build", "demo", "-o", out_path, "--min-weight", weight)
    assert not (tmp_path / "g.json").exists()


def test_yaml_errors_are_one_line_with_the_place(tmp_path: Path) -> None:
    spec = tmp_path / "api.yaml"
    spec.write_text("openapi: 3.0.0\npaths:\n  /x: [unclosed\n")
    message = cli_error("graph", "build", f"openapi:{spec}", "-o", str(tmp_path / "g.json"))
    assert message == (f"file {spec}: malformed YAML: expected ',' or ']', but got "
                       "'<stream end>' (line 4, column 1)")
    overrides = tmp_path / "links.yaml"
    overrides.write_text("add:\n  - from: a\n    to: [\n")
    message = cli_error("graph", "build", "demo", "-o", str(tmp_path / "g.json"),
                        "--embedder", "none", "--overrides", str(overrides))
    assert message.startswith(f"{overrides}: malformed override file: ")
    assert "(line 4, column 1)" in message and "\n" not in message


def test_override_errors_name_the_file(tmp_path: Path) -> None:
    overrides = tmp_path / "links.yaml"
    overrides.write_text('add:\n  - {from: "nosuch:out:x", to: "music.login:in:username"}\n')
    assert cli_error("graph", "build", "demo", "-o", str(tmp_path / "g.json"), "--embedder",
                     "none", "--overrides", str(overrides)) == \
        f"{overrides}: add: unknown schema node 'nosuch:out:x'"
    overrides.write_bytes(b"\xff\xfe\x00")
    assert cli_error("graph", "build", "demo", "-o", str(tmp_path / "g.json"), "--embedder",
                     "none", "--overrides", str(overrides)) == \
        f"{overrides}: override file is not UTF-8 text"


def test_output_paths_that_cannot_be_written(demo_graph: Path, tmp_path: Path) -> None:
    for args, message in [
        (("graph", "export", str(demo_graph), "-o", str(tmp_path)),
         f"error: {tmp_path}: exists and is not a regular file; refusing to replace it"),
        (("graph", "build", "demo", "-o", str(tmp_path), "--embedder", "none"),
         f"error: {tmp_path}: exists and is not a regular file; refusing to replace it"),
        (("demo", "--embedder", "hashing", "--task", "t01_like_song", "--trace-dir",
          str(demo_graph)), f"error: {demo_graph}: exists and is not a directory"),
    ]:
        result = run_cli(*args)
        assert result.returncode == 1, result.stderr
        assert result.stderr.strip().splitlines()[-1] == message
        assert "Traceback" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no temporary file left


@pytest.mark.parametrize(("args", "message"), [
    (("plan", "context", "G", "like a song", "--budget", "0"), "--budget must be >= 1, got 0"),
    (("plan", "support", "G", "music.like_song", "--top-k", "0"),
     "--top-k and --beam must be >= 1, got 0 and 4"),
    (("plan", "support", "G", "music.like_song", "--beam", "-1"),
     "--top-k and --beam must be >= 1, got 5 and -1"),
    (("plan", "support", "G", " , "), "give at least one terminal tool name"),
])
def test_plan_options_are_checked(demo_graph: Path, args: tuple[str, ...], message: str) -> None:
    shown = cli_error(*(str(demo_graph) if a == "G" else a for a in args))
    assert shown.strip() == f"error: {message}"


@pytest.mark.parametrize(("args", "message"), [
    (("eval", "links", "--suite", "nestools", "--sweep", "0.4,abc"),
     "--sweep takes comma-separated numbers, got '0.4,abc'"),
    (("eval", "links", "--suite", "nestools", "--threshold", "2"),
     "--threshold and --sweep are link weights, in [0, 1]"),
    (("eval", "chains", "--suite", "nestools", "--top-k", "0"),
     "--top-k and --beam must be >= 1, got 0 and 4"),
    (("search", "run", "--suite", "toy", "--tasks", "0"), "--tasks must be >= 1, got 0"),
    (("search", "run", "--suite", "toy", "--methods", " ,"),
     "--methods is empty; choose from hypermcts, uct, best_of_n, greedy, beam, lats, flare, "
     "flare_split, tot, reflexion, cot"),
    (("search", "run", "--suite", "toy", "--rollouts", "0"),
     "--rollouts and --branching must be >= 1, --c and --lam >= 0"),
    (("search", "bench", "--iterations", "0"),
     "--iterations and --branching must be >= 1, --c and --lam >= 0"),
    (("search", "sweep", "--suite", "toy", "--rollouts", "0,8"),
     "every --rollouts value must be >= 1 and every --lams value >= 0"),
])
def test_eval_options_are_checked(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    data = ("--data", str(tmp_path / "unused.jsonl")) if args[1] in ("links", "chains") else ()
    assert cli_error(*args, *data).strip() == f"error: {message}"


def test_empty_benchmark_data_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    for command in ("links", "chains"):
        assert cli_error("eval", command, "--suite", "nestools", "--data", str(empty),
                         "--embedder", "none").strip() == f"error: {empty}: no tasks to evaluate"
    assert cli_error("eval", "retrieval", "--suite", "custom", "--catalog", "demo",
                     "--tasks-file", str(empty), "--embedder", "hashing").strip() == \
        f"error: {empty}: no task with a request and gold tools to score"


def test_retrieval_unknown_suite_is_named(tmp_path: Path) -> None:
    assert cli_error("eval", "retrieval", "--suite", "nosuch", "--catalog", "demo",
                     "--tasks-file", str(tmp_path), "--embedder", "hashing") == \
        "unknown retrieval suite 'nosuch'; expected appworld, nestools, sealtools, " \
        "stabletoolbench, custom"


def test_report_does_not_create_a_missing_store(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    assert cli_error("eval", "report", "abc", "--store", str(store)).strip() == \
        f"error: {store}: run store not found"
    assert not store.exists()


def test_build_notes_bare_values_nothing_can_link_to(tmp_path: Path) -> None:
    catalog = tmp_path / "tools.json"
    catalog.write_text(json.dumps([
        {"name": "add_to_cart", "parameters": {"type": "object", "properties": {
            "book_id": {"type": "string"}}}, "returns": {"type": "string"}},
        {"name": "checkout", "parameters": {"type": "object", "properties": {
            "cart_id": {"type": "string"}}},
         "returns": {"type": "string", "description": "the order id"}}]))
    graph = tmp_path / "g.json"
    result = runner.invoke(app, ["graph", "build", f"openai:{catalog}", "-o", str(graph),
                                 "--embedder", "none"])
    assert result.exit_code == 0, result.output
    note = " ".join(result.output.split())
    assert "note: 1 tool returns a bare value with no name and no description (add_to_cart)" \
        in note  # checkout's bare value is described, so it is not listed
    stats = runner.invoke(app, ["graph", "stats", str(graph), "--json"])
    assert json.loads(stats.output)["unnamed_outputs"] == 1


def test_unknown_tool_names_suggest_the_likely_one(demo_graph: Path) -> None:
    assert cli_error("graph", "show", str(demo_graph), "spotify.like_song").endswith(
        "no tool named 'spotify.like_song'; did you mean 'music.like_song'?\n")
    assert "unknown tool(s) 'music.like_sng' (did you mean 'music.like_song'?)" in cli_error(
        "plan", "support", str(demo_graph), "music.like_sng")
    # no close spelling: the names that contain it
    assert "no tool named 'like'; did you mean 'music.like_song'" in cli_error(
        "graph", "show", str(demo_graph), "like")


def test_error_messages_are_text_not_markup(demo_graph: Path) -> None:
    assert "no tool named 'songs[].id[/red]'" in cli_error(
        "graph", "show", str(demo_graph), "songs[].id[/red]")
