"""The README's examples run as written, the command-line reference in docs/cli.md is the one
the code generates, and every ``hyperplan ...`` line of README and docs/ names a current command
(keeps the README and docs true)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
CLI_REFERENCE = ROOT / "docs" / "cli.md"


def documentation() -> list[Path]:
    """README and the pages of docs/ a user reads (not the lab notebook, docs/benchmarks.md,
    whose commands are history)."""
    docs = sorted((ROOT / "docs").rglob("*.md"))
    return [README, *(p for p in docs if p.name != "benchmarks.md")]


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
    """docs/cli.md's generated section is what ``scripts/cli_reference.py`` prints (rewrite
    it with ``python scripts/cli_reference.py --write`` after changing a command)."""
    from hyperplan.cli.reference import reference, section

    assert section(CLI_REFERENCE.read_text("utf-8")) == reference()


def test_readme_commands_use_current_names() -> None:
    """Every ``hyperplan ...`` line of the shell blocks of README and docs/ names a command
    that exists and only its current (not deprecated) options."""
    import shlex

    import typer.main

    from hyperplan.cli import app

    root = typer.main.get_command(app)
    blocks = [(page.relative_to(ROOT), b.split("```")[0]) for page in documentation()
              for b in page.read_text("utf-8").split("```bash")[1:]]
    lines = [(f"{page}: {line}", line) for page, b in blocks
             for line in b.replace("\\\n", " ").splitlines()
             if line.strip().startswith("hyperplan ")]
    assert len(lines) > 20
    for where, line in lines:
        try:
            words = shlex.split(line, comments=True)[1:]
        except ValueError:  # a quoted argument that goes on over the next lines
            words = shlex.split(line.partition(" '")[0])[1:]
        command = root
        while getattr(command, "commands", None) is not None and words:
            name = words.pop(0)
            assert name in command.commands, where  # type: ignore[attr-defined]
            command = command.commands[name]  # type: ignore[attr-defined]
            assert not command.hidden, f"deprecated command in {where}"
        options = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
        used = {w.split("=")[0] for w in words if w.startswith("-") and w != "-"}
        assert used <= options, f"{where}: {sorted(used - options)}"


def test_readme_is_short_and_links_resolve() -> None:
    """README stays a newcomer's page (at most 350 lines); every relative link of README and
    docs/ names a file that exists."""
    import re

    assert len(README.read_text("utf-8").splitlines()) <= 350
    for page in documentation():
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text("utf-8")):
            assert (page.parent / target).exists(), f"{page.relative_to(ROOT)}: {target}"
