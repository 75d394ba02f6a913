"""The calendar app: events with a start time, a length and invited attendees (by email).

An event lists its attendees by name only; the contact lookup is the one producer of the
``attendee_email`` an invitation needs.
"""

from __future__ import annotations

from datetime import date as Date
from datetime import datetime
from typing import Annotated, TypedDict, cast

from pydantic import Field

from hyperplan.demo_world.apps.base import App, require_text
from hyperplan.demo_world.store import InvalidArgumentError


class EventSummary(TypedDict):
    """An event of a day."""

    event_id: Annotated[int, Field(description="Id of the calendar event")]
    title: Annotated[str, Field(description="Title of the event")]
    start_time: Annotated[str, Field(description="Start of the event, YYYY-MM-DDTHH:MM:SS")]
    duration_minutes: Annotated[int, Field(description="Length of the event in minutes")]
    location: Annotated[str, Field(description="Where the event takes place")]


class EventDetails(EventSummary):
    """An event with its attendees."""

    attendee_names: Annotated[
        list[str], Field(description="Names of the people invited to the event")
    ]


class EventChange(TypedDict):
    """The event a write touched."""

    event_id: Annotated[int, Field(description="Id of the calendar event")]
    attendee_count: Annotated[int, Field(description="Number of people invited")]


class CalendarApp(App):
    """Calendar: list, show, create and delete events and invite people."""

    name = "calendar"
    tool_names = ("login", "show_events", "show_event", "create_event", "add_event_attendee",
                  "delete_event")

    def show_events(self, access_token: str, date: str) -> list[EventSummary]:
        """Show the user's calendar events on one day.

        Args:
            access_token: Access token from calendar.login.
            date: The day to show, YYYY-MM-DD.

        Returns:
            The events of that day with their ids, titles, start times, lengths and places.
        """
        self._auth(access_token)
        try:
            day = Date.fromisoformat(date).isoformat()
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"calendar: date {date!r} is not YYYY-MM-DD") from None
        return cast(list[EventSummary], self._store.rows(
            "SELECT event_id, title, start_time, duration_minutes, location FROM events "
            "WHERE substr(start_time, 1, 10) = ? ORDER BY start_time, event_id", (day,)))

    def show_event(self, access_token: str, event_id: int) -> EventDetails:
        """Show one event with the names of its attendees.

        Args:
            access_token: Access token from calendar.login.
            event_id: Id of the event to show, from calendar.show_events.

        Returns:
            The event's title, start time, length, place and attendee names.
        """
        self._auth(access_token)
        row = self._row("events", "event_id", event_id, "event")
        names = [r["name"] for r in self._store.rows(
            "SELECT COALESCE(c.name, a.attendee_email) AS name FROM event_attendees a "
            "LEFT JOIN contacts c ON c.email = a.attendee_email WHERE a.event_id = ? "
            "ORDER BY a.attendee_email", (event_id,))]
        return cast(EventDetails, {**row, "attendee_names": names})

    def create_event(self, access_token: str, title: str, start_time: str,
                     duration_minutes: int, location: str = "") -> EventChange:
        """Create a calendar event.

        Args:
            access_token: Access token from calendar.login.
            title: Title of the new event.
            start_time: Start of the new event, YYYY-MM-DDTHH:MM (seconds optional).
            duration_minutes: Length of the new event in minutes.
            location: Where the new event takes place (optional).

        Returns:
            The id of the new event and its number of attendees (0).
        """
        self._auth(access_token)
        try:
            start = datetime.fromisoformat(start_time).isoformat(timespec="seconds")
        except (TypeError, ValueError):
            raise InvalidArgumentError(
                f"calendar: start_time {start_time!r} is not YYYY-MM-DDTHH:MM") from None
        if isinstance(duration_minutes, bool) or duration_minutes <= 0:
            raise InvalidArgumentError("calendar: duration_minutes must be positive")
        new_id = self._store.insert("events", {
            "title": require_text(title, "title"), "start_time": start,
            "duration_minutes": duration_minutes, "location": location.strip()})
        return {"event_id": new_id, "attendee_count": 0}

    def add_event_attendee(self, access_token: str, event_id: int,
                           attendee_email: str) -> EventChange:
        """Invite a person to an event by email.

        Args:
            access_token: Access token from calendar.login.
            event_id: Id of the event.
            attendee_email: Email address of the contact to invite.

        Returns:
            The event id and its new number of attendees.
        """
        self._auth(access_token)
        self._row("events", "event_id", event_id, "event")
        email = require_text(attendee_email, "attendee_email")
        if "@" not in email:
            raise InvalidArgumentError(f"calendar: {email!r} is not an email address")
        if self._store.one("SELECT 1 FROM event_attendees WHERE event_id = ? "
                           "AND attendee_email = ?", (event_id, email)):
            raise InvalidArgumentError(f"calendar: {email} is already invited to {event_id}")
        self._store.insert("event_attendees", {"event_id": event_id, "attendee_email": email})
        return {"event_id": event_id, "attendee_count": self._attendees(event_id)}

    def delete_event(self, access_token: str, event_id: int) -> EventChange:
        """Delete (cancel) a calendar event.

        Args:
            access_token: Access token from calendar.login.
            event_id: Id of the event to delete, from calendar.show_events.

        Returns:
            The id of the deleted event and its number of attendees (0).
        """
        self._auth(access_token)
        self._row("events", "event_id", event_id, "event")
        self._store.execute("DELETE FROM event_attendees WHERE event_id = ?", (event_id,))
        self._store.execute("DELETE FROM events WHERE event_id = ?", (event_id,))
        return {"event_id": event_id, "attendee_count": 0}

    def _attendees(self, event_id: int) -> int:
        row = self._store.one("SELECT COUNT(*) AS n FROM event_attendees WHERE event_id = ?",
                              (event_id,))
        return int(row["n"]) if row else 0
