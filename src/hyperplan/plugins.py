"""Entry points of installed distributions, read without :mod:`importlib.metadata`.

Installed packages extend hyperplan through entry-point groups (commands of the ``hyperplan``
command line, :data:`hyperplan.cli.COMMAND_GROUP`; catalog source kinds,
:data:`hyperplan.sources.SOURCE_GROUP`); hyperplan-bench, the benchmark lab, adds its commands
and the benchmark datasets this way, and the library never imports it. ``hyperplan --help``
lists those commands, so reading the groups must be cheap: importing
:mod:`importlib.metadata` alone costs about 40 ms (email, zipfile, csv), more than the rest
of the listing. This module reads the ``entry_points.txt`` of each ``*.dist-info`` and
``*.egg-info`` directory on :data:`sys.path` itself (the first distribution of a name wins,
as with :mod:`importlib.metadata`), and imports a point's object only when asked.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Point:
    """One entry point: ``name = module:attribute`` in group ``group`` of ``distribution``."""

    group: str
    name: str
    value: str
    distribution: str

    def load(self) -> Any:
        """The object the point names (imports its module)."""
        module, _, attribute = self.value.partition(":")
        target: Any = importlib.import_module(module.strip())
        for part in attribute.split("[")[0].strip().split(".") if attribute else ():
            target = getattr(target, part)
        return target


def _metadata_dirs() -> list[tuple[str, str]]:
    """``(distribution name, metadata directory)`` of every distribution on :data:`sys.path`,
    the first of each name only."""
    seen: set[str] = set()
    found: list[tuple[str, str]] = []
    for entry in sys.path:
        try:
            names = sorted(os.listdir(entry or "."))
        except OSError:  # a zip file, a missing directory
            continue
        for name in names:
            stem, dot, suffix = name.rpartition(".")
            if not dot or suffix not in ("dist-info", "egg-info"):
                continue
            dist = stem.split("-")[0].lower().replace("-", "_").replace(".", "_")
            if dist not in seen:
                seen.add(dist)
                found.append((dist, os.path.join(entry or ".", name)))
    return found


def _parse(text: str, group: str, distribution: str) -> list[Point]:
    """The points of ``group`` in an ``entry_points.txt`` (INI: ``[group]``, ``name = value``)."""
    points: list[Point] = []
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
        elif section == group and "=" in line:
            name, _, value = line.partition("=")
            points.append(Point(group, name.strip(), value.strip(), distribution))
    return points


def entry_points(group: str) -> list[Point]:
    """The entry points of ``group`` in the installed distributions, sorted by name; an
    unreadable metadata file is skipped."""
    points: list[Point] = []
    for dist, where in _metadata_dirs():
        try:
            with open(os.path.join(where, "entry_points.txt"), encoding="utf-8") as fh:
                text = fh.read()
        except OSError:
            continue
        if f"[{group}]" in text:
            points += _parse(text, group, dist)
    return sorted(points, key=lambda p: p.name)
