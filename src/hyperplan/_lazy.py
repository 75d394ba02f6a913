"""Package roots export their public names lazily (PEP 562), so ``import hyperplan.X`` stays
cheap and a host that needs one name does not load a whole subsystem; a renamed public name
stays importable under its old name for one release, with a :class:`DeprecationWarning`.

A package root writes its table once, by submodule::

    if TYPE_CHECKING:  # what type checkers see (``X as X``: an explicit re-export)
        from hyperplan.plan.doe import DOEConfig as DOEConfig
    _EXPORTS = by_submodule({"doe": ("DOEConfig", ...), "grounding": ("ground", ...)})
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, renamed={"Old": "New"})
    __all__ = sorted(_EXPORTS)

and a module that renamed a name it defines keeps the old one with
``__getattr__ = renamed_names(__name__, {"Old": "New"})``.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def by_submodule(table: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """``{name: submodule}`` from ``{submodule: names}`` (a name listed twice is an error)."""
    exports: dict[str, str] = {}
    for submodule, names in table.items():
        for name in names:
            if name in exports:
                raise ValueError(f"{name!r} is exported from both {exports[name]!r} and "
                                 f"{submodule!r}")
            exports[name] = submodule
    return exports


def lazy_exports(package: str, exports: Mapping[str, str], *,
                 renamed: Mapping[str, str] | None = None,
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``exports`` maps each public name to
    the submodule (relative to ``package``) that defines it; ``renamed`` maps an old public
    name to the exported name that replaced it (it resolves, with a DeprecationWarning, and
    is not listed by ``dir``)."""
    old_names = dict(renamed or {})
    unknown = sorted(new for new in old_names.values() if new not in exports)
    if unknown:
        raise ValueError(f"{package}: renamed to names it does not export: {unknown}")

    def __getattr__(name: str) -> Any:
        if name in old_names:
            _warn_renamed(package, name, old_names[name])
            name = old_names[name]
        where = exports.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{where}"), name)

    def __dir__() -> list[str]:
        return sorted(exports)

    return __getattr__, __dir__


def renamed_names(module: str, renamed: Mapping[str, str]) -> Callable[[str], Any]:
    """``__getattr__`` for a ``module`` that renamed names it defines: ``renamed`` maps each
    old name to the new one, which the old one returns with a DeprecationWarning."""
    old_names = dict(renamed)

    def __getattr__(name: str) -> Any:
        new = old_names.get(name)
        if new is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        _warn_renamed(module, name, new)
        return getattr(sys.modules[module], new)

    return __getattr__


def _warn_renamed(module: str, old: str, new: str) -> None:
    # stacklevel 3: the line that imported or read the old name, past __getattr__
    warnings.warn(f"{module}.{old} is renamed {module}.{new}; the old name goes in the next "
                  "release", DeprecationWarning, stacklevel=3)
