"""Where the tools of a ``python:`` source run: :class:`Sandbox`, the one name for it.

The command line's ``--sandbox`` (``hyperplan run`` / ``hyperplan serve``),
:func:`hyperplan.connect.tools_from_source`, the source registry's
:class:`~hyperplan.tool_sources.SourceOptions` and the gateway all take this enum. It lives in a
module of its own, importing nothing but :mod:`enum`, so that ``hyperplan serve`` can offer
the option without loading the runtimes (:mod:`hyperplan.execute.runtimes.sandbox`, which
re-exports it, implements ``subprocess``)."""

from __future__ import annotations

from enum import StrEnum


class Sandbox(StrEnum):
    """Where Python tools run: in the hyperplan process (``none``), or in a limited child
    process (``subprocess``: no network, resource limits, killed at the call's deadline)."""

    NONE = "none"
    SUBPROCESS = "subprocess"
