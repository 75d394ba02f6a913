"""Per-thread capture of ``sys.stdout`` / ``sys.stderr`` (fault item 6 of
docs/benchmarks.md, "Runtime trust under faults").

A Python tool runs inside the hyperplan process, and what it prints would land in the
command's own output: one ``print`` in a tool breaks ``hyperplan run --json``. Swapping
``sys.stdout`` for the duration of a call is not enough, because the run's other threads
(progress, the agent itself) print too and would be captured with it. So :func:`install`
puts a :class:`ThreadStream` in front of each stream once; it sends a write to a *sink* the
writing thread registered (:func:`capturing`, :func:`stdout_to_stderr`) and every other
thread's writes to the real stream, unchanged (``isatty``, ``fileno``, ``encoding`` ...
answer for the real stream).

What it does not catch: writes below ``sys.stdout`` - ``os.write(1, ...)``, a C extension
printing, a subprocess inheriting fd 1, ``sys.__stdout__`` - and writes from threads the
tool starts itself. The subprocess sandbox (:mod:`hyperplan.execute.runtimes.sandbox`)
captures those at the file-descriptor level.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Protocol

MAX_CAPTURED_CHARS = 10_000  # per stream and call; the rest is counted, not kept


class Sink(Protocol):
    def write(self, text: str, /) -> int: ...


_REDACTION_MARGIN = 4096  # characters kept past a limit until redacted

class BoundedText:
    """Text written to it, at most ``limit`` characters kept; the rest only counted."""

    def __init__(self, limit: int = MAX_CAPTURED_CHARS) -> None:
        self.limit = limit
        self._parts: list[str] = []
        self._kept = 0
        self.dropped = 0
        self._lock = threading.Lock()

    def write(self, text: str, /) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        with self._lock:  # a margin past the limit: redaction (in text) sees a cut secret whole
            room = self.limit + _REDACTION_MARGIN - self._kept
            if room > 0:
                self._parts.append(text[:room])
                self._kept += min(room, len(text))
            self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def text(self) -> str:
        """What was kept, redacted by value, *then* cut to the limit, with a marker saying
        how much was not kept."""
        from hyperplan.secrets import redact_text

        with self._lock:
            kept = redact_text("".join(self._parts))
            dropped = self.dropped + max(0, len(kept) - self.limit)
        kept = kept[:self.limit]
        return kept + f"\n[... {dropped} more characters not kept]" if dropped else kept


@dataclass(frozen=True)
class Capture:
    """What one thread wrote to ``sys.stdout`` and ``sys.stderr``."""

    stdout: BoundedText = field(default_factory=BoundedText)
    stderr: BoundedText = field(default_factory=BoundedText)

    @classmethod
    def bounded(cls, limit: int) -> Capture:
        return cls(BoundedText(limit), BoundedText(limit))

    def printed(self) -> dict[str, str]:
        """``{"stdout": ..., "stderr": ...}`` for the streams written to (result metadata)."""
        texts = {"stdout": self.stdout.text(), "stderr": self.stderr.text()}
        return {name: text for name, text in texts.items() if text}


class _BinaryView:
    """``sys.stdout.buffer`` for a capturing thread: bytes decoded into the text sink."""

    def __init__(self, sink: Sink, encoding: str) -> None:
        self._sink = sink
        self._encoding = encoding

    def write(self, data: bytes) -> int:
        self._sink.write(bytes(data).decode(self._encoding, "replace"))
        return len(data)

    def flush(self) -> None:
        return None


class ThreadStream:
    """Stands in for ``sys.stdout`` or ``sys.stderr``: a thread's writes go to the sink it
    registered, if any, else to ``real`` (None, as under ``pythonw``: dropped, as ``print``
    drops them)."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self._local = threading.local()

    def _sink(self) -> Sink | None:
        return getattr(self._local, "sink", None)

    def write(self, text: str) -> int:
        sink = self._sink()
        if sink is not None:
            return sink.write(text)
        if self.real is None:
            return len(text)
        written = self.real.write(text)  # some wrappers (Ray's, older IDEs') return None
        return len(text) if written is None else int(written)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self._sink() is None and self.real is not None:
            self.real.flush()

    @property
    def buffer(self) -> Any:
        sink = self._sink()
        if sink is None:
            return self.real.buffer
        return _BinaryView(sink, getattr(self.real, "encoding", None) or "utf-8")

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding ...: the real one's
        return getattr(self.real, name)


_LOCK = threading.Lock()


def install() -> tuple[ThreadStream, ThreadStream]:
    """Put a :class:`ThreadStream` in front of ``sys.stdout`` and ``sys.stderr`` (once; again
    if something replaced them since) and return the two."""
    out, err = sys.stdout, sys.stderr
    if isinstance(out, ThreadStream) and isinstance(err, ThreadStream):
        return out, err  # the common case, without the lock
    with _LOCK:
        out, err = _proxy(sys.stdout), _proxy(sys.stderr)
        sys.stdout, sys.stderr = out, err
        return out, err


def _proxy(stream: Any) -> ThreadStream:
    return stream if isinstance(stream, ThreadStream) else ThreadStream(stream)


class _Routed:
    """While entered, the current thread's writes to ``sys.stdout`` / ``sys.stderr`` go to
    the given sinks (None: the real stream); the previous routing comes back on exit."""

    def __init__(self, out_sink: Sink | None, err_sink: Sink | None) -> None:
        self._sinks = out_sink, err_sink
        self._saved: tuple[Sink | None, Sink | None] = (None, None)
        self._streams: tuple[ThreadStream, ThreadStream] | None = None

    def __enter__(self) -> None:
        out, err = self._streams = install()
        self._saved = out._sink(), err._sink()
        out._local.sink, err._local.sink = self._sinks

    def __exit__(self, *exc: object) -> None:
        assert self._streams is not None
        out, err = self._streams
        out._local.sink, err._local.sink = self._saved


def capturing(capture: Capture) -> _Routed:
    """``with capturing(capture):`` the current thread's ``sys.stdout`` / ``sys.stderr``
    writes go to ``capture``."""
    return _Routed(capture.stdout, capture.stderr)


def stdout_to_stderr() -> _Routed:
    """``with stdout_to_stderr():`` the current thread's ``sys.stdout`` writes go to the real
    stderr (what a module prints while it is imported stays visible without entering the
    command's stdout)."""
    return _Routed(install()[1].real, None)
