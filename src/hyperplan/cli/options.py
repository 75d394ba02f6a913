"""Options shared by the commands, one meaning per name, and the deprecated old names.

The vocabulary of the command line:

* ``--tasks N`` is always a count of generated tasks; a file of tasks is ``--tasks-file``.
* ``--tools`` is always a catalog source (``KIND:LOCATION``); catalog sizes are ``--sizes``
  and a benchmark's own tool files ``--catalog``.
* ``--budget`` is always a tool budget (at most this many tools); search budgets are
  ``--rollouts`` (rollouts per task and method) and ``--iterations`` (search iterations).
* ``-o/--output`` is always where a command writes (a file or a directory).
* ``--llm`` is always an OpenAI-compatible base URL; the scripted test double is
  ``--scripted``.
* ``--embedder`` is always the text embedder, with one help text (the default, which some
  commands keep different for their own purpose, is shown beside it).

Old names keep working: a command lists its renamed options with :func:`renamed_options`,
and a hidden alias of a moved command is registered with :func:`deprecated_alias`; each
prints one ``warning: ... is deprecated; use ...`` line on stderr and behaves as the new
name.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, ClassVar, TypeVar

import typer
from typer.core import TyperCommand

F = TypeVar("F", bound=Callable[..., Any])

RENAMED = "__hyperplan_renamed_options__"

EMBEDDER_HELP = ("text embedder: auto (MiniLM when installed, else hashing, with a warning) | "
                 "minilm | hashing (lexical, no model) | none (no description similarity) | "
                 "openai:MODEL")
MODEL_HELP = "model name (else HYPERPLAN_LLM_MODEL, else the server's first model)"
SPLIT_HELP = "all | dev (every 5th task) | heldout"
JSON_HELP = "print only the JSON object"

# Options with one help text wherever they appear (typer reads the Annotated metadata; each
# command gives the default).
Tasks = Annotated[int, typer.Option("--tasks", help="number of generated tasks")]
Rollouts = Annotated[int, typer.Option("--rollouts",
                                       help="rollout budget B per task and method")]
Iterations = Annotated[int, typer.Option("--iterations", help="search iterations per task")]
ToolBudget = Annotated[int, typer.Option("--budget", help="at most this many tools")]
Model = Annotated[str | None, typer.Option("--model", help=MODEL_HELP)]
Split = Annotated[str, typer.Option("--split", help=SPLIT_HELP)]
AsJson = Annotated[bool, typer.Option("--json", help=JSON_HELP)]
Sizes = Annotated[str, typer.Option("--sizes", help="tool counts, comma-separated (10k = "
                                    "10000)")]
BaseUrl = Annotated[str | None, typer.Option("--base-url", help="base URL for OpenAPI tools")]
Headers = Annotated[list[str], typer.Option(
    "--header", help="HTTP header 'Name: value' for OpenAPI tools ($VAR reads env; redacted "
    "by value)")]
MaxResponseBytes = Annotated[int, typer.Option(
    "--max-response-bytes", help="cap on an HTTP response body of an OpenAPI tool (reading "
    "stops there, marked) and on a result of an MCP server tool (discarded while read: the "
    "call gets at most its first MiB, marked, and the server is restarted)")]
IdempotencyKeyHeader = Annotated[str | None, typer.Option(
    "--idempotency-key-header", help="send a per-call idempotency key in this header (e.g. "
    "Idempotency-Key) with HTTP writes, which makes them safe to retry")]
AllowUnsafeTools = Annotated[bool, typer.Option(
    "--allow-unsafe-tools/--no-allow-unsafe-tools", help="let a python: source expose a "
    "module that acts on the host (os, subprocess, shutil ...): refused by default")]


def embedder_option(default: str, note: str = "") -> Any:
    """The ``--embedder`` option with its one help text (``note``: what this command adds,
    e.g. which values it takes)."""
    return typer.Option(default, "--embedder",
                        help=EMBEDDER_HELP + (f"; {note}" if note else ""))


def llm_option(purpose: str) -> Any:
    """The ``--llm URL`` option: an OpenAI-compatible base URL, used for ``purpose``."""
    return typer.Option(None, "--llm", metavar="URL",
                        help=f"OpenAI-compatible base URL: {purpose}")


def output_option(what: str) -> Any:
    """The ``-o/--output`` option (for ``Annotated``): where the command writes ``what``."""
    return typer.Option("-o", "--output", help=what)


OLD_LLM_VALUES = {"scripted": "--scripted", "none": "no --llm"}
"""``eval run``'s old ``--llm`` values that are no URL, and what replaced them."""


def deprecation(old: str, new: str) -> None:
    """The one line that says an old name still works: ``warning: OLD is deprecated; use
    NEW`` on stderr."""
    print(f"warning: {old} is deprecated; use {new}", file=sys.stderr, flush=True)


def renamed_options(renamed: Mapping[str, str]) -> Callable[[F], F]:
    """Mark a command function whose options were renamed (old name -> new name): the old
    names stay accepted (hidden) with one :func:`deprecation` line each."""

    def mark(function: F) -> F:
        setattr(function, RENAMED, dict(renamed))
        return function

    return mark


def rename_args(args: Sequence[str], renamed: Mapping[str, str]) -> list[str]:
    """``args`` with old option names replaced by the new ones (``--old VALUE`` and
    ``--old=VALUE``; nothing after ``--``), one :func:`deprecation` line per old name used."""
    result: list[str] = []
    warned: set[str] = set()
    for index, arg in enumerate(args):
        if arg == "--":
            result.extend(args[index:])
            break
        name, eq, value = arg.partition("=")
        if name in renamed:
            if name not in warned:
                warned.add(name)
                deprecation(name, renamed[name])
            arg = renamed[name] + eq + value
        result.append(arg)
    return result


class DeprecatingCommand(TyperCommand):
    """A Typer command that accepts its old option names (:attr:`renamed`) and, as the hidden
    alias of a moved command (:attr:`alias_of`: old and new command line), says so first."""

    renamed: ClassVar[Mapping[str, str]] = {}
    alias_of: ClassVar[tuple[str, str] | None] = None

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if self.alias_of is not None:
            deprecation(*self.alias_of)
        return super().parse_args(ctx, rename_args(args, self.renamed))


def command_class(function: Callable[..., Any],
                  alias_of: tuple[str, str] | None = None) -> type[TyperCommand] | None:
    """The command class for ``function``: :class:`DeprecatingCommand` with its renamed
    options (and ``alias_of``), or ``None`` (Typer's own) when nothing is deprecated."""
    renamed = getattr(function, RENAMED, None) or {}
    if not renamed and alias_of is None:
        return None
    return type("DeprecatingCommand", (DeprecatingCommand,),
                {"renamed": renamed, "alias_of": alias_of})


def deprecated_alias(group: typer.Typer, old: str, function: Callable[..., Any],
                     old_path: str, new_path: str) -> None:
    """Register ``function`` on ``group`` as the hidden command ``old``, the old name of
    ``hyperplan NEW_PATH`` (it prints one deprecation line, then runs as the new one)."""
    group.command(old, hidden=True, cls=command_class(function, (
        f"hyperplan {old_path}", f"hyperplan {new_path}")),
        help=f"Deprecated: use `hyperplan {new_path}`.")(function)
