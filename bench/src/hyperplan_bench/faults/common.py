"""The catalogue's registry and the helpers its cases share (``hyperplan bench faults``)."""

from __future__ import annotations

import json
import secrets
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hyperplan_bench.faults.runner import Case, CaseContext, CaseFunction
from hyperplan_bench.faults.servers import MCP_SERVER, TOOLS_MODULE, openapi_spec
from hyperplan_bench.faults.verdict import Check, Step, one_error, one_line

CASES: list[Case] = []
# the sections of the catalogue, in the order they run: the runtime's faults
# (docs/benchmarks.md), the MCP gateway's (issue 36; hyperplan_bench.faults.gateway_cases)
SECTIONS = ("runtime", "gateway")


def case(name: str, item: int, *, timed: bool = False, section: str = "runtime"
         ) -> Callable[[CaseFunction], CaseFunction]:
    """Register the decorated function as the case ``name`` of fault item ``item`` (numbered
    as in docs/benchmarks.md, "Runtime trust under faults"; in the ``gateway`` section, as
    in issue 36); ``timed``: it measures a hard deadline or a latency, so it runs alone, see
    :class:`~hyperplan_bench.faults.runner.Case`."""
    if section not in SECTIONS:
        raise ValueError(f"unknown section {section!r}; known: {', '.join(SECTIONS)}")

    def register(function: CaseFunction) -> CaseFunction:
        if any(c.name == name for c in CASES):
            raise ValueError(f"case {name!r} registered twice")
        CASES.append(Case(name, item, function, timed, section))
        return function
    return register


def secret_value(prefix: str = "sk-lab") -> str:
    """A fresh secret-looking value, unique to one benchmark run."""
    return f"{prefix}-{secrets.token_hex(10)}"


def goal(terminal: str, values: Mapping[str, Any] | None = None,
         secret_names: Sequence[str] = ()) -> str:
    """A ``--goal`` for the LLM-free run of ``terminal``."""
    data: dict[str, Any] = {"terminals": [terminal], "values": dict(values or {})}
    if secret_names:
        data["secrets"] = list(secret_names)
    return json.dumps(data)


def write_spec(ctx: CaseContext) -> str:
    """The lab's OpenAPI document in the case's directory, as a ``--tools`` source."""
    (ctx.work / "spec.json").write_text(json.dumps(openapi_spec(ctx.url)), "utf-8")
    return "openapi:spec.json"


def write(ctx: CaseContext, name: str, text: str) -> Path:
    path = ctx.work / name
    path.write_text(text, "utf-8")
    return path


TOOLS = "hp_fault_tools"


def tool_module(ctx: CaseContext) -> str:
    """The misbehaving Python tools in the case's directory, as a ``--tools`` source."""
    write(ctx, f"{TOOLS}.py", TOOLS_MODULE)
    return f"python:{TOOLS}"


def mcp_command(ctx: CaseContext, *flags: str) -> str:
    """The ``--mcp-command`` of the lab's MCP server (it logs each write in
    ``mcp_writes.log``)."""
    server = write(ctx, "mcp_server.py", MCP_SERVER)
    return shlex.join([sys.executable, str(server), str(ctx.work / "mcp_writes.log"), *flags])


def line_count(ctx: CaseContext, name: str) -> int:
    """Lines of a file in the case's directory (0 if it does not exist)."""
    path = ctx.work / name
    return len(path.read_text().splitlines()) if path.exists() else 0


def first_request_at(ctx: CaseContext) -> float | None:
    """When the lab server saw the case's first request (wall clock), if it saw one."""
    requests = ctx.lab.requests(ctx.name)
    return min(r.at for r in requests) if requests else None


def time_in(ctx: CaseContext, name: str) -> float | None:
    """The wall-clock time a helper wrote into the file ``name`` of the case, if it did."""
    try:
        return float((ctx.work / name).read_text())
    except (OSError, ValueError):
        return None


def run_json(step: Step) -> dict[str, Any] | None:
    """The ``--json`` result of a run, if stdout is one whole JSON object."""
    try:
        data = json.loads(step.stdout)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def status(step: Step) -> str | None:
    data = run_json(step)
    value = data.get("status") if data else None
    return value if isinstance(value, str) else None


def trace_events(path: Path) -> list[dict[str, Any]]:
    """The events of a JSONL trace; unreadable lines are skipped (the cases check shape)."""
    events = []
    try:
        lines = path.read_text("utf-8", "replace").splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def tool_calls(path: Path) -> list[dict[str, Any]]:
    return [e for e in trace_events(path) if e.get("type") == "tool_call"]


def expect_error(step: Step, *needles: str, also: bool = True, note: str = "") -> Check:
    """A refusal: exit 1 with exactly one ``error:`` line containing every needle (and
    ``also``, the case's other conditions)."""
    line = one_error(step)
    if line is None:
        lines = [x for x in step.stderr.splitlines() if x.strip()]
        return Check(False, f"no single clear error line (exit {step.returncode}; stderr "
                     f"{one_line(' | '.join(lines[-3:]), 150) or 'empty'})")
    missing = [n for n in needles if n not in line]
    if missing:
        return Check(False, f"error line lacks {missing!r}: {one_line(line)}")
    if not also:
        return Check(False, f"{note}; {one_line(line)}" if note else one_line(line))
    return Check(True, one_line(f"{line}{'; ' + note if note else ''}"))


def expect_run(step: Step, statuses: Sequence[str], calls: list[dict[str, Any]],
               kinds: Sequence[str | None] | None = None, also: bool = True,
               note: str = "", writes: int | None = None) -> Check:
    """A run that ends with a clear structured status: its ``--json`` result whole, its
    status one of ``statuses``, its tool calls' error kinds ``kinds`` (if given)."""
    got = status(step)
    seen = [c.get("error_kind") for c in calls]
    detail = f"status {got}, calls {seen}" + (f", {note}" if note else "")
    ok = got in statuses and (kinds is None or seen == list(kinds)) and also
    if got is None:
        detail = f"no whole --json result on stdout ({one_line(step.stdout, 80) or 'empty'})"
    return Check(ok, detail, writes=writes)
