"""How ``hyperplan bench faults`` classifies a case (the buckets of docs/benchmarks.md,
"`hyperplan bench faults`: the catalogue end to end through the command line").

A case runs one or more command-line steps (:class:`Step`) and then checks what is required
of it (:class:`Check`). :func:`classify` puts the case in exactly one bucket, the
first that applies:

``hang``
    a step was still running at its limit (its hard deadline + 2 s after the interpreter's
    start-up, or the generous default for steps without one) and was killed, or left
    processes running after it exited, or the case saw a client wait beyond what is allowed
    (a request never answered, one client stalled behind another's calls);
``crash``
    a Python traceback on stdout or stderr, death by a signal, or an exit code outside
    0/1/2 (2 is ``hyperplan run``'s documented code for a run that did not succeed) and the
    codes the case expects (130 counts only where it is expected);
``leak``
    a secret value registered by the case appears in stdout, stderr, the trace or any file
    the case's commands wrote (for a secret registered as a *fragment* secret, any
    :data:`FRAGMENT_CHARS` consecutive characters of it: what escapes a cut made before
    redaction);
``isolation_break``
    (gateway section) one client read or changed another client's state: its held values,
    its tool list, its conversation;
``auth_bypass``
    (gateway section) a request that had to be refused (no or a wrong bearer token, a
    foreign Host or Origin, a remote gateway without a token) was served;
``repeated_writes``
    the lab saw one planned write take effect more than once;
``lost_results``
    results missing after kill(s) and ``--resume``;
``unclear``
    none of the above, but the case did not behave as required: a wrong exit code,
    no single clear ``error:`` line, a wrong status, a refused thing done anyway;
``clear``
    the case failed as it should, with one clear error line or a clear structured status
    (``outcome_unknown``, ``budget_exhausted``, ...), or succeeded as it should (a redacting
    or truncating run).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

TRACEBACK = "Traceback (most recent call last)"
# exit codes of hyperplan itself: 0 done, 1 one clear error, 2 a run that did not succeed
HYPERPLAN_CODES = frozenset({0, 1, 2})
DEADLINE_TOLERANCE_S = 2.0  # the target: every hard deadline met within 2 s
FRAGMENT_CHARS = 6  # this many consecutive characters of a fragment secret count as a leak
# exit codes of a server the case stopped itself (SIGTERM / SIGINT, or its input closed)
STOPPED_CODES = frozenset({0, 130, 143, -2, -15})
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class Outcome(StrEnum):
    """The bucket of a case; the summary key of each is :data:`SUMMARY_KEYS`."""

    CLEAR = "clear"
    CRASH = "crash"
    HANG = "hang"
    LEAK = "leak"
    ISOLATION_BREAK = "isolation_break"
    AUTH_BYPASS = "auth_bypass"
    REPEATED_WRITES = "repeated_writes"
    LOST_RESULTS = "lost_results"
    UNCLEAR = "unclear"


SUMMARY_KEYS: dict[Outcome, str] = {
    Outcome.CLEAR: "clear_errors", Outcome.CRASH: "crashes", Outcome.HANG: "hangs",
    Outcome.LEAK: "leaks", Outcome.ISOLATION_BREAK: "isolation_breaks",
    Outcome.AUTH_BYPASS: "auth_bypasses", Outcome.REPEATED_WRITES: "repeated_writes",
    Outcome.LOST_RESULTS: "lost_results", Outcome.UNCLEAR: "unclear",
}


@dataclass(frozen=True)
class Step:
    """What one command of a case did."""

    args: tuple[str, ...]
    returncode: int | None  # None: killed at its limit
    stdout: str
    stderr: str
    seconds: float  # wall seconds from spawn to exit, the interpreter's start-up included
    deadline: float | None = None  # the hard deadline it exercises (e.g. --max-seconds)
    # seconds from the command's own start (after the interpreter's start-up) to its exit,
    # and how that start was found: "json" (the run's own clock, accounting.elapsed_s, when
    # it printed its result), "witness" (a moment the fault saw early in the command's work),
    # "cpu" (when the process had used the start-up's CPU time) or "startup" (the measured
    # start-up wall time); see hyperplan_bench.faults.runner
    run_seconds: float | None = None
    timing: str = ""
    # with "json" timing: the run's clock when it printed its result (the rest of
    # run_seconds is closing runtimes and the interpreter's exit)
    result_seconds: float | None = None
    expected_codes: tuple[int, ...] = (1,)
    leftovers: tuple[int, ...] = ()  # pids still running after it exited (then killed)
    killed_by_case: bool = False  # ended by the case on purpose (kill -9 scenarios)
    stopped: bool = False  # a server the case stopped (SIGTERM, its stdin closed) in time
    peak_mb: float | None = None
    ended_at: float = 0.0  # wall-clock time (time.time()) at which it ended

    @property
    def killed_at_limit(self) -> bool:
        return self.returncode is None and not self.killed_by_case

    @property
    def overrun(self) -> float | None:
        """Seconds beyond its hard deadline (negative: within it)."""
        if self.deadline is None or self.run_seconds is None:
            return None
        return self.run_seconds - self.deadline

    @property
    def name(self) -> str:
        return " ".join(self.args[:2])


@dataclass(frozen=True)
class Check:
    """What the case found, beyond what :func:`classify` sees in the steps."""

    ok: bool
    detail: str
    writes: int | None = None  # writes that took effect for one planned call
    lost: int | None = None  # results missing after kill and resume
    places: Mapping[str, str] = field(default_factory=dict)  # extra texts to search (name: text)
    late: str | None = None  # a client waited beyond what is allowed (what, how long)
    isolation_breaks: int = 0  # times one client read or changed another's state
    auth_bypasses: int = 0  # requests served that had to be refused


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    detail: str


def one_line(text: str, limit: int = 200) -> str:
    """``text`` as one short printable line (control characters shown escaped)."""
    flat = " ".join(text.split())
    flat = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", flat)
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def one_error(step: Step) -> str | None:
    """The single ``error:`` line of a step that exited 1, else None."""
    lines = error_lines(step.stderr)
    if step.returncode != 1 or len(lines) != 1 or TRACEBACK in step.stderr:
        return None
    return lines[0]


def fragments(secret: str, size: int = FRAGMENT_CHARS) -> list[str]:
    """Every ``size`` consecutive characters of ``secret`` (itself when shorter)."""
    if len(secret) <= size:
        return [secret]
    return sorted({secret[i:i + size] for i in range(len(secret) - size + 1)})


def _leak(secrets: Iterable[str], places: Mapping[str, str | bytes]) -> str | None:
    for secret in secrets:
        for name, text in places.items():
            found = secret.encode() in text if isinstance(text, bytes) else secret in text
            if found:
                return name
    return None


def _crash(step: Step) -> str | None:
    name = step.name
    if TRACEBACK in step.stderr or TRACEBACK in step.stdout:
        tail = [line for line in step.stderr.splitlines() if line.strip()][-1:] or ["?"]
        return f"`{name}`: traceback ({one_line(tail[0], 120)})"
    code = step.returncode
    if step.stopped and code in STOPPED_CODES:
        return None
    if code is not None and code < 0 and not step.killed_by_case:
        return f"`{name}`: killed by signal {-code}"
    if code is not None and code >= 0 and code not in HYPERPLAN_CODES | set(step.expected_codes):
        return f"`{name}`: exit code {code}"
    return None


def classify(steps: Sequence[Step], check: Check, secrets: Iterable[str] = (),
             written: Mapping[str, str | bytes] | None = None,
             fragment_secrets: Iterable[str] = ()) -> Verdict:
    """The bucket of a case (module doc) and a one-line detail."""
    hung = _hang(steps, check)
    if hung:
        return Verdict(Outcome.HANG, hung)
    for step in steps:
        crashed = _crash(step)
        if crashed:
            return Verdict(Outcome.CRASH, crashed)
    leaked = _leaked(steps, check, secrets, written or {}, fragment_secrets)
    if leaked:
        return Verdict(Outcome.LEAK, leaked)
    if check.isolation_breaks:
        return Verdict(Outcome.ISOLATION_BREAK, f"{check.isolation_breaks} isolation "
                       f"break(s): {check.detail}")
    if check.auth_bypasses:
        return Verdict(Outcome.AUTH_BYPASS, f"{check.auth_bypasses} request(s) served that "
                       f"had to be refused: {check.detail}")
    if check.writes is not None and check.writes > 1:
        return Verdict(Outcome.REPEATED_WRITES, f"one planned write took effect "
                       f"{check.writes} times; {check.detail}")
    if check.lost:
        return Verdict(Outcome.LOST_RESULTS, f"{check.lost} results missing after resume; "
                       f"{check.detail}")
    for step in steps:
        if step.stopped and step.returncode in STOPPED_CODES:
            continue
        if not step.killed_by_case and step.returncode not in step.expected_codes:
            return Verdict(Outcome.UNCLEAR, f"`{step.name}` exited "
                           f"{step.returncode}, expected {'/'.join(map(str, step.expected_codes))}"
                           f"; {one_line(step.stderr, 120) or 'no stderr'}")
    if not check.ok:
        return Verdict(Outcome.UNCLEAR, check.detail)
    return Verdict(Outcome.CLEAR, check.detail)


def _hang(steps: Sequence[Step], check: Check) -> str | None:
    for step in steps:
        if step.killed_at_limit:
            what = (f"its deadline {step.deadline:g} s + {DEADLINE_TOLERANCE_S:g} s"
                    if step.deadline is not None else "its time allowance")
            return (f"`{step.name}` still running after {what} ({step.seconds:.1f} s in all); "
                    f"killed{'; ' + check.late if check.late else ''}")
        overrun = step.overrun
        if overrun is not None and overrun > DEADLINE_TOLERANCE_S:
            return (f"`{step.name}` ran {step.run_seconds:.1f} s, deadline {step.deadline:g} s "
                    f"({step.timing} timing)")
        if step.leftovers:
            return f"`{step.name}` left {len(step.leftovers)} process(es) running after it " \
                   "ended; killed"
    if check.late:
        return f"{check.late}; {check.detail}"
    return None


def _leaked(steps: Sequence[Step], check: Check, secrets: Iterable[str],
            written: Mapping[str, str | bytes], fragment_secrets: Iterable[str]) -> str | None:
    places: dict[str, str | bytes] = {}
    for i, step in enumerate(steps):
        places[f"step {i + 1} stdout"] = step.stdout
        places[f"step {i + 1} stderr"] = step.stderr
    places.update(check.places)
    places.update(written)
    where = _leak([s for s in secrets if s], places)
    if where is not None:
        return f"a secret value appears in {where}"
    for secret in fragment_secrets:
        where = _leak(fragments(secret), places)
        if where is not None:
            return f"{FRAGMENT_CHARS}+ characters of a secret value appear in {where}"
    return None
