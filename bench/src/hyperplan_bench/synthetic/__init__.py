"""Synthetic tool catalogs and hypergraphs for scale benchmarks (data generators, not
evaluation): :func:`synthetic_catalog` (a deterministic API marketplace of any size, for link
inference), :func:`synthetic_hypergraph` (a Tool-Schema Hypergraph drawn directly as arrays,
up to millions of tools), :class:`RandomWordEmbedder` (a fast bag-of-words embedder for them)
and :func:`synthetic_expectations` (the id flows a catalog's links should find).

Modules: :mod:`.words` (word lists), :mod:`.templates` (description sentences), :mod:`.app`
and :mod:`.app_tools` (one app of a catalog), :mod:`.catalog`, :mod:`.expectations`,
:mod:`.hypergraph`, :mod:`.embedder`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hyperplan._lazy import lazy_exports

if TYPE_CHECKING:
    from hyperplan_bench.synthetic.catalog import synthetic_catalog
    from hyperplan_bench.synthetic.embedder import RandomWordEmbedder
    from hyperplan_bench.synthetic.expectations import (
        IdExpectation,
        id_inputs_with_producer,
        synthetic_expectations,
    )
    from hyperplan_bench.synthetic.hypergraph import MAX_IN_DEGREE, synthetic_hypergraph
    from hyperplan_bench.synthetic.words import TOOLS_PER_APP

# each submodule and the public names it defines (imported when first used)
_EXPORTS = {name: module for module, names in (
    ("catalog", ("synthetic_catalog",)),
    ("embedder", ("RandomWordEmbedder",)),
    ("expectations", ("IdExpectation", "id_inputs_with_producer", "synthetic_expectations")),
    ("hypergraph", ("MAX_IN_DEGREE", "synthetic_hypergraph")),
    ("words", ("TOOLS_PER_APP",)),
) for name in names}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "MAX_IN_DEGREE", "TOOLS_PER_APP", "IdExpectation", "RandomWordEmbedder",
    "id_inputs_with_producer", "synthetic_catalog", "synthetic_expectations",
    "synthetic_hypergraph",
]
