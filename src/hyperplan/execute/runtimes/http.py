"""Run tools imported from an OpenAPI 3 document by sending HTTP requests with httpx.

The OpenAPI importer (:mod:`hyperplan.importers.openapi`) records per tool
``metadata["method"]``, ``["path"]``, ``["server"]`` and ``["params"]``, which maps every input
name to ``{"in": path|query|header|cookie|body, "name": original}``. A call is built from them:

* **path** inputs replace ``{name}`` in the path, URL-quoted (``/`` included); a list is joined
  with commas.
* **query** inputs become query parameters; a list is repeated (``?tag=a&tag=b``), an object is
  sent as JSON text, booleans as ``true``/``false``.
* **header** and **cookie** inputs become request headers / the ``Cookie`` header.
* **body** inputs are the properties of a JSON object body. The importer names a non-object
  body (an array, a scalar, an object without properties) as the one input ``body`` (or
  ``body_body``) with ``{"in": "body", "name": "body"}``; that input *is* the whole body. The
  record is the same for an object body whose only property is called ``body``, so the input's
  schema decides: an object schema with ``properties`` is wrapped as ``{"body": ...}``, anything
  else is sent as the whole body. Bodies are always sent as JSON.
* An input without a ``params`` entry goes to the path when ``{name}`` occurs there, else to
  the query. ``None`` values of non-body inputs are left out.

Base URL: an explicit ``base_url`` overrides an absolute ``metadata["server"]``; a relative server
URL (``/v1``) is resolved against ``base_url`` (RFC 3986, ``urllib.parse.urljoin``); with no URL
at all the call fails with ``TRANSPORT``. The request URL is the base (trailing ``/`` dropped)
followed by the path.

Responses: 2xx -> ``ok`` with the parsed JSON (when the content type says JSON or is missing
and the body parses), else the text (``None`` when empty); any other status (redirects are
not followed) -> ``TOOL_ERROR`` with the status and the first 500 characters of the body;
``httpx.TimeoutException`` -> ``TIMEOUT``; other httpx errors -> ``TRANSPORT``. Error strings
name the method and the path *template*, never header, cookie or secret-looking query values:
those values (the ``headers`` given to the runtime included) are replaced by ``***`` wherever
they would appear, e.g. echoed in a response body. Values shorter than 4 characters are not
redacted. Every such value is also registered in :data:`hyperplan.secrets.SECRETS`, so traces
and output redact it by value wherever it comes back.

Trust:

* **Deadline.** ``timeout`` (per call: the smaller of the runtime's and the caller's, which the
  agent sets to the time left in the run) is a total wall-clock deadline for the whole
  exchange: connect, send, headers and body. The exchange runs in a worker thread that streams
  the body and checks the deadline after every chunk; the caller waits at most ``timeout``
  seconds, so a server that drips one byte a second cannot hold a run past its deadline.
* **No repeated writes.** A call that did not finish is ``TIMEOUT`` / ``TRANSPORT`` only when
  it may be repeated (:func:`hyperplan.execute.repeat.may_repeat`: safe methods,
  ``x-idempotent``, or an ``idempotency_header`` configured, whose key is derived from the run
  and the call, so a repeat carries the same key); otherwise it is ``OUTCOME_UNKNOWN``
  ("outcome unknown: not re-sent"). A connection that was never made (refused, DNS, connect
  timeout) is ``TRANSPORT``: nothing was sent.
* **Bounded bodies.** A body larger than ``max_response_bytes`` (default 10 MB) is not read
  past the cap: the value is the text of the first bytes followed by a truncation marker
  (``metadata["truncated"]`` is true), an error status quotes its first 500 characters.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets as _random
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urljoin, urlsplit, urlunsplit

import httpx

from hyperplan.catalog import ToolSpec
from hyperplan.execute.repeat import may_repeat
from hyperplan.execute.results import ErrorKind, ToolResult
from hyperplan.execute.runtimes.base import (
    Clock,
    ClosingRuntime,
    fail_result,
    ok_result,
    truncate,
)
from hyperplan.execute.runtimes.validation import rejected
from hyperplan.secrets import SECRETS

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024
_SECRET_NAME = re.compile(r"key|token|secret|passw|auth|sig|session|credential", re.IGNORECASE)
_MIN_SECRET_CHARS = 4


class RequestError(Exception):
    """The arguments cannot be turned into a request (a missing path parameter)."""


@dataclass
class HttpRequest:
    """One request to send, plus the values that must never appear in error text."""

    method: str
    url: str
    query: list[tuple[str, str]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    json_body: Any = None
    has_body: bool = False
    secrets: set[str] = field(default_factory=set)


class OpenAPIRuntime(ClosingRuntime):
    """Executes OpenAPI-imported tools over HTTP (see the module docstring for the mapping and
    for deadlines, repeats and body caps).

    ``headers`` (e.g. ``Authorization``) are sent with every request. ``client`` is used as
    given and not closed by :meth:`close`; without one the runtime creates (lazily) and owns an
    ``httpx.Client``. ``idempotency_header`` (e.g. ``Idempotency-Key``) sends, with every call
    whose method is not safe, a key that is the same for the same tool and arguments within
    this runtime's life, which makes such calls safe to repeat."""

    def __init__(self, base_url: str | None = None, headers: Mapping[str, str] | None = None,
                 timeout: float = DEFAULT_TIMEOUT, client: httpx.Client | None = None, *,
                 max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
                 idempotency_header: str | None = None) -> None:
        self.base_url = base_url
        self.headers = dict(headers or {})
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes
        self.idempotency_header = idempotency_header
        self._nonce = _random.token_hex(8)
        self._client = client
        self._owns_client = client is None
        self._lock = threading.Lock()
        SECRETS.add_all(self.headers.values())

    def can_run(self, tool: ToolSpec) -> bool:
        meta = tool.metadata
        return isinstance(meta.get("method"), str) and isinstance(meta.get("path"), str)

    def close(self) -> None:
        with self._lock:
            if self._owns_client and self._client is not None:
                self._client.close()
                self._client = None

    def call(self, tool: ToolSpec, arguments: Mapping[str, Any], *,
             timeout: float | None = None) -> ToolResult:
        clock = Clock()
        refused = rejected(tool, arguments, None if self.can_run(tool) else
                           "no HTTP method/path in the tool metadata", clock)
        if refused is not None:
            return refused
        base = self.resolve_base_url(tool)
        if base is None:
            return fail_result(tool, arguments, ErrorKind.TRANSPORT, self._no_url(tool), clock)
        try:
            request = build_request(tool, arguments, base, self.headers)
        except RequestError as exc:
            return fail_result(tool, arguments, ErrorKind.INVALID_ARGUMENTS,
                               f"{tool.name}: {exc}", clock)
        self._add_idempotency_key(tool, arguments, request)
        SECRETS.add_all(request.secrets)
        where = f"{tool.name}: {request.method} {_display(base, tool.metadata['path'])}"
        limit = min(timeout, self.timeout) if timeout is not None else self.timeout
        repeatable = may_repeat(tool, idempotency_key=self.idempotency_header is not None)
        exchange = _Exchange(self._http(), request, limit, self.max_response_bytes)
        try:
            body = exchange.run()
        except Exception as exc:
            return _failure(tool, arguments, exc, where, limit, repeatable, request.secrets,
                            clock)
        return _result(tool, arguments, body, where, request.secrets, clock)

    def _add_idempotency_key(self, tool: ToolSpec, arguments: Mapping[str, Any],
                             request: HttpRequest) -> None:
        if self.idempotency_header is None or request.method in ("GET", "HEAD", "OPTIONS",
                                                                   "TRACE"):
            return
        text = json.dumps([self._nonce, tool.name, arguments], sort_keys=True, default=str)
        request.headers[self.idempotency_header] = hashlib.sha256(text.encode()).hexdigest()[:32]

    def resolve_base_url(self, tool: ToolSpec) -> str | None:
        """The base URL for ``tool`` (see the module docstring), ``None`` when there is none."""
        raw = tool.metadata.get("server")
        server = raw.strip() if isinstance(raw, str) and raw.strip() else None
        if self.base_url:
            if server is None or _is_absolute(server):
                return self.base_url
            return urljoin(self.base_url, server)
        if server is not None and _is_absolute(server):
            return server
        return None

    def _no_url(self, tool: ToolSpec) -> str:
        server = tool.metadata.get("server")
        if isinstance(server, str) and server.strip():
            return (f"{tool.name}: the server URL {server!r} is relative; pass base_url to "
                    "OpenAPIRuntime")
        return (f"{tool.name}: no server URL in the OpenAPI document; pass base_url to "
                "OpenAPIRuntime")

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                self._client = httpx.Client(follow_redirects=False)
            return self._client


REDACTION_MARGIN = 4096  # bytes read past a cap, so redaction sees a secret whole

@dataclass
class _Body:
    """What an exchange read: status, headers, the body (at most the cap, and up to
    :data:`REDACTION_MARGIN` bytes past it so a secret across the cap is still redacted
    whole) and whether the body was longer than the ``cap``."""

    status: int
    reason: str
    content_type: str
    content: bytes
    truncated: bool
    cap: int = 0


class _Deadline(Exception):
    """The exchange's total deadline passed (raised in the worker, or by the caller's wait)."""


class _Sent(Exception):
    """Wraps a failure that happened after the request was (possibly) sent."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(str(cause))
        self.cause = cause


class _Exchange:
    """One request and its streamed response under a total deadline, in a worker thread
    (module doc: Trust)."""

    def __init__(self, client: httpx.Client, request: HttpRequest, limit: float,
                 cap: int) -> None:
        self.client, self.request, self.limit, self.cap = client, request, limit, cap
        self.deadline = time.monotonic() + limit
        self.cancelled = threading.Event()
        self.sent = threading.Event()
        self.outcome: _Body | Exception | None = None
        self.done = threading.Event()

    def run(self) -> _Body:
        worker = threading.Thread(target=self._work, name="hyperplan-http", daemon=True)
        worker.start()
        if not self.done.wait(max(0.0, self.deadline - time.monotonic())):
            self.cancelled.set()
            raise _Sent(_Deadline()) if self.sent.is_set() else _Deadline()
        if isinstance(self.outcome, Exception):
            raise self.outcome
        assert self.outcome is not None
        return self.outcome

    def _work(self) -> None:
        try:
            self.outcome = self._exchange()
        except Exception as exc:
            self.outcome = exc
        finally:
            self.done.set()

    def _exchange(self) -> _Body:
        r = self.request
        extra: dict[str, Any] = {"json": r.json_body} if r.has_body else {}
        built = self.client.build_request(r.method, r.url, params=tuple(r.query),
                                          headers=r.headers, timeout=self.limit, **extra)
        self.sent.set()  # from here on the server may get it (a refused connect says not)
        try:
            response = self.client.send(built, stream=True)
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout,
                httpx.UnsupportedProtocol, httpx.InvalidURL):
            raise  # nothing reached the server
        except httpx.HTTPError as exc:
            raise _Sent(exc) from exc
        try:
            return self._read(response)
        except (httpx.HTTPError, httpx.StreamError, _Deadline) as exc:
            raise _Sent(exc) from exc
        finally:
            response.close()

    def _read(self, response: httpx.Response) -> _Body:
        chunks: list[bytes] = []
        size, truncated = 0, False
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.cap:
            truncated = True
        for chunk in [] if truncated else response.iter_bytes():
            if self.cancelled.is_set() or time.monotonic() > self.deadline:
                raise _Deadline()
            room = self.cap + REDACTION_MARGIN - size
            chunks.append(chunk[:room])
            size += min(len(chunk), room)
            if len(chunk) > room:
                break
        return _Body(response.status_code, response.reason_phrase,
                     response.headers.get("content-type", ""), b"".join(chunks),
                     truncated or size > self.cap, self.cap)


def _failure(tool: ToolSpec, arguments: Mapping[str, Any], exc: Exception, where: str,
             limit: float, repeatable: bool, secrets: set[str], clock: Clock) -> ToolResult:
    """The result of an exchange that raised: a timeout or a failure after sending is
    ``OUTCOME_UNKNOWN`` unless the call may be repeated (module doc: Trust)."""
    sent = isinstance(exc, _Sent)
    cause = exc.cause if isinstance(exc, _Sent) else exc
    timed_out = isinstance(cause, _Deadline | httpx.TimeoutException)
    if timed_out:
        detail = f"no complete answer within {limit:g} s"
    else:
        detail = _redact(f"failed: {type(cause).__name__}: {cause}", secrets)
    if sent and not repeatable:
        return fail_result(tool, arguments, ErrorKind.OUTCOME_UNKNOWN,
                           truncate(f"{where} {detail}; outcome unknown (the request was sent "
                                    "and may have taken effect): not re-sent"), clock)
    kind = ErrorKind.TIMEOUT if timed_out else ErrorKind.TRANSPORT
    return fail_result(tool, arguments, kind, truncate(f"{where} {detail}"), clock)


def build_request(tool: ToolSpec, arguments: Mapping[str, Any], base_url: str,
                  default_headers: Mapping[str, str] | None = None) -> HttpRequest:
    """The :class:`HttpRequest` for a call of ``tool`` (arguments already validated)."""
    meta = tool.metadata
    path = str(meta["path"])
    request = HttpRequest(str(meta["method"]).upper(), "", headers=dict(default_headers or {}))
    for value in request.headers.values():
        request.secrets.update(_secret_forms(value))
    params: Mapping[str, Any] = meta.get("params") or {}
    whole = _whole_body_input(tool, params)
    body: dict[str, Any] = {}
    cookies: list[str] = []
    for key, value in arguments.items():
        where, name = _location(params.get(key), key, path)
        if where == "body":
            if key == whole:
                request.json_body, request.has_body = value, True
            else:
                body[name] = value
            continue
        if value is None:
            continue
        if where == "path":
            path = path.replace("{" + name + "}", quote(_path_text(value), safe=""))
        elif where == "query":
            request.query.extend((name, text) for text in _query_texts(value))
            if _SECRET_NAME.search(name):
                request.secrets.update(t for t in _query_texts(value))
        elif where == "header":
            request.headers[name] = _text(value)
            request.secrets.update(_secret_forms(_text(value)))
        else:
            cookies.append(f"{name}={_text(value)}")
            request.secrets.update(_secret_forms(_text(value)))
    _check_path(tool, params, path)
    if cookies:
        old = request.headers.pop("Cookie", None) or request.headers.pop("cookie", None)
        request.headers["Cookie"] = "; ".join(([old] if old else []) + cookies)
    if body and not request.has_body:
        request.json_body, request.has_body = body, True
    request.url = base_url.rstrip("/") + "/" + path.lstrip("/")
    return request


def _location(entry: Any, key: str, path: str) -> tuple[str, str]:
    if isinstance(entry, Mapping) and isinstance(entry.get("in"), str):
        return str(entry["in"]), str(entry.get("name") or key)
    return ("path" if "{" + key + "}" in path else "query"), key


def _whole_body_input(tool: ToolSpec, params: Mapping[str, Any]) -> str | None:
    """The input that is the whole request body, if any (see the module docstring)."""
    body = [k for k, e in params.items() if isinstance(e, Mapping) and e.get("in") == "body"]
    if len(body) != 1 or params[body[0]].get("name") != "body":
        return None
    schema = tool.input_schema.get("properties", {}).get(body[0], {})
    kind = schema.get("type", "object")
    is_object = kind == "object" or (isinstance(kind, list) and "object" in kind)
    return None if is_object and schema.get("properties") else body[0]


def _check_path(tool: ToolSpec, params: Mapping[str, Any], path: str) -> None:
    for key, entry in params.items():
        is_path = isinstance(entry, Mapping) and entry.get("in") == "path"
        if is_path and "{" + str(entry.get("name") or key) + "}" in path:
            raise RequestError(f"missing path parameter {key!r}")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _path_text(value: Any) -> str:
    return ",".join(_text(v) for v in value) if isinstance(value, list | tuple) else _text(value)


def _query_texts(value: Any) -> list[str]:
    return [_text(v) for v in value] if isinstance(value, list | tuple) else [_text(value)]


def _result(tool: ToolSpec, arguments: Mapping[str, Any], body: _Body, where: str,
            secrets: set[str], clock: Clock) -> ToolResult:
    meta: dict[str, Any] = {"status": body.status, "content_type": body.content_type}
    if body.truncated:
        meta["truncated"] = True
    if 200 <= body.status < 300:
        return ok_result(tool, arguments, _body_value(body), clock, meta)
    status = f"HTTP {body.status} {body.reason}".strip()
    text = truncate(_redact(_text_of(body), secrets)) if body.content else ""
    message = f"{where} -> {status}" + (f": {text}" if text else "")
    result = fail_result(tool, arguments, ErrorKind.TOOL_ERROR, message, clock)
    return ToolResult(result.tool, result.arguments, False, None, result.error, result.error_kind,
                      result.seconds, meta)


def _text_of(body: _Body) -> str:
    return body.content.decode("utf-8", "replace")


def _body_value(body: _Body) -> Any:
    """The parsed JSON (when the content type says JSON or is missing and the body parses),
    else the text; a body cut at the cap is its text followed by a truncation marker."""
    if not body.content:
        return None
    if body.truncated:  # redacted, then cut: a secret across the cap is not split
        from hyperplan.secrets import redact_text

        text = redact_text(_text_of(body))
        return text[:body.cap] + f"... [truncated at {body.cap} bytes]"
    ctype = body.content_type.lower()
    if "json" in ctype or not ctype:
        try:
            return json.loads(body.content)
        except ValueError:
            pass
    return _text_of(body)


def _is_absolute(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.scheme and parts.netloc)


def _display(base: str, path: str) -> str:
    """``base`` without credentials or query, followed by the path template."""
    parts = urlsplit(base)
    netloc = parts.netloc.rpartition("@")[2]
    clean = urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    return clean.rstrip("/") + "/" + path.lstrip("/")


def _secret_forms(value: str) -> list[str]:
    """A header value and, for ``"Bearer abc"``-style values, the credential alone."""
    scheme, _, credential = value.strip().partition(" ")
    return [value, credential.strip()] if scheme and credential.strip() else [value]


def _redact(text: str, secrets: set[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= _MIN_SECRET_CHARS:
            text = text.replace(secret, "***")
    return text
