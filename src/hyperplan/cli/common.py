"""Shared CLI helpers: consoles, errors, progress bars, embedder selection."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NoReturn

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from hyperplan.graph.links import TextEmbedder
from hyperplan.llm.budget import Budget
from hyperplan.secrets import redact_text

console = Console(stderr=True)
out = Console()


def fail(message: str, code: int = 1) -> NoReturn:
    message = redact_text(message)  # an error may quote a secret (hyperplan.secrets)
    console.print(f"[bold red]error:[/bold red] {escape(message)}", highlight=False,
                  soft_wrap=True)  # a message quoting "[/b]" or "songs[].id" is text, not markup
    sys.exit(code)


def budget_from_options(max_llm_calls: int | None, max_tokens: int | None,
                        max_tool_calls: int | None, max_seconds: float | None) -> Budget:
    """The ``--max-*`` options as a :class:`Budget`; a limit that is given must be positive
    (none given: no limit)."""
    given = {"--max-llm-calls": max_llm_calls, "--max-tokens": max_tokens,
             "--max-tool-calls": max_tool_calls, "--max-seconds": max_seconds}
    bad = [f"{name} {value}" for name, value in given.items()
           if value is not None and not value > 0]
    if bad:
        fail(f"budgets must be positive (leave one out for no limit): {', '.join(bad)}")
    return Budget(max_llm_calls, max_tokens, max_tool_calls, max_seconds)


def embedder_from_option(spec: str) -> TextEmbedder | None:
    """``none`` disables description similarity; anything else goes to get_embedder."""
    if spec.lower() == "none":
        return None
    from hyperplan.embed import get_embedder

    with printed_warnings():
        embedder = get_embedder(spec)
    return embedder


@contextmanager
def printed_warnings(limit: int = 10) -> Iterator[None]:
    """Print the warnings raised inside the block as ``warning: <message>`` lines (each
    message once, at most ``limit`` of them, then how many more), not Python's
    ``file:line: Category`` form with a source line."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            messages = list(dict.fromkeys(str(w.message) for w in caught))
            for message in messages[:limit]:
                print_warning(message)
            if len(messages) > limit:
                print_warning(f"... and {len(messages) - limit} more")


def print_warning(message: str) -> None:
    """One ``warning: <message>`` line on stderr (the message as text, not markup)."""
    console.print(f"[yellow]warning:[/yellow] {escape(redact_text(message))}",
                  highlight=False, soft_wrap=True)


@contextmanager
def stage_progress(enabled: bool = True) -> Iterator[Callable[[str, int, int], None]]:
    """A rich progress bar driven by ``(stage, done, total)`` callbacks."""
    if not enabled or not console.is_terminal:
        yield lambda stage, done, total: None
        return
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task("building", total=1)

        def update(stage: str, done: int, total: int) -> None:
            bar.update(task, description=stage, completed=done, total=max(total, 1))

        yield update
