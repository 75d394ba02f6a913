"""The command line starts fast: ``hyperplan --help`` (and ``--version``) loads no command
module (no Typer group), the numeric stack or the LLM SDK, and its static one-line helps say
what the commands themselves say."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hyperplan.cli import COMMANDS, load_command


@pytest.mark.parametrize("option", ["--help", "--version"])
def test_root_help_loads_nothing_heavy(option: str) -> None:
    code = (f"import sys; sys.argv = ['hyperplan', '{option}']\n"
            "from hyperplan.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "heavy = [m for m in ('numpy', 'scipy', 'openai', 'rich', 'hyperplan.graph',"
            " 'hyperplan.search', 'hyperplan_bench.eval', 'matplotlib') if m in sys.modules]\n"
            "heavy += [m for m in sys.modules if m.startswith('hyperplan.cli.')]\n"
            "print('HEAVY', heavy)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, check=True)
    assert "HEAVY []" in result.stdout
    for name in COMMANDS if option == "--help" else ():
        assert name in result.stdout


def test_static_helps_match_the_commands() -> None:
    for name, entry in COMMANDS.items():
        command = load_command(name)
        assert command.get_short_help_str(500) == entry.help, name


def test_groups_get_their_extra_commands() -> None:
    graph = load_command("graph")
    assert "learn" in graph.commands
    evals = load_command("eval")
    assert {"retrieval", "run", "report"} <= set(evals.commands)
    assert {"run", "sweep", "reasoners", "bench"} <= set(load_command("search").commands)
