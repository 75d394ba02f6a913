"""Notes and calendar tasks, including sub-goals that use an earlier sub-goal's output (a new
note's id, a new event's id, a note's text sent by message)."""

from __future__ import annotations

from hyperplan.demo_world.taskkit import (
    DemoTask,
    attendees,
    chain,
    events_titled,
    note_ids,
    notes_titled,
    single,
    sub,
    texts_to,
)
from hyperplan.demo_world.world import DemoWorld

NOTES = {"app_name": "notes"}
CALENDAR = {"app_name": "calendar"}
WIFI = "Guest network: quinn-guest, password: sunflower42"


def _note_is(world: DemoWorld, title: str, text: str) -> bool:
    return [n["text"] for n in notes_titled(world, title)] == [text]


def _trip_note_shared(world: DemoWorld) -> bool:
    found = notes_titled(world, "Trip checklist")
    if len(found) != 1 or found[0]["text"] != "tickets, passport, charger":
        return False
    shares = world.rows("SELECT receiver_email FROM note_shares WHERE note_id = ?",
                        found[0]["note_id"])
    return [s["receiver_email"] for s in shares] == ["maria.garcia@example.com"]


def _event_is(world: DemoWorld, title: str, start: str, minutes: int) -> bool:
    found = events_titled(world, title)
    return [(e["start_time"], e["duration_minutes"]) for e in found] == [(start, minutes)]


def _book_club(world: DemoWorld) -> bool:
    found = events_titled(world, "Book club")
    return (_event_is(world, "Book club", "2024-06-12T19:00:00", 90)
            and attendees(world, found[0]["event_id"]) == {"jane.doe@example.com"})


def _bob_invited(world: DemoWorld) -> bool:
    return (attendees(world, 1) == {"maria.garcia@example.com", "bob.lee@example.com"}
            and attendees(world, 3) == {"priya.nair@example.com"})


def _dentist_cancelled(world: DemoWorld) -> bool:
    ids = [e["event_id"] for e in world.rows("SELECT event_id FROM events ORDER BY 1")]
    return ids == [1, 3, 4]


def _note_tasks() -> list[DemoTask]:
    """Notes (t21-t26, one ambiguous)."""
    return [
        DemoTask(
            "t21_create_note",
            "Create a note titled 'Packing list' that says 'passport, charger, socks'.",
            single("notes.create_note", {**NOTES, "title": "Packing list",
                                         "text": "passport, charger, socks"}),
            4, lambda w: _note_is(w, "Packing list", "passport, charger, socks")),
        DemoTask(
            "t22_update_note",
            "Replace the text of my 'Book ideas' note with 'A heist on a generation ship.'",
            single("notes.update_note", {**NOTES, "query": "Book ideas", "title": "Book ideas",
                                         "text": "A heist on a generation ship."}),
            5, lambda w: _note_is(w, "Book ideas", "A heist on a generation ship."),
            notes="the note search returns exactly one note"),
        DemoTask(
            "t23_delete_note",
            "Delete my note 'Old passwords'.",
            single("notes.delete_note", {**NOTES, "query": "Old passwords",
                                         "title": "Old passwords"}),
            5, lambda w: note_ids(w) == {1, 2, 3, 4, 6}),
        DemoTask(
            "t24_delete_old_groceries",
            "Delete my older 'Groceries' note, the one from May 1st.",
            single("notes.delete_note", {**NOTES, "query": "Groceries", "title": "Groceries"}),
            5, lambda w: note_ids(w) == {1, 2, 4, 5, 6},
            ambiguous=True,
            notes="two notes are titled 'Groceries' (note 3, May 1st; note 4, May 28th); only "
                  "the request gives the date"),
        DemoTask(
            "t25_create_and_share_note",
            "Create a note 'Trip checklist' saying 'tickets, passport, charger' and share it "
            "with Maria Garcia.",
            chain(
                sub("g1", "notes.create_note", {"title": "Trip checklist",
                                                "text": "tickets, passport, charger"}),
                sub("g2", "notes.share_note", {"query": "Maria Garcia"}, depends_on=("g1",)),
                **NOTES),
            6, _trip_note_shared,
            notes="g2 shares the note_id that g1 returned; contacts email -> receiver_email"),
        DemoTask(
            "t26_text_note_to_contact",
            "Text Bob Lee the wifi details from my 'Wifi password' note.",
            chain(
                sub("g1", "notes.show_note", {**NOTES, "query": "Wifi password",
                                              "title": "Wifi password"}),
                sub("g2", "messaging.send_message", {"app_name": "messaging",
                                                     "query": "Bob Lee"}, depends_on=("g1",))),
            9, lambda w: texts_to(w, "+1-555-0101")[-1:] == [WIFI],
            notes="g2 sends the note text read in g1 (notes text -> messaging text)"),
    ]


def _calendar_tasks() -> list[DemoTask]:
    """Calendar (t27-t30)."""
    return [
        DemoTask(
            "t27_create_event",
            "Put 'Dentist appointment' in my calendar on 2024-06-20 at 09:30 for 45 minutes.",
            single("calendar.create_event", {**CALENDAR, "title": "Dentist appointment",
                                             "start_time": "2024-06-20T09:30",
                                             "duration_minutes": 45}),
            4, lambda w: _event_is(w, "Dentist appointment", "2024-06-20T09:30:00", 45)),
        DemoTask(
            "t28_invite_to_event",
            "Invite Bob Lee to the 'Team lunch' on 2024-06-05.",
            single("calendar.add_event_attendee", {**CALENDAR, "date": "2024-06-05",
                                                   "title": "Team lunch", "query": "Bob Lee"}),
            6, _bob_invited,
            notes="two events that day; title picks one (another 'Team lunch' is on 06-19)"),
        DemoTask(
            "t29_create_event_and_invite",
            "Schedule 'Book club' on 2024-06-12 at 19:00 for 90 minutes and invite Jane Doe.",
            chain(
                sub("g1", "calendar.create_event", {"title": "Book club",
                                                    "start_time": "2024-06-12T19:00",
                                                    "duration_minutes": 90}),
                sub("g2", "calendar.add_event_attendee", {"query": "Jane Doe"},
                    depends_on=("g1",)),
                **CALENDAR),
            6, _book_club, notes="g2 invites to the event_id that g1 returned"),
        DemoTask(
            "t30_delete_event",
            "Cancel my dentist appointment on 2024-06-07.",
            single("calendar.delete_event", {**CALENDAR, "date": "2024-06-07",
                                             "title": "Dentist"}),
            5, _dentist_cancelled),
    ]


def office_tasks() -> list[DemoTask]:
    """Notes and calendar tasks (10, one ambiguous)."""
    return [*_note_tasks(), *_calendar_tasks()]
