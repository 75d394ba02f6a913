"""``hyperplan eval retrieval``: Tool Context Graph vs. semantic, BM25 and one-hop retrieval.

Registered on the ``eval`` command group by :mod:`hyperplan.cli`.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import typer

from hyperplan.cli.common import embedder_from_option, fail, out, stage_progress
from hyperplan.cli.options import (
    AsJson,
    Model,
    Split,
    ToolBudget,
    embedder_option,
    llm_option,
    renamed_options,
)
from hyperplan.connect import llm_from_options
from hyperplan.embed.base import Embedder
from hyperplan.llm.budget import Accounting
from hyperplan_bench.eval.interpretations import (
    InterpretationStore,
    Interpreter,
    llm_interpreter,
    rules_interpreter,
)
from hyperplan_bench.eval.retrieval import RetrievalEvalError, evaluate_retrieval


@renamed_options({"--tools": "--catalog", "--tasks": "--tasks-file"})
def retrieval_cmd(
    suite: str = typer.Option(
        ..., help="appworld | stabletoolbench | nestools | sealtools | custom"),
    catalog: str = typer.Option(
        ..., "--catalog", help="where the suite's tools are: AppWorld api_docs dir; "
        "StableToolBench query file; NesTools *.jsonl; Seal-Tools dir or tool.jsonl; custom: "
        "a catalog source KIND:LOCATION (as for graph build)"),
    tasks_file: Path = typer.Option(
        ..., "--tasks-file", help="AppWorld tasks_train.jsonl; StableToolBench query file; "
        "NesTools *.jsonl; Seal-Tools dir or dev.jsonl; "
        'custom: JSONL of {"id", "request", "tools"}, tools = the gold tool names'),
    budget: ToolBudget = 20,
    embedder: str = embedder_option("auto", "none is refused here (retrieval needs vectors)"),
    split: Split = "all",
    llm: str | None = llm_option("the context graph reads the model's task interpretation "
                                 "instead of the rules' (else HYPERPLAN_LLM_BASE_URL when "
                                 "--interpreter llm)"),
    model: Model = None,
    interpreter: str = typer.Option(None, help="rules | llm (default: llm when --llm is "
                                    "given, else rules)"),
    interpretations: Path = typer.Option(
        None, help="JSONL file keeping the interpretations: read back for the same task and "
        "text, new ones appended as they come (an interrupted LLM run loses nothing)"),
    details: Path = typer.Option(
        None, help="write one JSON line per task here: the request, its gold tools, the "
        "interpretation, and per method the tools retrieved (in rank order) and missed"),
    as_json: AsJson = False,
) -> None:
    """Recall, completeness, size and prompt tokens of retrieved tool sets."""
    chosen = embedder_from_option(embedder)
    if not isinstance(chosen, Embedder):
        raise RetrievalEvalError(
            f"retrieval needs a text embedder with a name; --embedder {embedder} is not one"
        )
    reader, name = _interpreter(interpreter, llm, model)
    store = InterpretationStore(interpretations) if interpretations else None
    with contextlib.ExitStack() as stack:
        progress = stack.enter_context(stage_progress(not as_json))
        if store is not None:
            stack.enter_context(store)
        sink = stack.enter_context(details.open("w", encoding="utf-8")) if details else None

        def write(record: dict[str, Any]) -> None:
            assert sink is not None
            sink.write(json.dumps(record, ensure_ascii=False) + "\n")
            sink.flush()

        result = evaluate_retrieval(
            suite, catalog, tasks_file, budget=budget, embedder=chosen, split=split,
            progress=progress,
            interpreter=reader, interpreter_name=name, store=store,
            on_task=write if sink else None,
        )
    if not result["n_tasks"]:
        fail(f"{tasks_file}: no task with a request and gold tools to score"
             + (f" in split {split!r}" if split != "all" else ""))
    if as_json:
        print(json.dumps(result))
        return
    out.print_json(json.dumps(result))


def _interpreter(choice: str | None, url: str | None, model: str | None
                 ) -> tuple[Interpreter, str]:
    """The interpreter the options ask for and its name for the JSON (``llm:<model>``)."""
    mode = choice or ("llm" if url else "rules")
    if mode == "rules":
        if url:
            raise RetrievalEvalError("--llm was given with --interpreter rules; drop one")
        return rules_interpreter, "rules"
    if mode != "llm":
        raise RetrievalEvalError(f"--interpreter must be rules or llm, got {choice!r}")
    client = llm_from_options(url, model, Accounting(), check=True)
    if client is None:
        raise RetrievalEvalError("--interpreter llm needs --llm URL or HYPERPLAN_LLM_BASE_URL")
    return llm_interpreter(client), f"llm:{client.model}"
