"""``eval preselect --suite mcp-six`` and ``--suite mcp-corpus``: real MCP servers as users set
them up, their ``tools/list`` saved per server.

A tools directory holds one ``<slug>.json`` per server, ``{"server", "package", "version",
"licence", "tools": [MCP tool objects as the server listed them]}`` (what
``benchmarks/mcp-corpus/collect.py`` writes). A requests file is ``{"requests": [{"id",
"request", "gold", "split"?, "servers"?}]}`` with gold slots (lists of acceptable tools, a task
complete when every slot has one selected: :mod:`hyperplan_bench.eval.preselect_custom`).

* ``mcp-six`` (``--data`` the folder holding ``requests.json``, e.g. ``../shared/data/mcp-six``):
  one catalog, the tools of the six servers git, fetch, time, filesystem, memory and everything;
  gold names are the servers' own tool names. Its tools come from ``--tools-dir DIR``, else a
  ``tools`` folder beside the requests, else ``benchmarks/mcp-corpus/tools`` (of the working
  directory or of this source tree).
* ``mcp-corpus`` (``--data`` the corpus folder, ``benchmarks/mcp-corpus``: ``requests.json`` and
  ``tools/``): each request's catalog is the union of its ``servers``; gold names are
  ``slug:tool``. The requests' ``split`` field makes the dev and heldout splits.

In a union, tools keep their names, a name two servers define is ``slug__tool`` in both, and
every tool's metadata ``app`` is its server's slug (one server alone too), so links between
servers are known as such
(:func:`~hyperplan_bench.eval.preselect_custom.union_catalog`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hyperplan.catalog import Catalog
from hyperplan_bench.eval.preselect_bench import Part, PreselectSuite
from hyperplan_bench.eval.preselect_custom import (
    RawTask,
    TasksFileError,
    read_tasks,
    resolved_part,
    union_catalog,
)

MCP_SIX = ("git", "fetch", "time", "filesystem", "memory", "everything")
CORPUS_TOOLS = Path("benchmarks") / "mcp-corpus" / "tools"
REQUESTS = "requests.json"


def requests_file(data: Path) -> Path:
    """``data`` itself when it is a file, else its ``requests.json``."""
    file = data / REQUESTS if data.is_dir() else data
    if not file.is_file():
        raise TasksFileError(f"{file}: no such requests file")
    return file


def default_tools_dir(data: Path) -> Path | None:
    """Where the servers' ``tools/list`` files are when ``--tools`` is not given (module doc)."""
    root = data if data.is_dir() else data.parent
    here = Path(__file__).resolve().parents[4]  # the repository, in a checkout
    for candidate in (root / "tools", Path.cwd() / CORPUS_TOOLS, here / CORPUS_TOOLS):
        if candidate.is_dir() and any(candidate.glob("*.json")):
            return candidate
    return None


class ServerTools:
    """The servers of a tools directory, each loaded once (an MCP ``tools/list``)."""

    def __init__(self, folder: Path) -> None:
        if not folder.is_dir():
            raise TasksFileError(f"{folder}: no such tools directory")
        self.folder = folder
        self.slugs = sorted(p.stem for p in folder.glob("*.json"))
        self._loaded: dict[str, Catalog] = {}

    def catalog(self, slug: str, where: str) -> Catalog:
        from hyperplan.graph.text import did_you_mean
        from hyperplan.importers.mcp import load_mcp_tools

        if slug not in self._loaded:
            file = self.folder / f"{slug}.json"
            if not file.is_file():
                hint = did_you_mean(slug, self.slugs)
                raise TasksFileError(f"{where}: server {slug!r} has no tools file {file}"
                                     + (f"; {hint}" if hint else ""))
            self._loaded[slug] = load_mcp_tools(file)
        return self._loaded[slug]

    def part(self, slugs: Sequence[str], tasks: Sequence[RawTask], file: Path) -> Part:
        where = f"{file}: task {tasks[0].id}: 'servers'"
        union = union_catalog([(s, self.catalog(s, where)) for s in slugs],
                              source="+".join(slugs), namespaces=True)
        return resolved_part(union, tasks, file)


def load_mcp_six(data: str | Path, tools: str | Path | None = None) -> PreselectSuite:
    """The six-server setup (module doc): one catalog, every request over it."""
    root = Path(data)
    file = requests_file(root)
    folder = Path(tools) if tools is not None else default_tools_dir(root)
    if folder is None:
        raise TasksFileError(
            f"mcp-six needs the six servers' tools/list files ({', '.join(MCP_SIX)} .json): "
            f"pass --tools-dir DIR (benchmarks/mcp-corpus/tools, written by "
            f"benchmarks/mcp-corpus/collect.py)")
    servers = ServerTools(folder)
    return PreselectSuite("mcp-six", (servers.part(MCP_SIX, read_tasks(file), file),))


def load_mcp_corpus(data: str | Path, tools: str | Path | None = None) -> PreselectSuite:
    """The corpus (module doc): one part per set of servers the requests name."""
    root = Path(data)
    file = requests_file(root)
    folder = Path(tools) if tools is not None else \
        (root if root.is_dir() else root.parent) / "tools"
    servers = ServerTools(folder)
    groups: dict[tuple[str, ...], list[RawTask]] = {}
    for task in read_tasks(file):
        if not task.servers:
            raise TasksFileError(f"{file}: task {task.id}: 'servers' must name the servers "
                                 "whose tools make its catalog")
        groups.setdefault(tuple(sorted(set(task.servers))), []).append(task)
    return PreselectSuite("mcp-corpus", tuple(servers.part(slugs, tasks, file)
                                              for slugs, tasks in groups.items()))
