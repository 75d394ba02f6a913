"""PEP 517 backend: setuptools', plus mypy (for mypyc) among the wheel's build requirements
when ``HYPERPLAN_COMPILE=1`` asks for the compiled search core (see ``setup.py``)."""

from __future__ import annotations

import os
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403  (the rest of the backend, unchanged)

MYPYC = "mypy>=1.10"


def _compile() -> bool:
    return os.environ.get("HYPERPLAN_COMPILE", "").strip().lower() in {"1", "true", "yes"}


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    if not _compile():
        return list(_setuptools.get_requires_for_build_wheel(config_settings))
    # setuptools runs setup.py to list its requirements: without the switch, so that it does
    # not import mypyc before mypy is installed
    switch = os.environ.pop("HYPERPLAN_COMPILE")
    try:
        requires = list(_setuptools.get_requires_for_build_wheel(config_settings))
    finally:
        os.environ["HYPERPLAN_COMPILE"] = switch
    return [*requires, MYPYC]
