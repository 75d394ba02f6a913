"""How ``hyperplan bench faults`` shows its result without ``--json``: a progress line per
case on stderr and a rich table on stdout."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from hyperplan_bench.faults.verdict import SUMMARY_KEYS, Outcome

_STYLE = {Outcome.CLEAR.value: "green", Outcome.UNCLEAR.value: "yellow"}


def _outcome(value: str) -> str:
    return f"[{_STYLE.get(value, 'bold red')}]{value}[/]"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def progress_line(result: dict[str, Any]) -> str:
    """One line for a finished case (rich markup; the detail escaped)."""
    deadline = result.get("deadline")
    timing = (f", ran {result['run_seconds']:.1f} s of a {deadline:g} s deadline"
              if deadline is not None and result.get("run_seconds") is not None else "")
    section = "" if result.get("section", "runtime") == "runtime" else f"{result['section']} "
    return (f"{_outcome(result['outcome'])} {escape(result['name'])} ({section}item "
            f"{result['item']}, "
            f"{result['seconds']:.1f} s{timing}): {escape(result['detail'])}")


def section_line(name: str, counts: dict[str, Any]) -> str:
    """One line of a section's counts: ``gateway: 24 cases: clear_errors 20, crashes 0, ...``
    (buckets the section never saw left out, the targets' counters always shown)."""
    always = {"crashes", "hangs", "leaks", "repeated_writes", "isolation_breaks",
              "auth_bypasses"} if name == "gateway" else set()
    shown = [f"{key} {counts.get(key, 0)}" for key in SUMMARY_KEYS.values()
             if counts.get(key) or key in always or key == "clear_errors"]
    return f"{name}: {counts.get('cases', 0)} cases: {', '.join(shown)}"


def table(result: dict[str, Any]) -> Table:
    """The per-case table, its caption the summary counts (and a line per section when the
    run had more than one, or only the gateway's)."""
    counts = ", ".join(f"{key} {result[key]}" for key in SUMMARY_KEYS.values())
    worst = result.get("worst_deadline_overrun_s")
    caption = (f"{result['cases']} cases in {result['seconds']:.0f} s: {counts}; worst "
               f"deadline overrun {'-' if worst is None else f'{worst:+.2f} s'} (allowed +2 s); "
               f"interpreter start-up {result['startup_s']:.1f} s; load average "
               f"{result['load_average'][0]:g} -> {result['load_average'][1]:g}")
    sections = result.get("sections") or {}
    if len(sections) > 1 or "gateway" in sections:
        caption += "".join(f"\n{section_line(name, c)}" for name, c in sections.items())
    grid = Table(title="bench faults", caption=caption)
    for column, justify in (("case", "left"), ("item", "right"), ("outcome", "left"),
                            ("s", "right"), ("deadline", "right"), ("ran", "right"),
                            ("detail", "left")):
        grid.add_column(column, justify=justify)  # type: ignore[arg-type]
    for row in result["results"]:
        grid.add_row(escape(row["name"]), str(row["item"]), _outcome(row["outcome"]),
                     _seconds(row["seconds"]), _seconds(row["deadline"]),
                     _seconds(row["run_seconds"]), escape(row["detail"]))
    return grid
