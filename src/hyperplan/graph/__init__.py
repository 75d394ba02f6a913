"""The Tool-Schema Hypergraph (seed 000, Preliminaries and HyperGraph Construction)."""
