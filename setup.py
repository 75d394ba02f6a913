"""Optional compiled search core (issue 5, bookkeeping per iteration).

``HYPERPLAN_COMPILE=1 pip install .`` compiles the HyperMCTS bookkeeping modules
(:data:`SEARCH_CORE`) to C extensions with mypyc; the same source files run as plain Python
otherwise (the default, and always for editable installs, where a compiled module would shadow
later edits of its ``.py``). ``hyperplan.search.compiled_core()`` tells which one is loaded.
The compiled build makes the same decisions bit for bit: ``tests/test_search_golden.py`` pins
them, and ``.ci/run`` runs the search tests against a compiled wheel too.
"""

from __future__ import annotations

import os
import sys

from setuptools import setup

SEARCH_CORE = ("tree", "trajectory_hypergraph", "timing", "config", "common", "selection",
               "mcts", "baselines", "parts.base", "parts.ledger", "parts.designs",
               "parts.pruning", "parts.free_last", "parts.ending_last", "parts.progressive",
               "parts.evidence_widening", "parts.open_parts", "parts.policy_rollout",
               "parts.prior_guided", "parts.scored", "parts.composed")


def compile_requested() -> bool:
    return os.environ.get("HYPERPLAN_COMPILE", "").strip().lower() in {"1", "true", "yes"}


def ext_modules() -> list:  # type: ignore[type-arg]
    if not compile_requested():
        return []
    if "editable_wheel" in sys.argv:
        print("HYPERPLAN_COMPILE ignored for an editable install (it would shadow the sources)",
              file=sys.stderr)
        return []
    from mypyc.build import mypycify

    sources = [f"src/hyperplan/search/{name.replace('.', '/')}.py" for name in SEARCH_CORE]
    return mypycify(["--config-file=_build/mypyc.ini", *sources],
                    opt_level="3", group_name="hyperplan_search")


setup(ext_modules=ext_modules())
