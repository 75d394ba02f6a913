"""JSON-lines files written one record at a time (run traces, stores of LLM answers).

:func:`read_records` reads one back: every line must be a JSON object with a given key, and an
error names the file and line -- except an unparsable *last* line, the torn write of a run that
was killed mid-line, which is dropped (the caller is told, so a store can cut it off before
appending).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hyperplan.errors import HyperplanError

__all__ = ["read_records"]


def read_records(path: str | Path, *, what: str, key: str) -> tuple[list[dict[str, Any]], bool]:
    """The objects of ``path`` in file order and whether a torn last line was dropped.
    Raises :class:`HyperplanError` ``"<path>:<line>: not a <what>: ..."`` for a line that is
    not JSON (but the last) or not an object with ``key``, and for an unreadable file."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise HyperplanError(f"{p}: cannot read {what}s: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise HyperplanError(f"{p}: cannot read {what}s: not UTF-8 text") from None
    records: list[dict[str, Any]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines):
                return records, True
            raise HyperplanError(f"{p}:{number}: not a {what}: {exc.msg}") from None
        if not isinstance(record, dict) or key not in record:
            raise HyperplanError(f"{p}:{number}: not a {what} (no {key!r})")
        records.append(record)
    return records, False
