"""Structured output helpers: schema instructions, JSON extraction and validation."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
from jsonschema.exceptions import best_match

from hyperplan.llm.types import JSONSchema, Message

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def schema_instruction(schema: JSONSchema) -> str:
    """A system-prompt paragraph asking for a single JSON value matching `schema`."""
    return (
        "Reply with a single JSON value and nothing else (no prose, no code fences). "
        "It must validate against this JSON Schema:\n"
        + json.dumps(dict(schema), separators=(",", ":"), sort_keys=True)
    )


def with_schema_instruction(messages: list[Message], schema: JSONSchema) -> list[Message]:
    """Append the schema instruction to the first system message, or prepend one."""
    instruction = schema_instruction(schema)
    out = list(messages)
    for i, message in enumerate(out):
        if message.role == "system":
            out[i] = Message("system", f"{message.content}\n\n{instruction}".strip())
            return out
    return [Message.system(instruction), *out]


def parse_and_validate(text: str, schema: JSONSchema) -> tuple[Any, str | None]:
    """Decode `text` as JSON (tolerating code fences / surrounding prose) and validate it.

    Returns ``(value, None)`` on success or ``(None, error_message)`` with a precise, model-facing
    description of what is wrong.
    """
    value: Any
    try:
        value = _decode(text)
    except ValueError as exc:
        return None, f"the reply is not valid JSON ({exc})"
    validator_cls = jsonschema.validators.validator_for(schema)
    validator = validator_cls(schema)
    error = best_match(validator.iter_errors(value))
    if error is None:
        return value, None
    path = "/".join(str(p) for p in error.absolute_path) or "(root)"
    return None, f"JSON Schema validation failed at {path}: {error.message}"


def _decode(text: str) -> Any:
    """JSON from a model's reply: the whole text, else a fenced block, else the outermost
    object or array. Raw control characters inside strings (a literal newline or tab, which
    models often write) are accepted (``strict=False``)."""
    stripped = text.strip()
    try:
        return json.loads(stripped, strict=False)
    except json.JSONDecodeError as first:
        fenced = _FENCE.search(stripped)
        candidates = [fenced.group(1)] if fenced else []
        for opener, closer in (("{", "}"), ("[", "]")):
            start, end = stripped.find(opener), stripped.rfind(closer)
            if 0 <= start < end:
                candidates.append(stripped[start : end + 1])
        for candidate in candidates:
            try:
                return json.loads(candidate, strict=False)
            except json.JSONDecodeError:
                continue
        raise ValueError(str(first)) from None


def reask_message(validation_error: str) -> Message:
    """The user turn that feeds the exact validation error back to the model."""
    return Message.user(
        "Your previous reply was rejected: "
        f"{validation_error}. Reply again with only a corrected JSON value that validates "
        "against the schema."
    )
