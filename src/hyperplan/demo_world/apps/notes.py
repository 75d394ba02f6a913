"""The notes app: titled text notes that can be searched, edited and shared by email."""

from __future__ import annotations

from typing import Annotated, TypedDict, cast

from pydantic import Field

from hyperplan.demo_world.apps.base import App, like, require_text
from hyperplan.demo_world.store import InvalidArgumentError


class NoteSummary(TypedDict):
    """A note in a search result (without its text)."""

    note_id: Annotated[int, Field(description="Id of the note")]
    title: Annotated[str, Field(description="Title of the note")]
    created_at: Annotated[str, Field(description="When the note was created")]
    updated_at: Annotated[str, Field(description="When the note was last changed")]


class NoteDetails(NoteSummary):
    """A note with its text."""

    text: Annotated[str, Field(description="The full text written in the note")]


class NoteChange(TypedDict):
    """The note a write touched."""

    note_id: Annotated[int, Field(description="Id of the note")]
    updated_at: Annotated[str, Field(description="Time of the change")]


class NoteShare(TypedDict):
    """A note shared with someone."""

    share_id: Annotated[int, Field(description="Id of the share")]
    note_id: Annotated[int, Field(description="Id of the shared note")]


_SUMMARY = "note_id, title, created_at, updated_at"


class NotesApp(App):
    """Notes: search, read, write and share notes."""

    name = "notes"
    tool_names = ("login", "search_notes", "show_note", "create_note", "update_note",
                  "delete_note", "share_note")

    def search_notes(self, access_token: str, query: str) -> list[NoteSummary]:
        """Search the user's notes by title.

        Args:
            access_token: Access token from notes.login.
            query: Text to look for in note titles.

        Returns:
            The matching notes with their ids, titles and timestamps (not their text).
        """
        self._auth(access_token)
        return cast(list[NoteSummary], self._store.rows(
            f"SELECT {_SUMMARY} FROM notes WHERE title LIKE ? ESCAPE '\\' ORDER BY note_id",
            (like(query),)))

    def show_note(self, access_token: str, note_id: int) -> NoteDetails:
        """Show one note with its full text.

        Args:
            access_token: Access token from notes.login.
            note_id: Which note to show, by its note id from notes.search_notes.

        Returns:
            The note's title, text and timestamps.
        """
        self._auth(access_token)
        row = self._row("notes", "note_id", note_id, "note")
        return cast(NoteDetails, {k: row[k] for k in (*_SUMMARY.split(", "), "text")})

    def create_note(self, access_token: str, title: str, text: str) -> NoteChange:
        """Create a new note.

        Args:
            access_token: Access token from notes.login.
            title: Title of the new note.
            text: Text to write in the new note.

        Returns:
            The id of the new note and its creation time.
        """
        self._auth(access_token)
        now = self._store.now()
        new_id = self._store.insert("notes", {
            "title": require_text(title, "title"), "text": text, "created_at": now,
            "updated_at": now})
        return {"note_id": new_id, "updated_at": now}

    def update_note(self, access_token: str, note_id: int, text: str) -> NoteChange:
        """Replace the text of an existing note (the title stays).

        Args:
            access_token: Access token from notes.login.
            note_id: Which note to change, by its note id from notes.search_notes.
            text: The new text of the note.

        Returns:
            The id of the changed note and the time of the change.
        """
        self._auth(access_token)
        self._row("notes", "note_id", note_id, "note")
        now = self._store.now()
        self._store.execute("UPDATE notes SET text = ?, updated_at = ? WHERE note_id = ?",
                            (text, now, note_id))
        return {"note_id": note_id, "updated_at": now}

    def delete_note(self, access_token: str, note_id: int) -> NoteChange:
        """Delete a note.

        Args:
            access_token: Access token from notes.login.
            note_id: Which note to delete, by its note id from notes.search_notes.

        Returns:
            The id of the deleted note and the time of deletion.
        """
        self._auth(access_token)
        self._row("notes", "note_id", note_id, "note")
        self._store.execute("DELETE FROM note_shares WHERE note_id = ?", (note_id,))
        self._store.execute("DELETE FROM notes WHERE note_id = ?", (note_id,))
        return {"note_id": note_id, "updated_at": self._store.now()}

    def share_note(self, access_token: str, note_id: int, receiver_email: str) -> NoteShare:
        """Share a note with another person by email.

        Args:
            access_token: Access token from notes.login.
            note_id: Which note to share, by its note id.
            receiver_email: Email address of the contact who receives the note.

        Returns:
            The id of the share and of the shared note.
        """
        self._auth(access_token)
        self._row("notes", "note_id", note_id, "note")
        email = require_text(receiver_email, "receiver_email")
        if "@" not in email:
            raise InvalidArgumentError(f"notes: {email!r} is not an email address")
        share_id = self._store.insert("note_shares", {
            "note_id": note_id, "receiver_email": email, "shared_at": self._store.now()})
        return {"share_id": share_id, "note_id": note_id}
