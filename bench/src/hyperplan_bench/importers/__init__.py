"""Importers of benchmark datasets: each turns one suite's tool descriptions into a
:class:`hyperplan.catalog.Catalog` and, where the suite has them, its tasks with gold calls
(:mod:`hyperplan_bench.importers.gold`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hyperplan._lazy import lazy_exports

if TYPE_CHECKING:
    from hyperplan_bench.importers.appworld import load_appworld
    from hyperplan_bench.importers.gold import GoldCall, GoldFlow, GoldTask
    from hyperplan_bench.importers.nestful import load_nestful, load_nestful_tasks
    from hyperplan_bench.importers.nestools import load_nestools, load_nestools_tasks
    from hyperplan_bench.importers.sealtools import load_sealtools, load_sealtools_tasks
    from hyperplan_bench.importers.stabletoolbench import load_stabletoolbench
    from hyperplan_bench.importers.tau2 import load_tau2_catalog

# each submodule and the public names it defines (imported when first used)
_EXPORTS = {name: module for module, names in (
    ("appworld", ("load_appworld",)),
    ("gold", ("GoldCall", "GoldFlow", "GoldTask")),
    ("nestful", ("load_nestful", "load_nestful_tasks")),
    ("nestools", ("load_nestools", "load_nestools_tasks")),
    ("sealtools", ("load_sealtools", "load_sealtools_tasks")),
    ("stabletoolbench", ("load_stabletoolbench",)),
    ("tau2", ("load_tau2_catalog",)),
) for name in names}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "GoldCall", "GoldFlow", "GoldTask", "load_appworld", "load_nestful", "load_nestful_tasks",
    "load_nestools", "load_nestools_tasks", "load_sealtools", "load_sealtools_tasks",
    "load_stabletoolbench", "load_tau2_catalog",
]
