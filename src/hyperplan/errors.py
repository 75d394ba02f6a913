"""Typed exceptions. Every message names the offending file, tool and field when known."""

from __future__ import annotations


class HyperplanError(Exception):
    """Base class of every error hyperplan raises on purpose."""


class CatalogError(HyperplanError):
    """A tool catalog could not be read: names the file, the tool and the field at fault."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        tool: str | None = None,
        field: str | None = None,
    ) -> None:
        self.file = file
        self.tool = tool
        self.field = field
        self.reason = message
        where = []
        if file:
            where.append(f"file {file}")
        if tool:
            where.append(f"tool {tool!r}")
        if field:
            where.append(f"field {field!r}")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class GraphError(HyperplanError):
    """A hypergraph is inconsistent, or a saved graph file cannot be loaded."""


class EmbeddingError(HyperplanError):
    """An embedding backend is unavailable or failed."""


class OverrideError(HyperplanError):
    """A link-override file is malformed or names unknown nodes."""


def yaml_problem(exc: Exception) -> str:
    """A PyYAML error on one line: what is wrong and where (PyYAML's own text spans lines and
    draws a caret under the spot)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})" if mark else problem
