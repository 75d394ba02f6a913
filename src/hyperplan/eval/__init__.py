"""Evaluation: benchmarks with stable JSON contracts."""
