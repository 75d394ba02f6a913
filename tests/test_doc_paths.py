"""Every source path and module the docs name exists: ``src/hyperplan/...``, ``hyperplan/...py``,
``hyperplan_bench/...``, ``python -m hyperplan...`` and dotted ``hyperplan.x.y`` /
``hyperplan_bench.x.y`` names (a module, or an attribute of one) in README.md, docs/*.md and
docs/results/*.md. A historical notebook entry names where the code is now, or says
"(removed since)" right after the path when the code is gone."""

from __future__ import annotations

import importlib
import re
import tomllib
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCE_ROOTS = (REPO / "src", REPO / "bench" / "src")
REMOVED_MARK = "(removed since)"

# A path starts after a non-path character so that ``~/.cache/hyperplan/x``, a URL or a path
# in a commit (``git show REV:src/...``, the tree as it was) is not read.
_LEAD = r"(?<![\w./~:-])"
_PATH_PATTERNS = (
    re.compile(_LEAD + r"(?:bench/)?src/hyperplan(?:_bench)?(?:/[\w.*-]+)*/?"),
    re.compile(_LEAD + r"hyperplan_bench(?:/[\w.*-]+)+/?"),
    re.compile(_LEAD + r"hyperplan(?:/[\w-]+)*/[\w-]+\.py\b"),
    re.compile(_LEAD + r"(?:tests|scripts|examples|benchmarks|bench)(?:/[\w.*-]+)+/?"),
)
_MODULE_PATTERNS = (
    re.compile(r"python -m (hyperplan(?:_bench)?(?:\.\w+)*)"),
    re.compile(r"(?<![\w./-])(hyperplan(?:_bench)?(?:\.[A-Za-z_]\w*)+)"),
)


@dataclass(frozen=True)
class Mention:
    """One path or dotted name found in a doc, with where it was found."""

    doc: Path
    line: int
    text: str

    def where(self) -> str:
        return f"{self.doc.relative_to(REPO)}:{self.line}: {self.text}"


def checked_docs() -> list[Path]:
    """README.md, docs/*.md and docs/results/*.md."""
    docs = [REPO / "README.md"]
    docs += sorted((REPO / "docs").glob("*.md"))
    docs += sorted((REPO / "docs" / "results").glob("*.md"))
    return docs


def _is_marked_removed(line: str, end: int) -> bool:
    return line[end:].lstrip("`*_ ").startswith(REMOVED_MARK)


def mentions(doc: Path, patterns: tuple[re.Pattern[str], ...]) -> list[Mention]:
    """Matches of ``patterns`` in ``doc`` in reading order (group 1 when the pattern has
    one), skipping those followed by the removed-since mark."""
    found: list[Mention] = []
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1):
        spans: list[tuple[int, int]] = []
        for pattern in patterns:
            group = 1 if pattern.groups else 0
            spans += [match.span(group) for match in pattern.finditer(line)]
        for start, end in sorted(spans):
            if not _is_marked_removed(line, end):
                found.append(Mention(doc, number, line[start:end].rstrip(".")))
    return found


def path_exists(text: str) -> bool:
    """``text`` names a file or folder of the repository, or is a glob matching one
    (``hyperplan/x.py`` and ``hyperplan_bench/x`` are read under their source roots)."""
    relative = text.rstrip("/")
    if not relative.startswith(("hyperplan/", "hyperplan_bench/")):
        return any(REPO.glob(relative))
    return any(any(root.glob(relative)) for root in SOURCE_ROOTS)


def entry_point_groups() -> frozenset[str]:
    """Entry-point group names the two distributions declare (``hyperplan.commands``...):
    dotted names that are not modules."""
    groups: set[str] = set()
    for pyproject in (REPO / "pyproject.toml", REPO / "bench" / "pyproject.toml"):
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
        groups.update(project.get("entry-points", {}))
    return frozenset(groups)


def _module_file(dotted: str) -> Path | None:
    parts = dotted.split(".")
    for root in SOURCE_ROOTS:
        base = root.joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.exists():
                return candidate
    return None


def dotted_name_problem(dotted: str) -> str | None:
    """None when ``dotted`` is a module, or a module followed by attributes that exist
    (and are not deprecated aliases); else what is wrong."""
    if dotted in entry_point_groups():
        return None
    parts = dotted.split(".")
    cut = len(parts)
    while cut > 0 and _module_file(".".join(parts[:cut])) is None:
        cut -= 1
    if cut == 0:
        return "no such module"
    if cut == len(parts):
        return None
    module_name = ".".join(parts[:cut])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DeprecationWarning)
        value: object = importlib.import_module(module_name)
        for attribute in parts[cut:]:
            try:
                value = getattr(value, attribute)
            except AttributeError:
                return f"no module or attribute {dotted} ({module_name} has no {attribute})"
    # ours only: a library's own deprecation, met on import, is not the doc's concern
    ours = [w for w in caught if issubclass(w.category, DeprecationWarning)
            and "hyperplan" in str(w.message)]
    return f"deprecated: {ours[0].message}" if ours else None


def path_problems(doc: Path) -> list[str]:
    return [m.where() for m in mentions(doc, _PATH_PATTERNS) if not path_exists(m.text)]


def module_problems(doc: Path) -> list[str]:
    problems: list[str] = []
    for mention in mentions(doc, _MODULE_PATTERNS):
        problem = dotted_name_problem(mention.text)
        if problem:
            problems.append(f"{mention.where()} ({problem})")
    return problems


@pytest.mark.parametrize("doc", checked_docs(), ids=lambda doc: str(doc.relative_to(REPO)))
def test_doc_names_existing_paths_and_modules(doc: Path) -> None:
    problems = sorted(set(path_problems(doc) + module_problems(doc)))
    assert not problems, "docs name paths or modules that do not exist:\n" + "\n".join(problems)


def test_checker_reads_the_forms_it_promises(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "see `src/hyperplan/plan/doe.py` and `src/hyperplan/nowhere.py`, "
        "`hyperplan/graph/links.py`, `hyperplan_bench/eval/chains.py`, "
        "`hyperplan_bench/eval/gone.py` (removed since), ~/.cache/hyperplan/runs.py,\n"
        "`git show HEAD:src/hyperplan/gone.py`, `tests/test_doc_*.py`, `scripts/gone.py`,\n"
        "`python -m hyperplan.nowhere` and hyperplan.select.Selector, hyperplan.plan.doe.Nope.\n",
        encoding="utf-8",
    )
    paths = [m.text for m in mentions(doc, _PATH_PATTERNS)]
    assert paths == [
        "src/hyperplan/plan/doe.py",
        "src/hyperplan/nowhere.py",
        "hyperplan/graph/links.py",
        "hyperplan_bench/eval/chains.py",
        "tests/test_doc_*.py",
        "scripts/gone.py",
    ]
    assert [path_exists(p) for p in paths] == [True, False, True, True, True, False]
    modules = [m.text for m in mentions(doc, _MODULE_PATTERNS)]
    assert modules == [
        "hyperplan.nowhere",
        "hyperplan.nowhere",
        "hyperplan.select.Selector",
        "hyperplan.plan.doe.Nope",
    ]
    assert dotted_name_problem("hyperplan.nowhere") == (
        "no module or attribute hyperplan.nowhere (hyperplan has no nowhere)"
    )
    assert dotted_name_problem("nowhere.at_all") == "no such module"
    assert dotted_name_problem("hyperplan.plan.doe") is None
    assert dotted_name_problem("hyperplan.plan.doe.Nope") == (
        "no module or attribute hyperplan.plan.doe.Nope (hyperplan.plan.doe has no Nope)"
    )
    assert dotted_name_problem("hyperplan.commands") is None  # an entry-point group


def test_a_deprecated_name_is_a_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    import hyperplan.plan.doe as doe

    def old_name(name: str) -> object:
        if name == "old_name":
            warnings.warn("hyperplan.plan.doe.old_name is renamed", DeprecationWarning,
                          stacklevel=2)
            return doe
        raise AttributeError(name)

    monkeypatch.setattr(doe, "__getattr__", old_name, raising=False)
    assert dotted_name_problem("hyperplan.plan.doe.old_name") == (
        "deprecated: hyperplan.plan.doe.old_name is renamed")
