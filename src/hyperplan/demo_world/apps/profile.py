"""The profile app (a supervisor-like app): who the user is and the passwords of their apps.

It needs no login. Its outputs hold the user's own identity only (no email or phone number),
so they never look like a contact's email or phone number to link inference.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypedDict

from pydantic import Field

from hyperplan.demo_world.apps.base import App
from hyperplan.demo_world.store import NotFoundError

AppName = Literal["music", "notes", "payments", "messaging", "calendar"]


class Profile(TypedDict):
    """The user's own profile."""

    first_name: Annotated[str, Field(description="The user's first name")]
    last_name: Annotated[str, Field(description="The user's last name")]
    username: Annotated[
        str, Field(description="The user's username, the same for every app login")
    ]
    birthday: Annotated[str, Field(description="The user's birthday, YYYY-MM-DD")]
    home_city: Annotated[str, Field(description="The city the user lives in")]


class AccountPassword(TypedDict):
    """The password of one app account."""

    app_name: Annotated[str, Field(description="The app this password belongs to")]
    password: Annotated[str, Field(description="The account password for logging in to the app")]


class ProfileApp(App):
    """The user's profile and saved app passwords."""

    name = "profile"
    tool_names = ("show_profile", "show_account_password")

    def show_profile(self) -> Profile:
        """Show the user's own profile, including the username used to log in to every app.

        Returns:
            The user's first and last name, username, birthday and home city.
        """
        row = self._store.one(
            "SELECT first_name, last_name, username, birthday, home_city FROM profile")
        if row is None:
            raise NotFoundError("profile: the profile is missing")
        return {"first_name": row["first_name"], "last_name": row["last_name"],
                "username": row["username"], "birthday": row["birthday"],
                "home_city": row["home_city"]}

    def show_account_password(self, app_name: AppName) -> AccountPassword:
        """Show the user's saved password for one app account.

        Args:
            app_name: The app whose login password to show: music, notes, payments,
                messaging or calendar.

        Returns:
            The app name and the password to log in to that app.
        """
        row = self._store.one(
            "SELECT app_name, password FROM account_passwords WHERE app_name = ?", (app_name,))
        if row is None:
            raise NotFoundError(f"profile: no saved password for app {app_name!r}")
        return {"app_name": row["app_name"], "password": row["password"]}
