"""Shared fixtures. Tests that read ../shared/data fail (not skip) when CI=true and the data
is missing; outside CI they skip."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def shared_path(*parts: str) -> Path:
    """Path under ../shared/data; fails in CI and skips elsewhere when it is missing."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        message = f"shared data missing: {path}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path
