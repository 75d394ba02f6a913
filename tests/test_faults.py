"""Issue 22, items 5-8 and 10: Python tool sources, tools that misbehave, untrusted graph files,
output paths, and the smaller crashes. Every case goes through the command line as a user
would hit it: exit code, one ``error:`` line naming the file or module, no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from hyperplan.errors import CatalogError, GraphError
from hyperplan.graph.io import load_graph, save_graph
from hyperplan.importers.python_callables import load_python_target

TOOLS = '''
"""Misbehaving tools."""
import os
from os import system


def quit_now(code: int) -> dict:
    """Exit the process."""
    raise SystemExit(code)


def interrupt(code: int) -> dict:
    """Raise KeyboardInterrupt."""
    raise KeyboardInterrupt


def chatty(text: str) -> dict:
    """Print to stdout and return the text."""
    print("HELLO FROM TOOL", text)
    return {"echo": text}
'''


def _cli(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HYPERPLAN_EMBEDDER": "hashing", "PYTHONPATH": str(cwd),
           "HYPERPLAN_IMPORT_TIMEOUT": "3"}
    return subprocess.run([sys.executable, "-m", "hyperplan", *args], capture_output=True,
                          text=True, env=env, timeout=timeout, cwd=cwd)


def _one_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.fixture()
def tools_dir(tmp_path: Path) -> Path:
    (tmp_path / "badtools.py").write_text(TOOLS, "utf-8")
    return tmp_path


# -- item 5: no operating-system routines for the model -----------------------------------------

@pytest.mark.parametrize("spec", ["os", "os:system", "subprocess:run", "shutil"])
def test_host_modules_are_refused(spec: str) -> None:
    with pytest.raises(CatalogError, match="--allow-unsafe-tools"):
        load_python_target(spec)


def test_refused_on_the_command_line_and_allowed_when_asked(tools_dir: Path) -> None:
    line = _one_error(_cli("graph", "build", "python:os:system", "-o", "g.json",
                           "--embedder", "none", cwd=tools_dir))
    assert "'os' acts on the host" in line and "--allow-unsafe-tools" in line
    proc = _cli("graph", "build", "python:os:getcwd", "-o", "g.json", "--embedder", "none",
                "--allow-unsafe-tools", cwd=tools_dir)
    assert proc.returncode == 0, proc.stderr


def test_a_module_exposes_only_its_own_routines(tools_dir: Path) -> None:
    sys.path.insert(0, str(tools_dir))
    try:
        names = {t.name for t in load_python_target("badtools").tools}
        with pytest.raises(CatalogError, match="acts on the host"):
            load_python_target("badtools:system")  # os.system re-exported
    finally:
        sys.path.remove(str(tools_dir))
        sys.modules.pop("badtools", None)
    assert names == {"quit_now", "interrupt", "chatty"}


# -- item 6: a tool cannot end the run; imports are bounded ------------------------------------

@pytest.mark.parametrize("tool", ["quit_now", "interrupt"])
def test_exiting_tools_are_observations(tools_dir: Path, tool: str) -> None:
    goal = json.dumps({"terminals": [tool], "values": {"code": 3}})
    trace = tools_dir / "t.jsonl"
    proc = _cli("run", "--tools", "python:badtools", "--goal", goal, "--json", "--trace",
                str(trace), cwd=tools_dir)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert json.loads(proc.stdout)["status"] == "failed"
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert events[-1]["type"] == "run_end"
    errors = [e["error"] for e in events if e["type"] == "tool_call"]
    assert errors and errors[0].startswith(("SystemExit", "KeyboardInterrupt"))


def test_printing_tool_does_not_corrupt_json(tools_dir: Path) -> None:
    goal = json.dumps({"terminals": ["chatty"], "values": {"text": "x"}})
    trace = tools_dir / "t.jsonl"
    proc = _cli("run", "--tools", "python:badtools", "--goal", goal, "--json", "--trace",
                str(trace), cwd=tools_dir)
    assert json.loads(proc.stdout)["status"] == "success"
    assert "HELLO FROM TOOL" not in proc.stdout
    assert "HELLO FROM TOOL x" in trace.read_text()


@pytest.mark.parametrize(("body", "expected"), [
    ("import sys\nsys.exit(4)\n", "called sys.exit(4) at import"),
    ("raise RuntimeError('boom')\n", "RuntimeError: boom"),
    ("def f(:\n", "SyntaxError"),
    ("while True:\n    pass\n", "did not finish within 3 s"),
])
def test_import_failures_are_one_line(tmp_path: Path, body: str, expected: str) -> None:
    (tmp_path / "badimport.py").write_text(body, "utf-8")
    started = time.monotonic()
    line = _one_error(_cli("graph", "build", "python:badimport", "-o", "g.json",
                           "--embedder", "none", cwd=tmp_path))
    assert time.monotonic() - started < 30
    assert "badimport" in line and expected in line


# -- item 7: graph files are untrusted ----------------------------------------------------------

@pytest.fixture()
def saved(tmp_path: Path) -> Path:
    from hyperplan.graph.build import build_graph
    from hyperplan.sources import load_source

    path = tmp_path / "g.json"
    save_graph(build_graph(load_source("demo"), embedder=None), path)
    return path


def _edit(path: Path, change: dict[str, object]) -> None:
    doc = json.loads(path.read_text())
    doc["matrices"].update(change)
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize("name", ["/dev/zero", "../../etc/passwd", "/etc/passwd", "..", ""])
def test_matrix_file_must_be_a_bare_name_beside_the_graph(saved: Path, name: str) -> None:
    _edit(saved, {"file": name})
    with pytest.raises(GraphError, match=r"matrices\.file"):
        load_graph(saved)


def test_matrix_file_must_be_regular_and_bounded(saved: Path) -> None:
    link = saved.parent / "zero.npz"
    link.symlink_to("/dev/zero")
    _edit(saved, {"file": "zero.npz"})
    with pytest.raises(GraphError, match="not a regular file"):
        load_graph(saved)
    big = saved.parent / "big.npz"
    big.write_bytes(b"\0" * (3 << 20))
    _edit(saved, {"file": "big.npz", "n_links": 1})
    with pytest.raises(GraphError, match="refusing to read it"):
        load_graph(saved)


def _rewrite_npz(path: Path, **arrays: np.ndarray) -> None:
    import hashlib

    npz = path.with_suffix(".npz")
    with np.load(npz) as data:
        current = {k: data[k] for k in data.files}
    current.update(arrays)
    with open(npz, "wb") as fh:
        np.savez(fh, **current)  # type: ignore[arg-type]
    _edit(path, {"sha256": hashlib.sha256(npz.read_bytes()).hexdigest(),
                 "n_links": int(current["link_source"].shape[0])})


@pytest.mark.parametrize(("field", "bad", "message"), [
    ("link_target", lambda a: a + 10_000, "out of range"),
    ("link_source", lambda a: a - 10_000, "out of range"),
    ("link_weight", lambda a: a * np.nan, "finite"),
    ("prod_indptr", lambda a: a[::-1].copy(), "CSR"),
    ("link_source", lambda a: a.astype(object), "pickle|integer"),
])
def test_tampered_arrays_are_one_clear_error(saved: Path, field: str, bad: object,
                                             message: str) -> None:
    npz = saved.with_suffix(".npz")
    with np.load(npz) as data:
        original = data[field]
    _rewrite_npz(saved, **{field: bad(original)})  # type: ignore[operator]
    with pytest.raises(GraphError, match=message):
        load_graph(saved)


def test_corrupted_zlib_member_is_one_clear_error(saved: Path) -> None:
    import hashlib

    npz = saved.with_suffix(".npz")
    raw = bytearray(npz.read_bytes())
    middle = len(raw) // 2
    raw[middle:middle + 64] = b"\xff" * 64
    npz.write_bytes(bytes(raw))
    _edit(saved, {"sha256": hashlib.sha256(bytes(raw)).hexdigest()})
    with pytest.raises(GraphError):
        load_graph(saved)


def test_graph_stats_on_dev_zero_is_one_line(saved: Path) -> None:
    _edit(saved, {"file": "/dev/zero"})
    line = _one_error(_cli("graph", "stats", str(saved), cwd=saved.parent, timeout=30))
    assert "matrices.file" in line


# -- item 8: output paths never destroy data ----------------------------------------------------

def test_output_refuses_a_fifo_and_the_source(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    line = _one_error(_cli("graph", "build", "demo", "-o", str(fifo), "--embedder", "none",
                           cwd=tmp_path))
    assert "not a regular file" in line
    assert fifo.is_fifo()
    catalog = tmp_path / "tools.json"
    from hyperplan.sources import demo_catalog_path

    catalog.write_text(demo_catalog_path().read_text())
    before = catalog.read_bytes()
    line = _one_error(_cli("graph", "build", f"openai:{catalog}", "-o", str(catalog),
                           "--embedder", "none", cwd=tmp_path))
    assert "source" in line and catalog.read_bytes() == before


def test_two_outputs_never_share_one_npz(tmp_path: Path) -> None:
    first = _cli("graph", "build", "demo", "-o", "out/s.json", "--embedder", "none",
                 cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    line = _one_error(_cli("graph", "build", "demo", "-o", "out/s", "--embedder", "none",
                           cwd=tmp_path))
    assert "holds the matrices of the graph" in line
    load_graph(tmp_path / "out" / "s.json")  # still whole


# -- item 10: the smaller crashes ---------------------------------------------------------------

def test_unterminated_mcp_command_is_one_line(tmp_path: Path) -> None:
    line = _one_error(_cli("run", "--tools", "mcp-server:python3 'unterminated", "--goal",
                           '{"terminals": ["x"]}', cwd=tmp_path))
    assert "cannot split" in line


def test_trace_show_on_an_empty_file_fails(tmp_path: Path) -> None:
    empty = tmp_path / "t.jsonl"
    empty.write_text("")
    line = _one_error(_cli("trace", "show", str(empty), cwd=tmp_path))
    assert "empty trace" in line


def test_control_characters_in_names_are_refused(tmp_path: Path) -> None:
    catalog = tmp_path / "tools.json"
    catalog.write_text(json.dumps([{"name": "evil\x1b[31m\x07", "description": "x",
                                    "parameters": {"type": "object", "properties": {}}}]))
    line = _one_error(_cli("graph", "build", f"openai:{catalog}", "-o", "g.json",
                           "--embedder", "none", cwd=tmp_path))
    assert "control" in line and "\x1b" not in line


def test_silently_ignored_catalog_parts_are_warned(tmp_path: Path) -> None:
    catalog = tmp_path / "tools.json"
    catalog.write_text(json.dumps([{
        "type": "function", "returns": {"type": "object"},
        "function": {"name": "get_x", "description": "Get x.", "parameters": {
            "type": "object", "properties": {"a": {"type": "string"}},
            "required": ["a", "b"]}}}]))
    proc = _cli("graph", "build", f"openai:{catalog}", "-o", "g.json", "--embedder", "none",
                cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "unknown key 'returns' beside 'function'" in proc.stderr
    assert "'required' names 'b'" in proc.stderr


def test_tools_and_mcp_command_are_both_used() -> None:
    from hyperplan.connect import tools_from_source

    server = Path(__file__).parent / "data" / "runtimes" / "mcp_server.py"
    setup = tools_from_source("python:hyperplan.examples.bookstore",
                              mcp_command=f"{sys.executable} {server}")
    try:
        names = [t.name for t in setup.catalog.tools]
        assert "add" in names and len(names) > len(setup.runtime.runtimes[1].tool_names or ())
        assert setup.runtime.call(setup.catalog.get("add"), {"a": 1, "b": 2}).ok
        python_tool = setup.catalog.tools[0]
        assert setup.runtime.can_run(python_tool) and python_tool.source != "mcp"
    finally:
        setup.runtime.close()
