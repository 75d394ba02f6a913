"""One meaning per name: the renamed commands and options, and the old names, which still work
as hidden aliases that print one deprecation line and behave as the new names."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from hyperplan import __version__
from hyperplan.cli import ALIASES, COMMANDS, app
from hyperplan.cli.options import rename_args

runner = CliRunner()


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def deprecations(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "is deprecated" in line]


def test_version_is_printed_fast_and_alone() -> None:
    proc = subprocess.run([sys.executable, "-m", "hyperplan", "--version"], capture_output=True,
                          text=True, timeout=60, check=True)
    assert proc.stdout == f"hyperplan {__version__}\n" and proc.stderr == ""
    code, out, _ = invoke("--version")
    assert code == 0 and out == f"hyperplan {__version__}\n"


def test_root_help_lists_the_groups_not_the_aliases() -> None:
    proc = subprocess.run([sys.executable, "-m", "hyperplan", "--help"], capture_output=True,
                          text=True, timeout=60, check=True)
    listed = [line.split()[0] for line in proc.stdout.split("Commands:")[1].splitlines()
              if line.strip()]
    assert listed == list(COMMANDS) and "--version" in proc.stdout
    assert not set(ALIASES) & set(listed)
    evals = typer.main.get_command(app).commands["eval"]  # type: ignore[attr-defined]
    visible = [n for n, c in evals.commands.items() if not c.hidden]
    assert "report" in visible and not any(n.startswith("mcts") for n in visible)


OLD_COMMANDS = [
    (("eval", "mcts"), "search run"),
    (("eval", "mcts-sweep"), "search sweep"),
    (("eval", "mcts-bench"), "search bench"),
    (("eval", "mcts-reasoners"), "search reasoners"),
    (("report",), "eval report"),
]


@pytest.mark.parametrize(("old", "new"), OLD_COMMANDS)
def test_old_command_help_works_and_says_so(old: tuple[str, ...], new: str) -> None:
    code, out, err = invoke(*old, "--help")
    assert code == 0, err
    assert deprecations(err) == [f"warning: hyperplan {' '.join(old)} is deprecated; use "
                                 f"hyperplan {new}"]
    assert f"hyperplan {new}" in out


def test_old_mcts_runs_as_search_run() -> None:
    new = invoke("search", "run", "--suite", "toy", "--tasks", "1", "--rollouts", "2", "--json")
    old = invoke("eval", "mcts", "--suite", "toy", "--tasks", "1", "--budget", "2", "--json")
    assert new[0] == old[0] == 0, old[2]
    assert deprecations(new[2]) == []
    assert deprecations(old[2]) == [
        "warning: hyperplan eval mcts is deprecated; use hyperplan search run",
        "warning: --budget is deprecated; use --rollouts"]
    strip = [{k: v for k, v in json.loads(out).items() if k not in ("methods", "seconds")}
             for out in (new[1], old[1])]
    assert strip[0] == strip[1] and strip[0]["budget"] == 2
    cases = [{m: r["case_acc"] for m, r in json.loads(out)["methods"].items()}
             for out in (new[1], old[1])]
    assert cases[0] == cases[1]


def test_old_mcts_bench_runs_as_search_bench() -> None:
    for args in (("search", "bench", "--iterations", "4"), ("eval", "mcts-bench", "--budget",
                                                             "4")):
        code, out, err = invoke(*args, "--tasks", "1", "--json")
        assert code == 0, err
        assert json.loads(out)["budget"] == 4
        assert len(deprecations(err)) == (2 if args[0] == "eval" else 0)


@pytest.mark.parametrize(("args", "message"), [
    (("eval", "mcts-sweep", "--suite", "toy", "--budgets", "0,8", "--out", "x"),
     "every --rollouts value must be >= 1 and every --lams value >= 0"),
    (("eval", "mcts-reasoners", "--suite", "toy", "--tasks", "0", "--budget", "4"),
     "--tasks must be >= 1, got 0"),
    (("search", "reasoners", "--suite", "toy", "--rollouts", "0"),
     "--rollouts and --branching must be >= 1, --c and --lam >= 0"),
    (("bench", "links", "--tools", "0"), "tool counts must be positive, got 0"),
    (("bench", "scale", "--tools", "0"), "tool counts must be positive, got 0"),
    (("bench", "links", "--sizes", "0"), "tool counts must be positive, got 0"),
    (("bench", "scale", "--sizes", ""), "give at least one tool count, e.g. --sizes 1000,10000"),
])
def test_old_and_new_names_check_the_same(args: tuple[str, ...], message: str) -> None:
    code, _, err = invoke(*args)
    assert code in (1, 2) and message in err, err
    old = [a for a in args if a in ("--budgets", "--out", "--budget", "--tools")]
    assert len(deprecations(err)) == len(old) + (args[0] == "eval")


def test_retrieval_takes_catalog_and_tasks_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    expected = f"error: {empty}: no task with a request and gold tools to score"
    new = invoke("eval", "retrieval", "--suite", "custom", "--catalog", "demo", "--tasks-file",
                 str(empty), "--embedder", "hashing")
    old = invoke("eval", "retrieval", "--suite", "custom", "--tools", "demo", "--tasks",
                 str(empty), "--embedder", "hashing")
    assert new[0] == old[0] == 1
    assert new[2].strip() == expected
    assert old[2].splitlines() == ["warning: --tools is deprecated; use --catalog",
                                   "warning: --tasks is deprecated; use --tasks-file", expected]


def test_eval_run_scripted_report_and_old_spellings(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    base = ["eval", "run", "--suite", "demo", "--agents", "react", "--limit", "2",
            "--workers", "1", "--store", str(store)]
    code, out, err = invoke(*base, "--scripted")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("react: success ") and lines[1].startswith("note: LLM: scripted")
    run_id = err.split("report: hyperplan eval report ")[1].split()[0]
    code, out_old, err_old = invoke(*base, "--llm", "scripted")
    assert code == 0 and out_old == out
    assert deprecations(err_old) == ["warning: --llm scripted is deprecated; use --scripted"]
    code, _, err_both = invoke(*base, "--scripted", "--llm", "http://127.0.0.1:9/v1")
    assert code == 1 and "give --llm URL or --scripted, not both" in err_both
    none = runner.invoke(app, [*base, "--llm", "none"])  # react needs a model
    assert none.exit_code == 1 and "need --llm URL (an endpoint) or --scripted" in str(
        none.exception)
    assert deprecations(none.stderr) == ["warning: --llm none is deprecated; use no --llm"]

    new_dir, old_dir = tmp_path / "new", tmp_path / "old"
    code, _, err = invoke("eval", "report", run_id, "--store", str(store), "-o", str(new_dir))
    assert code == 0 and deprecations(err) == [], err
    code, _, err = invoke("report", run_id, "--store", str(store), "--out", str(old_dir))
    assert code == 0, err
    assert deprecations(err) == ["warning: hyperplan report is deprecated; use hyperplan eval "
                                 "report", "warning: --out is deprecated; use --output"]
    assert sorted(p.name for p in new_dir.iterdir()) == sorted(p.name for p in old_dir.iterdir())


def test_the_console_script_prints_one_line_per_old_name(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "hyperplan", "report", "abc", "--store",
                           str(tmp_path / "none.sqlite"), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "warning: hyperplan report is deprecated; use hyperplan eval report",
        "warning: --out is deprecated; use --output",
        f"error: {tmp_path / 'none.sqlite'}: run store not found"]


def test_rename_args_forms() -> None:
    renamed = {"--out": "--output"}
    assert rename_args(["--out", "d", "--out=e", "--", "--out"], renamed) == \
        ["--output", "d", "--output=e", "--", "--out"]
    assert rename_args(["--outer", "x"], renamed) == ["--outer", "x"]


def test_no_option_name_has_two_meanings() -> None:
    """The names issue 24 found overloaded now mean one thing wherever they appear."""
    meaning: dict[str, set[str]] = {}
    for path, command in _leaves(typer.main.get_command(app)):
        if command.hidden:
            continue
        for param in command.params:
            for name in param.opts:
                if name in ("--tasks", "--tools", "--budget", "--llm", "--rollouts"):
                    kind = param.type_descriptor.annotation  # type: ignore[attr-defined]
                    meaning.setdefault(name, set()).add(f"{path}: {kind}")
    assert {m.split(": ")[1] for m in meaning["--tasks"]} == {"<class 'int'>"}
    assert {m.split(": ")[1] for m in meaning["--llm"]} == {"<class 'str'>"}
    assert {m.split(":")[0] for m in meaning["--tools"]} == {"run"}  # the catalog source
    budget_helps = {p.help for _, c in _leaves(typer.main.get_command(app)) for p in c.params
                    if "--budget" in p.opts and not c.hidden}
    assert all("tools" in (h or "") for h in budget_helps), budget_helps
    embedder_helps = {(p.help or "").split(";")[0] for _, c in _leaves(
        typer.main.get_command(app)) for p in c.params if "--embedder" in p.opts}
    assert len(embedder_helps) == 1, embedder_helps


def _leaves(command: object, path: str = "") -> list[tuple[str, object]]:
    children = getattr(command, "commands", None)
    if children is None:
        return [(path, command)]
    return [leaf for name, child in children.items()
            for leaf in _leaves(child, f"{path} {name}".strip())]


def _renamed() -> list[tuple[str, str, str]]:
    return [(path, old, new) for path, command in _leaves(typer.main.get_command(app))
            if not command.hidden for old, new in getattr(command, "renamed", {}).items()]


def test_every_command_lists_its_renamed_options() -> None:
    assert {(p, o) for p, o, _ in _renamed()} == {
        ("search run", "--budget"), ("search reasoners", "--budget"),
        ("search bench", "--budget"), ("search sweep", "--budgets"), ("search sweep", "--out"),
        ("eval report", "--out"), ("eval retrieval", "--tools"), ("eval retrieval", "--tasks"),
        ("bench links", "--tools"), ("bench scale", "--tools")}


@pytest.mark.parametrize(("path", "old", "new"), _renamed())
def test_every_old_option_is_accepted_on_the_new_command(path: str, old: str, new: str) -> None:
    code, out, err = invoke(*path.split(), old, "1", "--help")
    assert code == 0, err
    assert deprecations(err) == [f"warning: {old} is deprecated; use {new}"]
    assert new in out and f"{old} " not in out.replace(new, "")  # hidden: help shows the new
