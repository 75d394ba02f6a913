"""The contacts app: the user's address book (no login needed, like a phone's contact list).

A contact's ``email`` feeds inputs such as ``receiver_email`` / ``payer_email`` /
``attendee_email`` of other apps, and its ``phone_number`` feeds ``messaging.send_message``.
"""

from __future__ import annotations

from typing import Annotated, TypedDict, cast

from pydantic import Field

from hyperplan.demo_world.apps.base import App, like, require_text
from hyperplan.demo_world.store import InvalidArgumentError


class Contact(TypedDict):
    """One contact of the address book."""

    contact_id: Annotated[int, Field(description="Id of the contact")]
    name: Annotated[str, Field(description="Full name of the contact person")]
    email: Annotated[str, Field(description="Email address of the contact person")]
    phone_number: Annotated[str, Field(description="Phone number of the contact person")]
    relationship: Annotated[
        str, Field(description="How the contact relates to the user, e.g. friend or sister")
    ]


class ContactDetails(Contact):
    """A contact with every stored field."""

    birthday: Annotated[str | None, Field(description="Birthday of the contact, YYYY-MM-DD")]


class ContactId(TypedDict):
    """The contact a write touched."""

    contact_id: Annotated[int, Field(description="Id of the contact")]


_FIELDS = "contact_id, name, email, phone_number, relationship"


class ContactsApp(App):
    """Address book: search, show, add, update and delete contacts."""

    name = "contacts"
    tool_names = ("search_contacts", "show_contact", "add_contact",
                  "update_contact_phone_number", "delete_contact")

    def search_contacts(self, query: str) -> list[Contact]:
        """Search the user's contacts by name or email address.

        Args:
            query: Text to look for in the contact names and email addresses,
                e.g. a first name.

        Returns:
            Every matching contact with its id, name, email, phone number and relationship.
        """
        rows = self._store.rows(
            f"SELECT {_FIELDS} FROM contacts WHERE name LIKE ? ESCAPE '\\' "
            "OR email LIKE ? ESCAPE '\\' ORDER BY contact_id", (like(query), like(query)))
        return cast(list[Contact], rows)

    def show_contact(self, contact_id: int) -> ContactDetails:
        """Show every detail of one contact.

        Args:
            contact_id: Id of the contact to show, from contacts.search_contacts.

        Returns:
            The contact's id, name, email, phone number, relationship and birthday.
        """
        row = self._row("contacts", "contact_id", contact_id, "contact")
        return cast(ContactDetails, row)

    def add_contact(self, name: str, email: str, phone_number: str,
                    relationship: str = "") -> ContactId:
        """Add a new contact to the address book.

        Args:
            name: Full name of the new contact.
            email: Email address of the new contact.
            phone_number: Phone number of the new contact.
            relationship: How the new contact relates to the user (optional).

        Returns:
            The id of the new contact.
        """
        name = require_text(name, "name")
        email = require_text(email, "email")
        if "@" not in email:
            raise InvalidArgumentError(f"contacts: {email!r} is not an email address")
        new_id = self._store.insert("contacts", {
            "name": name, "email": email, "phone_number": require_text(phone_number,
                                                                      "phone_number"),
            "relationship": relationship.strip(), "birthday": None})
        return {"contact_id": new_id}

    def update_contact_phone_number(self, contact_id: int, phone_number: str) -> ContactId:
        """Change the phone number of an existing contact.

        Args:
            contact_id: Id of the contact to change, from contacts.search_contacts.
            phone_number: The contact's new phone number.

        Returns:
            The id of the updated contact.
        """
        self._row("contacts", "contact_id", contact_id, "contact")
        self._store.execute("UPDATE contacts SET phone_number = ? WHERE contact_id = ?",
                            (require_text(phone_number, "phone_number"), contact_id))
        return {"contact_id": contact_id}

    def delete_contact(self, contact_id: int) -> ContactId:
        """Delete a contact from the address book.

        Args:
            contact_id: Id of the contact to delete, from contacts.search_contacts.

        Returns:
            The id of the deleted contact.
        """
        self._row("contacts", "contact_id", contact_id, "contact")
        self._store.execute("DELETE FROM contacts WHERE contact_id = ?", (contact_id,))
        return {"contact_id": contact_id}
