"""Issue 22, items 7 and 8: graph files are untrusted input, and output paths never destroy
data. Loads are driven through ``load_graph`` and through ``hyperplan graph stats`` in a child
process (bounded memory and time, so a regression is a failure, not a killed machine); every
refusal is exit code 1 and one ``error:`` line naming the file and the field, no traceback."""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import resource
import shutil
import stat
import subprocess
import sys
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import hyperplan.cli.graph_cmds as graph_cmds
from hyperplan.cli import app
from hyperplan.errors import GraphError
from hyperplan.graph import build_graph, load_graph, save_graph
from hyperplan.sources import demo_catalog_path, load_source

runner = CliRunner()


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))  # a 24 GB read fails fast


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None,
         timeout: float = 60) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "HYPERPLAN_EMBEDDER": "hashing", **(env or {})}
    return subprocess.run([sys.executable, "-m", "hyperplan", *args], capture_output=True,
                          text=True, env=environ, timeout=timeout, cwd=cwd,
                          preexec_fn=_limits)


def _one_error(proc: subprocess.CompletedProcess[str], *names: str) -> str:
    """The single ``error:`` line of a failed command, checked to name each of ``names``."""
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for name in names:
        assert name in lines[0], lines[0]
    return lines[0]


def _stats_error(graph: Path, *names: str) -> str:
    return _one_error(_cli("graph", "stats", str(graph), cwd=graph.parent, timeout=60), *names)


@pytest.fixture()
def saved(tmp_path: Path) -> Path:
    path = tmp_path / "g.json"
    save_graph(build_graph(load_source("demo"), embedder=None), path)
    return path


def _doc(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def _write_doc(path: Path, doc: dict[str, Any]) -> None:
    path.write_text(json.dumps(doc))


def _set_matrices(path: Path, **change: Any) -> None:
    doc = _doc(path)
    doc["matrices"].update(change)
    _write_doc(path, doc)


def _rehash(path: Path, npz: Path) -> None:
    _set_matrices(path, sha256=hashlib.sha256(npz.read_bytes()).hexdigest())


def _arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(path.with_suffix(".npz")) as data:
        return {k: data[k] for k in data.files}


def _rewrite(path: Path, **arrays: np.ndarray) -> None:
    """Replace some arrays of the graph's npz and record the new file's hash (a consistent
    tampering: only the validation can catch it)."""
    npz = path.with_suffix(".npz")
    current = {**_arrays(path), **arrays}
    with open(npz, "wb") as fh:
        np.savez(fh, **current)  # type: ignore[arg-type]
    _rehash(path, npz)


def _load_error(path: Path, pattern: str) -> str:
    with pytest.raises(GraphError, match=pattern) as info:
        load_graph(path)
    message = str(info.value)
    assert "\n" not in message
    return message


# -- item 7: the matrix file must be a bare name beside the graph, regular and bounded -----------

def test_dev_zero_as_matrix_file_is_one_line(saved: Path) -> None:
    _set_matrices(saved, file="/dev/zero")
    _stats_error(saved, str(saved), "matrices.file")


@pytest.mark.parametrize("where", ["parent", "absolute"])
def test_matrix_file_outside_the_graph_directory_is_refused(saved: Path, where: str) -> None:
    outside = saved.parent.parent / f"{saved.parent.name}-x.npz"
    shutil.copy(saved.with_suffix(".npz"), outside)  # a valid npz: only the path is wrong
    name = f"../{outside.name}" if where == "parent" else str(outside)
    _set_matrices(saved, file=name)
    message = _load_error(saved, r"matrices\.file")
    assert str(saved) in message and "bare file name" in message


def test_symlink_to_dev_zero_is_refused(saved: Path) -> None:
    (saved.parent / "zero.npz").symlink_to("/dev/zero")
    _set_matrices(saved, file="zero.npz")
    _stats_error(saved, "zero.npz", "not a regular file")


def test_oversize_matrix_file_is_refused_before_reading(saved: Path) -> None:
    npz = saved.with_suffix(".npz")
    # a zip may start with anything: the padded file is still a valid npz of this graph
    npz.write_bytes(b"\0" * (3 << 20) + npz.read_bytes())
    _rehash(saved, npz)
    _load_error(saved, "refusing to read it")


def test_zip_bomb_is_refused_before_decompressing(saved: Path) -> None:
    npz = saved.with_suffix(".npz")
    arrays = _arrays(saved)
    n = 32 << 20  # 256 MB of int64 zeros, about 250 KB compressed
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<i8", "fortran_order": False,
                                                  "shape": (n,)})
    with zipfile.ZipFile(npz, "w", zipfile.ZIP_DEFLATED) as zf:
        for key, value in arrays.items():
            if key != "link_source":
                with zf.open(f"{key}.npy", "w") as fh:
                    np.lib.format.write_array(fh, value)
        with zf.open("link_source.npy", "w") as fh:
            fh.write(header.getvalue())
            zeros = bytes(1 << 20)
            for _ in range(n * 8 >> 20):
                fh.write(zeros)
    _set_matrices(saved, n_links=n)
    _rehash(saved, npz)
    assert npz.stat().st_size < 2 << 20
    message = _load_error(saved, "refusing to read it")
    assert str(npz) in message


def test_corrupted_zlib_member_is_one_line(saved: Path) -> None:
    npz = saved.with_suffix(".npz")
    raw = bytearray(npz.read_bytes())
    with zipfile.ZipFile(npz) as zf:
        info = zf.getinfo("link_weight.npy")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    raw[start + 2:start + 40] = bytes(38)  # inside the deflate stream of one member
    npz.write_bytes(bytes(raw))
    _rehash(saved, npz)
    _stats_error(saved, str(npz), "unreadable matrix file")


class _Touch:
    """Unpickling this creates a file: proof that nothing is unpickled."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return (Path.touch, (self.path,))


def test_object_array_is_refused_and_never_unpickled(saved: Path, tmp_path: Path) -> None:
    marker = tmp_path / "unpickled"
    bomb = np.empty(len(_arrays(saved)["link_source"]), dtype=object)
    bomb[:] = [_Touch(marker)] * bomb.size
    assert pickle.loads(pickle.dumps(bomb[0])) is None and marker.exists()  # the bait works
    marker.unlink()
    _rewrite(saved, link_source=bomb)
    message = _load_error(saved, "pickle")
    assert "'link_source'" in message and not marker.exists()


# -- item 7: every id and weight is checked at load ----------------------------------------------

@pytest.mark.parametrize(("field", "bad", "expected"), [
    ("link_target", lambda a, n: np.full_like(a, n + 9000), "node id {n9} out of range"),
    ("link_source", lambda a, n: np.full_like(a, -3), "node id -3 out of range"),
    ("link_source", lambda a, n: np.zeros_like(a), "is an input-side node"),
    ("link_target", lambda a, n: a[::-1].copy(), "not sorted by target"),
    ("link_weight", lambda a, n: np.where(np.arange(a.size) == 1, np.nan, a), "finite"),
    ("link_weight", lambda a, n: np.where(np.arange(a.size) == 1, np.inf, a), "finite"),
    ("link_weight", lambda a, n: a * 0, "in \\(0, 1\\]"),
    ("link_evidence", lambda a, n: a + 50, "evidence code"),
    ("prod_data", lambda a, n: a * np.inf, "finite"),
    ("prod_indices", lambda a, n: a + 1000, "tool id .* out of range"),
])
def test_tampered_link_arrays_are_refused_at_load(saved: Path, field: str,
                                                  bad: Callable[[np.ndarray, int], np.ndarray],
                                                  expected: str) -> None:
    n = len(_doc(saved)["nodes"])
    _rewrite(saved, **{field: bad(_arrays(saved)[field], n)})
    message = _load_error(saved, expected.format(n9=n + 9000))
    assert message.startswith(f"{saved.with_suffix('.npz')}: field '{field}': ")
    if field == "link_target" and "range" in expected:
        assert message.endswith(f"(graph has {n} nodes)")


@pytest.mark.parametrize("bad_indptr", [
    lambda p: np.concatenate([[0], p[1:-1][::-1], p[-1:]]),  # starts at 0, ends at nnz
    lambda p: p[:-1].copy(),
    lambda p: np.concatenate([p[:-1], [p[-1] + 5]]),
])
def test_inconsistent_csr_index_is_refused(saved: Path,
                                           bad_indptr: Callable[[np.ndarray], np.ndarray]) -> None:
    indptr = _arrays(saved)["prod_indptr"]
    _rewrite(saved, prod_indptr=bad_indptr(indptr).astype(indptr.dtype))
    _load_error(saved, "'prod_indptr'")


def test_float_node_ids_are_refused(saved: Path) -> None:
    _rewrite(saved, link_source=_arrays(saved)["link_source"].astype(np.float64))
    _load_error(saved, "'link_source': expected an integer array")


@pytest.mark.parametrize(("change", "field", "expected"), [
    (lambda d: d["tools"][0].__setitem__("inputs", [-1]), "tools[0].inputs",
     "node id -1 out of range"),
    (lambda d: d["tools"][1].__setitem__("inputs", [10**6]), "tools[1].inputs",
     "node id 1000000 out of range"),
    (lambda d: d["tools"][2].__setitem__("outputs", d["tools"][2]["inputs"][:1]),
     "tools[2].outputs", "is an input-side node"),
    (lambda d: d["tools"][0].__setitem__("required", [len(d["nodes"]) - 1]), "tools[0].required",
     "not to this tool|output-side"),
    (lambda d: d["tools"][2].__setitem__("inputs", [True]), "tools[2].inputs", "integer"),
    (lambda d: d["nodes"][4].__setitem__(1, 99), "nodes[4]", "tool id 99 out of range"),
    (lambda d: d["nodes"][4].__setitem__(0, "sideways"), "nodes[4]", "kind 'sideways'"),
    (lambda d: d["nodes"][3].__setitem__(2, {"path": 1}), "nodes[3]", "path must be a str"),
    (lambda d: d["nodes"].append(["in", 0, "late", "any", "", False]), "nodes[",
     "input-side node after an output-side node"),
    (lambda d: d["tools"][1].__setitem__("name", d["tools"][0]["name"]), "tools[1].name",
     "also the name of tools\\[0\\]"),
    (lambda d: d["matrices"].__setitem__("n_links", "many"), "matrices.n_links", "count"),
])
def test_json_fields_are_checked_at_load(saved: Path, change: Callable[[dict[str, Any]], None],
                                         field: str, expected: str) -> None:
    doc = _doc(saved)
    change(doc)
    _write_doc(saved, doc)
    message = _load_error(saved, expected)
    assert message.startswith(f"{saved}: ") and f"field '{field}" in message


def test_required_input_outside_the_input_side_fails_at_load_not_in_stats(saved: Path) -> None:
    doc = _doc(saved)
    output = next(i for i, n in enumerate(doc["nodes"]) if n[0] == "out" and n[1] == 0)
    doc["tools"][0]["required"] = [output]  # in range, but no row of A_prod
    _write_doc(saved, doc)
    _stats_error(saved, str(saved), "tools[0].required")


def test_a_fifo_as_the_graph_file_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "g.json"
    os.mkfifo(fifo)
    _stats_error(fifo, "not a regular file")


# -- item 8: a reader never sees a mismatched pair -----------------------------------------------

_DIE_BETWEEN_RENAMES = """
import os, sys
from hyperplan.graph import build_graph, save_graph
from hyperplan.sources import load_source

other = build_graph(load_source("demo"), embedder=None).with_links([])
real_replace, calls = os.replace, []

def replace_then_die(src, dst):
    calls.append(dst)
    if len(calls) == 2:  # the JSON's rename, after its npz's: killed in between
        os._exit(9)
    real_replace(src, dst)

os.replace = replace_then_die
save_graph(other, sys.argv[1])
"""


def test_a_build_killed_after_replacing_only_the_npz_is_detected(saved: Path) -> None:
    before = saved.read_bytes()
    died = subprocess.run([sys.executable, "-c", _DIE_BETWEEN_RENAMES, str(saved)],
                          capture_output=True, text=True, timeout=120)
    assert died.returncode == 9, died.stderr
    assert saved.read_bytes() == before  # the old JSON beside the new npz
    message = _load_error(saved, r"does not belong to this graph \(rewritten by another build\?\)")
    assert str(saved) in message and str(saved.with_suffix(".npz")) in message
    _stats_error(saved, str(saved), "does not belong to this graph")


def test_a_save_that_fails_keeps_the_old_pair_whole(saved: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    before = load_graph(saved)
    files = {p.name: p.read_bytes() for p in saved.parent.iterdir()}
    real_replace = os.replace

    def full_disk_for_json(src: Any, dst: Any) -> None:
        if str(dst) == str(saved):
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", full_disk_for_json)
    other = build_graph(load_source("demo"), embedder=None).with_links([])
    with pytest.raises(GraphError, match="No space left on device") as info:
        save_graph(other, saved)
    monkeypatch.undo()
    assert str(info.value).startswith(f"{saved}: ") and "\n" not in str(info.value)
    assert {p.name: p.read_bytes() for p in saved.parent.iterdir()} == files  # no temps
    assert load_graph(saved).n_links == before.n_links > 0


def test_saved_files_get_the_usual_permissions(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        json_path, npz_path = save_graph(build_graph(load_source("demo"), embedder=None),
                                         tmp_path / "g.json")
    finally:
        os.umask(old)
    assert stat.S_IMODE(json_path.stat().st_mode) == 0o644
    assert stat.S_IMODE(npz_path.stat().st_mode) == 0o644


# -- item 8: outputs that are not regular files, or are the source ------------------------------

def _no_save(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Make any save fail loudly: a refusal must come before anything is written."""
    saves: list[Path] = []

    def never(graph: Any, path: Path) -> None:
        saves.append(Path(path))
        raise AssertionError(f"would have written {path}")

    monkeypatch.setattr(graph_cmds, "save_graph", never)
    return saves


def _refused(args: list[str], *names: str) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, GraphError | SystemExit), repr(result.exception)
    message = str(result.exception) if isinstance(result.exception, GraphError) \
        else result.output.strip()
    assert "\n" not in message
    for name in names:
        assert name in message, message
    return message


@pytest.mark.parametrize("device", ["/dev/full", "/dev/null"])
def test_a_device_output_is_refused_before_writing(device: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    if not os.path.exists(device) or not stat.S_ISCHR(os.stat(device).st_mode):
        pytest.skip(f"no {device} here")
    saves = _no_save(monkeypatch)
    _refused(["graph", "build", "demo", "-o", device, "--embedder", "none"], device,
             "not a regular file")
    assert saves == [] and stat.S_ISCHR(os.stat(device).st_mode)


def test_fifo_targets_are_refused_and_stay_fifos(tmp_path: Path) -> None:
    json_fifo, npz_fifo = tmp_path / "a.json", tmp_path / "b.npz"
    os.mkfifo(json_fifo)
    os.mkfifo(npz_fifo)
    (tmp_path / "link.json").symlink_to(json_fifo)
    for target in ("a.json", "b.json", "link.json"):
        _one_error(_cli("graph", "build", "demo", "-o", target, "--embedder", "none",
                        cwd=tmp_path), "not a regular file")
    assert json_fifo.is_fifo() and npz_fifo.is_fifo() and (tmp_path / "link.json").is_symlink()
    (tmp_path / "dangling.json").symlink_to(tmp_path / "nowhere" / "x.json")
    _one_error(_cli("graph", "build", "demo", "-o", "dangling.json", "--embedder", "none",
                    cwd=tmp_path), "dangling.json", "symbolic link to nothing")
    assert not (tmp_path / "nowhere").exists()


def test_the_source_catalog_is_never_overwritten(tmp_path: Path) -> None:
    catalog = tmp_path / "tools.json"
    catalog.write_text(demo_catalog_path().read_text())
    before = catalog.read_bytes()
    os.link(catalog, tmp_path / "hard.json")
    for output in ("tools.json", "sub/../tools.json", "hard.json"):
        _one_error(_cli("graph", "build", "openai:tools.json", "-o", output, "--embedder",
                        "none", cwd=tmp_path), output, "source tools.json")
    assert catalog.read_bytes() == before


def test_the_shipped_demo_catalog_is_never_overwritten(monkeypatch: pytest.MonkeyPatch) -> None:
    saves = _no_save(monkeypatch)
    catalog = demo_catalog_path()
    before = catalog.read_bytes()
    _refused(["graph", "build", "demo", "-o", str(catalog), "--embedder", "none"],
             str(catalog), "source")
    assert saves == [] and catalog.read_bytes() == before


def test_a_source_directory_and_a_python_module_are_protected(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "music.json").write_text("{}")
    _one_error(_cli("graph", "build", "appworld:docs", "-o", "docs/music.json",
                    "--embedder", "none", cwd=tmp_path), "docs/music.json", "source directory")
    assert (docs / "music.json").read_text() == "{}"
    module = tmp_path / "mytools.py"
    module.write_text('def hello(name: str) -> str:\n    """Greet."""\n    return name\n')
    before = module.read_bytes()
    _one_error(_cli("graph", "build", "python:mytools", "-o", "mytools.py", "--embedder",
                    "none", cwd=tmp_path, env={"PYTHONPATH": str(tmp_path)}), "mytools.py",
               "source")
    assert module.read_bytes() == before


# -- item 8: two outputs never share one npz --------------------------------------------------

def _build(tmp_path: Path, output: str) -> subprocess.CompletedProcess[str]:
    return _cli("graph", "build", "demo", "-o", output, "--embedder", "none", cwd=tmp_path)


@pytest.mark.parametrize(("first", "second"), [("out/s", "out/s.json"),
                                               ("out/s.json", "out/s"),
                                               ("out/s.json", "out/s.npz")])
def test_two_outputs_never_share_one_npz(tmp_path: Path, first: str, second: str) -> None:
    built = _build(tmp_path, first)
    assert built.returncode == 0, built.stderr
    before = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    _one_error(_build(tmp_path, second), "out/s.npz", "holds the matrices of the graph",
               first)
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == before
    load_graph(tmp_path / first)  # still whole


def test_a_large_graph_file_still_owns_its_npz(tmp_path: Path) -> None:
    """The owner check reads a graph JSON of any size, with its matrices listed anywhere."""
    first = tmp_path / "s.json"
    save_graph(build_graph(load_source("demo"), embedder=None), first)
    doc = _doc(first)
    matrices = doc.pop("matrices")
    doc["metadata"]["notes"] = "x" * (2 << 20)
    doc["matrices"] = matrices  # after 2 MiB of metadata, as an older hyperplan might write
    _write_doc(first, doc)
    with pytest.raises(GraphError, match="holds the matrices of the graph"):
        save_graph(build_graph(load_source("demo"), embedder=None), tmp_path / "s")
    load_graph(first)


# -- item 8: graph export -o ---------------------------------------------------------------------

def test_export_refuses_the_graph_its_npz_and_non_regular_targets(saved: Path) -> None:
    npz = saved.with_suffix(".npz")
    before = (saved.read_bytes(), npz.read_bytes())
    fifo = saved.parent / "out.dot"
    os.mkfifo(fifo)
    for target, expected in ((npz, "source"), (saved, "source"), (fifo, "not a regular file")):
        _one_error(_cli("graph", "export", str(saved), "-o", str(target), cwd=saved.parent),
                   str(target), expected)
    assert (saved.read_bytes(), npz.read_bytes()) == before and fifo.is_fifo()
    ok = _cli("graph", "export", str(saved), "-o", "g.dot", cwd=saved.parent)
    assert ok.returncode == 0, ok.stderr
    assert (saved.parent / "g.dot").read_text().startswith("digraph")


def test_zlib_and_zip_errors_never_escape(saved: Path) -> None:
    npz = saved.with_suffix(".npz")
    npz.write_bytes(zlib.compress(b"not a zip"))
    _rehash(saved, npz)
    _load_error(saved, "unreadable matrix file")
