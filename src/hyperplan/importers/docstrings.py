"""Docstrings of Python tools: the summary, each parameter's description and the return
description, in the Google (``Args:`` / ``Returns:``), reST (``:param x:`` / ``:returns:``) and
NumPy (``Parameters`` / ``Returns`` headers underlined with dashes) styles."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hyperplan.graph.text import returns_clause

__all__ = ["Docstring", "doc_type_schema", "parse_docstring"]

_SECTION = re.compile(r"^([A-Z][A-Za-z ]*):\s*$")
_GOOGLE_ARG = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_REST_FIELD = re.compile(r"^:(param|parameter|arg|argument|key|returns?)\b([^:]*):\s*(.*)$")
_ARG_SECTIONS = frozenset({"Args", "Arguments", "Parameters", "Params", "Keyword Args"})
_RETURN_SECTIONS = frozenset({"Returns", "Return", "Yields"})
_NUMPY_PARAMS = frozenset({"Parameters", "Other Parameters", "Keyword Arguments"})
_NUMPY_RETURNS = frozenset({"Returns", "Yields"})
_NUMPY_SECTIONS = _NUMPY_PARAMS | _NUMPY_RETURNS | frozenset({
    "Receives", "Raises", "Warns", "Warnings", "See Also", "Notes", "References", "Examples",
    "Attributes", "Methods",
})
_NUMPY_RULE = re.compile(r"^\s*-{3,}\s*$")


@dataclass(frozen=True)
class Docstring:
    """A parsed docstring: summary, per-parameter descriptions and the return description."""

    summary: str
    params: dict[str, str]
    returns: str
    returns_section: bool = False  # ``returns`` comes from a section/field, not the summary
    types: dict[str, str] = field(default_factory=dict)  # NumPy ``name : type`` of a parameter


# Plain type words of a NumPy entry and their JSON Schema type (``x : int, optional``).
_DOC_TYPES = {"int": "integer", "integer": "integer", "float": "number", "str": "string",
              "string": "string", "bool": "boolean", "boolean": "boolean", "dict": "object",
              "list": "array"}


def doc_type_schema(kind: str) -> dict[str, str]:
    """The JSON Schema of a NumPy entry's type when it is one plain type word (``int``,
    ``float, optional``, ``str, default 'x'``): ``{"type": "integer"}``; ``{}`` for anything
    else (``array_like``, ``int or None``, ``{'a', 'b'}``, class names), which stays
    unconstrained rather than risk rejecting a value the function accepts."""
    word = kind.split(",", 1)[0].strip().lower()
    return {"type": _DOC_TYPES[word]} if word in _DOC_TYPES else {}


def parse_docstring(doc: str) -> Docstring:
    """Split a (cleaned) docstring into summary, parameter and return descriptions;
    understands Google (``Args:``/``Returns:``), reST (``:param x:``) and NumPy (``Parameters``
    / ``Returns`` headers underlined with dashes) styles - NumPy when such a header is found."""
    lines = doc.expandtabs().splitlines()
    numpy = _numpy_headers(lines)
    summary: list[str] = []
    for index, line in enumerate(lines):
        if not line.strip() or _SECTION.match(line.strip()) or line.lstrip().startswith(":"):
            break
        if index in numpy:
            break
        summary.append(line.strip())
    params: dict[str, str] = {}
    returns: list[str] = []
    types: dict[str, str] = {}
    if numpy:
        _parse_numpy(lines, numpy, params, returns, types)
    else:
        _parse_google(lines, params, returns)
        _parse_rest(lines, params, returns)
    text = " ".join(summary)
    section = bool(returns)
    if not returns:  # no Returns section: a "returns X" clause of the summary describes it
        said = returns_clause(text)
        returns += [said] if said else []
    return Docstring(text, params, " ".join(returns).strip(), section, types)


def _numpy_headers(lines: list[str]) -> dict[int, str]:
    """Line index -> name of each NumPy section header (a known name underlined by dashes)."""
    found: dict[int, str] = {}
    for index, line in enumerate(lines[:-1]):
        name = line.strip()
        if name in _NUMPY_SECTIONS and _NUMPY_RULE.match(lines[index + 1]):
            found[index] = name
    return found


def _parse_numpy(
    lines: list[str], headers: dict[int, str], params: dict[str, str], returns: list[str],
    types: dict[str, str],
) -> None:
    """Entries ``name : type`` (or ``a, b : type``; in Returns also a bare ``type``) at the
    header's indentation, their descriptions indented below them."""
    section, base = "", 0
    entries: list[tuple[str, list[str]]] = []  # (entry line, description lines) of a section

    def flush() -> None:
        if section in _NUMPY_PARAMS:
            shared: list[str] = []  # entries stacked over one description ("a : int\nb : int")
            for index, (head, body) in enumerate(entries):
                shared.append(head)
                if not body and index < len(entries) - 1:
                    continue
                for stacked in shared:
                    kind = stacked.split(":", 1)[1].strip() if ":" in stacked else ""
                    text = _numpy_text(body) or kind  # no description: the type says most
                    names = stacked.split(":", 1)[0]
                    for one in names.split(","):
                        name = one.strip().lstrip("*")
                        if name.isidentifier() and name not in params:
                            params[name] = text
                            types[name] = kind
                shared = []
        elif section in _NUMPY_RETURNS:
            parts = []
            for head, body in entries:
                text = _numpy_text(body)
                named = re.match(r"^(\w+)\s*:(?!:)", head)
                if not named and head == "None":
                    continue
                if len(entries) > 1 and named:
                    parts.append(f"{named.group(1)}: {text}" if text else named.group(1))
                else:
                    parts.append(text or (head.split(":", 1)[1] if named else head).strip())
            returns.extend(p for p in parts if p)
        entries.clear()

    skip = -1  # index of a header's rule line
    for index, line in enumerate(lines):
        if index in headers:
            flush()
            section, base, skip = headers[index], len(line) - len(line.lstrip()), index + 1
            continue
        if index == skip or not section or not line.strip():
            if line.strip() == "" and entries:
                entries[-1][1].append("")
            continue
        depth = len(line) - len(line.lstrip())
        if depth <= base:
            entries.append((line.strip(), []))
        elif entries:
            entries[-1][1].append(line)
    flush()


def _numpy_text(body: list[str]) -> str:
    """A NumPy entry's description on one line, without ``.. versionadded::``-like
    directives (and the lines indented under them)."""
    kept: list[str] = []
    directive = -1  # indentation of the directive being skipped
    for line in body:
        text = line.strip()
        depth = len(line) - len(line.lstrip())
        if directive >= 0 and (not text or depth > directive):
            continue
        directive = -1
        if re.match(r"^\.\. version(added|changed)::", text):
            directive = depth
            continue
        if text:
            kept.append(text)
    return " ".join(kept)


def _parse_google(lines: list[str], params: dict[str, str], returns: list[str]) -> None:
    section, indent, current = "", 0, ""
    for line in lines:
        text = line.strip()
        header = None if line.startswith(" ") else _SECTION.match(text)
        if header:
            section, indent, current = header.group(1), 0, ""
            continue
        if not text:
            continue
        depth = len(line) - len(line.lstrip())
        if depth == 0:
            section = ""
        elif section in _RETURN_SECTIONS:
            returns.append(text)
        elif section in _ARG_SECTIONS:
            indent = indent or depth
            match = _GOOGLE_ARG.match(text) if depth <= indent else None
            if match:
                current = match.group(1)
                params[current] = match.group(2).strip()
            elif current:
                params[current] = f"{params[current]} {text}".strip()


def _parse_rest(lines: list[str], params: dict[str, str], returns: list[str]) -> None:
    target: str | None = None
    for line in lines:
        text = line.strip()
        match = _REST_FIELD.match(text)
        if match:
            kind, names, body = match.groups()
            target = "return" if kind.startswith("return") else (names.split() or [""])[-1]
            if target == "return":
                returns.append(body.strip())
            elif target:
                params[target] = body.strip()
        elif text.startswith(":") or not text:
            target = None
        elif target == "return" and line.startswith(" "):
            returns.append(text)
        elif target and line.startswith(" "):
            params[target] = f"{params[target]} {text}".strip()
