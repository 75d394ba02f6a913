"""The ``hyperplan`` command line: graph building and inspection, benchmarks, demo."""

from __future__ import annotations

import inspect
import sys
import warnings
from typing import TextIO

import typer

from hyperplan.cli.bench_cmds import bench_app
from hyperplan.cli.common import console, fail, print_warning
from hyperplan.cli.demo import demo
from hyperplan.cli.eval_cmds import eval_app
from hyperplan.cli.eval_retrieval import retrieval_cmd
from hyperplan.cli.eval_run import eval_run_cmd, report_cmd
from hyperplan.cli.graph_cmds import graph_app
from hyperplan.cli.graph_learn import learn_cmd
from hyperplan.cli.plan_cmds import plan_app
from hyperplan.cli.run_cmds import run, trace_app
from hyperplan.errors import HyperplanError
from hyperplan.secrets import install_log_redaction

app = typer.Typer(
    name="hyperplan",
    help="Plan and act over Tool-Schema Hypergraphs (HyperAgent) and HyperMCTS.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
graph_app.command("learn")(learn_cmd)
app.add_typer(graph_app, name="graph")
eval_app.command("retrieval")(retrieval_cmd)
eval_app.command("run")(eval_run_cmd)
app.add_typer(eval_app, name="eval")
app.add_typer(plan_app, name="plan")
app.add_typer(bench_app, name="bench")
app.command()(demo)
app.command()(run)
app.command("report")(report_cmd)
app.add_typer(trace_app, name="trace")


def _unwrap(doc: str) -> str:
    """A docstring as help text: paragraphs kept, the line breaks inside each one dropped
    (Typer prints them as they are, so wrapped source lines would show as ragged help)."""
    return "\n\n".join(" ".join(p.split()) for p in inspect.cleandoc(doc).split("\n\n"))


def _unwrap_help(group: typer.Typer) -> None:
    """Give every command of ``group`` and its sub-groups its docstring, unwrapped, as help."""
    for info in group.registered_commands:
        if info.help is None and info.callback is not None and info.callback.__doc__:
            info.help = _unwrap(info.callback.__doc__)
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            _unwrap_help(sub.typer_instance)


_unwrap_help(app)


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    """Warnings as ``warning: <message>`` lines, not Python's ``file:line: Category`` form
    followed by a source line."""
    print_warning(str(message))


def main() -> None:
    """Console-script entry point: hyperplan errors, and files the user named that cannot be
    read or written, become one clear line and exit code 1; warnings print as one line."""
    warnings.showwarning = _show_warning
    install_log_redaction()
    try:
        app()
    except HyperplanError as exc:
        fail(str(exc))
    except OSError as exc:  # e.g. -o naming a directory, --out naming a file
        where = exc.filename2 or exc.filename
        reason = "exists and is not a directory" if isinstance(exc, FileExistsError) \
            else exc.strerror
        fail(f"{where}: {reason}" if where and reason else str(exc))
    except KeyboardInterrupt:
        console.print("[red]interrupted[/red]")
        sys.exit(130)


__all__ = ["app", "main"]
