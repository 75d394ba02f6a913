"""The core wheel holds no benchmark code (issue 39, item 1): the library (``src/hyperplan``,
what the ``hyperplan`` wheel packs) has no module of the lab (eval, faults, synthetic catalogs,
the benchmark importers, the ``eval`` / ``bench`` commands) and imports nothing from it
(``hyperplan_bench``, the second distribution in ``bench/``); the lab's commands and catalog
sources reach the core through entry points, and without the lab installed they say how to
install it."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "src" / "hyperplan"
LAB = ROOT / "bench" / "src" / "hyperplan_bench"

# Lab places still in the core (paths relative to src/hyperplan): none.
ALLOWED_IN_CORE: tuple[str, ...] = ()

LAB_PLACES = (
    "eval/", "faults/", "synthetic/",
    *(f"importers/{name}.py" for name in ("tau2", "sealtools", "nestful", "nestools",
                                           "stabletoolbench", "appworld", "gold")),
    *(f"cli/{name}.py" for name in ("eval_cmds", "eval_preselect", "eval_retrieval", "eval_run",
                                    "bench_cmds", "bench_select", "search_cmds",
                                    "search_figure")),
)


def _core_modules() -> list[str]:
    """Every ``.py`` file of the core, relative to ``src/hyperplan``."""
    return sorted(p.relative_to(CORE).as_posix() for p in CORE.rglob("*.py"))


def _imported(path: Path) -> set[str]:
    """The modules a file imports anywhere (top level, functions, ``TYPE_CHECKING`` blocks)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _allowed(rel: str) -> bool:
    return any(rel == a or (a.endswith("/") and rel.startswith(a)) for a in ALLOWED_IN_CORE)


def test_the_core_has_no_lab_module() -> None:
    modules = _core_modules()
    assert len(modules) > 100  # the walk found the tree
    misplaced = [rel for rel in modules if not _allowed(rel)
                 and any(rel == p or (p.endswith("/") and rel.startswith(p)) for p in LAB_PLACES)]
    assert not misplaced, f"lab modules in the core wheel (move them to bench/): {misplaced}"
    assert (LAB / "eval" / "chains.py").is_file() and (LAB / "faults").is_dir()


def test_no_core_module_imports_the_lab() -> None:
    offenders = [f"{rel}: {name}" for rel in _core_modules() if not _allowed(rel)
                 for name in sorted(_imported(CORE / rel))
                 if name == "hyperplan_bench" or name.startswith("hyperplan_bench.")]
    assert not offenders, "core modules importing hyperplan_bench:\n" + "\n".join(offenders)


def test_the_wheels_split_their_package_data() -> None:
    """The report template ships with the lab (the core's package data names none of it)."""
    core = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    lab = tomllib.loads((ROOT / "bench" / "pyproject.toml").read_text(encoding="utf-8"))
    assert not [g for g in core["tool"]["setuptools"]["package-data"]["hyperplan"]
                if g.startswith(("eval/", "faults/", "synthetic/"))]
    assert "eval/templates/*.html" in lab["tool"]["setuptools"]["package-data"]["hyperplan_bench"]
    assert (LAB / "eval" / "templates" / "report.html").is_file()
    assert lab["project"]["dependencies"] == ["hyperplan"]
    assert set(lab["project"]["entry-points"]["hyperplan.commands"]) == {"search", "eval", "bench"}


def _without_lab(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter where no entry point of the lab is installed."""
    prelude = ("from hyperplan import cli, sources, tool_sources\n"
               "cli._PLUGINS.update({cli.COMMAND_GROUP: {}, cli.ALIAS_GROUP: {}})\n"
               "tool_sources.KINDS._all = dict(tool_sources.CORE_KINDS)\n")
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True,
                          text=True, timeout=60, cwd=ROOT)


def test_without_the_lab_its_commands_say_how_to_install_it() -> None:
    for args in (["eval", "chains", "--suite", "demo"], ["eval", "--help"], ["bench"]):
        proc = _without_lab(f"import sys; sys.argv = ['hyperplan', *{args!r}]; cli.main()")
        said = " ".join((proc.stdout + proc.stderr).split())
        assert proc.returncode == 1, (args, said)
        assert f"hyperplan {args[0]} is part of hyperplan-bench" in said, said
        assert "pip install -e ./bench" in said, said
    listing = _without_lab("import sys; sys.argv = ['hyperplan', '--help']; cli.main()")
    assert " demo " in listing.stdout and " eval " not in listing.stdout
    assert "Traceback" not in listing.stderr


def test_without_the_lab_its_sources_say_how_to_install_it() -> None:
    proc = _without_lab("from hyperplan.errors import CatalogError\n"
                        "try:\n    sources.load_source('nestful:x.json')\n"
                        "except CatalogError as exc:\n    print(exc)\n")
    assert "catalog source nestful: is part of hyperplan-bench" in proc.stdout, proc.stderr
    assert "pip install -e ./bench" in proc.stdout


def test_with_the_lab_its_commands_and_sources_are_found() -> None:
    from hyperplan.cli import commands
    from hyperplan.sources import LOADERS

    assert {"search", "eval", "bench"} <= set(commands())
    assert {"nestful", "sealtools", "tau2", "openapi"} <= set(LOADERS)


def test_entry_points_read_as_importlib_metadata_reads_them() -> None:
    """hyperplan.plugins reads entry_points.txt itself (start-up time); it finds what
    importlib.metadata finds."""
    from importlib.metadata import entry_points as reference

    from hyperplan.plugins import entry_points

    for group in ("hyperplan.commands", "hyperplan.aliases", "hyperplan.sources",
                  "console_scripts"):
        ours = sorted({(p.name, p.value) for p in entry_points(group)})
        assert ours == sorted({(p.name, p.value) for p in reference(group=group)}), group
    assert entry_points("hyperplan.commands")[0].load().target.startswith("hyperplan_bench.")
