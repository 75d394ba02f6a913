"""The ``hyperplan`` command line, driven as a user would: real subprocesses for error paths."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hyperplan.cli import app
from hyperplan.sources import demo_catalog_path

runner = CliRunner()


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    code = "from hyperplan.cli import main; main()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=120)


@pytest.fixture(scope="module")
def demo_graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("g") / "demo.json"
    result = runner.invoke(app, ["graph", "build", f"openai:{demo_catalog_path()}", "-o",
                                 str(path), "--embedder", "hashing"])
    assert result.exit_code == 0, result.output
    return path


def test_demo_runs_the_demo_world() -> None:
    result = runner.invoke(app, ["demo", "--embedder", "hashing", "--quiet"])
    assert result.exit_code == 0, result.output
    assert "t01_like_song" in result.output
    assert "unambiguous tasks solved" in result.output


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
