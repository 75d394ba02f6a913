"""Issue 22, items 5 and 6, in-process: a ``python:`` source never hands the model OS routines
(unless ``--allow-unsafe-tools``), a tool cannot end the run, what it prints stays out of
``--json`` (and in the trace), and a module that exits, raises or loops at import is one clear
line. The misbehaving modules are written into ``tmp_path`` here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

from hyperplan.catalog import build_catalog, make_tool
from hyperplan.errors import CatalogError
from hyperplan.execute.results import ErrorKind
from hyperplan.execute.runtimes.python import PythonRuntime, describe_exception
from hyperplan.graph.schema_paths import SchemaWarning
from hyperplan.importers.python_callables import get_callable, load_python_target
from hyperplan.importers.python_safety import UNSAFE_MODULES, import_with_limit, origins

ALLOW = "--allow-unsafe-tools"

TOOLS = '''
import sys


class Odd(BaseException):
    """Not an Exception."""


def shout(text: str) -> str:
    """Shout a text back; returns the shouted text."""
    print("printed by the tool:", text)
    sys.stderr.write("complained by the tool\\n")
    return text.upper()


def leave(text: str) -> str:
    """Leave the interpreter; returns the text."""
    sys.exit(3)


def interrupt(text: str) -> str:
    """Press Ctrl-C; returns the text."""
    raise KeyboardInterrupt("pressed by the tool")


def odd(text: str) -> str:
    """Raise a BaseException subclass; returns the text."""
    raise Odd("odd one")


def close_generator(text: str) -> str:
    """Raise GeneratorExit; returns the text."""
    raise GeneratorExit
'''


def _module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> str:
    """Write ``source`` as a fresh module on ``sys.path``; its (unique) name."""
    name = f"hp_unit_{uuid.uuid4().hex[:10]}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def _cli(args: list[str], tmp_path: Path, timeout: float = 120,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path]),
               **(env or {})}
    return subprocess.run([sys.executable, "-m", "hyperplan", *args], capture_output=True,
                          text=True, timeout=timeout, env=environ, cwd=tmp_path)


def _one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    return errors[0]


# --------------------------------------------------------------------------- item 5


@pytest.mark.parametrize("spec", ["os", "os:system", "subprocess:run", "shutil:rmtree",
                                  "builtins:eval", "pathlib", "http.client", "ctypes"])
def test_host_acting_modules_are_refused(spec: str) -> None:
    with pytest.raises(CatalogError) as caught:
        load_python_target(spec)
    text = str(caught.value)
    assert f"python:{spec}" in text and ALLOW in text and "acts on the host" in text
    assert "\n" not in text


def test_callables_from_host_modules_are_refused_by_where_they_come_from(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = _module(tmp_path, monkeypatch, '''
        import functools
        import os
        from os import system
        from shutil import rmtree as tidy
        run = functools.partial(os.system, "id")
        env_get = os.environ.get
        opener = open

        def mine(x: int) -> int:
            """Twice x."""
            return 2 * x
    ''')
    for attr, origin in [("system", "posix"), ("tidy", "shutil"), ("run", "posix"),
                         ("env_get", "os"), ("opener", "io")]:
        with pytest.raises(CatalogError, match=rf"'{attr}' comes from module '{origin}'.*{ALLOW}"):
            load_python_target(f"{name}:{attr}")
    assert load_python_target(f"{name}:mine").names() == ["mine"]
    assert "posix" in origins(os.system) and "os" in origins(os.environ.get)


def test_a_module_exposes_only_its_own_routines(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    star = _module(tmp_path, monkeypatch, '''
        from os import *
        from math import sqrt

        def mine(x: int) -> int:
            """Twice x."""
            return 2 * x
    ''')
    assert load_python_target(star).names() == ["mine"]
    listed = _module(tmp_path, monkeypatch, '''
        from os import remove, system
        from math import sqrt
        __all__ = ["mine", "system", "remove", "sqrt"]

        def mine(x: int) -> int:
            """Twice x."""
            return 2 * x
    ''')
    # __all__ is the author's export list, but never a re-exported OS routine
    assert load_python_target(listed).names() == ["mine", "sqrt"]


def test_allow_unsafe_tools_exposes_them_anyway() -> None:
    assert load_python_target("os:getcwd", allow_unsafe=True).names() == ["getcwd"]
    with pytest.warns(SchemaWarning):  # a few C builtins of posix have no signature
        assert "system" in load_python_target("os", allow_unsafe=True).names()
    # os.path is not refused: path helpers and stat queries, nothing that writes or runs
    assert load_python_target("os.path:join").names() == ["join"]
    assert {"os", "subprocess", "shutil", "sys", "builtins", "socket"} <= UNSAFE_MODULES


def test_get_callable_by_metadata_refuses_host_routines() -> None:
    tool = make_tool(file="unit", name="system", description="Run a command.",
                     input_schema={"type": "object", "properties": {}},
                     source=f"unit-{uuid.uuid4().hex}",
                     metadata={"module": "os", "qualname": "system"})
    with pytest.raises(CatalogError, match=ALLOW):
        get_callable(tool)
    assert get_callable(tool, allow_unsafe=True) is os.system
    assert not PythonRuntime.from_catalog(build_catalog([tool], source=tool.source)).can_run(tool)


def test_cli_refuses_python_os_in_one_line_and_allows_it_with_the_flag(tmp_path: Path) -> None:
    line = _one_error_line(_cli(["graph", "build", "python:os:system", "-o",
                                 str(tmp_path / "g.json"), "--embedder", "none"], tmp_path))
    assert "python:os:system" in line and ALLOW in line
    allowed = _cli(["graph", "build", "python:os:getcwd", "-o", str(tmp_path / "g.json"),
                    "--embedder", "none", ALLOW], tmp_path)
    assert allowed.returncode == 0, allowed.stderr
    run = _cli(["run", "--tools", "python:os:system", "--goal",
                '{"terminals": ["system"], "values": {"command": "id"}}', "--json"], tmp_path)
    assert ALLOW in _one_error_line(run) and not run.stdout.strip()


# --------------------------------------------------------------------------- item 6


@pytest.mark.parametrize("timeout", [5.0, None])
def test_every_exception_a_tool_raises_is_an_observation(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, timeout: float | None) -> None:
    catalog = load_python_target(_module(tmp_path, monkeypatch, TOOLS))
    runtime = PythonRuntime.from_catalog(catalog, timeout=timeout)
    for name, text in [("leave", "SystemExit: 3"),
                       ("interrupt", "KeyboardInterrupt: pressed by the tool"),
                       ("odd", "Odd: odd one"), ("close_generator", "GeneratorExit")]:
        result = runtime.call(catalog.get(name), {"text": "hi"})
        assert (result.ok, result.error_kind, result.error) == (False, ErrorKind.TOOL_ERROR,
                                                                text)


def test_prints_are_captured_per_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    catalog = load_python_target(_module(tmp_path, monkeypatch, TOOLS))
    runtime = PythonRuntime.from_catalog(catalog)
    stop = threading.Event()

    def chatter() -> None:  # another thread of the run, printing meanwhile
        while not stop.is_set():
            print("agent progress")
            time.sleep(0.001)

    other = threading.Thread(target=chatter)
    other.start()
    try:
        results = [runtime.call(catalog.get("shout"), {"text": "hi"}) for _ in range(20)]
    finally:
        stop.set()
        other.join()
    for result in results:
        assert result.value == "HI"
        assert result.metadata["stdout"] == "printed by the tool: hi\n"
        assert result.metadata["stderr"] == "complained by the tool\n"
    seen = capsys.readouterr()
    assert "agent progress" in seen.out and "printed by the tool" not in seen.out
    assert "complained by the tool" not in seen.err


def test_captured_output_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = load_python_target(_module(tmp_path, monkeypatch, '''
        def flood(n: int) -> int:
            """Print n characters; returns n."""
            for _ in range(n // 100):
                print("x" * 99)
            return n
    '''))
    runtime = PythonRuntime({"flood": get_callable(catalog.get("flood"))},
                            max_captured_chars=500)
    result = runtime.call(catalog.get("flood"), {"n": 100_000})
    assert result.ok and len(result.metadata["stdout"]) < 600
    assert "99500 more characters not kept" in result.metadata["stdout"]


def test_describe_survives_an_exception_whose_str_fails() -> None:
    class Broken(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert describe_exception(Broken()) == "Broken: (message could not be printed)"


def _goal(tool: str) -> str:
    return json.dumps({"terminals": [tool], "values": {"text": "hi"}})


@pytest.mark.parametrize("tool", ["leave", "interrupt", "odd"])
def test_run_json_survives_a_tool_that_exits(tmp_path: Path, tool: str) -> None:
    (tmp_path / "hp_exiting_tools.py").write_text(TOOLS, encoding="utf-8")
    trace = tmp_path / "trace.jsonl"
    result = _cli(["run", "--tools", "python:hp_exiting_tools", "--goal", _goal(tool), "--json",
                   "--embedder", "hashing", "--trace", str(trace)], tmp_path)
    assert result.returncode == 2, result.stderr
    summary = json.loads(result.stdout)
    assert summary["status"] == "failed" and summary["tool_calls"] == 1
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    calls = [e for e in events if e["type"] == "tool_call"]
    assert calls and calls[0]["error_kind"] == "tool_error"
    assert events[-1]["type"] == "run_end"


def test_run_json_stays_json_when_a_tool_prints(tmp_path: Path) -> None:
    (tmp_path / "hp_printing_tools.py").write_text(TOOLS, encoding="utf-8")
    trace = tmp_path / "trace.jsonl"
    result = _cli(["run", "--tools", "python:hp_printing_tools", "--goal", _goal("shout"),
                   "--json", "--embedder", "hashing", "--trace", str(trace)], tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["status"] == "success"
    assert "printed by the tool" not in result.stdout + result.stderr
    call = next(json.loads(line) for line in trace.read_text().splitlines()
                if json.loads(line)["type"] == "tool_call")
    assert call["stdout"] == "printed by the tool: hi\n"
    assert call["stderr"] == "complained by the tool\n"


@pytest.mark.parametrize(("source", "expected"), [
    ("import sys\nsys.exit(4)\n", "it called sys.exit(4) at import"),
    ("x = 1\nraise ValueError('bad at import')\n", "ValueError: bad at import ("),
    ("def f(:\n    pass\n", "SyntaxError: invalid syntax ("),
    ("raise KeyboardInterrupt\n", "KeyboardInterrupt"),
])
def test_graph_build_reports_a_failing_import_in_one_line(tmp_path: Path, source: str,
                                                          expected: str) -> None:
    (tmp_path / "hp_bad_import.py").write_text(source, encoding="utf-8")
    line = _one_error_line(_cli(["graph", "build", "python:hp_bad_import", "-o",
                                 str(tmp_path / "g.json"), "--embedder", "none"], tmp_path))
    assert "python:hp_bad_import" in line and "'hp_bad_import'" in line and expected in line
    if "SyntaxError" in expected or "ValueError" in expected:
        assert "hp_bad_import.py, line " in line


def test_graph_build_gives_up_on_an_import_that_loops(tmp_path: Path) -> None:
    (tmp_path / "hp_loop_import.py").write_text(
        "print('hello from the import')\nwhile True:\n    pass\n", encoding="utf-8")
    start = time.monotonic()
    result = _cli(["graph", "build", "python:hp_loop_import", "-o", str(tmp_path / "g.json"),
                   "--embedder", "none"], tmp_path, timeout=60,
                  env={"HYPERPLAN_IMPORT_TIMEOUT": "1"})
    line = _one_error_line(result)
    assert "'hp_loop_import' did not finish within 1 s (it may loop at import)" in line
    assert time.monotonic() - start < 20  # the process exits despite the looping thread
    assert "hello from the import" in result.stderr and not result.stdout.strip()


def test_import_limit_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = _module(tmp_path, monkeypatch, "import time\nwhile True:\n    time.sleep(0.01)\n")
    start = time.monotonic()
    with pytest.raises(CatalogError, match=r"did not finish within 0\.3 s"):
        load_python_target(name, import_timeout=0.3)
    assert time.monotonic() - start < 2
    with pytest.raises(CatalogError, match="did not finish earlier"):  # not waited for twice
        import_with_limit(name, f"python:{name}", 5)
    monkeypatch.setenv("HYPERPLAN_IMPORT_TIMEOUT", "soon")
    with pytest.raises(CatalogError, match="HYPERPLAN_IMPORT_TIMEOUT must be a positive"):
        load_python_target("json:dumps")


def test_binary_writes_and_a_missing_stream() -> None:
    from hyperplan.streams import Capture, ThreadStream, capturing

    def tool() -> str:
        sys.stdout.buffer.write("bytes é\n".encode())
        sys.stdout.writelines(["a", "b\n"])
        return "done"

    capture = Capture.bounded(100)
    with capturing(capture):
        assert tool() == "done"
    assert capture.printed() == {"stdout": "bytes é\nab\n"}
    assert ThreadStream(None).write("dropped") == len("dropped")  # as under pythonw


def test_a_real_stream_whose_write_returns_nothing() -> None:
    """Ray's worker streams (and some IDE consoles) return None from ``write``; the proxy must
    pass the text on and not raise."""
    from hyperplan.streams import ThreadStream

    class NoCount:
        def __init__(self) -> None:
            self.text = ""

        def write(self, text: str) -> None:
            self.text += text

    real = NoCount()
    assert ThreadStream(real).write("seen") == len("seen")
    assert real.text == "seen"
