"""Trace events as lines for the terminal (``hyperplan run``, ``trace show``, ``demo``): one
function per event type of :mod:`hyperplan.execute.events`."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from rich.markup import escape

from hyperplan.execute.events import (
    Blocked,
    ContextGraphShown,
    DagPlanned,
    LLMCalled,
    Refined,
    SubtaskSettled,
    SupportGraphChosen,
    ToolCalled,
    TraceEvent,
)


def short(text: str, limit: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _support(e: SupportGraphChosen) -> list[str]:
    if e.ok:
        return [f"[bold]{e.subtask}[/bold] support graph: " + " -> ".join(e.tools or ())]
    return [f"[bold]{e.subtask}[/bold] [red]{escape(e.reason or '')}[/red]"]


def _tool_call(e: ToolCalled) -> list[str]:
    mark = "[green]ok[/green]" if e.ok else f"[red]{e.error_kind}[/red]"
    args = _dumps(dict(e.arguments))[1:-1]
    shown = _dumps(e.value) if e.ok else str(e.error)
    return [f"  {e.tool}({escape(args)}) {mark} {escape(short(shown))}"]


def _blocked(e: Blocked) -> list[str]:
    def candidates(choice: Any) -> str:
        return " | ".join(short(_dumps(x.get("record") or x["value"]), 70)
                          for x in choice["candidates"])

    return [f"  [yellow]needs a choice[/yellow] for {c['tool']}.{c['parameter']}: "
            + (escape(candidates(c)) or "no value") for c in e.choices]


def _dag(e: DagPlanned) -> list[str]:
    subtasks = ", ".join(f"{s['id']}:{'/'.join(s['terminals'])}" for s in e.subtasks)
    return [f"[bold]plan v{e.version}[/bold] {subtasks}"]


def _llm(e: LLMCalled) -> list[str]:
    tail = "" if e.ok else f" [red]{escape(short(str(e.error or '')))}[/red]"
    return [f"  llm {e.component}: {e.prompt_tokens or 0}+{e.completion_tokens or 0} "
            f"tokens{tail}"]


def _refined(e: Refined) -> list[str]:
    return [f"  refinement {e.subtask or ''}  {escape(e.reason or '')}".rstrip()]


def _settled(e: SubtaskSettled) -> list[str]:
    return [f"  subtask {e.id} {e.status} {escape(e.reason or '')}".rstrip()]


def _context(e: ContextGraphShown) -> list[str]:
    names = list(e.tools[:6]) + (["…"] if len(e.tools) > 6 else [])
    window = e.fitted.get("fitted_to_window")
    fitted = (f", cut from {e.fitted.get('tools_before')} to fit the model's {window}-token "
              "window" if window else "")
    return [f"context graph ({len(e.tools)} tools, {e.tokens} tokens{fitted}): "
            + ", ".join(names)]


_RENDERERS: dict[type[TraceEvent], Callable[[Any], list[str]]] = {
    SupportGraphChosen: _support, ToolCalled: _tool_call, Blocked: _blocked, DagPlanned: _dag,
    LLMCalled: _llm, Refined: _refined, SubtaskSettled: _settled, ContextGraphShown: _context,
}


def render_event(event: TraceEvent) -> list[str]:
    """Rich-markup lines for one trace event (empty for events not worth a line)."""
    render = _RENDERERS.get(type(event))
    return render(event) if render else []
