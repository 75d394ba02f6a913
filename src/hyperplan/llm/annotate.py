"""A model's annotation of a catalog: per tool, the outputs it returns, its preconditions and
its effects, as structured output (HyperAgent paper, "Hypergraph construction": the effect
and condition nodes GPT-4o extracts beside the expert annotations; Definition 1's V_O, V_F
and condition nodes).

:func:`annotate_catalog` asks ``llm`` once per tool (:func:`annotation_messages`, answer
schema :data:`ANSWER_SCHEMA`) and reads the answer with
:func:`~hyperplan.graph.annotations.parse_nodes` as evidence ``llm``. An answer that fails
(the schema, or a path that is no canonical name) is re-asked once with the error, as the
client's own re-ask does (:func:`~hyperplan.llm.structured.reask_message`); a second failure
skips the tool with one warning naming it, never the run. Valid answers are cached per tool
content hash (:func:`tool_key`: name, description, input and output schemas, model name,
:data:`PROMPT_VERSION`) as private files (0700 directory, 0600 files, as the selection cache)
under :func:`default_annotation_dir`, so annotating the same tools again makes no call.

The tool texts are the catalog's own and go to the endpoint the user named; the API key is
registered as a secret and never printed (:class:`~hyperplan.llm.OpenAICompatibleLLM`).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import json
import os
import re
import tempfile
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hyperplan.catalog import Catalog, ToolSpec
from hyperplan.errors import CatalogError, HyperplanError
from hyperplan.graph.annotations import InferredNode, parse_nodes
from hyperplan.graph.model import Evidence
from hyperplan.graph.safe_paths import make_private_dirs
from hyperplan.llm.budget import BudgetExceeded
from hyperplan.llm.structured import reask_message
from hyperplan.llm.types import (
    LLM,
    ContextLengthError,
    JSONSchema,
    LLMError,
    Message,
    StructuredOutputError,
)

if TYPE_CHECKING:
    from hyperplan.llm.openai_client import OpenAICompatibleLLM

PROMPT_VERSION = 1  # part of every cache key: a changed prompt asks again
COMPONENT = "annotator"
CACHE_FORMAT = "hyperplan.llm-annotation"
MAX_NODES = 16  # nodes one answer may give
MAX_DESCRIPTION_CHARS = 2_000  # of a tool's description in the prompt
MAX_PARAMETERS = 40  # input parameters listed in the prompt
MAX_PARAMETER_CHARS = 200  # of one parameter's description
MAX_ENDPOINT_FAILURES = 3  # endpoint errors in a row (no answer at all) that end the run
MAX_TOKENS = 1024  # completion cap of a client made here (a node is ~60 tokens)
_CACHE_FILE_BYTES = 256 * 1024
_TYPES = ("string", "integer", "number", "boolean", "array", "object")
_SEGMENT = r"[a-z][a-z0-9_]*(?:\[\])*"
_CANONICAL = re.compile(rf"^(?:\[\]\.)?{_SEGMENT}(?:\.{_SEGMENT})*$")

Progress = Callable[[str, int, int], None]

ANSWER_SCHEMA: JSONSchema = {
    "type": "object",
    "properties": {
        "nodes": {
            "type": "array",
            "maxItems": MAX_NODES,
            "items": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": ["out", "pre", "eff"]},
                    "path": {"type": "string", "minLength": 1, "maxLength": 100},
                    "type": {"type": "string", "enum": list(_TYPES)},
                    "description": {"type": "string", "maxLength": 300},
                    "confidence": {"type": "number", "minimum": 0.05, "maximum": 1},
                },
                "required": ["kind", "path", "type", "description", "confidence"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["nodes"],
    "additionalProperties": False,
}
"""What a model answers for one tool: ``{"nodes": [{kind, path, type, description,
confidence}]}``."""

SYSTEM_PROMPT = """\
You annotate one tool of a tool catalog for a Tool-Schema Hypergraph (HyperAgent). List the \
nodes of the tool that its catalog does not declare:
- "out": an output the tool returns (a field of its result), e.g. ticket_id, items[].id, \
weather.temperature;
- "pre": a precondition, state that must hold before the tool can run, e.g. \
session.authenticated, device.bluetooth.enabled;
- "eff": an effect, state the tool changes, e.g. device.bluetooth.enabled, email.sent.
Name each with a canonical snake_case path: ticket_id (not "the ID of the ticket"), dotted \
for state (device.bluetooth.enabled), [] for the items of an array (items[].id). Give its \
JSON type (boolean for "pre" and "eff"), a short description and your confidence in (0, 1]. \
Only what the tool's name and text support; input parameters are not outputs; an empty list \
when nothing is said."""


def default_annotation_dir() -> Path:
    """``$HYPERPLAN_CACHE_DIR/annotations``, else ``~/.cache/hyperplan/annotations``
    (``$XDG_CACHE_HOME`` replaces ``~/.cache``), beside the selection cache."""
    root = os.environ.get("HYPERPLAN_CACHE_DIR")
    if root:
        return Path(root).expanduser() / "annotations"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "hyperplan" / "annotations"


@dataclass(frozen=True)
class AnnotationRun:
    """What :func:`annotate_catalog` did: the ``annotations`` (tool name -> nodes, tools with
    at least one node), how many tools were ``asked`` and how many answered from the
    ``cached`` answers, the tools ``skipped`` (no valid answer) and the model ``calls``."""

    annotations: dict[str, tuple[InferredNode, ...]]
    asked: int
    cached: int
    skipped: tuple[str, ...]
    calls: int

    def as_dict(self) -> dict[str, Any]:
        kinds: dict[str, int] = {}
        for nodes in self.annotations.values():
            for node in nodes:
                kinds[node.kind.value] = kinds.get(node.kind.value, 0) + 1
        return {"tools": len(self.annotations), "asked": self.asked, "cached": self.cached,
                "skipped": list(self.skipped), "calls": self.calls,
                "nodes": dict(sorted(kinds.items()))}


@dataclass(frozen=True)
class _Answer:
    tool: str
    nodes: tuple[InferredNode, ...] | None  # None: skipped
    calls: int
    problem: str = ""  # why it was skipped
    endpoint_error: bool = False
    unasked: bool = False  # skipped because a budget was spent


def model_name(llm: LLM) -> str:
    """The model an ``llm`` client talks to (its ``model`` attribute), for the cache key."""
    return str(getattr(llm, "model", "") or type(llm).__name__)


def tool_key(tool: ToolSpec, model: str) -> str:
    """The cache key of one tool's annotation (module doc)."""
    doc = {"prompt": PROMPT_VERSION, "model": model, "name": tool.name,
           "description": tool.description, "input": tool.input_schema,
           "output": tool.output_schema}
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def annotation_messages(tool: ToolSpec) -> list[Message]:
    """The two messages asking for ``tool``'s nodes: :data:`SYSTEM_PROMPT`, then the tool's
    name, description, input parameters and the outputs it already declares."""
    lines = [f"Tool: {tool.name}"]
    description = " ".join(tool.description.split())
    if description:
        lines.append(f"Description: {_cut(description, MAX_DESCRIPTION_CHARS)}")
    lines.append("Input parameters:" + ("" if _parameters(tool) else " none"))
    lines += _parameters(tool)
    declared = _declared_outputs(tool)
    if declared:
        lines.append(f"Declared outputs (do not repeat them): {', '.join(declared)}")
    return [Message.system(SYSTEM_PROMPT), Message.user("\n".join(lines))]


def _parameters(tool: ToolSpec) -> list[str]:
    props = tool.input_schema.get("properties") or {}
    required = set(tool.input_schema.get("required") or ())
    shown = []
    for name, schema in list(props.items())[:MAX_PARAMETERS]:
        kind = schema.get("type", "any") if isinstance(schema, dict) else "any"
        said = " ".join(str(schema.get("description", "")).split()) \
            if isinstance(schema, dict) else ""
        need = ", required" if name in required else ""
        shown.append(f"- {name} ({kind}{need})" + (f": {_cut(said, MAX_PARAMETER_CHARS)}"
                                                   if said else ""))
    if len(props) > MAX_PARAMETERS:
        shown.append(f"- ... and {len(props) - MAX_PARAMETERS} more")
    return shown


def _declared_outputs(tool: ToolSpec) -> list[str]:
    if tool.output_schema is None:
        return []
    from hyperplan.graph.schema_paths import output_fields
    from hyperplan.graph.text import NAMELESS_OUTPUTS

    try:
        fields = output_fields(tool.output_schema, where=tool.name)
    except Exception:  # an odd schema: the prompt just does not list it
        return []
    return [f.path for f in fields if f.path not in NAMELESS_OUTPUTS][:MAX_PARAMETERS]


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ----------------------------------------------------------------------------- answers
def read_answer(parsed: Any, tool: str) -> tuple[InferredNode, ...]:
    """The nodes of one schema-valid answer, evidence ``llm``; paths are folded to
    snake_case (case, blanks, hyphens) and one that is still no canonical name is a
    :class:`~hyperplan.errors.CatalogError` naming the tool and the field."""
    if not isinstance(parsed, dict) or not isinstance(parsed.get("nodes"), list):
        raise CatalogError("the answer must be an object with a 'nodes' list", tool=tool,
                           field="nodes")
    raw = []
    for i, item in enumerate(parsed["nodes"]):
        if isinstance(item, dict) and isinstance(item.get("path"), str):
            path = re.sub(r"[\s\-]+", "_", item["path"].strip()).lower()
            if not _CANONICAL.match(path):
                raise CatalogError(f"path {item['path']!r} is no canonical snake_case name "
                                   "(e.g. ticket_id, items[].id, device.bluetooth.enabled)",
                                   tool=tool, field=f"nodes[{i}].path")
            item = {**item, "path": path}
        raw.append(item)
    return parse_nodes(raw, tool=tool, evidence=Evidence.LLM)


def annotate_tool(llm: LLM, tool: ToolSpec) -> tuple[tuple[InferredNode, ...] | None, int,
                                                      str]:
    """Ask ``llm`` for ``tool``'s nodes: the nodes (None when both the answer and the one
    re-ask failed), the calls made and, for a skipped tool, why. Endpoint errors other than
    an invalid answer or a prompt too long for the model are raised."""
    messages = annotation_messages(tool)
    problem = ""
    for attempt in range(2):
        text = ""
        try:
            response = llm.complete(messages, schema=ANSWER_SCHEMA, component=COMPONENT)
            text = response.text
            return read_answer(response.parsed, tool.name), attempt + 1, ""
        except StructuredOutputError as exc:
            problem, text = exc.validation_error, exc.last_text
        except CatalogError as exc:
            problem = exc.reason + (f" (at {exc.field})" if exc.field else "")
        except ContextLengthError as exc:
            return None, attempt + 1, f"the prompt does not fit the model's context ({exc})"
        messages = [*messages, Message.assistant(text), reask_message(problem)]
    return None, 2, f"no valid answer after a re-ask: {problem}"


def annotate_catalog(catalog: Catalog | Sequence[ToolSpec], llm: LLM, *,
                     cache_dir: str | Path | None = "default",
                     progress: Progress | None = None, workers: int = 2) -> AnnotationRun:
    """Annotate every tool of ``catalog`` with ``llm`` (module doc): answers read from
    ``cache_dir`` when cached (``"default"``: :func:`default_annotation_dir`; None: no
    cache), else asked, ``workers`` tools at a time; ``progress(stage, done, total)`` after
    each tool. A skipped tool is one warning. The endpoint failing
    :data:`MAX_ENDPOINT_FAILURES` times in a row is a :class:`HyperplanError`; a spent
    budget stops asking (the rest skipped, one warning)."""
    tools = list(catalog.tools if isinstance(catalog, Catalog) else catalog)
    model = model_name(llm)
    where = default_annotation_dir() if cache_dir == "default" else \
        (Path(cache_dir) if cache_dir is not None else None)
    found: dict[str, tuple[InferredNode, ...]] = {}
    pending: list[ToolSpec] = []
    for tool in tools:
        hit = _read_cached(where, tool, model)
        if hit is None:
            pending.append(tool)
        else:
            found[tool.name] = hit
    cached, done, total = len(found), len(found), len(tools)
    if progress is not None:
        progress("annotating tools", done, total)
    skipped: list[str] = []
    unasked: list[_Answer] = []
    calls = 0
    for answer in _ask_all(llm, pending, workers):
        done += 1
        calls += answer.calls
        if answer.nodes is None:
            skipped.append(answer.tool)
            if answer.unasked:
                unasked.append(answer)
            else:
                warnings.warn(f"tool {answer.tool!r}: {answer.problem}; skipped", stacklevel=2)
        else:
            found[answer.tool] = answer.nodes
            _write_cached(where, _spec(tools, answer.tool), model, answer.nodes)
        if progress is not None:
            progress(f"annotated {answer.tool}", done, total)
    if unasked:
        warnings.warn(f"{len(unasked)} tool(s) not annotated, {unasked[0].problem}",
                      stacklevel=2)
    order = {t.name: i for i, t in enumerate(tools)}
    kept = {name: nodes for name, nodes in sorted(found.items(), key=lambda kv: order[kv[0]])
            if nodes}
    return AnnotationRun(kept, len(pending), cached, tuple(skipped), calls)


def _spec(tools: list[ToolSpec], name: str) -> ToolSpec:
    return next(t for t in tools if t.name == name)


def _ask_all(llm: LLM, tools: list[ToolSpec], workers: int) -> Any:
    """The answers for ``tools`` as they come (a generator); ends the run on repeated
    endpoint errors and skips the rest once a budget is spent."""
    if not tools:
        return
    failures = 0
    with concurrent.futures.ThreadPoolExecutor(max(1, workers),
                                               thread_name_prefix="hyperplan-annotate") as pool:
        futures = [pool.submit(_ask_one, llm, tool) for tool in tools]
        try:
            for future in concurrent.futures.as_completed(futures):
                answer = future.result()
                failures = failures + 1 if answer.endpoint_error else 0
                if failures >= MAX_ENDPOINT_FAILURES:
                    raise HyperplanError(f"the model endpoint failed {failures} times in a "
                                         f"row ({answer.problem}); annotation stopped")
                yield answer
        finally:
            for future in futures:
                future.cancel()


def _ask_one(llm: LLM, tool: ToolSpec) -> _Answer:
    try:
        nodes, calls, problem = annotate_tool(llm, tool)
    except BudgetExceeded as exc:
        return _Answer(tool.name, None, 0, f"the budget is spent: {exc}", unasked=True)
    except LLMError as exc:
        return _Answer(tool.name, None, 1, f"the model endpoint failed: {exc}",
                       endpoint_error=True)
    return _Answer(tool.name, nodes, calls, problem)


# ----------------------------------------------------------------------------- cache
def _read_cached(where: Path | None, tool: ToolSpec, model: str,
                 ) -> tuple[InferredNode, ...] | None:
    """The cached answer for ``tool`` (None when there is none, or it cannot be read)."""
    if where is None:
        return None
    path = where / f"{tool_key(tool, model)}.json"
    try:
        if path.stat().st_size > _CACHE_FILE_BYTES:
            return None
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc.get("format") != CACHE_FORMAT or doc.get("tool") != tool.name:
            return None
        return parse_nodes(doc["nodes"], file=str(path), tool=tool.name,
                           evidence=Evidence.LLM)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, AttributeError,
            CatalogError):
        return None


def _write_cached(where: Path | None, tool: ToolSpec, model: str,
                  nodes: tuple[InferredNode, ...]) -> None:
    """Keep one valid answer (a cache that cannot be written is no error)."""
    if where is None:
        return
    doc = {"format": CACHE_FORMAT, "tool": tool.name, "model": model,
           "prompt": PROMPT_VERSION,
           "nodes": [{"kind": n.kind.value, "path": n.path, "type": n.type,
                      "description": n.description, "confidence": n.confidence}
                     for n in nodes]}
    with contextlib.suppress(OSError):
        _private_dir(where)
        descriptor, tmp = tempfile.mkstemp(prefix=".answer-", dir=where)  # mode 0600
        try:
            with open(descriptor, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(doc))
            os.replace(tmp, where / f"{tool_key(tool, model)}.json")
        finally:
            Path(tmp).unlink(missing_ok=True)


def _private_dir(where: Path) -> None:
    """Create ``where`` and its missing parents with mode 0700, as the selection cache does
    (:func:`hyperplan.graph.safe_paths.make_private_dirs`)."""
    make_private_dirs(where, 0o700)


# ----------------------------------------------------------------------------- client
def client_for(url: str, *, model: str | None = None, api_key_env: str | None = None,
               timeout: float | None = None) -> OpenAICompatibleLLM:
    """An OpenAI-compatible client for annotating at ``url``: the API key from the
    environment variable ``api_key_env`` (else ``HYPERPLAN_LLM_API_KEY`` /
    ``OPENAI_API_KEY``; a placeholder for local servers), the model ``model``, else
    ``HYPERPLAN_LLM_MODEL``, else the first the server lists. Invalid answers are re-asked
    here once (:func:`annotate_tool`), not by the client."""
    from hyperplan.llm.openai_client import OpenAICompatibleLLM
    from hyperplan.secrets import register_secret

    key = None
    if api_key_env is not None:
        key = os.environ.get(api_key_env, "").strip()
        if not key:
            raise HyperplanError(f"--api-key-env {api_key_env}: the environment variable "
                                 f"{api_key_env} is not set or empty")
        register_secret(key)
    chosen = model or os.environ.get("HYPERPLAN_LLM_MODEL") or _first_model(url, key)
    return OpenAICompatibleLLM(chosen, base_url=url, api_key=key, timeout=timeout,
                               max_reasks=0, temperature=0.0, max_tokens=MAX_TOKENS)


def _first_model(url: str, key: str | None) -> str:
    """The first model the server at ``url`` lists (a clear error when it lists none)."""
    import openai

    from hyperplan.secrets import redact_text

    client = openai.OpenAI(base_url=url, api_key=key or "sk-no-key-required", timeout=10.0,
                           max_retries=0)
    try:
        listed = client.models.list().data
    except openai.OpenAIError as exc:
        raise HyperplanError(f"cannot list the models at {url} "
                             f"({redact_text(type(exc).__name__)}); pass --model") from None
    finally:
        client.close()
    if not listed:
        raise HyperplanError(f"the server at {url} lists no model; pass --model")
    return str(listed[0].id)
