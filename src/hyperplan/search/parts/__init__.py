"""The parts of HyperMCTS' tree designs (:mod:`hyperplan.search.parts.base`: the protocols and
:class:`~hyperplan.search.parts.base.Design`; one small module per part;
:mod:`hyperplan.search.parts.designs`: the designs we measured). Import the part modules
directly; this package imports nothing itself, so the search core stays light."""
