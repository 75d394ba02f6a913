"""The README's library example runs as written (keeps the README true)."""

from __future__ import annotations

from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def test_library_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    text = README.read_text("utf-8")
    code = text[text.index("## Library use"):].split("```python")[1].split("```")[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "music.like_song" in printed
    assert (tmp_path / "out" / "demo.json").exists() and (tmp_path / "out" / "demo.npz").exists()


def test_bookstore_goal_runs_as_written() -> None:
    """The README's LLM-free run on the shipped bookstore: the four calls, one order placed;
    with a query that matches two books it stops and lists both."""
    import json

    from typer.testing import CliRunner

    from hyperplan.cli import app
    from hyperplan.examples import bookstore

    text = README.read_text("utf-8")
    start = text.index("hyperplan run --tools python:hyperplan.examples.bookstore --goal '")
    goal = text[start:].split("'")[1]
    runner = CliRunner()
    args = ["run", "--tools", "python:hyperplan.examples.bookstore", "--goal", goal, "--json"]
    bookstore.reset()
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["status"], summary["tool_calls"]) == ("success", 4)  # the four tools
    assert bookstore.orders() == {"o1": ["b3"]}
    bookstore.reset()
    ambiguous = runner.invoke(app, [*args[:4], goal.replace("messiah", "dune"), "--json"])
    assert ambiguous.exit_code == 0, ambiguous.output
    assert json.loads(ambiguous.stdout)["status"] == "blocked" and bookstore.orders() == {}


def test_cli_reference_is_generated_from_the_code() -> None:
    """README's *Command-line reference* is what ``scripts/cli_reference.py`` prints (rewrite
    it with ``python scripts/cli_reference.py --write`` after changing a command)."""
    from hyperplan.cli.reference import reference, section

    assert section(README.read_text("utf-8")) == reference()


def test_readme_commands_use_current_names() -> None:
    """Every ``hyperplan ...`` line of README's shell blocks names a command that exists and
    only its current (not deprecated) options."""
    import shlex

    import typer.main

    from hyperplan.cli import app

    root = typer.main.get_command(app)
    text = README.read_text("utf-8")
    blocks = [b.split("```")[0] for b in text.split("```bash")[1:]]
    lines = [line for b in blocks for line in b.replace("\\\n", " ").splitlines()
             if line.strip().startswith("hyperplan ")]
    assert len(lines) > 20
    for line in lines:
        try:
            words = shlex.split(line, comments=True)[1:]
        except ValueError:  # a quoted argument that goes on over the next lines
            words = shlex.split(line.partition(" '")[0])[1:]
        command = root
        while getattr(command, "commands", None) is not None and words:
            name = words.pop(0)
            assert name in command.commands, line  # type: ignore[attr-defined]
            command = command.commands[name]  # type: ignore[attr-defined]
            assert not command.hidden, f"deprecated command in README: {line}"
        options = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
        used = {w.split("=")[0] for w in words if w.startswith("-") and w != "-"}
        assert used <= options, f"{line}: {sorted(used - options)}"
