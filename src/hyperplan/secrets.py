"""Secrets redacted **by value** wherever output goes (fault item 2 of
docs/benchmarks.md, "Runtime trust under faults").

Redacting by key (``password``, ``token`` ...) misses a secret that comes back under another
name: a server echoing the ``Authorization`` header in its body, a tool returning the password
it was given, an exception quoting a URL with a key in it. So every value that *came from* a
secret is registered here once, and every writer of output (the CLI's stdout and stderr, the
``--json`` result, run traces, the evaluation store and its reports, log records, error
messages) passes its text through :func:`redact_text` / :func:`redact_value`.

What is registered:

* the values of ``--header`` options read from the environment (``$VAR``), with the
  credential part of ``Bearer xyz`` style values;
* every HTTP header and cookie the OpenAPI runtime sends, and query values under secret-looking
  names;
* goal values the user marks secret (``"secrets": ["password"]`` in a ``--goal``);
* the LLM API key, and at first use the values of environment variables whose names look like
  credentials (``*_API_KEY``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*PASSWD*``), so a
  worker process that never saw the command line still redacts them.

Values shorter than :data:`MIN_SECRET_CHARS` characters are not registered: redacting ``"1"``
everywhere would destroy output and protect nothing. Each registered value is also matched in
its JSON-escaped form (a secret holding ``"`` or ``\\`` appears escaped in JSON text).
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "***"
MIN_SECRET_CHARS = 6
_ENV_SECRET_NAME = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD)", re.IGNORECASE)
_ENV_IGNORED_VALUES = frozenset({"true", "false", "enabled", "disabled", "none", "null"})


class SecretRegistry:
    """A thread-safe set of secret values and the redaction of text and JSON-like data."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._env_loaded = False

    def add(self, value: Any) -> None:
        """Register ``value`` (a string; other types are ignored) and, for a
        ``"Scheme credential"`` value such as ``Bearer abc``, the credential alone."""
        if not isinstance(value, str):
            return
        forms = [value.strip()]
        scheme, _, credential = value.strip().partition(" ")
        if scheme and credential.strip():
            forms.append(credential.strip())
        forms += [json.dumps(f)[1:-1] for f in list(forms)]
        fresh = {f for f in forms if len(f) >= MIN_SECRET_CHARS}
        with self._lock:
            if fresh - self._values:
                self._values |= fresh
                self._pattern = None

    def add_all(self, values: Iterable[Any]) -> None:
        for value in values:
            self.add(value)

    def load_environment(self, environ: Mapping[str, str] | None = None) -> None:
        """Register the values of credential-like environment variables (module doc); done
        once per registry unless ``environ`` is given."""
        if environ is None:
            if self._env_loaded:
                return
            self._env_loaded = True
            environ = os.environ
        for name, value in environ.items():
            if _ENV_SECRET_NAME.search(name) and value.strip().lower() not in _ENV_IGNORED_VALUES:
                self.add(value)

    def __contains__(self, value: object) -> bool:
        with self._lock:
            return value in self._values

    def __len__(self) -> int:
        with self._lock:
            return len(self._values)

    def clear(self) -> None:
        """Forget every value (tests)."""
        with self._lock:
            self._values.clear()
            self._pattern = None
            self._env_loaded = False

    def redact_text(self, text: str) -> str:
        """``text`` with every registered value replaced by ``***``."""
        self.load_environment()
        pattern = self._compiled()
        return text if pattern is None or not text else pattern.sub(REDACTED, text)

    def redact_value(self, value: Any) -> Any:
        """A copy of JSON-like ``value`` with every string (keys included) redacted."""
        self.load_environment()
        if self._compiled() is None:
            return value
        return self._walk(value)

    def _walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.redact_text(value)
        if isinstance(value, Mapping):
            return {self._walk(k) if isinstance(k, str) else k: self._walk(v)
                    for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self._walk(v) for v in value]
        return value

    def _compiled(self) -> re.Pattern[str] | None:
        with self._lock:
            if self._pattern is None and self._values:
                ordered = sorted(self._values, key=len, reverse=True)  # longest match first
                self._pattern = re.compile("|".join(re.escape(v) for v in ordered))
            return self._pattern


SECRETS = SecretRegistry()
"""The process-wide registry every output path consults."""


def register_secret(value: Any) -> None:
    SECRETS.add(value)


def redact_text(text: str) -> str:
    return SECRETS.redact_text(text)


def redact_value(value: Any) -> Any:
    return SECRETS.redact_value(value)


def redact_cut(text: str, limit: int, *, tail: bool = False) -> str:
    """``text`` redacted, *then* cut to ``limit`` characters (its end when ``tail``): cutting
    first could split a secret so that the part left no longer matches and escapes whole but
    for a character or two."""
    redacted = SECRETS.redact_text(text)
    if len(redacted) <= limit:
        return redacted
    return "..." + redacted[-limit:] if tail else redacted[:limit] + "..."


def install_log_redaction() -> None:
    """Make every log record created from now on carry its message redacted (a record
    factory, so records of every logger and every handler are covered). Idempotent."""
    import logging

    previous = logging.getLogRecordFactory()
    if getattr(previous, "_hyperplan_redacting", False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a bad format string: leave it to the handler
            return record
        redacted = SECRETS.redact_text(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info:  # the traceback too: an exception's text may quote a secret
            import traceback

            text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
            record.exc_text, record.exc_info = SECRETS.redact_text(text), None
        return record

    factory._hyperplan_redacting = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)
    _install_excepthook_redaction()


def _install_excepthook_redaction() -> None:
    """Uncaught exceptions (of the main thread and of other threads) print their traceback
    redacted: an exception's text may quote a secret (a pydantic error quotes the input)."""
    import sys
    import threading
    import traceback

    def write(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        text = "".join(traceback.format_exception(kind, value, tb))
        sys.stderr.write(SECRETS.redact_text(text))

    def thread_hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is SystemExit or args.exc_value is None:
            return
        name = args.thread.name if args.thread is not None else "?"
        sys.stderr.write(f"Exception in thread {name}:\n")
        write(args.exc_type, args.exc_value, args.exc_traceback)

    sys.excepthook = write
    threading.excepthook = thread_hook
