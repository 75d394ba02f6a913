"""The demo-world task set: 30 requests over the seven apps (4 ambiguous)."""

from __future__ import annotations

from dataclasses import replace

from hyperplan.demo_world.taskkit import DemoTask
from hyperplan.demo_world.tasks_music import music_tasks
from hyperplan.demo_world.tasks_office import office_tasks
from hyperplan.demo_world.tasks_people import people_tasks

__all__ = ["DemoTask", "load_tasks"]


# Scenarios, as AppWorld groups its tasks: the variants of one intent over different entities
# (and, here, different ways of naming them). SGC counts a scenario only when every variant
# succeeds. Tasks without a sibling variant belong to no scenario.
SCENARIOS: dict[str, tuple[str, ...]] = {
    "like_song": ("t01_like_song", "t02_like_song_pick_title", "t08_like_hallelujah"),
    "send_money": ("t11_send_money", "t12_send_money_to_sister", "t16_send_money_to_alex"),
    "text_contact": ("t17_send_message", "t18_text_brother_sam"),
    "delete_note": ("t23_delete_note", "t24_delete_old_groceries"),
}


def load_tasks() -> list[DemoTask]:
    """Every demo task, ordered by id, with its scenario (see :data:`SCENARIOS`)."""
    scenario_of = {task: name for name, ids in SCENARIOS.items() for task in ids}
    tasks = [*music_tasks(), *people_tasks(), *office_tasks()]
    tasks = [replace(t, scenario=scenario_of.get(t.id, "")) for t in tasks]
    return sorted(tasks, key=lambda t: t.id)
