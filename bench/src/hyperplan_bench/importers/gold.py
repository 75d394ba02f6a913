"""The gold model shared by the benchmark importers (NESTFUL, NesTools).

A :class:`GoldTask` lists the catalog tools a task uses and the data flows its gold calls
contain: a :class:`GoldFlow` says that an output path of one tool feeds an input parameter of
another. Output paths are spelled as :func:`hyperplan.graph.schema_paths.output_fields` spells
them for the producer's output schema (``""`` stands for the whole output).

:class:`SpecNamer` gives catalog names to benchmark tools whose names are reused with different
specs: identical specs (same canonical JSON) share a name, a differing spec under a seen name
gets ``name~2``, ``name~3`` in order of appearance.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from hyperplan.graph.schema_paths import output_fields


@dataclass(frozen=True, slots=True)
class GoldFlow:
    """``producer``'s output at ``output_path`` is passed to ``consumer``'s ``input_param``."""

    producer: str
    output_path: str
    consumer: str
    input_param: str


@dataclass(frozen=True, slots=True)
class GoldCall:
    """One gold call: the catalog tool, its literal arguments as ``(parameter, JSON value)``
    pairs, and the parameters whose values reference earlier calls' outputs."""

    tool: str
    literals: tuple[tuple[str, str], ...] = ()
    referenced: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GoldTask:
    """One benchmark task: its text, its tools (catalog names, in order, unique), the data
    flows between its gold calls, the calls themselves in order, and — where the benchmark
    defines them (τ²: the write actions) — its terminal tools."""

    id: str
    text: str
    tools: tuple[str, ...]
    flows: tuple[GoldFlow, ...]
    calls: tuple[GoldCall, ...] = ()
    terminals: tuple[str, ...] = ()


def gold_call(tool: str, arguments: dict[str, Any], is_reference: Any) -> GoldCall:
    """A :class:`GoldCall` from a call's arguments; ``is_reference(value)`` tells whether a
    value refers to an earlier output."""
    literals = tuple(
        (str(k), canonical_json(v)) for k, v in arguments.items() if not is_reference(v)
    )
    referenced = tuple(str(k) for k, v in arguments.items() if is_reference(v))
    return GoldCall(tool, literals, referenced)


T = TypeVar("T")


def unique(items: Iterable[T]) -> tuple[T, ...]:
    """The items in first-seen order without repeats."""
    return tuple(dict.fromkeys(items))


def canonical_json(value: Any) -> str:
    """A key-order independent JSON text, used to compare two tool specs."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


class SpecNamer:
    """Assigns catalog names to ``(name, spec)`` pairs: same spec, same name; a new spec under
    a seen name gets the next ``~k`` suffix."""

    def __init__(self) -> None:
        self._by_spec: dict[tuple[str, str], str] = {}
        self._variants: dict[str, int] = {}

    def name_for(self, name: str, spec: Any) -> tuple[str, bool]:
        """The catalog name of ``spec`` published as ``name``, and whether it is new."""
        key = (name, canonical_json(spec))
        known = self._by_spec.get(key)
        if known is not None:
            return known, False
        count = self._variants.get(name, 0) + 1
        self._variants[name] = count
        assigned = name if count == 1 else f"{name}~{count}"
        self._by_spec[key] = assigned
        return assigned, True


_INDEX = re.compile(r"\[\d*\]")


def _segments(path: str) -> list[str]:
    return [seg for seg in _INDEX.sub("", path).split(".") if seg]


def resolve_output_path(schema: dict[str, Any] | None, field: str) -> str | None:
    """The output path of ``schema`` that a gold reference to ``field`` names, or ``None``.

    ``""`` (the whole output) resolves to ``""``. Otherwise, in order: the exact path; the
    unique path equal to ``field`` when list indices are ignored (``author[0].id`` matches
    ``author[].id``); the unique path ending with ``field``'s segments (``skyId`` matches
    ``data[].skyId``). Ambiguous or missing fields give ``None``.
    """
    if not field:
        return ""
    paths = [f.path for f in output_fields(schema, where="gold reference")]
    if field in paths:
        return field
    wanted = _segments(field)
    if not wanted:
        return None
    same = [p for p in paths if _segments(p) == wanted]
    if len(same) == 1:
        return same[0]
    suffix = [p for p in paths if _segments(p)[-len(wanted) :] == wanted]
    return suffix[0] if len(suffix) == 1 else None
