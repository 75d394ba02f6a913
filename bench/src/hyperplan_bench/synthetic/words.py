"""The word lists both synthetic generators draw from: entity words (base words, modifiers,
adjectives), brand syllables and currencies, the English plural, and the pool of entity
names ordered from common to rare."""

from __future__ import annotations

import random

TOOLS_PER_APP = 40

BASE_ENTITIES = (
    "order", "customer", "user", "product", "invoice", "ticket", "payment", "account",
    "message", "song", "playlist", "album", "artist", "file", "folder", "document", "event",
    "task", "project", "issue", "comment", "review", "booking", "reservation", "flight",
    "hotel", "room", "vehicle", "driver", "trip", "patient", "appointment", "doctor",
    "course", "student", "lesson", "recipe", "ingredient", "restaurant", "menu", "device",
    "sensor", "alert", "report", "dashboard", "campaign", "contact", "lead", "deal",
    "subscription", "plan", "coupon", "cart", "warehouse", "supplier", "employee", "team",
    "meeting", "note", "photo", "video", "podcast", "episode", "transaction", "budget",
    "expense", "contract", "shipment", "package", "store", "channel", "post", "repository",
    "branch", "build", "deployment", "container", "cluster", "database", "dataset", "model",
    "experiment", "survey", "question", "answer", "quiz", "badge", "reward", "wallet",
    "asset", "portfolio", "stock", "loan", "claim", "policy", "property", "listing", "tenant",
    "lease", "garden", "plant", "pet", "vaccine", "workout", "recording", "license",
)
MODIFIERS = (
    "item", "line", "attachment", "comment", "tag", "group", "template", "version", "member",
    "invite", "schedule", "batch", "draft", "snapshot", "rule", "label", "note", "request",
    "segment", "log", "setting", "review", "share", "category",
)
ADJECTIVES = (
    "shared", "archived", "recurring", "scheduled", "pending", "draft", "public", "private",
    "featured", "saved", "blocked", "favorite", "pinned", "external", "internal", "custom",
    "daily", "trial", "legacy", "premium",
)
SYLLABLES = (
    "zen", "tri", "lo", "qua", "vex", "mar", "nor", "pix", "cal", "dro", "fin", "ly", "sto",
    "ra", "bel", "kin", "tor", "vi", "sa", "mo", "plu", "ex", "gra", "ni",
)
CURRENCIES = ("USD", "EUR", "GBP", "JPY", "INR")

EntityWords = tuple[str, ...]  # ("order",), ("order", "item"), ("shared", "folder")


def plural(word: str) -> str:
    """The English plural of a noun: ``entry`` -> ``entries``, ``box`` -> ``boxes``."""
    if word.endswith("y") and word[-2:-1] not in ("a", "e", "o", "u"):
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    return word + "s"


def entity_combinations() -> list[EntityWords]:
    """Two-word entities: ``base_modifier`` (``order_item``), then ``adjective_base``
    (``shared_folder``)."""
    combos: list[EntityWords] = [(b, m) for b in BASE_ENTITIES for m in MODIFIERS if b != m]
    combos += [(a, b) for a in ADJECTIVES for b in BASE_ENTITIES]
    return combos


def shuffled_entity_pool(rng: random.Random) -> list[EntityWords]:
    """Entity words from common to rare: the base words, then the combinations, each group
    shuffled by ``rng`` (the catalog generator's pool)."""
    bases = list(BASE_ENTITIES)
    rng.shuffle(bases)
    combos = entity_combinations()
    rng.shuffle(combos)
    singles: list[EntityWords] = [(b,) for b in bases]
    return singles + combos


def entity_names() -> list[str]:
    """Snake-case entity names from common to rare, in list order (the hypergraph
    generator's pool)."""
    return list(BASE_ENTITIES) + ["_".join(words) for words in entity_combinations()]
