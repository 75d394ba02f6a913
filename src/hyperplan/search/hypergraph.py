"""Deprecated name of :mod:`hyperplan.search.trajectory_hypergraph` (the search's
cross-trajectory hypergraph, :class:`~hyperplan.search.trajectory_hypergraph.TrajectoryHypergraph`;
"Hypergraph" alone is the Tool-Schema Hypergraph, :class:`hyperplan.graph.Hypergraph`). Every
name still resolves here, the same object, with a :class:`DeprecationWarning`; this module goes
in the next release."""

from __future__ import annotations

import warnings
from typing import Any

from hyperplan.search import trajectory_hypergraph as _moved

__all__: list[str] = []


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    value = getattr(_moved, name)  # an AttributeError names the new module
    warnings.warn(f"hyperplan.search.hypergraph is renamed hyperplan.search.trajectory_hypergraph "
                  f"(reading {name!r}); the old module goes in the next release",
                  DeprecationWarning, stacklevel=2)
    return value


def __dir__() -> list[str]:
    return dir(_moved)
