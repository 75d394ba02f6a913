"""One benchmark run per fresh process: what ``hyperplan bench links`` and ``bench scale`` use
so that each size's peak RSS is its own and one size cannot take the others down.

:func:`run_isolated` calls a measurement function (``measure(n_tools, seed, embedder,
progress, **options)``, module-level so that it pickles by name) in a spawned process, with an
optional wall-clock timeout and address-space limit, and relays its progress; a failed run
(exception, memory limit, timeout, killed) is described rather than raised.
"""

from __future__ import annotations

import multiprocessing
import resource
import time
from collections.abc import Callable
from contextlib import suppress
from multiprocessing.connection import Connection
from typing import Any

__all__ = ["Measure", "Progress", "peak_rss_mb", "rss_mb", "run_isolated"]

Progress = Callable[[str, int, int], None]
# measure(n_tools, seed, embedder, progress, **options) -> run description
Measure = Callable[..., dict[str, Any]]


def peak_rss_mb(who: int) -> float:
    """Peak resident set size of ``who`` (``resource.RUSAGE_SELF`` or ``RUSAGE_CHILDREN``)."""
    return round(resource.getrusage(who).ru_maxrss / 1024, 1)  # ru_maxrss is in KiB on Linux


def rss_mb() -> float:
    """Current resident set size in MB (Linux /proc; the peak elsewhere)."""
    try:
        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[1])
        return round(pages * resource.getpagesize() / 1024**2, 1)
    except (OSError, ValueError, IndexError):
        return peak_rss_mb(resource.RUSAGE_SELF)


def _default_measure() -> Measure:
    from hyperplan_bench.eval.link_scale import measure_links

    return measure_links


def _worker(conn: Connection, n_tools: int, seed: int, embedder: str,
            max_memory_gb: float, measure: Measure | None = None,
            options: dict[str, Any] | None = None) -> None:
    """Entry point of the spawned process: one size, results and progress over ``conn``."""

    def send(*message: Any) -> None:
        with suppress(OSError):  # the parent gave up (timeout) and closed its end
            conn.send(message)

    try:
        if max_memory_gb > 0:
            limit = int(max_memory_gb * 1024**3)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        def progress(stage: str, done: int, total: int) -> None:
            send("progress", stage, done, total)

        run = (measure or _default_measure())(n_tools, seed, embedder, progress,
                                              **(options or {}))
        run["peak_rss_mb"] = peak_rss_mb(resource.RUSAGE_SELF)
        send("result", run)
    except MemoryError:
        limit_note = f" (address-space limit {max_memory_gb:g} GB)" if max_memory_gb > 0 else ""
        send("error", f"MemoryError{limit_note}", peak_rss_mb(resource.RUSAGE_SELF))
    except Exception as exc:
        send("error", f"{type(exc).__name__}: {exc}", peak_rss_mb(resource.RUSAGE_SELF))
    finally:
        conn.close()


def run_isolated(n_tools: int, seed: int, embedder: str, *, timeout: float = 0,
                 max_memory_gb: float = 0, progress: Progress | None = None,
                 measure: Measure | None = None,
                 options: dict[str, Any] | None = None) -> dict[str, Any]:
    """``measure(n_tools, seed, embedder, progress, **options)`` (default
    :func:`~hyperplan_bench.eval.link_scale.measure_links`; a module-level function, as it is
    pickled by name) in a fresh spawned process, plus its peak RSS. A failed run (exception,
    memory limit, timeout, killed) gives ``{"tools", "error", "stage", ...}``."""
    report = progress or (lambda stage, done, total: None)
    ctx = multiprocessing.get_context("spawn")
    receiver, sender = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_worker, args=(sender, n_tools, seed, embedder, max_memory_gb,
                                             measure, options), daemon=True)
    started = time.perf_counter()
    children_peak = peak_rss_mb(resource.RUSAGE_CHILDREN)
    proc.start()
    sender.close()  # the child holds the only writer: EOF once it exits
    outcome: dict[str, Any] | None = None
    stage = "starting"
    try:
        while outcome is None:
            if timeout > 0 and time.perf_counter() - started > timeout:
                outcome = {"tools": n_tools, "error": f"timeout after {timeout:g} s"}
                break
            if not receiver.poll(0.25):
                continue
            try:
                message = receiver.recv()
            except EOFError:
                break
            if message[0] == "progress":
                stage = message[1]
                report(*message[1:])
            elif message[0] == "result":
                outcome = message[1]
            else:
                outcome = {"tools": n_tools, "error": message[1], "peak_rss_mb": message[2]}
    finally:
        receiver.close()
        if proc.is_alive() and (outcome is None or "error" in outcome):  # timeout, Ctrl-C
            proc.terminate()
        proc.join(30)
        if proc.is_alive():
            proc.kill()
            proc.join()
    if outcome is None:  # died without a word: killed (e.g. by the OOM killer) or crashed
        code = proc.exitcode or 0
        why = f"killed by signal {-code}" if code < 0 else f"exited with code {code}"
        outcome = {"tools": n_tools, "error": f"worker {why}"}
    if "error" in outcome:
        outcome["stage"] = stage  # the last stage reported before the failure
        outcome["seconds"] = round(time.perf_counter() - started, 3)
        if "peak_rss_mb" not in outcome:  # the maximum over waited-for children so far:
            peak = peak_rss_mb(resource.RUSAGE_CHILDREN)  # only ours if it went up
            if peak > children_peak:
                outcome["peak_rss_mb"] = peak
    return outcome
