"""``--sandbox subprocess``: Python tools run in a child process with limits.

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

Cost, measured on this repository's 2-core machine: starting the child, isolating it and
importing a small tool module takes about 70-90 ms, once per runtime (again after a crash or a
kill); a call then costs about what an in-process call does (0.2 ms: one JSON line each way
over pipes instead of a thread). Calls are served one at a time. ``fresh_per_call=True``
starts a new child for every call - nothing carried from one call to the next - at about
100 ms per call.
"""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from errno import EFBIG, EMFILE, ENETUNREACH
from typing import Any

from hyperplan.catalog import Catalog, ToolSpec
from hyperplan.errors import CatalogError, HyperplanError
from hyperplan.execute.results import ErrorKind, ToolResult
from hyperplan.execute.runtimes.base import Clock, ClosingRuntime, fail_result, ok_result, truncate
from hyperplan.execute.runtimes.python import DEFAULT_TIMEOUT, not_finished, with_printed
from hyperplan.execute.runtimes.sandbox_process import ChildProcess, Ending, Exchange
from hyperplan.execute.runtimes.validation import rejected
from hyperplan.execute.sandboxing import Sandbox as Sandbox  # re-exported: its old home
from hyperplan.importers.python_callables import find_callable
from hyperplan.streams import MAX_CAPTURED_CHARS

_MIB = 1 << 20


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
        self._child: ChildProcess | None = None
        self._lock = threading.Lock()
        self._calls = 0
        self._bounds = {"captured_bytes": self.limits.captured_bytes,
                        "result_bytes": self.limits.result_bytes}

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
        if not self._lock.acquire(timeout=max(limit, 0.0)):  # nothing was sent: safe to repeat
            return fail_result(tool, arguments, ErrorKind.TIMEOUT,
                               f"{tool.name}: not sent: another call held the sandbox for the "
                               f"whole {limit:g} s deadline", clock)
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
        exchange = child.exchange(_line(request), deadline, **self._bounds)
        printed = {"sandbox_pid": child.pid, **exchange.printed()}
        return with_printed(self._result(tool, arguments, exchange, limit, clock), printed)

    def _result(self, tool: ToolSpec, arguments: Mapping[str, Any], exchange: Exchange,
                limit: float, clock: Clock) -> ToolResult:
        """The observation for how ``exchange`` ended; the child is stopped unless it
        answered (and serves the next call)."""
        if exchange.state is Ending.ANSWERED:
            if self.fresh_per_call:
                self._stop(graceful=True)
            return self._answer(tool, arguments, exchange.reply, clock)
        code = self._stop(graceful=False)
        if exchange.state is Ending.TIMEOUT:
            return not_finished(tool, arguments, limit, clock, "the sandboxed process was "
                                "killed")
        if exchange.state is Ending.TOO_BIG:
            return fail_result(tool, arguments, ErrorKind.TOOL_ERROR,
                               f"{tool.name}: result larger than {self.limits.result_bytes} "
                               "bytes; the sandboxed process was killed", clock)
        return fail_result(tool, arguments, ErrorKind.TOOL_ERROR,
                           f"{tool.name}: the sandboxed process {self._ending(code, limit)} "
                           "before answering (a fresh process serves the next call)", clock)

    def _start(self, deadline: float) -> ChildProcess | str:
        """A started, isolated child, or why it could not start (one line)."""
        try:
            child = ChildProcess()
        except OSError as exc:
            return f"cannot start the sandbox process: {exc}"
        config = {"sys_path": sys.path, "parent": os.getpid(),
                  "limits": {"memory_bytes": self.limits.memory_bytes,
                             "file_bytes": self.limits.file_bytes,
                             "open_files": self.limits.open_files, "core_bytes": 0}}
        exchange = child.exchange(_line(config), deadline, **self._bounds)
        reply = exchange.reply if exchange.state is Ending.ANSWERED else None
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
        if errno == EFBIG:
            return f" (the sandbox caps written files at {self.limits.file_bytes // _MIB} MiB)"
        if errno == EMFILE:
            return f" (the sandbox allows {self.limits.open_files} open files)"
        if errno == ENETUNREACH and self.network == "isolated":
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
