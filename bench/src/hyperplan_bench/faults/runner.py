"""Running the cases of ``hyperplan bench faults``: each command is a subprocess of
``python -m hyperplan ...`` in its own session, with a hard wall-clock limit (docs/benchmarks.md,
"`hyperplan bench faults`: the catalogue end to end through the command line").

A hard deadline (``--max-seconds``, an import time limit) runs from the command's own start,
not from the interpreter's: importing hyperplan takes seconds of CPU, and many more on a
machine that other work keeps busy. So each step's start is found, in this order, from

* the run's own clock: a ``--json`` result carries ``accounting.elapsed_s``, the seconds since
  the budget started, and the moment that result reached stdout is watched for (precise);
* else a moment the fault itself witnessed early in the command's work (the lab server's
  first request of the case, the start of a server the command launched, or of an import),
  which bounds the command's run from below;
* else the CPU time the process has used: once it has used what starting a command costs
  (``python -m hyperplan trace show EMPTY``, measured at the start of each benchmark run),
  its imports are over (an estimate, poor for a process blocked early);
* else the measured start-up wall time.

A step is *hung* when it was still running :data:`DEADLINE_TOLERANCE_S` after its deadline so
measured. It is killed :data:`KILL_MARGIN_S` later still (so that the precise clock, if the
step prints its result meanwhile, has the last word), counted from the CPU-estimated start,
or at a backstop of :data:`BACKSTOP_STARTUPS` start-ups beyond that; a step without a deadline
gets :data:`DEFAULT_ALLOWANCE_S` instead.

Killing means ``os.killpg`` on the session of the child the benchmark started, then every
process it left behind: processes whose environment carries the step's tag
(``HYPERPLAN_FAULTS_TAG``) or whose command line names the case's directory (an MCP server
started with a minimal environment). Nothing else is ever signalled.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hyperplan_bench.faults.servers import LabServer
from hyperplan_bench.faults.verdict import (
    DEADLINE_TOLERANCE_S,
    SUMMARY_KEYS,
    Check,
    Outcome,
    Step,
    classify,
)

DEFAULT_ALLOWANCE_S = 20.0
KILL_MARGIN_S = 3.0  # past deadline + tolerance, so that the precise clock has the last word
BACKSTOP_STARTUPS = 4
MEMORY_CAP = 4 << 30  # address space of every step: a 24 GB allocation fails, not the machine
TAG_VARIABLE = "HYPERPLAN_FAULTS_TAG"
GRACE_S = 5.0  # what a step's helpers (MCP server, pool workers) get to exit after it
_POLL_S = 0.02
_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Startup:
    """What starting ``python -m hyperplan`` costs on this machine right now."""

    wall: float
    cpu: float


# -- processes ---------------------------------------------------------------------------------

def _proc_file(pid: int | str, name: str) -> bytes:
    with open(f"/proc/{pid}/{name}", "rb") as fh:
        return fh.read()


def _stat(pid: int | str) -> list[bytes]:
    """The fields of ``/proc/PID/stat`` after the command name (state first)."""
    return _proc_file(pid, "stat").rpartition(b")")[2].split()


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as gone)."""
    try:
        return _stat(pid)[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` so far (0 when it is gone)."""
    try:
        fields = _stat(pid)
        return (int(fields[11]) + int(fields[12])) / _TICKS
    except (OSError, IndexError, ValueError):
        return 0.0


def children(pid: int) -> list[int]:
    """Live child processes of ``pid``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parent = int(_stat(entry)[1])
            except (OSError, IndexError, ValueError):
                continue
            if parent == pid and alive(int(entry)):
                found.append(int(entry))
    return found


def tagged_processes(tag: str, root: Path) -> list[int]:
    """Live processes of a step: its tag in their environment, or the case's directory on
    their command line."""
    marker = f"{TAG_VARIABLE}={tag}".encode()
    where = f"{root}{os.sep}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            environ = _proc_file(entry, "environ")
            cmdline = _proc_file(entry, "cmdline")
        except OSError:
            continue
        if (marker in environ.split(b"\0") or where in cmdline) and alive(int(entry)):
            found.append(int(entry))
    return found


def kill_pids(pids: Sequence[int]) -> None:
    """SIGKILL each of ``pids`` (processes of this benchmark's own steps)."""
    for pid in pids:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _reap(proc: subprocess.Popen[bytes]) -> tuple[int | None, float | None]:
    """``(exit code, peak RSS in MB)`` if ``proc`` has ended, else ``(None, None)``."""
    try:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
    except ChildProcessError:  # reaped already
        return proc.returncode, None
    if pid != proc.pid:
        return None, None
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, round(usage.ru_maxrss / 1024, 1)


def _elapsed(stdout: str) -> float | None:
    """``accounting.elapsed_s`` of a ``--json`` run result, if that is what ``stdout`` is."""
    try:
        data = json.loads(stdout)
        return float(data["accounting"]["elapsed_s"])
    except (ValueError, TypeError, KeyError):
        return None


# -- a case's steps ----------------------------------------------------------------------------

@dataclass
class Running:
    """A step started with :meth:`CaseContext.spawn`, until :meth:`CaseContext.finish`."""

    proc: subprocess.Popen[bytes]
    args: tuple[str, ...]
    tag: str
    started: float
    out_path: Path
    err_path: Path
    deadline: float | None
    expected_codes: tuple[int, ...]
    allowance: float = DEFAULT_ALLOWANCE_S
    killed_by_case: bool = False
    stopped: bool = False  # a server the case stopped itself (see CaseContext.stop)
    stop_at: float | None = None  # when the case stopped it: its limit counts from then
    # called once it ended, before its stdout is read (a case reading its stdout pipe lets
    # the last lines reach the stdout file)
    drain: Callable[[], None] | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid


@dataclass
class CaseContext:
    """What a case function gets: its directory, the lab server, the secrets to look for,
    and :meth:`cli` / :meth:`spawn` to run commands. Every step it runs is recorded."""

    name: str
    root: Path  # the case's directory; its commands run in ``root / "run"``
    lab: LabServer
    startup: Startup
    steps: list[Step] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)
    # secrets of which no FRAGMENT_CHARS consecutive characters may appear anywhere
    fragment_secrets: list[str] = field(default_factory=list)
    # the case's files when it ran its first command (after writing its inputs): what its
    # commands wrote is what differs from this
    before: dict[Path, tuple[int, int]] | None = None
    _running: list[Running] = field(default_factory=list)
    _count: int = 0

    @property
    def work(self) -> Path:
        return self.root / "run"

    @property
    def url(self) -> str:
        return self.lab.case_url(self.name)

    def secret(self, value: str, *, fragments: bool = False) -> str:
        """Register ``value`` as a secret that must appear nowhere (``fragments``: nor any
        :data:`~hyperplan_bench.faults.verdict.FRAGMENT_CHARS` consecutive characters of it);
        returns it."""
        self.secrets.append(value)
        if fragments:
            self.fragment_secrets.append(value)
        return value

    def _env(self, tag: str, extra: Mapping[str, str] | None) -> dict[str, str]:
        path = os.pathsep.join(p for p in (str(self.work), os.environ.get("PYTHONPATH", ""))
                               if p)
        return {**os.environ, "HYPERPLAN_EMBEDDER": "hashing", "PYTHONPATH": path,
                "COLUMNS": "200", "NO_COLOR": "1", TAG_VARIABLE: tag, **(extra or {})}

    def spawn(self, *args: str, env: Mapping[str, str] | None = None,
              deadline: float | None = None, expect: Sequence[int] = (1,),
              allowance: float = DEFAULT_ALLOWANCE_S, pipes: bool = False) -> Running:
        """Start ``python -m hyperplan ARGS`` in its own session (see :meth:`finish`);
        ``deadline`` is the hard deadline the step exercises, ``expect`` its right exit
        codes, ``allowance`` its time after start-up when it has no deadline. ``pipes``: its
        stdin and stdout are pipes the case talks over (a stdio server); the case writes what
        it read from stdout to the step's stdout file, so that it is recorded (and searched
        for secrets) like any step's."""
        if self.before is None:
            self.before = _snapshot(self.work)
        self._count += 1
        tag = f"{self.name}-{self._count}-{os.getpid()}"
        io = self.root / "io"
        io.mkdir(exist_ok=True)
        out_path, err_path = io / f"{self._count}.out", io / f"{self._count}.err"
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen([sys.executable, "-m", "hyperplan", *args], cwd=self.work,
                                    env=self._env(tag, env),
                                    stdout=subprocess.PIPE if pipes else out, stderr=err,
                                    stdin=subprocess.PIPE if pipes else subprocess.DEVNULL,
                                    start_new_session=True)
        with suppress(OSError):  # long before the interpreter has finished starting
            resource.prlimit(proc.pid, resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
        running = Running(proc, tuple(args), tag, time.monotonic(), out_path, err_path,
                          deadline, tuple(expect), allowance)
        self._running.append(running)
        return running

    def running_pids(self) -> list[int]:
        """The main processes of the case's steps still running (started, not finished)."""
        return [running.pid for running in self._running]

    def kill(self, running: Running) -> None:
        """``kill -9`` the step's main process, on purpose (a kill scenario)."""
        running.killed_by_case = True
        kill_pids([running.pid])

    def stop(self, running: Running, grace: float = 10.0) -> Step:
        """Stop a server the case started (SIGTERM; a stdio server: its stdin closed) and
        record it: a server still running ``grace`` seconds later is killed, a hang."""
        running.stopped = running.proc.poll() is None
        running.allowance = grace
        running.stop_at = time.monotonic()
        if running.proc.stdin is not None:
            with suppress(OSError):
                running.proc.stdin.close()
        elif running.stopped:
            with suppress(ProcessLookupError, PermissionError):
                os.kill(running.pid, signal.SIGTERM)
        return self.finish(running)

    def finish(self, running: Running) -> Step:
        """Wait for a spawned step up to its limit (module doc), kill what is left, and
        record the step."""
        proc, budget = running.proc, (
            running.deadline + DEADLINE_TOLERANCE_S + KILL_MARGIN_S
            if running.deadline is not None else running.allowance)
        # the backstop when the start-up's CPU time is never reached (a process blocked
        # early, or cheaper imports than measured): generous, as load may have grown
        backstop = (running.started + BACKSTOP_STARTUPS * self.startup.wall + budget
                    if running.stop_at is None else running.stop_at + budget)
        ready: float | None = None  # when the interpreter's start-up was over (CPU)
        printed: float | None = None  # when something first reached stdout
        while True:
            code, peak = _reap(proc)
            now = time.monotonic()
            if code is not None:
                break
            if ready is None and cpu_seconds(running.pid) >= self.startup.cpu:
                ready = now
            if printed is None and running.out_path.stat().st_size > 0:
                printed = now
            if now >= backstop or (ready is not None and now >= ready + budget):
                with suppress(ProcessLookupError, PermissionError):
                    os.killpg(running.pid, signal.SIGKILL)
                while _reap(proc)[0] is None and time.monotonic() < now + 5:
                    time.sleep(_POLL_S)
                code = None
                break
            time.sleep(_POLL_S)
        ended, ended_at = now, time.time()
        if running.drain is not None:
            running.drain()
        left = self._leftovers(running)
        self._running.remove(running)
        stdout = running.out_path.read_text("utf-8", "replace")
        run_seconds, timing = self._run_seconds(running, stdout, ready, printed, ended)
        result_seconds = _elapsed(stdout) if timing == "json" else None
        step = Step(args=running.args, returncode=code, stdout=stdout,
                    stderr=running.err_path.read_text("utf-8", "replace"),
                    seconds=round(ended - running.started, 3), deadline=running.deadline,
                    run_seconds=round(run_seconds, 3), timing=timing,
                    result_seconds=None if result_seconds is None else round(result_seconds, 3),
                    expected_codes=running.expected_codes,
                    leftovers=tuple(left) if code is not None else (),
                    killed_by_case=running.killed_by_case,
                    stopped=running.stopped and code is not None, peak_mb=peak,
                    ended_at=ended_at)
        self.steps.append(step)
        return step

    def _run_seconds(self, running: Running, stdout: str, ready: float | None,
                     printed: float | None, ended: float) -> tuple[float, str]:
        elapsed = _elapsed(stdout)
        if elapsed is not None and printed is not None:
            return ended - (printed - elapsed), "json"
        if ready is not None:
            return ended - ready, "cpu"
        return max(0.0, ended - running.started - self.startup.wall), "startup"

    def witness(self, step: Step, started_at: float | None) -> Step:
        """``step`` timed from ``started_at`` (wall clock), a moment the fault itself saw
        early in the command's own work (the lab's first request, a server's or an import's
        start), when the run's clock did not print its result; it replaces the recorded
        step."""
        if started_at is None or step.timing == "json":
            return step
        timed = replace(step, run_seconds=round(step.ended_at - started_at, 3),
                        timing="witness")
        self.steps[self.steps.index(step)] = timed
        return timed

    def _leftovers(self, running: Running) -> list[int]:
        """Processes of the step still alive :data:`GRACE_S` after it ended (killed)."""
        grace = time.monotonic() + GRACE_S
        left = tagged_processes(running.tag, self.root)
        while left and time.monotonic() < grace:
            time.sleep(0.05)
            left = tagged_processes(running.tag, self.root)
        kill_pids(left)
        return left

    def cli(self, *args: str, env: Mapping[str, str] | None = None,
            deadline: float | None = None, expect: Sequence[int] = (1,),
            allowance: float = DEFAULT_ALLOWANCE_S) -> Step:
        """Run ``python -m hyperplan ARGS`` to its end (or its limit) and record it."""
        return self.finish(self.spawn(*args, env=env, deadline=deadline, expect=expect,
                                      allowance=allowance))

    def close(self) -> None:
        """Kill whatever a failed case left running (its own steps only)."""
        for running in list(self._running):
            for pipe in (running.proc.stdin, running.proc.stdout):
                if pipe is not None:
                    with suppress(OSError):
                        pipe.close()
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(running.pid, signal.SIGKILL)
            kill_pids(tagged_processes(running.tag, self.root))
            deadline = time.monotonic() + 5
            while _reap(running.proc)[0] is None and time.monotonic() < deadline:
                time.sleep(_POLL_S)
            self._running.remove(running)


CaseFunction = Callable[[CaseContext], Check]


@dataclass(frozen=True)
class Case:
    """One fault: its name, the fault item it reproduces, and the function that runs it
    (whose docstring says what it reproduces). A ``timed`` case measures a hard deadline: it
    runs alone, so that the benchmark's other cases do not slow it down."""

    name: str
    item: int
    run: CaseFunction
    timed: bool = False
    section: str = "runtime"  # "runtime" (docs/benchmarks.md) or "gateway" (issue 36)

    @property
    def summary(self) -> str:
        doc = (self.run.__doc__ or "").strip()
        return " ".join(doc.split("\n\n")[0].split())


def _snapshot(work: Path) -> dict[Path, tuple[int, int]]:
    found = {}
    for path in work.rglob("*"):
        with suppress(OSError):
            if path.is_file() and not path.is_symlink():
                info = path.stat()
                found[path] = (info.st_size, info.st_mtime_ns)
    return found


_MAX_SCAN = 64 << 20


def written_files(work: Path, before: Mapping[Path, tuple[int, int]]) -> dict[str, bytes]:
    """The files under ``work`` created or changed since ``before`` (their first 64 MiB)."""
    written = {}
    for path, state in _snapshot(work).items():
        if before.get(path) != state:
            with suppress(OSError), open(path, "rb") as fh:
                written[str(path.relative_to(work))] = fh.read(_MAX_SCAN)
    return written


def run_case(case: Case, root: Path, lab: LabServer, startup: Startup) -> dict[str, Any]:
    """Run one case in ``root`` and classify it: its entry of the ``results`` list."""
    ctx = CaseContext(case.name, root, lab, startup)
    ctx.work.mkdir(parents=True)
    started = time.monotonic()
    try:
        check = case.run(ctx)
    except Exception as exc:  # the benchmark's own failure: reported, never hidden
        check = Check(False, f"benchmark error: {type(exc).__name__}: {exc}")
    finally:
        ctx.close()
    verdict = classify(ctx.steps, check, ctx.secrets, written_files(ctx.work, ctx.before or {}),
                       ctx.fragment_secrets)
    timed = [s for s in ctx.steps if s.overrun is not None]
    worst = max(timed, key=lambda s: s.overrun or 0.0) if timed else None
    peaks = [s.peak_mb for s in ctx.steps if s.peak_mb is not None]
    return {"name": case.name, "section": case.section, "item": case.item,
            "outcome": verdict.outcome.value,
            "seconds": round(time.monotonic() - started, 2),
            "deadline": worst.deadline if worst else None,
            "run_seconds": worst.run_seconds if worst else None,
            "timing": worst.timing if worst else None,
            "result_seconds": worst.result_seconds if worst else None,
            "steps": len(ctx.steps), "peak_mb": max(peaks) if peaks else None,
            "detail": verdict.detail}


def measure_startup() -> Startup:
    """What starting a command of ``python -m hyperplan`` costs now: the slowest wall time
    and the largest CPU time of two ``trace show EMPTY`` (the whole command line imported, a
    one-line refusal) started side by side, as cases may run two at a time."""
    with tempfile.TemporaryDirectory(prefix="hyperplan-faults-") as tmp:
        empty = Path(tmp) / "empty.jsonl"
        empty.write_text("")

        def once(_: int) -> tuple[float, float]:
            started = time.monotonic()
            proc = subprocess.Popen([sys.executable, "-m", "hyperplan", "trace", "show",
                                     str(empty)], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
            _, _, usage = os.wait4(proc.pid, 0)
            proc.returncode = 0
            return time.monotonic() - started, usage.ru_utime + usage.ru_stime

        with ThreadPoolExecutor(2) as pool:
            runs = list(pool.map(once, range(2)))
    return Startup(wall=max(w for w, _ in runs), cpu=max(c for _, c in runs))


@contextmanager
def _workspace(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="hyperplan-faults-") as tmp:
        yield Path(tmp)


def counts(results: Sequence[dict[str, Any]]) -> dict[str, int]:
    """How many of ``results`` fell in each bucket, by summary key."""
    return {key: sum(r["outcome"] == outcome.value for r in results)
            for outcome, key in SUMMARY_KEYS.items()}


def _by_section(results: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    sections: dict[str, list[dict[str, Any]]] = {}
    for row in results:
        sections.setdefault(row.get("section", "runtime"), []).append(row)
    return sections


def run_bench(cases: Sequence[Case], *, jobs: int = 2, workdir: Path | None = None,
              progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Run ``cases`` against a fresh lab server - the timed ones alone, one after the other,
    then the others ``jobs`` at a time - and return the summary
    ``{"cases", "clear_errors", "crashes", "hangs", "leaks", "repeated_writes",
    "lost_results", "unclear", ..., "seconds"}`` and the per-case ``results``."""
    started = time.monotonic()
    load_before = os.getloadavg()[0]
    startup = measure_startup()
    lock = threading.Lock()
    with _workspace(workdir) as root, LabServer() as lab:
        def one(case: Case) -> dict[str, Any]:
            result = run_case(case, root / case.name, lab, startup)
            if progress is not None:
                with lock:
                    progress(result)
            return result

        done = {case.name: one(case) for case in cases if case.timed}  # one at a time
        with ThreadPoolExecutor(max(1, jobs)) as pool:
            rest = [case for case in cases if not case.timed]
            done.update(zip((case.name for case in rest), pool.map(one, rest), strict=True))
        results = [done[case.name] for case in cases]
    summary: dict[str, Any] = {"cases": len(results), **counts(results)}
    summary["sections"] = {section: {"cases": len(rows), **counts(rows)}
                           for section, rows in _by_section(results).items()}
    timed = [r for r in results if r["deadline"] is not None and r["run_seconds"] is not None]
    summary["deadline_cases"] = len(timed)
    summary["worst_deadline_overrun_s"] = (
        round(max(r["run_seconds"] - r["deadline"] for r in timed), 2) if timed else None)
    # the same, up to the moment the run printed its result (where its own clock says)
    printed = [r for r in timed if r["result_seconds"] is not None]
    summary["worst_result_overrun_s"] = (
        round(max(r["result_seconds"] - r["deadline"] for r in printed), 2) if printed
        else None)
    # the machine's 1-minute load average before and after: the timings depend on it
    summary["load_average"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    summary["startup_s"] = round(startup.wall, 2)
    summary["startup_cpu_s"] = round(startup.cpu, 2)
    summary["seconds"] = round(time.monotonic() - started, 1)
    summary["results"] = results
    return summary


__all__ = ["Case", "CaseContext", "Outcome", "Startup", "run_bench", "run_case"]
