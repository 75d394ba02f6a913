"""``--sandbox subprocess``: Python tools run in a child process with limits (issue 22, item 5).

:class:`SubprocessPythonRuntime` is a :class:`~hyperplan.execute.results.ToolRuntime` for the
tools of a ``python:`` source that runs every call in one child interpreter per runtime
(:mod:`hyperplan.execute.runtimes.sandbox_child`), started at the first call and kept for the
next ones, so a module's state (a login, a cart, a client) lives on between calls as it does
in-process. Before any tool code is imported the child

* moves into a new, empty **network namespace** (``unshare(CLONE_NEWNET)``, with a user
  namespace when not root): connecting anywhere, 127.0.0.1 included, fails. Where the kernel
  refuses (no privilege, user namespaces disabled, not Linux) the runtime records
  ``network isolation unavailable: <reason>`` once as a warning and runs the tools anyway;
* sets **resource limits**: ``RLIMIT_AS`` (address space, default 1 GiB: an allocation beyond
  it is a ``MemoryError`` in the tool), ``RLIMIT_FSIZE`` (no file written larger than 64 MiB:
  ``OSError: File too large``), ``RLIMIT_NOFILE`` (256 open files), ``RLIMIT_CORE`` 0, and per
  call ``RLIMIT_CPU`` (the call's seconds, plus one, of CPU time; ``SIGXCPU`` ends it past
  that);
* exits by itself when its parent is gone (a watchdog polling the parent pid each second).

Each call has the run's deadline: the parent waits at most ``timeout`` seconds for the answer,
then kills the child's process group (the child and whatever it started that stayed in its
group - nothing else) and reports the call ``OUTCOME_UNKNOWN`` (it may have done its work;
``TIMEOUT`` for a tool marked idempotent). A call that crashes the child - ``os._exit``, a
signal, the memory or CPU limit - is a ``TOOL_ERROR`` saying how it ended; the next call
starts a fresh child (module state is then lost). Every exception a tool raises,
``SystemExit`` and ``KeyboardInterrupt`` included, is a ``TOOL_ERROR`` observation, as
in-process. The child's stdout and stderr are pipes: everything the tool prints, ``os.write(1,
...)``, C extensions and programs it starts included, is captured (at most
``captured_bytes`` per stream and call) into ``metadata["stdout"]`` / ``["stderr"]`` and never
reaches hyperplan's own output. The child gets the parent's environment without
``HYPERPLAN_LLM_API_KEY``, its ``sys.path`` and working directory; stdin is ``/dev/null``.

What it does **not** protect against: reading any file the user can read, and writing or
deleting the user's files (no filesystem isolation; run as root, root inside is root on the
filesystem); seccomp-style system-call filtering (a tool may still ``kill`` the user's other
processes, or ``setsid`` out of the group and outlive the run); memory counted as address space,
not resident memory (libraries that reserve large virtual areas may need a bigger cap); the
network when isolation is unavailable; import-time code of the module, which runs in the
hyperplan process when the catalog is read (bounded by the import time limit of
:mod:`hyperplan.importers.python_safety`, not sandboxed). Host-acting modules stay refused
without ``--allow-unsafe-tools`` whether sandboxed or not.

Cost, measured on this repository's 2-core machine: starting the child and isolating it takes
about 50 ms once per runtime (again after a crash or a kill); a call then costs about 0.2 ms
over an in-process call (one JSON line each way over pipes). ``fresh_per_call=True`` starts a
new child for every call - no state carried from one call to the next, at those ~50 ms (plus
importing the tool's module) per call.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from hyperplan.catalog import Catalog, ToolSpec
from hyperplan.errors import CatalogError, HyperplanError
from hyperplan.execute.results import ErrorKind, ToolResult
from hyperplan.execute.runtimes.base import Clock, ClosingRuntime, fail_result, ok_result, truncate
from hyperplan.execute.runtimes.python import DEFAULT_TIMEOUT, not_finished, with_printed
from hyperplan.execute.runtimes.validation import rejected
from hyperplan.importers.python_callables import find_callable
from hyperplan.streams import MAX_CAPTURED_CHARS

CHILD_SCRIPT = Path(__file__).with_name("sandbox_child.py")
HIDDEN_ENV = frozenset({"HYPERPLAN_LLM_API_KEY"})  # never handed to tool code
_MIB = 1 << 20
_EFBIG, _EMFILE, _ENETUNREACH = 27, 24, 101


class Sandbox(StrEnum):
    """Where Python tools run: in the hyperplan process, or in a limited child process."""

    NONE = "none"
    SUBPROCESS = "subprocess"


@dataclass(frozen=True)
class SandboxLimits:
    """Limits of the sandbox's child process (module doc)."""

    memory_bytes: int = 1 << 30
    file_bytes: int = 64 * _MIB
    open_files: int = 256
    captured_bytes: int = MAX_CAPTURED_CHARS  # of stdout and of stderr, per call
    result_bytes: int = 16 * _MIB  # longest answer line; a bigger result is an error


@dataclass(frozen=True)
class ToolTarget:
    """Where the child finds a tool's callable: ``module`` and the dotted ``qualname`` in it."""

    module: str
    qualname: str


class SubprocessPythonRuntime(ClosingRuntime):
    """Runs Python tools in a limited child process (module doc)."""

    def __init__(self, targets: Mapping[str, ToolTarget], *,
                 timeout: float = DEFAULT_TIMEOUT, limits: SandboxLimits | None = None,
                 fresh_per_call: bool = False) -> None:
        if os.name != "posix":
            raise HyperplanError("--sandbox subprocess needs a POSIX system (resource limits)")
        self.targets = dict(targets)
        self.timeout = timeout
        self.limits = limits or SandboxLimits()
        self.fresh_per_call = fresh_per_call
        self.notes: list[str] = []  # warnings recorded once (network isolation ...)
        self.network: str | None = None  # "isolated" or "unavailable: ...", after a start
        self._child: _Child | None = None
        self._lock = threading.Lock()
        self._calls = 0

    @classmethod
    def from_catalog(cls, catalog: Catalog, *, timeout: float = DEFAULT_TIMEOUT,
                     limits: SandboxLimits | None = None, allow_unsafe: bool = False,
                     fresh_per_call: bool = False) -> SubprocessPythonRuntime:
        """Targets for every tool of ``catalog``, each checked now the way the child will find
        it (``module``/``qualname``, :func:`~hyperplan.importers.python_callables.
        find_callable`): a tool the child could not reach is a :class:`CatalogError` here,
        not a failed call later."""
        targets: dict[str, ToolTarget] = {}
        for tool in catalog.tools:
            try:
                find_callable(tool, allow_unsafe=allow_unsafe)
            except CatalogError as exc:
                raise CatalogError(f"cannot run in the sandbox: {exc.reason} (its callable must "
                                   "be reachable as module.qualname)", file=exc.file,
                                   tool=tool.name, field="metadata") from None
            targets[tool.name] = ToolTarget(str(tool.metadata["module"]),
                                            str(tool.metadata["qualname"]))
        return cls(targets, timeout=timeout, limits=limits, fresh_per_call=fresh_per_call)

    def can_run(self, tool: ToolSpec) -> bool:
        return tool.name in self.targets

    def call(self, tool: ToolSpec, arguments: Mapping[str, Any], *,
             timeout: float | None = None) -> ToolResult:
        clock = Clock()
        target = self.targets.get(tool.name)
        refused = rejected(tool, arguments, None if target else "no Python callable registered",
                           clock)
        if refused is not None or target is None:
            return refused or fail_result(tool, arguments, ErrorKind.UNKNOWN_TOOL, tool.name)
        limit = min(timeout, self.timeout) if timeout is not None else self.timeout
        deadline = time.monotonic() + limit
        if not self._lock.acquire(timeout=max(limit, 0.0)):
            return not_finished(tool, arguments, limit, clock, "another call held the sandbox")
        try:
            return self._call(tool, arguments, target, limit, deadline, clock)
        finally:
            self._lock.release()

    def _call(self, tool: ToolSpec, arguments: Mapping[str, Any], target: ToolTarget,
              limit: float, deadline: float, clock: Clock) -> ToolResult:
        child = self._child or self._start(deadline)
        if isinstance(child, str):
            return fail_result(tool, arguments, ErrorKind.TRANSPORT, child, clock)
        self._calls += 1
        request = {"id": self._calls, "module": target.module, "qualname": target.qualname,
                   "arguments": dict(arguments), "cpu_seconds": math.ceil(limit) + 1}
        exchange = child.exchange(_line(request), deadline, self.limits)
        printed = {"sandbox_pid": child.pid, **exchange.printed()}
        return with_printed(self._result(tool, arguments, exchange, limit, clock), printed)

    def _result(self, tool: ToolSpec, arguments: Mapping[str, Any], exchange: _Exchange,
                limit: float, clock: Clock) -> ToolResult:
        """The observation for how ``exchange`` ended; the child is stopped unless it
        answered (and serves the next call)."""
        if exchange.state == "answered":
            if self.fresh_per_call:
                self._stop(graceful=True)
            return self._answer(tool, arguments, exchange.reply, clock)
        code = self._stop(graceful=False)
        if exchange.state == "timeout":
            return not_finished(tool, arguments, limit, clock, "the sandboxed process was "
                                "killed")
        if exchange.state == "too_big":
            return fail_result(tool, arguments, ErrorKind.TOOL_ERROR,
                               f"{tool.name}: result larger than {self.limits.result_bytes} "
                               "bytes; the sandboxed process was killed", clock)
        return fail_result(tool, arguments, ErrorKind.TOOL_ERROR,
                           f"{tool.name}: the sandboxed process {self._ending(code, limit)} "
                           "before answering (a fresh process serves the next call)", clock)

    def _start(self, deadline: float) -> _Child | str:
        """A started, isolated child, or why it could not start (one line)."""
        try:
            child = _Child()
        except OSError as exc:
            return f"cannot start the sandbox process: {exc}"
        config = {"sys_path": sys.path, "parent": os.getpid(),
                  "limits": {"memory_bytes": self.limits.memory_bytes,
                             "file_bytes": self.limits.file_bytes,
                             "open_files": self.limits.open_files, "core_bytes": 0}}
        exchange = child.exchange(_line(config), deadline, self.limits)
        reply = exchange.reply if exchange.state == "answered" else None
        if reply is None or not reply.get("ready"):
            child.kill()
            err = exchange.printed().get("stderr", "")
            tail = err.strip().splitlines()[-1] if err.strip() else exchange.state
            return f"the sandbox process did not start: {truncate(tail, 300)}"
        self._child = child
        self.network = str(reply.get("network") or "unavailable: not reported")
        if self.network != "isolated":
            self._note(f"--sandbox subprocess: network isolation {self.network}; tools can "
                       "reach the network")
        for problem in reply.get("limit_problems") or []:
            self._note(f"--sandbox subprocess: a limit could not be set: {problem}")
        return child

    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)
            warnings.warn(text, RuntimeWarning, stacklevel=4)

    def _answer(self, tool: ToolSpec, arguments: Mapping[str, Any], reply: dict[str, Any],
                clock: Clock) -> ToolResult:
        if "error" not in reply:
            return ok_result(tool, arguments, reply.get("value"), clock)
        return fail_result(tool, arguments, ErrorKind.TOOL_ERROR,
                           truncate(str(reply["error"])) + self._hint(reply), clock)

    def _hint(self, reply: Mapping[str, Any]) -> str:
        """Which limit of the sandbox an error comes from, when it is one."""
        if reply.get("error_type") == "MemoryError":
            return (f" (the sandbox caps the process at {self.limits.memory_bytes // _MIB} MiB "
                    "of address space)")
        errno = reply.get("errno")
        if errno == _EFBIG:
            return f" (the sandbox caps written files at {self.limits.file_bytes // _MIB} MiB)"
        if errno == _EMFILE:
            return f" (the sandbox allows {self.limits.open_files} open files)"
        if errno == _ENETUNREACH and self.network == "isolated":
            return " (the sandbox has no network)"
        return ""

    @staticmethod
    def _ending(code: int | None, limit: float) -> str:
        if code is None:
            return "ended"
        if code >= 0:
            return f"exited with code {code}"
        name = _signal_name(-code)
        if -code == signal.SIGXCPU:
            return f"was stopped by {name} (more than {math.ceil(limit) + 1} s of CPU time)"
        if -code == signal.SIGKILL:
            return f"was killed ({name}; out of memory?)"
        return f"crashed ({name})"

    def _stop(self, *, graceful: bool) -> int | None:
        child, self._child = self._child, None
        if child is None:
            return None
        return child.stop(grace=1.0) if graceful else child.kill()

    def close(self) -> None:
        """Stop the child (it gets a second to exit on its own, then its group is killed)."""
        with self._lock:
            self._stop(graceful=True)


def _line(message: Mapping[str, Any]) -> bytes:
    return json.dumps(message, default=str).encode("utf-8") + b"\n"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _child_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in HIDDEN_ENV}


class _Bounded:
    """Bytes read from one stream of the child during one call, at most ``limit`` kept."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = self.limit - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        self.dropped += max(0, len(chunk) - max(room, 0))

    def text(self) -> str:
        text = self.data.decode("utf-8", "replace")
        return text + f"\n[... {self.dropped} more bytes not kept]" if self.dropped else text


@dataclass(frozen=True)
class _Exchange:
    """One request and what came back: ``state`` is ``answered`` (``reply`` set),
    ``timeout``, ``exited`` (the child ended first) or ``too_big`` (answer over the bound)."""

    state: str
    reply: dict[str, Any]
    stdout: _Bounded
    stderr: _Bounded

    def printed(self) -> dict[str, str]:
        texts = {"stdout": self.stdout.text(), "stderr": self.stderr.text()}
        return {k: v for k, v in texts.items() if v}


class _Child:
    """The child process and its four pipes (requests, answers, stdout, stderr)."""

    def __init__(self) -> None:
        req_r, req_w = os.pipe()
        res_r, res_w = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-P", str(CHILD_SCRIPT), str(req_r), str(res_w)],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                pass_fds=(req_r, res_w), start_new_session=True, env=_child_env())
        except BaseException:
            for fd in (req_w, res_r):
                os.close(fd)
            raise
        finally:
            for fd in (req_r, res_w):
                os.close(fd)
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.pid = self.proc.pid
        self.req_w, self.res_r = req_w, res_r
        self.out_fd, self.err_fd = self.proc.stdout.fileno(), self.proc.stderr.fileno()
        for fd in (req_w, res_r, self.out_fd, self.err_fd):
            os.set_blocking(fd, False)
        self._fds = _Fds({req_w, res_r})
        self._finalizer = weakref.finalize(self, _kill_group, self.proc, self._fds)

    def exchange(self, payload: bytes, deadline: float, limits: SandboxLimits) -> _Exchange:
        """Send ``payload``, read stdout, stderr and the answer until the answer line is
        complete, the child ends, or ``deadline`` (``time.monotonic``) passes."""
        out, err = _Bounded(limits.captured_bytes), _Bounded(limits.captured_bytes)
        answer = bytearray()
        pending = memoryview(payload)
        state = ""
        with selectors.DefaultSelector() as selector:
            selector.register(self.req_w, selectors.EVENT_WRITE)
            for fd, data in ((self.out_fd, out), (self.err_fd, err), (self.res_r, None)):
                selector.register(fd, selectors.EVENT_READ, data)
            while not state:
                left = deadline - time.monotonic()
                if left <= 0:
                    state = "timeout"
                    break
                for key, _ in selector.select(left):
                    if key.fd == self.req_w:
                        try:
                            pending = pending[os.write(self.req_w, pending):]
                        except BrokenPipeError:
                            state = "exited"
                            break
                        if not pending:
                            selector.unregister(self.req_w)
                    elif key.fd == self.res_r:
                        state = _read_answer(self.res_r, answer, limits.result_bytes)
                    else:
                        _read_output(selector, key.fd, key.data)
            _drain(selector, wait=0.5 if state == "exited" else 0.0)
        reply = _parse(answer) if state == "answered" else {}
        if state == "answered" and reply is None:
            state, reply = "exited", {}
        return _Exchange(state, reply or {}, out, err)

    def stop(self, grace: float) -> int | None:
        """Close the request pipe (the child exits), wait up to ``grace`` seconds, then kill
        what is left of the child's process group; the child's exit code."""
        self._fds.close(self.req_w)
        _wait_exited(self.pid, grace)
        return self.kill()

    def kill(self) -> int | None:
        """Kill the child's process group (before reaping the child, so its id cannot have
        been reused) and reap it; its exit code (negative: the signal)."""
        self._finalizer.detach()
        return _kill_group(self.proc, self._fds)


def _read_answer(fd: int, answer: bytearray, bound: int) -> str:
    try:
        chunk = os.read(fd, 1 << 16)
    except BlockingIOError:
        return ""
    if not chunk:
        return "exited"
    answer += chunk
    if b"\n" in chunk:
        return "answered"
    return "too_big" if len(answer) > bound else ""


def _read_output(selector: selectors.BaseSelector, fd: int, sink: _Bounded) -> bool:
    """Read what is there of a child's stdout/stderr; False (and unregistered) at EOF."""
    try:
        chunk = os.read(fd, 1 << 16)
    except BlockingIOError:
        return True
    if not chunk:
        selector.unregister(fd)
        return False
    sink.add(chunk)
    return True


def _drain(selector: selectors.BaseSelector, wait: float) -> None:
    """Read the output the child wrote before its answer (already in the pipes), or, when it
    ended, until both pipes close (at most ``wait`` seconds)."""
    end = time.monotonic() + wait
    outputs = [k for k in selector.get_map().values() if isinstance(k.data, _Bounded)]
    while outputs:
        ready = selector.select(max(0.0, end - time.monotonic()))
        ready = [(k, e) for k, e in ready if isinstance(k.data, _Bounded)]
        if not ready:
            return
        for key, _ in ready:
            if not _read_output(selector, key.fd, key.data):
                outputs = [k for k in outputs if k.fd != key.fd]


def _parse(answer: bytearray) -> dict[str, Any] | None:
    try:
        reply = json.loads(bytes(answer[: answer.index(b"\n")]))
    except (ValueError, UnicodeDecodeError):
        return None
    return reply if isinstance(reply, dict) else None


def _wait_exited(pid: int, seconds: float) -> None:
    """Wait until ``pid`` has exited without reaping it (``waitid(WNOWAIT)``)."""
    waitid = getattr(os, "waitid", None)
    end = time.monotonic() + seconds
    while waitid is not None and time.monotonic() < end:
        try:
            if waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return
        except ChildProcessError:
            return
        time.sleep(0.01)


class _Fds:
    """The parent's ends of the protocol pipes, each closed once (a number closed twice
    could by then belong to another file)."""

    def __init__(self, fds: set[int]) -> None:
        self._open = fds
        self._lock = threading.Lock()

    def close(self, fd: int | None = None) -> None:
        """Close ``fd``, or every one still open."""
        with self._lock:
            chosen = self._open & {fd} if fd is not None else set(self._open)
            self._open -= chosen
        for number in chosen:
            with contextlib.suppress(OSError):
                os.close(number)


def _kill_group(proc: subprocess.Popen[bytes], fds: _Fds) -> int | None:
    """SIGKILL the child's process group (the child leads it: ``start_new_session``), reap
    the child, close the pipes; the child's exit code."""
    if proc.returncode is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
    code = proc.wait()
    fds.close()
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    return code
