"""The task vocabulary of the demo world: :class:`DemoTask`, goal builders and the state
queries the checkers are written with.

A task's ``goal`` is what an LLM-free agent receives instead of the request text: sub-goals
with terminal tools and the values the user supplies, by bare parameter name. Values never
include ids or tokens; a value that also names a field of a search result (``title``,
``name``, ``relationship``, ``playlist_name``, ``card_name``, ``note``) lets a deterministic
binder pick the matching element. ``min_calls`` counts every call of the shortest solution
from the reset state (credential lookups, logins, searches and writes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hyperplan.demo_world.world import DemoWorld
from hyperplan.execute.goal import StructuredGoal, SubGoal


@dataclass(frozen=True)
class DemoTask:
    """A natural-language request, its structured goal, the length of the shortest solution
    and a state-based success check. ``ambiguous`` tasks have known values that match several
    candidates (only the request text tells them apart): an LLM-free agent should stop and
    list the candidates."""

    id: str
    request: str
    goal: StructuredGoal
    min_calls: int
    check: Callable[[DemoWorld], bool]
    ambiguous: bool = False
    notes: str = ""
    scenario: str = ""  # tasks instantiating one intent with different entities (for SGC)


def sub(sid: str, terminal: str, values: dict[str, Any] | None = None, *,
        depends_on: tuple[str, ...] = (), description: str = "") -> SubGoal:
    """One sub-goal with a single terminal tool."""
    return SubGoal(id=sid, terminals=(terminal,), values=dict(values or {}),
                   depends_on=depends_on, description=description)


def single(terminal: str, values: dict[str, Any], description: str = "") -> StructuredGoal:
    """A goal of one sub-goal ``g1``."""
    return StructuredGoal((sub("g1", terminal, values, description=description),))


def chain(*subgoals: SubGoal, **values: Any) -> StructuredGoal:
    """A goal of several sub-goals with shared ``values``."""
    return StructuredGoal(tuple(subgoals), dict(values))


# ---------------------------------------------------------------------- state queries
def liked_songs(world: DemoWorld) -> set[int]:
    return {r["song_id"] for r in world.rows("SELECT song_id FROM liked_songs")}


def playlist_songs(world: DemoWorld, playlist_name: str) -> list[list[int]]:
    """Song ids (in order) of every playlist with this name."""
    ids = [r["playlist_id"] for r in world.rows(
        "SELECT playlist_id FROM playlists WHERE playlist_name = ? ORDER BY playlist_id",
        playlist_name)]
    return [[r["song_id"] for r in world.rows(
        "SELECT song_id FROM playlist_tracks WHERE playlist_id = ? ORDER BY position", pid)]
        for pid in ids]


def sent_money(world: DemoWorld, email: str) -> list[tuple[float, str]]:
    """(amount, note) of every payment sent to ``email``."""
    return [(r["amount"], r["note"]) for r in world.rows(
        "SELECT amount, note FROM transactions WHERE kind = 'sent' AND counterparty_email = ? "
        "ORDER BY transaction_id", email)]


def texts_to(world: DemoWorld, phone_number: str) -> list[str]:
    """Texts of the messages the user sent to ``phone_number``."""
    return [r["text"] for r in world.rows(
        "SELECT text FROM messages WHERE direction = 'sent' AND phone_number = ? "
        "ORDER BY message_id", phone_number)]


def notes_titled(world: DemoWorld, title: str) -> list[dict[str, Any]]:
    return world.rows("SELECT * FROM notes WHERE title = ? ORDER BY note_id", title)


def note_ids(world: DemoWorld) -> set[int]:
    return {r["note_id"] for r in world.rows("SELECT note_id FROM notes")}


def events_titled(world: DemoWorld, title: str) -> list[dict[str, Any]]:
    return world.rows("SELECT * FROM events WHERE title = ? ORDER BY event_id", title)


def attendees(world: DemoWorld, event_id: int) -> set[str]:
    return {r["attendee_email"] for r in world.rows(
        "SELECT attendee_email FROM event_attendees WHERE event_id = ?", event_id)}


def contact(world: DemoWorld, name: str) -> list[dict[str, Any]]:
    return world.rows("SELECT * FROM contacts WHERE name = ? ORDER BY contact_id", name)


def balance(world: DemoWorld) -> float:
    return float(world.rows("SELECT balance FROM wallet")[0]["balance"])
