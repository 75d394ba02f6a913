"""Prompt templates, kept as plain text files in ``hyperplan/plan/prompts/``.

A template is a system part and a user part separated by a line ``---``; placeholders are
``$name`` (:class:`string.Template`), so JSON braces in a template need no escaping.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from string import Template

from hyperplan.errors import HyperplanError

PROMPT_NAMES = ("interpret", "plan", "refine", "bind", "repair", "react", "planexec_plan",
                "planexec_step")


@cache
def load_template(name: str) -> str:
    """The text of prompt ``name`` (one of :data:`PROMPT_NAMES`)."""
    if name not in PROMPT_NAMES:
        raise HyperplanError(f"unknown prompt {name!r}; known: {', '.join(PROMPT_NAMES)}")
    return resources.files("hyperplan.plan").joinpath("prompts", f"{name}.txt").read_text("utf-8")


def render(name: str, **values: object) -> tuple[str, str]:
    """(system, user) text of prompt ``name`` with every ``$placeholder`` filled; a missing
    value is an error, not a silent blank."""
    text = load_template(name)
    system, sep, user = text.partition("\n---\n")
    if not sep:
        system, user = "", text
    fill = {k: str(v) for k, v in values.items()}
    try:
        return (Template(system).substitute(fill).strip(), Template(user).substitute(fill).strip())
    except KeyError as exc:
        raise HyperplanError(f"prompt {name!r} needs a value for {exc}") from None
