"""The demo-world task set: 30 requests over the seven apps (4 ambiguous)."""

from __future__ import annotations

from hyperplan.demo_world.taskkit import DemoTask
from hyperplan.demo_world.tasks_music import music_tasks
from hyperplan.demo_world.tasks_office import office_tasks
from hyperplan.demo_world.tasks_people import people_tasks

__all__ = ["DemoTask", "load_tasks"]


def load_tasks() -> list[DemoTask]:
    """Every demo task, ordered by id."""
    tasks = [*music_tasks(), *people_tasks(), *office_tasks()]
    return sorted(tasks, key=lambda t: t.id)
