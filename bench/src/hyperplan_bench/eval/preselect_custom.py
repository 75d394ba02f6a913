"""``eval preselect --suite custom``: selection measured on a user's own tools.

The catalog is one or more ``--catalog KIND:LOCATION`` sources (as ``hyperplan graph build``
takes them, :func:`hyperplan.sources.load_source`). With several, each source is a namespace
of its own (tool metadata ``app`` = its label, the file's stem or the server command's name,
unless the tool names one), so links between them are known as cross-source links; a name two
sources define is qualified as ``label__tool`` in both (:func:`union_catalog`).

The tasks file is JSON (a list of tasks, or ``{"requests": [...]}`` / ``{"tasks": [...]}``) or
JSONL (one task per line). A task is ``{"id", "request", "gold"}`` (``tools`` is read as
``gold``, the format of ``eval retrieval --suite custom``) with an optional ``split`` (``dev`` |
``heldout``) and ``must_not`` (tools the request must not be offered: a selection holding one
is counted apart). ``gold`` is a list of tool names (each one slot) or of *slots*, lists of
acceptable alternatives (``[["git_status", "git_diff_staged"], ["git_commit"]]``): a task is
complete when every slot has one of its tools selected. A gold name is a catalog name, or
``label:tool`` / ``label__tool`` for a source's tool; a bare name two sources define stands
for either. Bad input is a :class:`~hyperplan_bench.eval.preselect.PreselectError` naming the
file, the task and the field (an unknown tool with the names it most likely means).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyperplan.catalog import Catalog, ToolSpec, build_catalog
from hyperplan.errors import HyperplanError
from hyperplan_bench.eval.preselect_bench import Part, PreselectSuite, Slots
from hyperplan_bench.importers.gold import GoldTask, unique

QUALIFIER = "__"  # label__tool: a name two sources define, qualified
SPLITS = ("dev", "heldout")


class TasksFileError(HyperplanError):
    """A tasks file or a task of it cannot be read (names the file, task and field)."""


@dataclass(frozen=True)
class RawTask:
    """One task as the file gives it: gold names not yet resolved to catalog names."""

    id: str
    request: str
    gold: tuple[tuple[str, ...], ...]
    split: str = ""
    servers: tuple[str, ...] = ()
    must_not: tuple[str, ...] = ()


@dataclass(frozen=True)
class Union:
    """Catalogs joined: the catalog, and per ``(label, original name)`` its catalog name."""

    catalog: Catalog
    names: Mapping[tuple[str, str], str]


def read_tasks(path: str | Path) -> list[RawTask]:
    """The tasks of a JSON or JSONL file (module doc), checked field by field."""
    file = Path(path)
    if not file.is_file():
        raise TasksFileError(f"{file}: no such tasks file")
    text = file.read_text(encoding="utf-8")
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError:
        data = _jsonl(file, text)
    if isinstance(data, dict):
        rows = data.get("requests", data.get("tasks", [data] if "request" in data else None))
    else:
        rows = data
    if not isinstance(rows, list):
        raise TasksFileError(f"{file}: expected a list of tasks, {{\"requests\": [...]}} or "
                             "JSON lines")
    tasks = [_task(file, number, row) for number, row in enumerate(rows, 1)]
    seen: set[str] = set()
    for task in tasks:
        if task.id in seen:
            raise TasksFileError(f"{file}: task {task.id}: 'id' is used twice")
        seen.add(task.id)
    if not tasks:
        raise TasksFileError(f"{file}: no task")
    return tasks


def _jsonl(file: Path, text: str) -> list[Any]:
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise TasksFileError(f"{file}: line {number}: malformed JSON ({exc.msg})") \
                    from None
    return rows


def _task(file: Path, number: int, row: Any) -> RawTask:
    if not isinstance(row, dict):
        raise TasksFileError(f"{file}: task {number}: expected a JSON object")
    ident = str(row.get("id", number))
    where = f"{file}: task {ident}"
    request = row.get("request")
    if not isinstance(request, str) or not request.strip():
        raise TasksFileError(f"{where}: 'request' must be a non-empty string")
    key = "gold" if "gold" in row else "tools"
    gold = row.get(key)
    if not isinstance(gold, list) or not gold:
        raise TasksFileError(f"{where}: 'gold' must be a non-empty list of tool names or of "
                             "slots (lists of alternative tool names)")
    slots = []
    for index, slot in enumerate(gold):
        names = [slot] if isinstance(slot, str) else slot
        if (not isinstance(names, list) or not names
                or not all(isinstance(n, str) and n.strip() for n in names)):
            raise TasksFileError(f"{where}: '{key}[{index}]' must be a tool name or a "
                                 "non-empty list of tool names")
        slots.append(tuple(n.strip() for n in names))
    split = row.get("split", "")
    if split and split not in SPLITS:
        raise TasksFileError(f"{where}: 'split' must be dev or heldout, got {split!r}")
    lists = {}
    for name in ("servers", "must_not"):
        value = row.get(name, [])
        if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
            raise TasksFileError(f"{where}: '{name}' must be a list of names")
        lists[name] = tuple(value)
    return RawTask(ident, request.strip(), tuple(slots), str(split), lists["servers"],
                   lists["must_not"])


def source_label(spec: str) -> str:
    """A short label of a ``KIND:LOCATION`` source: the file's stem, the server command's
    name, else the kind."""
    kind, _, location = spec.partition(":")
    if kind == "mcp-server":
        try:
            words = shlex.split(location)
        except ValueError:
            words = []
        return Path(words[0]).name if words else kind
    if kind in ("python", "tau2"):
        return location.split(":")[-1] or kind
    return Path(location).stem or kind if location else kind


def union_catalog(parts: Sequence[tuple[str, Catalog]], *, source: str = "",
                  namespaces: bool | None = None) -> Union:
    """The catalogs of ``parts`` (label, catalog) as one: tools keep their names, a name two
    labels define is ``label__tool`` in both; with ``namespaces`` (default: when there is
    more than one part) each tool without an ``app`` gets its label as ``app`` (its
    namespace)."""
    count: dict[str, int] = {}
    for _, catalog in parts:
        for tool in catalog.tools:
            count[tool.name] = count.get(tool.name, 0) + 1
    several = len(parts) > 1 if namespaces is None else namespaces
    tools: list[ToolSpec] = []
    names: dict[tuple[str, str], str] = {}
    for label, catalog in parts:
        for tool in catalog.tools:
            name = f"{label}{QUALIFIER}{tool.name}" if count[tool.name] > 1 else tool.name
            names[(label, tool.name)] = name
            metadata = tool.metadata
            if several and not metadata.get("app"):
                metadata = {**metadata, "app": label}
            tools.append(tool.model_copy(update={"name": name, "metadata": metadata}))
    return Union(build_catalog(tools, source=source), names)


def resolve(union: Union, name: str, where: str) -> tuple[str, ...]:
    """The catalog names a gold ``name`` stands for (module doc); an unknown one is a
    :class:`TasksFileError` naming it and what it most likely means."""
    from hyperplan.graph.text import did_you_mean

    known = union.catalog.names()
    if name in set(known):
        return (name,)
    for sep in (":", QUALIFIER):
        label, found, tool = name.partition(sep)
        if found and (label, tool) in union.names:
            return (union.names[(label, tool)],)
    same = tuple(full for (_, tool), full in union.names.items() if tool == name)
    if same:
        return same
    hint = did_you_mean(name, known)
    raise TasksFileError(f"{where}: tool {name!r} is not in the catalog"
                         + (f"; {hint}" if hint else ""))


def resolved_part(union: Union, tasks: Sequence[RawTask], file: str | Path) -> Part:
    """The tasks over ``union``'s catalog, their gold resolved to its names (slots)."""
    gold: list[GoldTask] = []
    slots: dict[str, Slots] = {}
    splits: dict[str, str] = {}
    must_not: dict[str, tuple[str, ...]] = {}
    for task in tasks:
        where = f"{file}: task {task.id}: 'gold'"
        resolved = tuple(unique(n for name in slot for n in resolve(union, name, where))
                         for slot in task.gold)
        slots[task.id] = resolved
        if task.split:
            splits[task.id] = task.split
        if task.must_not:
            banned = f"{file}: task {task.id}: 'must_not'"
            must_not[task.id] = unique(n for name in task.must_not
                                       for n in resolve(union, name, banned))
        gold.append(GoldTask(task.id, task.request, unique(n for s in resolved for n in s), ()))
    return Part(union.catalog, tuple(gold), slots=slots, splits=splits, must_not=must_not)


def load_custom_suite(catalogs: Sequence[str], tasks_file: str | Path) -> PreselectSuite:
    """The ``custom`` suite: the ``catalogs`` sources joined, the tasks of ``tasks_file``."""
    from hyperplan.sources import load_source

    if not catalogs:
        raise TasksFileError("--suite custom needs at least one --catalog KIND:LOCATION")
    tasks = read_tasks(tasks_file)
    labels: list[str] = []
    for spec in catalogs:
        label = source_label(spec)
        labels.append(label if label not in labels else f"{label}-{len(labels) + 1}")
    union = union_catalog([(label, load_source(spec)) for label, spec in
                           zip(labels, catalogs, strict=True)], source=",".join(catalogs))
    return PreselectSuite("custom", (resolved_part(union, tasks, tasks_file),))
