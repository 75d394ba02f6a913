"""Package roots export their public names lazily (PEP 562), so ``import hyperplan.X`` stays
cheap and a host that needs one name does not load a whole subsystem."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``exports`` maps each public name to
    the submodule (relative to ``package``) that defines it."""

    def __getattr__(name: str) -> Any:
        where = exports.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{where}"), name)

    def __dir__() -> list[str]:
        return sorted(exports)

    return __getattr__, __dir__
