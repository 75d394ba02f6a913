"""The messaging app: text messages to phone numbers.

Message listings name the other person (``contact_name``) but do not repeat phone numbers, so
the contact lookup is the one producer of the ``phone_number`` that ``send_message`` needs.
"""

from __future__ import annotations

from typing import Annotated, TypedDict, cast

from pydantic import Field

from hyperplan.demo_world.apps.base import App, like, require_text

# fields that several results share, described once
_MessageId = Annotated[int, Field(description="Id of the text message")]
_Direction = Annotated[str, Field(description="sent (by the user) or received")]
_MessageText = Annotated[str, Field(description="Text of the message")]
_SentAt = Annotated[str, Field(description="When the message was sent")]


class MessageSummary(TypedDict):
    """A message found by a search."""

    message_id: _MessageId
    contact_name: Annotated[str, Field(description="Name of the other person in the chat")]
    direction: _Direction
    text: _MessageText
    sent_at: _SentAt


class ChatMessage(TypedDict):
    """A message of a conversation."""

    message_id: _MessageId
    direction: _Direction
    text: _MessageText
    sent_at: _SentAt


class SentMessage(TypedDict):
    """A message the user just sent."""

    message_id: Annotated[int, Field(description="Id of the new message")]
    sent_at: _SentAt


class DeletedMessage(TypedDict):
    """A deleted message."""

    message_id: Annotated[int, Field(description="Id of the deleted message")]
    deleted: Annotated[bool, Field(description="True once the message is deleted")]


class MessagingApp(App):
    """Text messaging: search, read, send and delete messages."""

    name = "messaging"
    tool_names = ("login", "search_messages", "show_conversation", "send_message",
                  "delete_message")

    def search_messages(self, access_token: str, query: str) -> list[MessageSummary]:
        """Search the user's messages by their text.

        Args:
            access_token: Access token from messaging.login.
            query: Text to look for in the messages.

        Returns:
            The matching messages with their ids, the other person's name, direction, text
            and time.
        """
        self._auth(access_token)
        return cast(list[MessageSummary], self._store.rows(
            "SELECT m.message_id, COALESCE(c.name, m.phone_number) AS contact_name, "
            "m.direction, m.text, m.sent_at FROM messages m "
            "LEFT JOIN contacts c ON c.phone_number = m.phone_number "
            "WHERE m.text LIKE ? ESCAPE '\\' ORDER BY m.message_id", (like(query),)))

    def show_conversation(self, access_token: str, phone_number: str) -> list[ChatMessage]:
        """Show the conversation with one phone number, oldest message first.

        Args:
            access_token: Access token from messaging.login.
            phone_number: Phone number of the other person.

        Returns:
            The messages exchanged with that phone number.
        """
        self._auth(access_token)
        return cast(list[ChatMessage], self._store.rows(
            "SELECT message_id, direction, text, sent_at FROM messages WHERE phone_number = ? "
            "ORDER BY message_id", (require_text(phone_number, "phone_number"),)))

    def send_message(self, access_token: str, phone_number: str, text: str) -> SentMessage:
        """Send a text message to a phone number.

        Args:
            access_token: Access token from messaging.login.
            phone_number: Phone number of the contact who receives the message.
            text: Text of the message to send.

        Returns:
            The id of the new message and when it was sent.
        """
        self._auth(access_token)
        now = self._store.now()
        new_id = self._store.insert("messages", {
            "phone_number": require_text(phone_number, "phone_number"), "direction": "sent",
            "text": require_text(text, "text"), "sent_at": now})
        return {"message_id": new_id, "sent_at": now}

    def delete_message(self, access_token: str, message_id: int) -> DeletedMessage:
        """Delete one message.

        Args:
            access_token: Access token from messaging.login.
            message_id: Id of the message to delete, from messaging.search_messages.

        Returns:
            The id of the deleted message.
        """
        self._auth(access_token)
        self._row("messages", "message_id", message_id, "message")
        self._store.execute("DELETE FROM messages WHERE message_id = ?", (message_id,))
        return {"message_id": message_id, "deleted": True}
