"""The child process behind ``--sandbox subprocess`` and its pipes, seen from the parent
(:mod:`hyperplan.execute.runtimes.sandbox` decides what to make of it).

:class:`ChildProcess` starts :mod:`hyperplan.execute.runtimes.sandbox_child` as the leader of
a new session (so its process group holds it and whatever it starts), with four pipes: requests
and answers (JSON lines, on their own descriptors, so nothing a tool prints can be taken for
one) and its stdout and stderr. :meth:`ChildProcess.exchange` sends one request and reads the
three others with a selector until the answer line is complete, the child ends or the deadline
passes, keeping a bounded prefix of each output stream. Killing is by process group and before
the child is reaped, so the group id cannot belong to anyone else yet.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
import weakref
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

CHILD_SCRIPT = Path(__file__).with_name("sandbox_child.py")
HIDDEN_ENV = frozenset({"HYPERPLAN_LLM_API_KEY"})  # never handed to tool code
_REDACTION_MARGIN = 4096


def child_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in HIDDEN_ENV}


class Bounded:
    """Bytes read from one stream of the child during one call, at most ``limit`` kept."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        # a margin past the limit is kept so redaction (in text) sees a secret at the cut whole
        room = self.limit + _REDACTION_MARGIN - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        self.dropped += max(0, len(chunk) - max(room, 0))

    def text(self) -> str:
        """What was kept, redacted by value, *then* cut to the limit, with a marker."""
        from hyperplan.secrets import redact_text

        text = redact_text(self.data.decode("utf-8", "replace"))
        more = self.dropped + max(0, len(text) - self.limit)
        text = text[:self.limit]
        return text + f"\n[... {more} more bytes not kept]" if more else text


class Ending(StrEnum):
    """How an exchange with the child ended."""

    ANSWERED = "answered"  # the answer line is complete (``Exchange.reply``)
    TIMEOUT = "timeout"  # the deadline passed first
    EXITED = "exited"  # the child ended (or closed its answer pipe) first
    TOO_BIG = "too_big"  # the answer grew past its bound


@dataclass(frozen=True)
class Exchange:
    """One request and what came back."""

    state: Ending
    reply: dict[str, Any]
    stdout: Bounded
    stderr: Bounded

    def printed(self) -> dict[str, str]:
        texts = {"stdout": self.stdout.text(), "stderr": self.stderr.text()}
        return {k: v for k, v in texts.items() if v}


class ChildProcess:
    """The child process and its four pipes (requests, answers, stdout, stderr)."""

    def __init__(self) -> None:
        req_r, req_w = os.pipe()
        res_r, res_w = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-P", str(CHILD_SCRIPT), str(req_r), str(res_w)],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                pass_fds=(req_r, res_w), start_new_session=True, env=child_env())
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

    def exchange(self, payload: bytes, deadline: float, *, captured_bytes: int,
                 result_bytes: int) -> Exchange:
        """Send ``payload``, read stdout, stderr and the answer until the answer line is
        complete, the child ends, or ``deadline`` (``time.monotonic``) passes; at most
        ``captured_bytes`` of each output stream are kept, and an answer longer than
        ``result_bytes`` ends the exchange (``too_big``)."""
        out, err = Bounded(captured_bytes), Bounded(captured_bytes)
        answer = bytearray()
        pending = memoryview(payload)
        state: Ending | None = None
        with selectors.DefaultSelector() as selector:
            selector.register(self.req_w, selectors.EVENT_WRITE)
            for fd, data in ((self.out_fd, out), (self.err_fd, err), (self.res_r, None)):
                selector.register(fd, selectors.EVENT_READ, data)
            while state is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    state = Ending.TIMEOUT
                    break
                for key, _ in selector.select(left):
                    if state is not None:
                        break
                    if key.fd == self.req_w:
                        try:
                            pending = pending[os.write(self.req_w, pending):]
                        except BrokenPipeError:
                            state = Ending.EXITED
                            break
                        if not pending:
                            selector.unregister(self.req_w)
                    elif key.fd == self.res_r:
                        state = _read_answer(self.res_r, answer, result_bytes)
                    else:
                        _read_output(selector, key.fd, key.data)
            _drain(selector, wait=0.5 if state is Ending.EXITED else 0.0)
        reply = _parse(answer) if state is Ending.ANSWERED else {}
        if state is Ending.ANSWERED and reply is None:
            state, reply = Ending.EXITED, {}
        return Exchange(state, reply or {}, out, err)

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


def _read_answer(fd: int, answer: bytearray, bound: int) -> Ending | None:
    try:
        chunk = os.read(fd, 1 << 16)
    except BlockingIOError:
        return None
    if not chunk:
        return Ending.EXITED
    answer += chunk
    if b"\n" in chunk:
        return Ending.ANSWERED
    return Ending.TOO_BIG if len(answer) > bound else None


def _read_output(selector: selectors.BaseSelector, fd: int, sink: Bounded) -> bool:
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
    outputs = [k for k in selector.get_map().values() if isinstance(k.data, Bounded)]
    while outputs:
        ready = selector.select(max(0.0, end - time.monotonic()))
        ready = [(k, e) for k, e in ready if isinstance(k.data, Bounded)]
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
