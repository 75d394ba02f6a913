"""HyperMCTS: hypergraph-augmented tree search for long-horizon planning (seed 003)."""

from __future__ import annotations

import importlib

COMPILED_MODULES = ("tree", "hypergraph", "common", "mcts", "baselines")
"""The bookkeeping modules ``HYPERPLAN_COMPILE=1 pip install .`` compiles with mypyc."""


def compiled_core() -> bool:
    """Whether the search bookkeeping runs compiled: every module of :data:`COMPILED_MODULES`
    was loaded from a C extension rather than from its ``.py`` source."""
    for name in COMPILED_MODULES:
        path = getattr(importlib.import_module(f"hyperplan.search.{name}"), "__file__", "") or ""
        if path.endswith(".py"):
            return False
    return True
