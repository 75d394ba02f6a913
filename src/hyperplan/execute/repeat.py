"""Which tool calls may be sent again after a timeout or a lost connection.

A call that timed out may still have run: the server may have charged the card, the message
may have gone out. Repeating it automatically would do it twice. So a call is repeated only
when repeating it is known to be harmless:

* HTTP tools (OpenAPI): the methods RFC 9110 §9.2.1 defines as safe (``GET``, ``HEAD``,
  ``OPTIONS``, ``TRACE``); any other method (``PUT`` and ``DELETE`` included, which are
  idempotent only if the server implements them so) only when the document marks the operation
  ``x-idempotent: true``, or when the user configured an idempotency-key header, which makes
  the server recognise the repeat (the key is the same for the same planned call);
* MCP tools: the server's annotations say ``readOnlyHint: true`` or ``idempotentHint: true``;
* everything else (Python callables included): never.

A call that may not be repeated and did not finish is reported as
:attr:`~hyperplan.execute.results.ErrorKind.OUTCOME_UNKNOWN`, and the agent does not send it
again (:mod:`hyperplan.execute.subtask`).
"""

from __future__ import annotations

from hyperplan.catalog import ToolSpec

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})


def may_repeat(tool: ToolSpec, *, idempotency_key: bool = False) -> bool:
    """True when a call of ``tool`` that did not finish may be sent again (module doc);
    ``idempotency_key``: the runtime sends an idempotency key with HTTP writes."""
    meta = tool.metadata
    if meta.get("idempotent") is True:
        return True
    method = meta.get("method")
    if isinstance(method, str):
        return method.upper() in SAFE_METHODS or idempotency_key
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        return (annotations.get("readOnlyHint") is True
                or annotations.get("idempotentHint") is True)
    return False
