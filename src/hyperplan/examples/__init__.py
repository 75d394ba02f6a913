"""Example tool catalogs: the music catalog (JSON) and a bookstore of plain Python functions."""
