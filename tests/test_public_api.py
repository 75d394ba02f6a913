"""Each package root exports the names a library user needs, lazily: every name in
``__all__`` resolves, and importing a root loads none of its submodules."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

ROOTS = ("hyperplan.search", "hyperplan.plan", "hyperplan.execute", "hyperplan.importers",
         "hyperplan_bench.eval", "hyperplan.retrieve", "hyperplan.select")


@pytest.mark.parametrize("root", ROOTS)
def test_every_exported_name_resolves(root: str) -> None:
    module = importlib.import_module(root)
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{root}.{name}"
    with pytest.raises(AttributeError, match="has no attribute"):
        module.no_such_name  # noqa: B018


def test_the_readme_names_import_from_package_roots() -> None:
    from hyperplan.plan import DOEConfig, ground, select_support_graph
    from hyperplan.search import HyperMCTS, MCTSConfig, uct

    assert HyperMCTS.__name__ == "HyperMCTS" and isinstance(MCTSConfig(), MCTSConfig)
    assert callable(uct) and callable(ground) and callable(select_support_graph)
    assert DOEConfig().top_k >= 1


@pytest.mark.parametrize("root", ["hyperplan.search", "hyperplan.plan", "hyperplan.execute",
                                  "hyperplan.importers", "hyperplan_bench.eval"])
def test_importing_a_root_loads_no_submodule(root: str) -> None:
    code = (f"import sys, {root}; "
            f"print([m for m in sys.modules if m.startswith('{root}.')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "[]"
