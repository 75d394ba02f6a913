"""hyperplan: planning and acting over Tool-Schema Hypergraphs (HyperAgent) and HyperMCTS."""

__version__ = "0.1.0"
