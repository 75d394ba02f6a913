"""Importers: each turns one tool-description format into a :class:`hyperplan.catalog.Catalog`."""
