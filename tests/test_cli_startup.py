"""The command line starts fast: ``hyperplan --help`` loads no command module, the numeric
stack or the LLM SDK, and its static one-line helps say what the commands themselves say."""

from __future__ import annotations

import subprocess
import sys

from hyperplan.cli import COMMANDS, load_command


def test_root_help_loads_nothing_heavy() -> None:
    code = ("import sys; sys.argv = ['hyperplan', '--help']\n"
            "from hyperplan.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "heavy = [m for m in ('numpy', 'scipy', 'openai', 'rich', 'hyperplan.graph')"
            " if m in sys.modules]\n"
            "print('HEAVY', heavy)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, check=True)
    assert "HEAVY []" in result.stdout
    for name in COMMANDS:
        assert name in result.stdout


def test_static_helps_match_the_commands() -> None:
    for name, entry in COMMANDS.items():
        command = load_command(name)
        assert command.get_short_help_str(500) == entry.help, name


def test_groups_get_their_extra_commands() -> None:
    graph = load_command("graph")
    assert "learn" in graph.commands
    evals = load_command("eval")
    assert {"retrieval", "run"} <= set(evals.commands)
