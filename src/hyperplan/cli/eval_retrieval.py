"""``hyperplan eval retrieval``: Tool Context Graph vs. semantic, BM25 and one-hop retrieval.

Registered on the ``eval`` command group by :mod:`hyperplan.cli`.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from hyperplan.cli.common import embedder_from_option, out, stage_progress
from hyperplan.embed.base import Embedder
from hyperplan.eval.retrieval import RetrievalEvalError, evaluate_retrieval


def retrieval_cmd(
    suite: str = typer.Option(..., help="appworld | stabletoolbench | nestools"),
    tools: Path = typer.Option(
        ..., help="AppWorld api_docs dir; StableToolBench query file; NesTools *.jsonl"),
    tasks: Path = typer.Option(
        ..., help="AppWorld tasks_train.jsonl; StableToolBench query file; NesTools *.jsonl"),
    budget: int = typer.Option(20, help="at most this many tools per method and task"),
    embedder: str = typer.Option("auto", help="auto | minilm | hashing | openai:MODEL"),
    split: str = typer.Option("all", help="all | dev (every 5th task) | heldout"),
    as_json: bool = typer.Option(False, "--json", help="print only the JSON object"),
) -> None:
    """Recall, completeness, size and prompt tokens of retrieved tool sets."""
    chosen = embedder_from_option(embedder)
    if not isinstance(chosen, Embedder):
        raise RetrievalEvalError(
            f"retrieval needs a text embedder with a name; --embedder {embedder} is not one"
        )
    with stage_progress(not as_json) as progress:
        result = evaluate_retrieval(
            suite, tools, tasks, budget=budget, embedder=chosen, split=split, progress=progress,
        )
    if as_json:
        print(json.dumps(result))
        return
    out.print_json(json.dumps(result))
