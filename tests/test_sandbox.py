"""Issue 22, item 5: ``--sandbox subprocess`` runs Python tools in a limited child process -
memory, file size and CPU capped, no network, the call's deadline enforced by killing the
child's process group - and the parent survives whatever the tool does. Only processes these
tests start are killed, by pid."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from hyperplan.catalog import Catalog
from hyperplan.connect import tools_from_source
from hyperplan.errors import CatalogError, HyperplanError
from hyperplan.execute.results import ErrorKind
from hyperplan.execute.runtimes.sandbox import SandboxLimits, SubprocessPythonRuntime
from hyperplan.importers.python_callables import load_python_callables, load_python_target

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the sandbox needs POSIX")

TOOLS = '''
import os
import socket
import subprocess
import sys
import time

STATE = {}


def remember(key: str, value: str) -> str:
    """Remember a value under a key; returns the value."""
    STATE[key] = value
    print("remembering", key)
    sys.stderr.write("noted\\n")
    os.write(1, b"written to fd 1\\n")
    return value


def recall(key: str) -> str:
    """The value remembered under a key."""
    return STATE.get(key, "")


def hog(gib: int = 2) -> int:
    """Allocate gib GiB; returns the bytes allocated."""
    return len(bytearray(gib * 1024 ** 3))


def spin(seconds: float = 1000.0) -> int:
    """Loop; returns the iterations."""
    n = 0
    while True:
        n += 1


def spawn_and_sleep(seconds: float = 1000.0) -> int:
    """Start a sleeping program and sleep; returns its pid."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)"])
    print(child.pid, flush=True)
    time.sleep(seconds)
    return child.pid


def big_file(path: str, mib: int = 2) -> int:
    """Write a file of mib MiB; returns mib."""
    with open(path, "wb") as handle:
        handle.write(b"x" * (mib * 1024 * 1024))
    return mib


def connect(port: int) -> str:
    """Connect to 127.0.0.1:port; returns 'connected'."""
    with socket.create_connection(("127.0.0.1", port), timeout=2):
        return "connected"


def leave(code: int = 3) -> int:
    """sys.exit(code); returns the code."""
    sys.exit(code)


def interrupt(code: int = 0) -> int:
    """Raise KeyboardInterrupt; returns the code."""
    raise KeyboardInterrupt("pressed by the tool")


class Odd(BaseException):
    """Not an Exception."""


def odd(code: int = 0) -> int:
    """Raise a BaseException subclass; returns the code."""
    raise Odd("odd one")


def hard_exit(code: int = 4) -> int:
    """os._exit(code); returns the code."""
    os._exit(code)


def pid() -> int:
    """The process id."""
    return os.getpid()


def long_text(n: int) -> str:
    """n characters."""
    return "x" * n
'''


@pytest.fixture()
def catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Catalog:
    name = f"hp_sandboxed_{uuid.uuid4().hex[:10]}"
    (tmp_path / f"{name}.py").write_text(TOOLS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return load_python_target(name)


@pytest.fixture()
def runtime(catalog: Catalog) -> Iterator[SubprocessPythonRuntime]:
    limits = SandboxLimits(file_bytes=1 << 20)
    with SubprocessPythonRuntime.from_catalog(catalog, timeout=20, limits=limits) as runtime:
        yield runtime


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for a parent that is gone counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def test_module_state_lives_between_calls_and_prints_are_captured(
        catalog: Catalog, runtime: SubprocessPythonRuntime) -> None:
    first = runtime.call(catalog.get("remember"), {"key": "a", "value": "1"})
    assert first.ok and first.value == "1"
    assert first.metadata["stdout"] == "remembering a\nwritten to fd 1\n"  # fd level too
    assert first.metadata["stderr"] == "noted\n"
    second = runtime.call(catalog.get("recall"), {"key": "a"})
    assert second.value == "1" and "stdout" not in second.metadata
    child = runtime.call(catalog.get("pid"), {})
    assert child.value == first.metadata["sandbox_pid"] != os.getpid()


def test_memory_over_the_cap_is_a_clear_error_and_the_parent_survives(
        catalog: Catalog, runtime: SubprocessPythonRuntime) -> None:
    result = runtime.call(catalog.get("hog"), {"gib": 2})
    assert result.error_kind is ErrorKind.TOOL_ERROR
    assert result.error == ("MemoryError (the sandbox caps the process at 1024 MiB of address "
                            "space)")
    assert runtime.call(catalog.get("pid"), {}).ok  # the child survived too


def test_a_looping_tool_is_killed_at_the_deadline(catalog: Catalog,
                                                  runtime: SubprocessPythonRuntime) -> None:
    start = time.monotonic()
    result = runtime.call(catalog.get("spin"), {}, timeout=1.0)
    assert time.monotonic() - start < 1.0 + 2.0
    assert result.error_kind is ErrorKind.OUTCOME_UNKNOWN and "killed" in result.error
    assert not _alive(int(result.metadata["sandbox_pid"]))
    after = runtime.call(catalog.get("pid"), {})  # a fresh child serves the next call
    assert after.ok and after.value != result.metadata["sandbox_pid"]


def test_the_deadline_kills_what_the_tool_started(catalog: Catalog,
                                                  runtime: SubprocessPythonRuntime) -> None:
    result = runtime.call(catalog.get("spawn_and_sleep"), {}, timeout=1.5)
    assert result.error_kind is ErrorKind.OUTCOME_UNKNOWN
    grandchild = int(result.metadata["stdout"].split()[0])
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)


def test_a_file_over_the_cap_fails(catalog: Catalog, runtime: SubprocessPythonRuntime,
                                   tmp_path: Path) -> None:
    target = tmp_path / "big.bin"
    result = runtime.call(catalog.get("big_file"), {"path": str(target), "mib": 2})
    assert result.error_kind is ErrorKind.TOOL_ERROR
    assert "File too large" in result.error and "caps written files at 1 MiB" in result.error
    assert target.stat().st_size <= 1 << 20
    assert runtime.call(catalog.get("big_file"), {"path": str(target), "mib": 0}).ok


def test_no_network_inside(catalog: Catalog, runtime: SubprocessPythonRuntime) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(0.5)
        port = server.getsockname()[1]
        result = runtime.call(catalog.get("connect"), {"port": port})
        if runtime.network != "isolated":  # the kernel refused unshare: recorded, not hidden
            assert any("network isolation unavailable" in n for n in runtime.notes)
            pytest.skip(f"network isolation unavailable here: {runtime.network}")
        assert result.error_kind is ErrorKind.TOOL_ERROR
        assert "Network is unreachable" in result.error and "no network" in result.error
        with pytest.raises(TimeoutError):
            server.accept()  # nothing reached the server


@pytest.mark.parametrize(("tool", "error"), [
    ("leave", "SystemExit: 3"), ("interrupt", "KeyboardInterrupt: pressed by the tool"),
    ("odd", "Odd: odd one")])
def test_exceptions_of_every_kind_are_observations(
        catalog: Catalog, runtime: SubprocessPythonRuntime, tool: str, error: str) -> None:
    result = runtime.call(catalog.get(tool), {})
    assert (result.error_kind, result.error) == (ErrorKind.TOOL_ERROR, error)
    assert runtime.call(catalog.get("pid"), {}).value == result.metadata["sandbox_pid"]


def test_a_tool_ending_the_child_is_an_observation(catalog: Catalog,
                                                   runtime: SubprocessPythonRuntime) -> None:
    runtime.call(catalog.get("remember"), {"key": "a", "value": "1"})
    result = runtime.call(catalog.get("hard_exit"), {"code": 4})
    assert result.error_kind is ErrorKind.TOOL_ERROR
    assert "exited with code 4 before answering" in result.error
    assert runtime.call(catalog.get("recall"), {"key": "a"}).value == ""  # a fresh process


def test_an_answer_over_its_bound_is_an_error(catalog: Catalog) -> None:
    limits = SandboxLimits(result_bytes=1000)
    with SubprocessPythonRuntime.from_catalog(catalog, limits=limits) as runtime:
        assert runtime.call(catalog.get("long_text"), {"n": 500}).value == "x" * 500
        result = runtime.call(catalog.get("long_text"), {"n": 100_000})
        assert result.error_kind is ErrorKind.TOOL_ERROR
        assert "result larger than 1000 bytes" in result.error
        assert not _alive(int(result.metadata["sandbox_pid"]))


def test_fresh_per_call_keeps_nothing(catalog: Catalog) -> None:
    with SubprocessPythonRuntime.from_catalog(catalog, fresh_per_call=True) as runtime:
        first = runtime.call(catalog.get("remember"), {"key": "a", "value": "1"})
        assert first.ok and runtime.call(catalog.get("recall"), {"key": "a"}).value == ""
        assert not _alive(int(first.metadata["sandbox_pid"]))


def test_close_stops_the_child(catalog: Catalog) -> None:
    runtime = SubprocessPythonRuntime.from_catalog(catalog)
    child = int(runtime.call(catalog.get("pid"), {}).value)
    assert _alive(child)
    runtime.close()
    assert not _alive(child)


def test_the_child_exits_when_its_parent_is_killed(tmp_path: Path, catalog: Catalog) -> None:
    module = catalog.tools[0].metadata["module"]
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from hyperplan.importers.python_callables import load_python_target
        from hyperplan.execute.runtimes.sandbox import SubprocessPythonRuntime
        catalog = load_python_target({module!r})
        runtime = SubprocessPythonRuntime.from_catalog(catalog, timeout=600)
        print(runtime.call(catalog.get("pid"), {{}}).value, flush=True)
        runtime.call(catalog.get("spin"), {{}})
    """), encoding="utf-8")
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert _alive(child)
    finally:
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child)


@pytest.mark.skipif(not shutil.which("setpriv") or os.geteuid() != 0,
                    reason="needs root and setpriv to drop CAP_SYS_ADMIN")
def test_without_isolation_a_warning_says_so_once(tmp_path: Path, catalog: Catalog) -> None:
    module = catalog.tools[0].metadata["module"]
    script = tmp_path / "unprivileged.py"
    script.write_text(textwrap.dedent(f"""
        import json, sys, warnings
        sys.path.insert(0, {str(tmp_path)!r})
        from hyperplan.importers.python_callables import load_python_target
        from hyperplan.execute.runtimes.sandbox import SubprocessPythonRuntime
        catalog = load_python_target({module!r})
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with SubprocessPythonRuntime.from_catalog(catalog) as runtime:
                values = [runtime.call(catalog.get("pid"), {{}}).ok for _ in range(3)]
                runtime.call(catalog.get("hard_exit"), {{}})  # a second child, same news
                values.append(runtime.call(catalog.get("pid"), {{}}).ok)
        print(json.dumps({{"ok": values, "network": runtime.network,
                          "warnings": [str(w.message) for w in caught]}}))
    """), encoding="utf-8")
    # root without CAP_SYS_ADMIN: the kernel refuses a network namespace
    done = subprocess.run(["setpriv", "--bounding-set=-sys_admin", "--inh-caps=-sys_admin",
                           sys.executable, str(script)], capture_output=True, text=True,
                          timeout=60)
    report = json.loads(done.stdout)
    assert report["ok"] == [True] * 4
    assert report["network"].startswith("unavailable: unshare failed")
    assert len(report["warnings"]) == 1
    assert "network isolation unavailable" in report["warnings"][0]


def test_tools_the_child_cannot_reach_are_refused_at_setup() -> None:
    def local(x: int) -> int:
        """Twice x."""
        return 2 * x

    catalog = load_python_callables([local], source="unit-local")
    with pytest.raises(CatalogError, match=r"'local'.*cannot run in the sandbox"):
        SubprocessPythonRuntime.from_catalog(catalog)


def test_sandbox_wiring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hyperplan.execute.runtimes.sandbox import Sandbox

    with pytest.raises(HyperplanError, match=r"--sandbox subprocess.*demo-world"):
        tools_from_source("demo-world", sandbox=Sandbox.SUBPROCESS)
    setup = tools_from_source("python:hyperplan.examples.bookstore", sandbox=Sandbox.SUBPROCESS)
    with setup.runtime:
        assert isinstance(setup.runtime, SubprocessPythonRuntime)


def _cli(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    return subprocess.run([sys.executable, "-m", "hyperplan", *args], capture_output=True,
                          text=True, timeout=120, env=env, cwd=tmp_path)


def test_cli_run_in_the_sandbox(tmp_path: Path) -> None:
    (tmp_path / "hp_sandbox_cli.py").write_text(TOOLS, encoding="utf-8")
    trace = tmp_path / "trace.jsonl"
    goal = json.dumps({"terminals": ["remember"], "values": {"key": "k", "value": "v"}})
    result = _cli(["run", "--tools", "python:hp_sandbox_cli", "--goal", goal, "--json",
                   "--sandbox", "subprocess", "--embedder", "hashing", "--trace", str(trace)],
                  tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["status"] == "success"  # fd-level prints stayed out
    call = next(e for e in map(json.loads, trace.read_text().splitlines())
                if e["type"] == "tool_call")
    assert call["stdout"] == "remembering k\nwritten to fd 1\n"
    goal = json.dumps({"terminals": ["leave"], "values": {"code": 3}})
    exited = _cli(["run", "--tools", "python:hp_sandbox_cli", "--goal", goal, "--json",
                   "--sandbox", "subprocess", "--embedder", "hashing"], tmp_path)
    assert exited.returncode == 2 and json.loads(exited.stdout)["status"] == "failed"


def test_a_call_that_waits_out_its_deadline_for_the_sandbox_was_never_sent(
        catalog: Catalog, runtime: SubprocessPythonRuntime) -> None:
    """While one call holds the one child, another that gets no turn before its deadline is
    a timeout saying it was not sent (safe to repeat), never outcome_unknown."""
    import threading

    holder = threading.Thread(target=runtime.call,
                              args=(catalog.get("spin"), {"seconds": 3.0}),
                              kwargs={"timeout": 3.0})
    holder.start()
    time.sleep(0.5)
    waited = runtime.call(catalog.get("pid"), {}, timeout=0.5)
    holder.join()
    assert waited.error_kind is ErrorKind.TIMEOUT and "not sent" in waited.error
