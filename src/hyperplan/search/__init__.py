"""HyperMCTS: hypergraph-augmented tree search for long-horizon planning (seed 003)."""
