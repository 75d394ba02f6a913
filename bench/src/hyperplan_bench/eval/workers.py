"""Worker processes of ``eval run`` that neither outlive the run nor take it down with them.

* A worker exits when the process that started it dies, even by ``kill -9``: on Linux the
  kernel kills it (``prctl(PR_SET_PDEATHSIG, SIGKILL)``), and everywhere a watchdog thread
  polls the parent once a second and exits when it is gone (:func:`die_with_parent`).
* A worker that dies (killed, out of memory, a tool calling ``os._exit``) breaks a
  :class:`~concurrent.futures.ProcessPoolExecutor` and fails every job in it. :func:`run_jobs`
  finds out which job that worker was running (each worker announces the job it starts on a
  queue; the dead worker's exit code tells it from the workers the pool terminated itself),
  reports that job as :class:`WorkerLost`, and runs every other unfinished job again in a fresh
  pool. A job whose worker raised instead of returning (``SystemExit`` from a tool, a result that
  cannot be pickled) is reported the same way. After ``max_breaks`` broken pools it stops:
  something keeps killing workers, and the rest is left to ``--resume``.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from multiprocessing.queues import SimpleQueue
from typing import Any, Generic, TypeVar

from hyperplan.errors import HyperplanError

R = TypeVar("R")
Key = tuple[str, str]  # (task id, agent)
Job = tuple[Key, tuple[Any, ...]]  # a key and the arguments of the job function

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_WATCH_INTERVAL_S = 1.0


@dataclass(frozen=True)
class WorkerLost:
    """A worker process died while running ``key`` (``None``: between jobs), or, with
    ``raised``, the job raised past the job function; ``cause`` says how, e.g. ``killed by
    signal 9, SIGKILL`` or ``SystemExit: 3``."""

    key: Key | None
    cause: str
    raised: bool = False

    def describe(self, run_id: str) -> str:
        """One line for the user: what was lost and how to get it back."""
        if self.key is None:
            return (f"worker process lost ({self.cause}) between tasks; no result lost; "
                    "the run goes on in a fresh pool")
        task, agent = self.key
        what = (f"task {task} / agent {agent} did not finish in its worker process "
                f"({self.cause})" if self.raised else
                f"worker process lost ({self.cause}) while running task {task} / agent {agent}")
        return f"{what}; its result is not stored; `--resume {run_id}` runs it again"


@dataclass(frozen=True)
class Finished(Generic[R]):
    """A job that returned ``result``."""

    key: Key
    result: R


class WorkersKeptDying(HyperplanError):
    """The pool broke ``max_breaks`` times; ``remaining`` jobs were not run."""

    def __init__(self, breaks: int, remaining: int) -> None:
        self.breaks = breaks
        self.remaining = remaining
        super().__init__(f"stopped after {breaks} lost worker processes, {remaining} task runs "
                         "not started (something keeps killing the workers: memory?)")


# -- worker side ---------------------------------------------------------------------------------
_STARTED: SimpleQueue[tuple[int, Key]] | None = None


def _init_worker(main_pid: int, started: SimpleQueue[tuple[int, Key]]) -> None:
    """Pool initializer: die with the parent and remember where to announce started jobs."""
    global _STARTED
    _STARTED = started
    die_with_parent(main_pid)


def _run_job(fn: Callable[..., R], key: Key, args: tuple[Any, ...]) -> R:
    """Announce ``key`` (one small pipe write) and run the job."""
    if _STARTED is not None:
        _STARTED.put((os.getpid(), key))
    return fn(*args)


def die_with_parent(main_pid: int) -> None:
    """Make this process exit when its parent dies, even by ``kill -9``: the kernel's
    parent-death signal where there is one (Linux), and a watchdog thread everywhere.

    ``main_pid`` is the process that made the pool; under the ``forkserver`` start method the
    parent is the fork server instead, which exits when ``main_pid`` does, and the watchdog
    also checks ``main_pid`` itself."""
    parent = os.getppid()
    if parent != main_pid and not _alive(main_pid):  # died before we got here
        os._exit(1)
    if _set_parent_death_signal() and os.getppid() != parent:  # died before the call
        os._exit(1)
    watch_parent(parent, main_pid)


def _set_parent_death_signal() -> bool:
    """``prctl(PR_SET_PDEATHSIG, SIGKILL)`` through ctypes; False where it is not available.
    (The signal comes when the *thread* that forked us exits; the pool's processes are forked
    by the thread that submits to it, which lives as long as the run.)"""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)) == 0
    except (OSError, AttributeError, TypeError):
        return False


def watch_parent(parent: int, main_pid: int | None = None) -> threading.Thread:
    """Start a daemon thread that exits this process (``os._exit(1)``) within about a second
    of ``parent`` ceasing to be its parent, or of ``main_pid`` (another ancestor) dying."""
    def watch() -> None:
        while os.getppid() == parent and (main_pid in (None, parent) or _alive(main_pid)):
            time.sleep(_WATCH_INTERVAL_S)
        os._exit(1)

    thread = threading.Thread(target=watch, name="hyperplan-parent-watch", daemon=True)
    thread.start()
    return thread


def _alive(pid: int | None) -> bool:
    if pid is None or sys.platform == "win32":  # os.kill(pid, 0) terminates on Windows
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# -- parent side ---------------------------------------------------------------------------------
def run_jobs(fn: Callable[..., R], jobs: Sequence[Job], workers: int, *,
             max_breaks: int = 3) -> Iterator[Finished[R] | WorkerLost]:
    """Run ``fn(*args)`` for every job in ``workers`` processes and yield each as it finishes,
    or as :class:`WorkerLost` when its worker died or raised. Jobs that were waiting or running
    in a worker the pool itself stopped are run again in a fresh pool; after ``max_breaks``
    broken pools :class:`WorkersKeptDying` is raised (everything yielded before stands)."""
    todo: deque[Job] = deque(jobs)
    breaks = 0
    while todo:
        if breaks >= max_breaks:
            raise WorkersKeptDying(breaks, len(todo))
        broke = yield from _one_pool(fn, todo, workers)
        breaks += broke


def _one_pool(fn: Callable[..., R], todo: deque[Job],
              workers: int) -> Generator[Finished[R] | WorkerLost, None, bool]:
    """Run jobs from ``todo`` in one pool until it is empty (False) or the pool breaks (True:
    the jobs to run again are back at the front of ``todo``)."""
    context = multiprocessing.get_context()
    started: SimpleQueue[tuple[int, Key]] = context.SimpleQueue()
    running: dict[int, Key] = {}  # worker pid -> the job it announced last
    waiting: dict[Future[R], Job] = {}
    broken = False
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context,
                               initializer=_init_worker, initargs=(os.getpid(), started))
    # the pool drops this on shutdown; the dead workers' exit codes are read from it after
    processes: Mapping[int, BaseProcess] | None = getattr(pool, "_processes", None)
    try:
        while (todo or waiting) and not broken:
            broken = _submit(pool, fn, todo, waiting, 2 * workers)
            done, _ = wait(waiting, return_when=FIRST_COMPLETED)
            _drain(started, running)
            for fut in done:
                error = fut.exception()
                if isinstance(error, BrokenProcessPool):
                    broken = True
                    continue
                key = waiting.pop(fut)[0]
                yield _raised(key, error) if error else Finished(key, fut.result())
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        _drain(started, running)
        started.close()
    if broken:
        yield from _after_break(waiting, running, {} if processes is None else processes, todo)
    return broken


def _submit(pool: ProcessPoolExecutor, fn: Callable[..., R], todo: deque[Job],
            waiting: dict[Future[R], Job], window: int) -> bool:
    """Keep ``window`` jobs in the pool; True when the pool turned out broken."""
    while todo and len(waiting) < window:
        job = todo.popleft()
        try:
            waiting[pool.submit(_run_job, fn, job[0], job[1])] = job
        except BrokenProcessPool:
            todo.appendleft(job)
            return True
    return False


def _drain(started: SimpleQueue[tuple[int, Key]], running: dict[int, Key]) -> None:
    while not started.empty():
        pid, key = started.get()
        running[pid] = key


def _after_break(waiting: dict[Future[R], Job], running: dict[int, Key],
                 processes: Mapping[int, BaseProcess],
                 todo: deque[Job]) -> Iterator[Finished[R] | WorkerLost]:
    """Sort the jobs of a broken pool: finished ones are yielded, the one a dead worker was
    running is lost, every other one goes back to the front of ``todo`` (in order)."""
    dead = {pid: _exit_cause(p.exitcode) for pid, p in processes.items()
            if p.exitcode != -signal.SIGTERM}  # SIGTERM: stopped by the pool after the break
    runner = {key: pid for pid, key in running.items()}
    blamed: set[int] = set()
    again: list[Job] = []
    for fut, job in waiting.items():
        key = job[0]
        error = None if fut.cancelled() else fut.exception()
        pid = runner.get(key)
        if fut.cancelled():
            again.append(job)
        elif error is None:
            yield Finished(key, fut.result())
        elif not isinstance(error, BrokenProcessPool):
            yield _raised(key, error)
        elif pid is not None and (pid in dead or pid not in processes):
            blamed.add(pid)
            yield WorkerLost(key, dead.get(pid, "exit status unknown"))
        else:
            again.append(job)
    for pid in dead.keys() - blamed:
        yield WorkerLost(None, dead[pid])
    todo.extendleft(reversed(again))


def _exit_cause(code: int | None) -> str:
    if code is None:
        return "exit status unknown"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            return f"killed by signal {-code}"
        return f"killed by signal {-code}, {name}"
    return f"exited with code {code}"


def _raised(key: Key, error: BaseException) -> WorkerLost:
    from hyperplan.secrets import redact_cut

    return WorkerLost(key, redact_cut(f"{type(error).__name__}: {error}", 300), raised=True)
