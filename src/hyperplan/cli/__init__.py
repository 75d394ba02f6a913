"""The ``hyperplan`` command line, grouped by what users do (:func:`commands`: the library's
own, :data:`CORE_COMMANDS`, and those an installed package adds through an entry point, as
hyperplan-bench adds ``eval`` and ``bench``); the options the commands share, one meaning per
name, are in :mod:`hyperplan.cli.options`, and old names stay as hidden aliases
(:func:`aliases`, :func:`hyperplan.cli.options.deprecated_alias`). ``COMMANDS`` and
``ALIASES`` are the two as dicts, read on first access.

Commands load lazily: ``hyperplan --help`` reads the one-line helps of :func:`commands` and a
command imports only its own module, so starting the CLI does not load the numeric stack or
the LLM SDK. :data:`app` (the whole command line as one Typer app, for tests and for
embedding) is assembled on first access.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    import typer

HELP = "Plan and act over Tool-Schema Hypergraphs (HyperAgent) and HyperMCTS."


@dataclass(frozen=True)
class Entry:
    """A top-level command: ``target`` (``module:attribute``, a Typer group or a command
    function), its one-line ``help`` for ``hyperplan --help`` (a test keeps it equal to the
    loaded command's), and commands defined elsewhere that join a group (``(name,
    module:function)``)."""

    target: str
    help: str
    extra: tuple[tuple[str, str], ...] = ()


CORE_COMMANDS: dict[str, Entry] = {
    "demo": Entry("hyperplan.cli.demo:demo", "Run the agent on the demo world's tasks "
                  "(LLM-free unless an endpoint is configured)."),
    "run": Entry("hyperplan.cli.run_cmds:run", "Run the agent: LLM-free on a structured "
                 "--goal, or the full agent on REQUEST."),
    "serve": Entry("hyperplan.cli.serve_cmd:serve_cmd", "Serve tools as an LLM-free MCP gateway."),
    "graph": Entry("hyperplan.cli.graph_cmds:graph_app", "Build and inspect Tool-Schema "
                   "Hypergraphs.", (("learn", "hyperplan.cli.graph_learn:learn_cmd"),
                                   ("annotate", "hyperplan.cli.graph_annotate:annotate_cmd"))),
    "plan": Entry("hyperplan.cli.plan_cmds:plan_app", "Tool Context Graph and DOE on a saved "
                  "graph."),
    "trace": Entry("hyperplan.cli.run_cmds:trace_app", "Read run traces."),
}
"""The library's own top-level commands, grouped by what users do: run the agent (``demo``,
``run``, and ``serve``, which runs the tools for another agent), build and read graphs
(``graph``, ``plan``), read traces (``trace``). Installed packages add
commands through the entry-point group :data:`COMMAND_GROUP` (:func:`commands`)."""

COMMAND_GROUP = "hyperplan.commands"
"""Entry points adding top-level commands: ``name = "module:ENTRY"``, an :class:`Entry`
(hyperplan-bench adds ``search``, ``eval`` and ``bench`` this way)."""

ALIAS_GROUP = "hyperplan.aliases"
"""Entry points adding hidden old names: ``name = "module:ALIAS"``, a ``(module:function,
new command)`` pair."""

LAB_COMMANDS = ("search", "eval", "bench", "report")
"""Commands of the benchmark lab (the hyperplan-bench distribution): without it installed,
running one says where it lives and how to install it."""

LISTING = ("demo", "run", "serve", "graph", "plan", "search", "eval", "bench", "trace")
"""The order of ``hyperplan --help``, by what users do (run, graphs, search, evaluate, measure,
read traces); commands it does not name come last."""

LAB_INSTALL = ("hyperplan {name} is part of hyperplan-bench, the benchmark lab, which is not "
               "installed; install it beside hyperplan (from a checkout of the repository: "
               "pip install -e ./bench)")

_PLUGINS: dict[str, dict[str, Any]] = {}


def _plugins(group: str) -> dict[str, Any]:
    """The objects the installed entry points of ``group`` name, by entry-point name, loaded
    once (:mod:`hyperplan.plugins`: cheap enough for ``hyperplan --help``); one that cannot be
    loaded is skipped with a warning naming it."""
    if group not in _PLUGINS:
        from hyperplan.plugins import entry_points

        found: dict[str, Any] = {}
        for point in entry_points(group):
            try:
                found[point.name] = point.load()
            except Exception as exc:  # a broken plugin must not take the CLI down
                warnings.warn(f"cannot load {group} entry point {point.name!r} "
                              f"({point.value}): {exc}", stacklevel=2)
        _PLUGINS[group] = found
    return _PLUGINS[group]


def commands() -> dict[str, Entry]:
    """Every top-level command: :data:`CORE_COMMANDS`, then those installed packages add
    (:data:`COMMAND_GROUP`; a name the core has stays the core's)."""
    added = {name: entry for name, entry in _plugins(COMMAND_GROUP).items()
             if name not in CORE_COMMANDS and isinstance(entry, Entry)}
    every = {**CORE_COMMANDS, **added}
    place = {name: i for i, name in enumerate(LISTING)}
    return {name: every[name] for name in sorted(every, key=lambda n: place.get(n, len(place)))}


def aliases() -> dict[str, tuple[str, str]]:
    """Old top-level names (hidden): ``name -> (module:function, new command)``, from
    :data:`ALIAS_GROUP`; each prints one deprecation line and runs the new command."""
    return {name: alias for name, alias in _plugins(ALIAS_GROUP).items()
            if name not in CORE_COMMANDS and isinstance(alias, tuple)}


def _resolve(target: str) -> Any:
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _unwrap(doc: str) -> str:
    """A docstring as help text: paragraphs kept, the line breaks inside each one dropped
    (Typer prints them as they are, so wrapped source lines would show as ragged help)."""
    return "\n\n".join(" ".join(p.split()) for p in inspect.cleandoc(doc).split("\n\n"))


def _unwrap_help(group: typer.Typer) -> None:
    """Give every command of ``group`` and its sub-groups its docstring, unwrapped, as help,
    and the command class that accepts its deprecated option names
    (:func:`hyperplan.cli.options.command_class`)."""
    from typer.core import TyperCommand

    from hyperplan.cli.options import command_class

    for info in group.registered_commands:
        if info.help is None and info.callback is not None and info.callback.__doc__:
            info.help = _unwrap(info.callback.__doc__)
        if info.cls in (None, TyperCommand) and info.callback is not None:
            info.cls = command_class(info.callback) or info.cls
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            _unwrap_help(sub.typer_instance)


def typer_app(name: str) -> typer.Typer:
    """The Typer app of top-level command ``name``: its group with the commands that join it,
    or a one-command app; help texts unwrapped."""
    import typer

    entry = commands()[name]
    target = _resolve(entry.target)
    if isinstance(target, typer.Typer):
        present = {info.name for info in target.registered_commands}
        for sub, where in entry.extra:
            if sub not in present:
                target.command(sub)(_resolve(where))
        group = target
    else:
        group = typer.Typer(pretty_exceptions_enable=False, add_completion=False)
        group.command(name)(target)
    _unwrap_help(group)
    return group


def _group_class() -> type:
    """The root group class, made on demand (Typer's own group, so that the commands it loads,
    which are Typer commands, run under the same command-line machinery)."""
    from typer.core import TyperCommand, TyperGroup

    class LazyGroup(TyperGroup):
        """Lists :func:`commands` from their static help and imports a command only when it
        is run (or its own ``--help`` is asked for); a lab command without the lab installed
        says how to install it (:func:`_lab_missing`)."""

        listing = False

        def list_commands(self, ctx: Any) -> list[str]:
            return list(commands())

        def get_command(self, ctx: Any, cmd_name: str) -> Any:
            if cmd_name in aliases() and not self.listing:
                return load_command(cmd_name)
            if cmd_name not in commands():
                return _lab_missing(cmd_name) if cmd_name in LAB_COMMANDS else None
            if self.listing:  # the root's help: a stand-in with the static help
                return TyperCommand(name=cmd_name, help=commands()[cmd_name].help)
            return load_command(cmd_name)

        def format_help(self, ctx: Any, formatter: Any) -> None:
            self.listing = True
            try:
                super().format_help(ctx, formatter)
            finally:
                self.listing = False

    return LazyGroup


def _lab_missing(name: str) -> Any:
    """A stand-in for lab command ``name`` when hyperplan-bench is not installed: whatever
    its arguments (``--help`` included), it says where the command lives and exits 1."""
    import click

    def explain() -> None:
        from hyperplan.cli.common import fail

        fail(LAB_INSTALL.format(name=name))

    return click.Command(name, callback=explain, add_help_option=False, hidden=True,
                         context_settings={"ignore_unknown_options": True,
                                           "allow_extra_args": True},
                         help=f"(needs hyperplan-bench) hyperplan {name}")


def _add_alias(app: typer.Typer, name: str) -> None:
    """Register the hidden old top-level command ``name`` (:func:`aliases`) on ``app``."""
    from hyperplan.cli.options import deprecated_alias

    target, new = aliases()[name]
    deprecated_alias(app, name, _resolve(target), name, new)


def load_command(name: str) -> Any:
    """The command-line command of top-level command ``name`` (imports its module)."""
    import typer

    wrapper = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    if name in aliases():
        _add_alias(wrapper, name)
        wrapper.command("_")(lambda: None)
    elif isinstance(_resolve(commands()[name].target), typer.Typer):
        wrapper.add_typer(typer_app(name), name=name)
    else:
        wrapper.command(name)(_resolve(commands()[name].target))
        wrapper.command("_")(lambda: None)  # two commands: get_command returns a group
    _unwrap_help(wrapper)
    return typer.main.get_command(wrapper).commands[name]  # type: ignore[attr-defined]


def root() -> Any:
    """The root command (:func:`_group_class`)."""
    import typer.main

    group = _group_class()
    version = typer.main.get_command(_version_app()).params[0]
    # plain help for the root (rich would cost a quarter second of start-up); the commands
    # keep Typer's rich help
    return group(name="hyperplan", help=HELP, no_args_is_help=True, rich_markup_mode=None,
                 params=[version])


def _show_version(value: bool) -> None:
    """``--version``: ``hyperplan <version>`` on stdout, then exit."""
    if value:
        import typer

        from hyperplan import __version__

        print(f"hyperplan {__version__}")
        raise typer.Exit()


def _version_option() -> Any:
    import typer

    return typer.Option(False, "--version", is_eager=True, callback=_show_version,
                        help="Show the version and exit.")


def _version_app() -> typer.Typer:
    """A one-command app whose only option is ``--version`` (the root takes it from here)."""
    import typer

    probe = typer.Typer(add_completion=False)

    @probe.command()
    def version(show: bool = _version_option()) -> None:  # pragma: no cover - never run
        """Show the version."""

    return probe


def _assemble() -> typer.Typer:
    """Every command in one Typer app (what :data:`app` is)."""
    import typer

    whole = typer.Typer(name="hyperplan", help=HELP, no_args_is_help=True,
                        pretty_exceptions_enable=False, add_completion=False)

    @whole.callback()
    def version(show: bool = _version_option()) -> None:
        """Plan and act over Tool-Schema Hypergraphs (HyperAgent) and HyperMCTS."""

    for name, entry in commands().items():
        target = _resolve(entry.target)
        if isinstance(target, typer.Typer):
            whole.add_typer(typer_app(name), name=name)
        else:
            whole.command(name)(target)
    for name in aliases():
        _add_alias(whole, name)
    _unwrap_help(whole)
    return whole


_APP: list[typer.Typer] = []


def __getattr__(name: str) -> Any:
    if name == "app":  # PEP 562: assembled on first access
        if not _APP:
            _APP.append(_assemble())
        return _APP[0]
    if name == "COMMANDS":
        return commands()
    if name == "ALIASES":
        return aliases()
    raise AttributeError(f"module 'hyperplan.cli' has no attribute {name!r}")


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    """Warnings as ``warning: <message>`` lines, not Python's ``file:line: Category`` form
    followed by a source line."""
    from hyperplan.cli.common import print_warning

    print_warning(str(message))


def main() -> None:
    """Console-script entry point: hyperplan errors, and files the user named that cannot be
    read or written, become one clear line and exit code 1; warnings print as one line."""
    from hyperplan.errors import HyperplanError
    from hyperplan.secrets import install_log_redaction

    warnings.showwarning = _show_warning
    install_log_redaction()
    try:
        root().main(prog_name="hyperplan")
    except HyperplanError as exc:
        _fail(str(exc))
    except OSError as exc:  # e.g. -o naming a directory, --out naming a file
        where = exc.filename2 or exc.filename
        reason = "exists and is not a directory" if isinstance(exc, FileExistsError) \
            else exc.strerror
        _fail(f"{where}: {reason}" if where and reason else str(exc))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)


def _fail(message: str) -> None:
    from hyperplan.cli.common import fail

    fail(message)


__all__ = ["ALIASES", "COMMANDS", "CORE_COMMANDS", "Entry", "app", "commands", "main"]
