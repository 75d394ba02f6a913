"""``hyperplan graph annotate``: a model's outputs, preconditions and effects for every tool
(:mod:`hyperplan.llm.annotate`), written as an annotation file that ``graph build
--annotations``, ``serve --annotations`` and ``build_selector(annotations=...)`` read; and
:func:`annotations_for`, what ``graph build``'s ``--annotations`` and ``--llm-annotate``
options give the build."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from hyperplan.cli.common import console, out, printed_warnings, stage_progress
from hyperplan.cli.options import AllowUnsafeTools, Model, llm_option

if TYPE_CHECKING:
    from hyperplan.catalog import Catalog
    from hyperplan.graph.annotations import Annotations
    from hyperplan.llm.annotate import AnnotationRun

Progress = Callable[[str, int, int], None]


def annotate_cmd(
    sources: list[str] = typer.Argument(..., metavar="SOURCE", help="KIND:LOCATION, as "
                                        "`graph build` takes them (several are merged)"),
    llm: str | None = llm_option("the model that annotates the tools (required)"),
    output: Path = typer.Option(..., "-o", "--output", help="annotation file to write "
                                "(JSON)"),
    model: Model = None,
    api_key_env: str = typer.Option(None, "--api-key-env", metavar="VAR", help="read the "
                                    "API key from this environment variable (else "
                                    "HYPERPLAN_LLM_API_KEY or OPENAI_API_KEY; never "
                                    "printed)"),
    cache_dir: Path = typer.Option(None, help="where answers are cached per tool (default: "
                                   "$HYPERPLAN_CACHE_DIR/annotations or "
                                   "~/.cache/hyperplan/annotations)"),
    no_cache: bool = typer.Option(False, "--no-cache", help="ask for every tool, keep "
                                  "nothing"),
    workers: int = typer.Option(2, help="tools asked at once"),
    allow_unsafe_tools: AllowUnsafeTools = False,
    as_json: bool = typer.Option(False, "--json", help="print only a JSON summary"),
) -> None:
    """Ask a model for every tool's outputs, preconditions and effects (HyperAgent's
    "Hypergraph construction"), as structured output, and write them as an annotation file
    (evidence llm). An invalid answer is re-asked once, then the tool is skipped with a
    warning; valid answers are cached per tool, so annotating the same tools again makes no
    call. Build with the file: `graph build SOURCE --annotations FILE`."""
    from hyperplan.errors import HyperplanError
    from hyperplan.graph.annotations import save_annotations
    from hyperplan.graph.safe_paths import check_output_path
    from hyperplan.select.cache import load_catalogs

    if llm is None:
        raise HyperplanError("give --llm URL: the OpenAI-compatible endpoint of the model "
                             "that annotates")
    if no_cache and cache_dir is not None:
        raise HyperplanError("give --cache-dir or --no-cache, not both")
    if workers < 1:
        raise HyperplanError(f"--workers must be at least 1, got {workers}")
    protect = _source_paths(sources)
    check_output_path(output, protect)
    with printed_warnings():
        catalog = load_catalogs(sources, allow_unsafe_tools=allow_unsafe_tools)
    if not len(catalog):
        raise HyperplanError(f"{' '.join(sources)}: no tools found")
    run = run_annotation(catalog, llm, model=model, api_key_env=api_key_env,
                         cache_dir=None if no_cache else (cache_dir or "default"),
                         workers=workers)
    check_output_path(output, protect)  # again: asking took a while
    save_annotations(run.annotations, output)
    summary = {**run.as_dict(), "output": str(output)}
    if as_json:
        print(json.dumps(summary))
        return
    nodes = ", ".join(f"{n} {kind}" for kind, n in summary["nodes"].items()) or "no nodes"
    console.print(f"{len(catalog)} tools: {run.asked} asked ({run.calls} model calls), "
                  f"{run.cached} from the cache, {len(run.skipped)} skipped; "
                  f"{len(run.annotations)} annotated ({nodes})", highlight=False)
    out.print(f"wrote {output}", highlight=False)


def run_annotation(catalog: Catalog, url: str, *, model: str | None = None,
                   api_key_env: str | None = None, cache_dir: str | Path | None = "default",
                   workers: int = 2, progress: Progress | None = None) -> AnnotationRun:
    """Annotate ``catalog`` with the model at ``url`` (:func:`hyperplan.llm.annotate.
    annotate_catalog`), with a progress bar per tool and the warnings printed."""
    from hyperplan.llm.annotate import annotate_catalog, client_for

    client = client_for(url, model=model, api_key_env=api_key_env)
    try:
        with stage_progress() as bar, printed_warnings():
            return annotate_catalog(catalog, client, cache_dir=cache_dir,
                                    progress=progress or bar, workers=workers)
    finally:
        close = getattr(client, "close", None)
        if callable(close):
            close()


def annotations_for(catalog: Catalog, *, file: Path | None = None, url: str | None = None,
                    model: str | None = None, api_key_env: str | None = None,
                    ) -> Annotations | None:
    """The annotations a build takes from ``--annotations FILE`` and ``--llm-annotate URL``
    (both: combined; neither: None). The LLM layer is imported only for a URL."""
    from hyperplan.graph.annotations import load_annotations
    from hyperplan.select.observed import combine_annotations

    given = load_annotations(file) if file is not None else None
    if url is None:
        return given
    run = run_annotation(catalog, url, model=model, api_key_env=api_key_env)
    console.print(f"annotations from {url}: {len(run.annotations)} tools ({run.asked} asked, "
                  f"{run.cached} from the cache, {len(run.skipped)} skipped)",
                  highlight=False)
    return combine_annotations(given, run.annotations) or None


def _source_paths(sources: list[str]) -> tuple[Path, ...]:
    from hyperplan.cli.graph_cmds import source_paths

    return tuple(p for source in sources for p in source_paths(source))
