"""The apps of the demo world, in catalog order (profile and contacts first)."""

from hyperplan.demo_world.apps.base import App
from hyperplan.demo_world.apps.calendar import CalendarApp
from hyperplan.demo_world.apps.contacts import ContactsApp
from hyperplan.demo_world.apps.messaging import MessagingApp
from hyperplan.demo_world.apps.music import MusicApp
from hyperplan.demo_world.apps.notes import NotesApp
from hyperplan.demo_world.apps.payments import PaymentsApp
from hyperplan.demo_world.apps.profile import ProfileApp

APPS: tuple[type[App], ...] = (
    ProfileApp, ContactsApp, MusicApp, NotesApp, PaymentsApp, MessagingApp, CalendarApp,
)

__all__ = [
    "APPS",
    "App",
    "CalendarApp",
    "ContactsApp",
    "MessagingApp",
    "MusicApp",
    "NotesApp",
    "PaymentsApp",
    "ProfileApp",
]
