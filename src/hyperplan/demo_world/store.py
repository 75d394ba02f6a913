"""SQLite state of the demo world: connection, reset to the seed, logical clock, access tokens.

Everything is deterministic: the clock only moves when :meth:`Store.advance_clock` is called,
and access tokens are derived from a counter kept in the database, so replaying the same calls
after :meth:`Store.reset` gives the same tokens, ids and timestamps.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from hyperplan.demo_world.seed import SCHEMA, seed_rows
from hyperplan.errors import HyperplanError

START_TIME = datetime(2024, 6, 1, 9, 0, 0)
"""Logical time of the seeded world (clock = 0 minutes)."""

TOKEN_TTL_MINUTES = 60
"""An access token expires this many logical minutes after it was issued."""


class DemoWorldError(HyperplanError):
    """A demo-world tool refused a call; the message says why."""


class AuthenticationError(DemoWorldError):
    """Wrong password, or a missing, unknown, expired or other-app access token."""


class NotFoundError(DemoWorldError):
    """An id or name that does not exist in the world."""


class InvalidArgumentError(DemoWorldError):
    """A value that is well-typed but not acceptable (negative amount, empty title...)."""


class Store:
    """One SQLite database holding the whole world state."""

    def __init__(self, db_path: str = ":memory:") -> None:
        self.db_path = db_path
        self._lock = threading.RLock()
        self.conn = sqlite3.connect(db_path, check_same_thread=False, isolation_level=None)
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("PRAGMA foreign_keys = ON")

    # ------------------------------------------------------------------ lifecycle
    def reset(self) -> None:
        """Drop every table and restore the seeded initial data."""
        with self._lock:
            tables = [r[0] for r in self.conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")]
            self.conn.execute("PRAGMA foreign_keys = OFF")
            for table in tables:
                self.conn.execute(f'DROP TABLE IF EXISTS "{table}"')
            self.conn.execute("PRAGMA foreign_keys = ON")
            self.conn.executescript(SCHEMA)
            self.conn.execute("BEGIN")
            for table, rows in seed_rows().items():
                for row in rows:
                    self._insert(table, row)
            self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()

    # ------------------------------------------------------------------ queries
    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """All rows of a query as plain dicts."""
        with self._lock:
            return [dict(r) for r in self.conn.execute(sql, tuple(params))]

    def one(self, sql: str, params: Sequence[Any] = ()) -> dict[str, Any] | None:
        """The first row of a query, or None."""
        found = self.rows(sql, params)
        return found[0] if found else None

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a write statement; returns the last inserted row id."""
        with self._lock:
            cursor = self.conn.execute(sql, tuple(params))
            return int(cursor.lastrowid or 0)

    def _insert(self, table: str, row: dict[str, Any]) -> int:
        cols = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        return self.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks})", list(row.values()))

    def insert(self, table: str, row: dict[str, Any]) -> int:
        """Insert one row; returns its integer primary key."""
        return self._insert(table, row)

    # ------------------------------------------------------------------ clock
    def _meta(self, key: str) -> int:
        found = self.one("SELECT value FROM meta WHERE key = ?", (key,))
        return int(found["value"]) if found else 0

    def _set_meta(self, key: str, value: int) -> None:
        self.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))

    def minutes(self) -> int:
        """The logical clock in minutes since :data:`START_TIME`."""
        return self._meta("clock_minutes")

    def now(self) -> str:
        """The logical time as ``YYYY-MM-DDTHH:MM:SS``."""
        return (START_TIME + timedelta(minutes=self.minutes())).isoformat()

    def advance_clock(self, minutes: int) -> None:
        """Move the logical clock forward (tokens expire after :data:`TOKEN_TTL_MINUTES`)."""
        if minutes < 0:
            raise InvalidArgumentError("the clock cannot go backwards")
        with self._lock:
            self._set_meta("clock_minutes", self.minutes() + minutes)

    # ------------------------------------------------------------------ tokens
    def issue_token(self, app: str) -> str:
        """A fresh access token for ``app``, derived from a counter (deterministic)."""
        with self._lock:
            serial = self._meta("token_serial") + 1
            self._set_meta("token_serial", serial)
            digest = hashlib.sha256(f"{app}:{serial}".encode()).hexdigest()[:20]
            token = f"{app}-{digest}"
            self.insert("access_tokens", {"token": token, "app_name": app,
                                          "issued_minute": self.minutes()})
            return token

    def check_token(self, access_token: str, app: str) -> None:
        """Raise :class:`AuthenticationError` unless ``access_token`` is a live ``app`` token."""
        if not isinstance(access_token, str) or not access_token:
            raise AuthenticationError(f"{app}: an access token is required; call {app}.login")
        found = self.one("SELECT app_name, issued_minute FROM access_tokens WHERE token = ?",
                         (access_token,))
        if found is None:
            raise AuthenticationError(
                f"{app}: invalid access token {access_token!r}; call {app}.login first")
        if found["app_name"] != app:
            raise AuthenticationError(
                f"{app}: the access token was issued by {found['app_name']}.login, "
                f"not {app}.login")
        if self.minutes() - int(found["issued_minute"]) >= TOKEN_TTL_MINUTES:
            raise AuthenticationError(
                f"{app}: the access token has expired; call {app}.login again")

    # ------------------------------------------------------------------ dump
    def snapshot(self) -> dict[str, list[dict[str, Any]]]:
        """Every table as a list of rows ordered by primary key (JSON-able)."""
        names = [r["name"] for r in self.rows(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {name: self.rows(f'SELECT * FROM "{name}" ORDER BY 1') for name in names}
