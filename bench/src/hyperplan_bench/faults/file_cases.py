"""Cases of ``hyperplan bench faults`` about files and small inputs (fault items 7, 8 and 10 of
docs/benchmarks.md, "Runtime trust under faults"): tampered graph files read by ``graph stats``,
output paths that would destroy data given to ``graph build -o``, and the smaller crashes
(an unsplittable ``mcp-server:`` command, an MCP server printing garbage, control characters in tool
names, an empty trace).

The tampering is the one of ``tests/test_faults.py`` and
``tests/test_graph_files_untrusted.py``: the demo catalog's graph is saved (in this process:
building it is set-up, not the thing tested), then its JSON or ``.npz`` is edited, with the
recorded SHA-256 updated where the point is that only validation can catch the change.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import threading
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from hyperplan.catalog import CONTROL_CHARS
from hyperplan_bench.faults.common import case, expect_error, goal, mcp_command, write
from hyperplan_bench.faults.runner import CaseContext
from hyperplan_bench.faults.verdict import Check

# "at once": the refusal's exit after the server's garbage line (before the fix: 35 s), on a
# machine whose load may make the process's own exit take seconds
PROMPT_S = 10.0
_GRAPH_LOCK = threading.Lock()
_GRAPH_FILES: dict[str, bytes] = {}


def _saved_graph(ctx: CaseContext, name: str = "g.json") -> Path:
    """The demo catalog's graph saved as ``name`` (+ ``.npz``) in the case's directory."""
    with _GRAPH_LOCK:
        if not _GRAPH_FILES:
            import tempfile

            from hyperplan.graph import build_graph, save_graph
            from hyperplan.sources import load_source

            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "g.json"
                save_graph(build_graph(load_source("demo"), embedder=None), path)
                _GRAPH_FILES["json"] = path.read_bytes()
                _GRAPH_FILES["npz"] = path.with_suffix(".npz").read_bytes()
    path = ctx.work / name
    path.parent.mkdir(parents=True, exist_ok=True)
    npz = path.with_suffix(".npz")
    npz.write_bytes(_GRAPH_FILES["npz"])
    doc = json.loads(_GRAPH_FILES["json"])
    doc["matrices"]["file"] = npz.name
    path.write_text(json.dumps(doc))
    return path


def _doc(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _set_matrices(path: Path, **change: Any) -> None:
    doc = _doc(path)
    doc["matrices"].update(change)
    path.write_text(json.dumps(doc))


def _rewrite_npz(path: Path, field: str, bad: Callable[[np.ndarray, int], np.ndarray]) -> None:
    """Replace one array of the graph's ``.npz`` and record the new file's hash."""
    npz = path.with_suffix(".npz")
    with np.load(npz) as data:
        arrays = {k: data[k] for k in data.files}
    arrays[field] = bad(arrays[field], len(_doc(path)["nodes"]))
    with open(npz, "wb") as fh:
        np.savez(fh, **arrays)
    _set_matrices(path, sha256=hashlib.sha256(npz.read_bytes()).hexdigest())


def _stats(ctx: CaseContext, path: Path, *needles: str, also: bool = True,
           note: str = "") -> Check:
    step = ctx.cli("graph", "stats", path.name)
    return expect_error(step, *needles, also=also, note=note)


# -- item 7: graph files are untrusted ---------------------------------------------------------

@case("matrix-file-dev-zero", 7)
def matrix_file_dev_zero(ctx: CaseContext) -> Check:
    """A ``graph.json`` whose ``matrices.file`` is ``/dev/zero``, ``graph stats``: one line
    naming the field (item 7; before the fix: 24 GB allocated and the process killed)."""
    path = _saved_graph(ctx)
    _set_matrices(path, file="/dev/zero")
    return _stats(ctx, path, "matrices.file")


@case("matrix-file-outside", 7)
def matrix_file_outside(ctx: CaseContext) -> Check:
    """``matrices.file`` = ``../../etc/passwd``: only a bare name beside the graph is read
    (item 7)."""
    path = _saved_graph(ctx)
    _set_matrices(path, file="../../etc/passwd")
    return _stats(ctx, path, "matrices.file")


@case("matrix-nan-weight", 7)
def matrix_nan_weight(ctx: CaseContext) -> Check:
    """A NaN link weight in a consistently re-hashed ``.npz``: refused at load, naming the
    file and the field (item 7)."""
    path = _saved_graph(ctx)
    _rewrite_npz(path, "link_weight", lambda a, n: np.where(np.arange(a.size) == 1, np.nan, a))
    return _stats(ctx, path, "link_weight", "finite")


@case("matrix-node-id-out-of-range", 7)
def matrix_node_id_out_of_range(ctx: CaseContext) -> Check:
    """Link targets beyond the node count (before the fix: ``IndexError`` later): refused at
    load (item 7)."""
    path = _saved_graph(ctx)
    _rewrite_npz(path, "link_target", lambda a, n: np.full_like(a, n + 9000))
    return _stats(ctx, path, "link_target", "out of range")


@case("matrix-bad-zlib", 7)
def matrix_bad_zlib(ctx: CaseContext) -> Check:
    """A damaged deflate stream inside the ``.npz`` (re-hashed): one line, no ``zlib.error``
    (item 7)."""
    path = _saved_graph(ctx)
    npz = path.with_suffix(".npz")
    raw = bytearray(npz.read_bytes())
    with zipfile.ZipFile(npz) as zf:
        info = zf.getinfo("link_weight.npy")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    raw[start + 2:start + 40] = bytes(38)
    npz.write_bytes(bytes(raw))
    _set_matrices(path, sha256=hashlib.sha256(bytes(raw)).hexdigest())
    return _stats(ctx, path, "unreadable matrix file")


class _Touch:
    """Unpickling this creates a file: proof that nothing was unpickled."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return (Path.touch, (self.path,))


@case("matrix-object-array", 7)
def matrix_object_array(ctx: CaseContext) -> Check:
    """An object array (a pickle that would create a file when loaded) in place of the link
    sources: refused, and nothing is unpickled (item 7)."""
    path = _saved_graph(ctx)
    marker = ctx.work / "UNPICKLED"

    def bomb(a: np.ndarray, n: int) -> np.ndarray:
        out = np.empty(a.size, dtype=object)
        out[:] = [_Touch(marker)] * a.size
        return out

    _rewrite_npz(path, "link_source", bomb)
    return _stats(ctx, path, "link_source", also=not marker.exists(),
                  note="the pickle WAS loaded" if marker.exists() else "")


@case("graph-node-id-in-json", 7)
def graph_node_id_in_json(ctx: CaseContext) -> Check:
    """A tool's input node id 1000000 in the graph JSON: refused at load naming
    ``tools[1].inputs`` (item 7)."""
    path = _saved_graph(ctx)
    doc = _doc(path)
    doc["tools"][1]["inputs"] = [10**6]
    path.write_text(json.dumps(doc))
    return _stats(ctx, path, "tools[1].inputs", "out of range")


@case("graph-file-fifo", 7)
def graph_file_fifo(ctx: CaseContext) -> Check:
    """``graph stats`` on a FIFO named ``g.json``: refused, never blocks reading it
    (item 7)."""
    fifo = ctx.work / "g.json"
    os.mkfifo(fifo)
    return _stats(ctx, fifo, "not a regular file")


# -- item 8: output paths never destroy data ------------------------------------------------------

@case("output-dev-full", 8)
def output_dev_full(ctx: CaseContext) -> Check:
    """``graph build demo -o /dev/full``: refused before any work; the device stays a device
    (item 8; before the fix it was replaced by a regular file and "wrote")."""
    if not os.path.exists("/dev/full"):
        return Check(True, "no /dev/full on this machine")
    step = ctx.cli("graph", "build", "demo", "-o", "/dev/full", "--embedder", "none")
    device = stat.S_ISCHR(os.stat("/dev/full").st_mode)
    return expect_error(step, "not a regular file", also=device,
                        note="" if device else "/dev/full is NO LONGER a device")


@case("output-is-the-source", 8)
def output_is_the_source(ctx: CaseContext) -> Check:
    """``graph build openai:tools.json -o tools.json``: the user's catalog is never
    overwritten (item 8)."""
    from hyperplan.sources import demo_catalog_path

    catalog = ctx.work / "tools.json"
    shutil.copy(demo_catalog_path(), catalog)
    before = catalog.read_bytes()
    step = ctx.cli("graph", "build", "openai:tools.json", "-o", "tools.json", "--embedder",
                   "none")
    same = catalog.read_bytes() == before
    return expect_error(step, "source", also=same,
                        note="" if same else "the catalog WAS overwritten")


@case("output-another-graphs-npz", 8)
def output_another_graphs_npz(ctx: CaseContext) -> Check:
    """``graph build demo -o out/s`` beside an earlier ``out/s.json``: refused, as ``out/s.npz``
    holds that graph's matrices (item 8; before the fix it was clobbered)."""
    first = _saved_graph(ctx, "out/s.json")
    before = {p.name: p.read_bytes() for p in first.parent.iterdir()}
    step = ctx.cli("graph", "build", "demo", "-o", "out/s", "--embedder", "none")
    same = {p.name: p.read_bytes() for p in first.parent.iterdir()} == before
    return expect_error(step, "holds the matrices", also=same,
                        note="" if same else "the earlier graph WAS changed")


# -- item 10: the smaller crashes --------------------------------------------------------------

@case("mcp-command-unterminated", 10)
def mcp_command_unterminated(ctx: CaseContext) -> Check:
    """``--tools "mcp-server:python3 'unterminated"``: one line, no ``ValueError`` traceback
    (item 10)."""
    step = ctx.cli("run", "--tools", "mcp-server:python3 'unterminated", "--goal",
                   goal("x"))
    return expect_error(step, "cannot split")


@case("mcp-server-prints-garbage", 10, timed=True)
def mcp_server_prints_garbage(ctx: CaseContext) -> Check:
    """An MCP server writing non-UTF-8, non-JSON bytes on its stdout before serving: one line
    quoting it, within a few seconds of that line (item 10; before the fix: the SDK's traceback
    and a 35 s wait)."""
    step = ctx.cli("run", "--tools", "mcp-server:" + mcp_command(ctx, "--banner"), "--goal",
                   goal("nap", {"seconds": 0}), "--json")
    banner = ctx.work / "mcp_writes.log.banner"
    if not banner.exists():
        return expect_error(step, "starting up", also=False, note="the server never wrote")
    after = step.ended_at - float(banner.read_text())
    return expect_error(step, "starting up", also=after < PROMPT_S,
                        note=f"exited {after:.1f} s after the garbage line")


def _bad_name(ctx: CaseContext, name: str) -> Check:
    write(ctx, "tools.json", json.dumps([{"name": name, "description": "x", "parameters": {
        "type": "object", "properties": {}}}]))
    step = ctx.cli("graph", "build", "openai:tools.json", "-o", "g.json", "--embedder", "none")
    injected = bool(CONTROL_CHARS.search(step.stderr.replace("\n", "")))
    return expect_error(step, "control character", also=not injected,
                        note="the raw character WAS printed" if injected else "")


@case("tool-name-escape", 10)
def tool_name_escape(ctx: CaseContext) -> Check:
    """A tool named ``evil<ESC>[31m<BEL>``: refused in one line that shows the characters
    escaped, never raw (terminal escape injection) (item 10)."""
    return _bad_name(ctx, "evil\x1b[31m\x07")


@case("tool-name-nul", 10)
def tool_name_nul(ctx: CaseContext) -> Check:
    """A tool name holding a NUL character: refused in one line (item 10)."""
    return _bad_name(ctx, "get\x00x")


@case("trace-show-empty", 10)
def trace_show_empty(ctx: CaseContext) -> Check:
    """``trace show`` on an empty file: one line and exit 1, not exit 0 (item 10)."""
    write(ctx, "t.jsonl", "")
    return expect_error(ctx.cli("trace", "show", "t.jsonl"), "empty trace")
