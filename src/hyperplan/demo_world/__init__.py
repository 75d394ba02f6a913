"""A small executable world for running the agent without an LLM.

Seven apps over one SQLite database - profile, contacts, music, notes, payments, messaging and
calendar - exposed as a tool catalog (:meth:`DemoWorld.catalog`) and bound callables
(:meth:`DemoWorld.callables`), plus natural-language tasks with structured goals and
state-based checkers (:func:`load_tasks`).
"""

from hyperplan.demo_world.store import (
    AuthenticationError,
    DemoWorldError,
    InvalidArgumentError,
    NotFoundError,
)
from hyperplan.demo_world.taskkit import DemoTask
from hyperplan.demo_world.tasks import load_tasks
from hyperplan.demo_world.world import DemoWorld, demo_catalog

__all__ = [
    "AuthenticationError",
    "DemoTask",
    "DemoWorld",
    "DemoWorldError",
    "InvalidArgumentError",
    "NotFoundError",
    "demo_catalog",
    "load_tasks",
]
