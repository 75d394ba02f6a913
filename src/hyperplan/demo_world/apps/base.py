"""What every demo-world app shares: the store, token checks, login and small validators."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Annotated, Any, ClassVar, TypedDict

from pydantic import Field

from hyperplan.demo_world.store import (
    AuthenticationError,
    InvalidArgumentError,
    NotFoundError,
    Store,
)


class LoginResult(TypedDict):
    """An access token for one app."""

    access_token: Annotated[
        str, Field(description="Access token to pass to the other tools of the same app")
    ]
    token_type: Annotated[str, Field(description="Always 'Bearer'")]


_LOGIN_DOC = """Log in to the {app} app and get an access token.

    Args:
        username: The user's username, from profile.show_profile.
        password: The user's {app} account password, from profile.show_account_password.

    Returns:
        An access token for the {app} app.
    """


class App:
    """Base of an app: ``name`` is its namespace, ``tool_names`` its tools in catalog order
    (lookups before writes, so that ties between them favour the lookup)."""

    name: ClassVar[str] = ""
    tool_names: ClassVar[tuple[str, ...]] = ()

    def __init__(self, store: Store) -> None:
        self._store = store

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """An app with a ``login`` tool gets its own copy of :meth:`_login_tool`, named
        ``<App>.login`` and described with the app's name (the tool's description)."""
        super().__init_subclass__(**kwargs)
        if "login" in cls.tool_names and "login" not in cls.__dict__:
            template = App._login_tool
            login = types.FunctionType(template.__code__, template.__globals__, "login",
                                       template.__defaults__, template.__closure__)
            login.__annotations__ = dict(template.__annotations__)
            login.__qualname__, login.__module__ = f"{cls.__qualname__}.login", cls.__module__
            login.__doc__ = _LOGIN_DOC.format(app=cls.name)
            cls.login = login  # type: ignore[attr-defined]

    def _login_tool(self, username: str, password: str) -> LoginResult:
        return self._login(username, password)

    def tools(self) -> list[Callable[..., Any]]:
        """The app's tools as bound methods, in catalog order."""
        return [getattr(self, name) for name in self.tool_names]

    @classmethod
    def tool_functions(cls) -> list[Callable[..., Any]]:
        """The app's tools as plain functions (for building a world-independent catalog)."""
        return [getattr(cls, name) for name in cls.tool_names]

    # ------------------------------------------------------------------ helpers
    def _login(self, username: str, password: str) -> LoginResult:
        profile = self._store.one("SELECT username FROM profile")
        stored = self._store.one(
            "SELECT password FROM account_passwords WHERE app_name = ?", (self.name,))
        if profile is None or username != profile["username"]:
            raise AuthenticationError(f"{self.name}.login: unknown username {username!r}")
        if stored is None or password != stored["password"]:
            raise AuthenticationError(f"{self.name}.login: wrong password for {username!r}")
        return {"access_token": self._store.issue_token(self.name), "token_type": "Bearer"}

    def _auth(self, access_token: str) -> None:
        self._store.check_token(access_token, self.name)

    def _row(self, table: str, key: str, value: Any, what: str) -> dict[str, Any]:
        """The row of ``table`` whose ``key`` is ``value``, else :class:`NotFoundError`."""
        found = self._store.one(f"SELECT * FROM {table} WHERE {key} = ?", (value,))
        if found is None:
            raise NotFoundError(f"{self.name}: no {what} with {key} {value!r}")
        return found


def require_text(value: str, what: str) -> str:
    """``value`` stripped; :class:`InvalidArgumentError` when it is empty."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgumentError(f"{what} must be a non-empty string")
    return value.strip()


def require_positive(value: float, what: str) -> float:
    """``value`` as a float rounded to cents; :class:`InvalidArgumentError` unless > 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise InvalidArgumentError(f"{what} must be a positive number, got {value!r}")
    return round(float(value), 2)


def like(query: str) -> str:
    """A SQL LIKE pattern matching ``query`` anywhere, case-insensitively."""
    text = require_text(query, "query").replace("\\", "\\\\")
    return "%" + text.replace("%", "\\%").replace("_", "\\_") + "%"
