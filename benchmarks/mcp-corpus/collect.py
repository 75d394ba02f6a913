"""Collect the ``tools/list`` of real MCP servers from the registries into ``tools/<slug>.json``.

For each entry of ``servers.json`` (beside this file) the script installs the pinned package into
a cache directory outside the repository (PyPI: one virtual environment per server; npm: one
prefix per server), reads its licence from the installed package's own metadata, starts the
server over stdio with the official ``mcp`` SDK client (initialize, then ``tools/list``
following ``nextCursor``) and writes ``tools/<slug>.json`` = {"server", "package", "registry",
"version", "licence", "collected", "tools"}, the tool objects kept as the server sent them.

Servers run offline with dummy credentials only (the ``env`` of an entry); the child environment
is the SDK's minimal default (PATH, HOME, ...) plus that ``env``, so no secret of this machine
reaches a server. A server that fails to install, start or list within the timeout is reported
and skipped.

    python benchmarks/mcp-corpus/collect.py [--only git,time] [--cache DIR] [--timeout 60]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import re
import subprocess
import sys
import venv
from dataclasses import dataclass, field
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SERVERS_FILE = HERE / "servers.json"
TOOLS_DIR = HERE / "tools"
DEFAULT_CACHE = Path.home() / ".cache" / "hyperplan-mcp-corpus"
INSTALL_TIMEOUT_S = 900

#: Licences whose text allows the tool descriptions to be redistributed (SPDX ids, upper-cased).
PERMISSIVE = ("MIT", "APACHE-2.0", "BSD-2-CLAUSE", "BSD-3-CLAUSE", "ISC", "MPL-2.0", "0BSD",
              "UNLICENSE", "PSF-2.0", "ZLIB")
_CLASSIFIER_SPDX = {"MIT License": "MIT", "Apache Software License": "Apache-2.0",
                    "BSD License": "BSD-3-Clause", "ISC License (ISCL)": "ISC",
                    "Mozilla Public License 2.0 (MPL 2.0)": "MPL-2.0"}
_TEXT_SPDX = (("MIT License", "MIT"), ("Permission is hereby granted, free of charge", "MIT"),
              ("Apache License", "Apache-2.0"), ("ISC License", "ISC"),
              ("Redistribution and use in source and binary forms", "BSD-3-Clause"),
              ("Mozilla Public License", "MPL-2.0"))


@dataclass(frozen=True)
class Server:
    """One entry of ``servers.json``."""

    slug: str
    registry: str  # "pypi" | "npm"
    package: str
    version: str
    licence: str
    command: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    install_env: dict[str, str] = field(default_factory=dict)
    extras: list[str] = field(default_factory=list)
    #: Extra pip requirements installed beside the package (e.g. ``mcp<2`` for a server written
    #: against the 1.x SDK whose own metadata does not cap it).
    pins: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)  # {work}-relative path -> dummy content
    #: Where ``licence`` was read when the package's metadata does not state one (no licence
    #: field, or "SEE LICENSE IN LICENSE" with no such file in the package).
    licence_source: str = ""
    #: Why the server is left out of the corpus (it was tried and failed); ``--retry-skipped``
    #: tries it again.
    skip: str = ""


class CollectError(Exception):
    """A server could not be installed, started or listed; the message says which step and why."""


def load_servers(path: Path = SERVERS_FILE) -> list[Server]:
    data = json.loads(path.read_text(encoding="utf-8"))
    servers = []
    for index, entry in enumerate(data["servers"]):
        known = {k: entry[k] for k in Server.__dataclass_fields__ if k in entry}
        missing = {"slug", "registry", "package", "version", "licence", "command"} - known.keys()
        if missing:
            raise SystemExit(f"{path}: server #{index} lacks {sorted(missing)}")
        if known["registry"] not in ("pypi", "npm"):
            raise SystemExit(f"{path}: server {known['slug']!r}: registry must be pypi or npm")
        servers.append(Server(**known))
    return servers


# --------------------------------------------------------------------------- installation

def _run(cmd: list[str], *, env: dict[str, str] | None = None, what: str) -> None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
                              env=env, check=False)
    except subprocess.TimeoutExpired as exc:
        raise CollectError(f"{what}: timed out after {INSTALL_TIMEOUT_S} s") from exc
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise CollectError(f"{what}: exit {done.returncode}: {' | '.join(tail)}")


def install_pypi(server: Server, cache: Path) -> Path:
    """A virtual environment holding ``package==version``; returns its ``bin`` directory."""
    home = cache / "pypi" / server.slug
    python = home / "bin" / "python"
    stamp = home / ".installed"
    spec = f"{server.package}{'[' + ','.join(server.extras) + ']' if server.extras else ''}" \
           f"=={server.version}"
    wanted = " ".join([spec, *server.pins])
    if not stamp.exists() or stamp.read_text() != wanted:
        venv.EnvBuilder(with_pip=True, clear=True).create(home)
        env = {**os.environ, **server.install_env}
        _run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", spec,
              *server.pins], env=env, what=f"pip install {wanted}")
        stamp.write_text(wanted)
    return home / "bin"


def install_npm(server: Server, cache: Path) -> Path:
    """An npm prefix holding ``package@version``; returns its ``node_modules/.bin`` directory."""
    home = cache / "npm" / server.slug
    stamp = home / ".installed"
    spec = f"{server.package}@{server.version}"
    if not stamp.exists() or stamp.read_text() != spec:
        home.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **server.install_env}
        _run(["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(home), spec],
             env=env, what=f"npm install {spec}")
        stamp.write_text(spec)
    return home / "node_modules" / ".bin"


def _spdx_from_text(text: str) -> str | None:
    for needle, spdx in _TEXT_SPDX:
        if needle in text[:3000]:
            return spdx
    return None


def _site_packages(bin_dir: Path) -> Path:
    found = sorted((bin_dir.parent / "lib").glob("python*/site-packages"))
    if not found:
        raise CollectError(f"no site-packages under {bin_dir.parent}")
    return found[0]


def pypi_metadata(server: Server, bin_dir: Path) -> tuple[str, str]:
    """(installed version, licence) from the distribution's METADATA (License-Expression, License,
    classifiers, then the licence file shipped in the wheel)."""
    wanted = re.sub(r"[-_.]+", "_", server.package).lower()
    for info in _site_packages(bin_dir).glob("*.dist-info"):
        name, _, version = info.name[: -len(".dist-info")].partition("-")
        if re.sub(r"[-_.]+", "_", name).lower() != wanted:
            continue
        headers = HeaderParser().parsestr((info / "METADATA").read_text(encoding="utf-8"))
        expression = (headers.get("License-Expression") or "").strip()
        if expression:
            return version, expression
        licence = (headers.get("License") or "").strip()
        if licence and len(licence) < 40:
            return version, licence
        for classifier in headers.get_all("Classifier") or []:
            leaf = classifier.rsplit("::", 1)[-1].strip()
            if classifier.startswith("License ::") and leaf in _CLASSIFIER_SPDX:
                return version, _CLASSIFIER_SPDX[leaf]
        for text_file in [*info.glob("licenses/*"), *info.glob("LICENSE*")]:
            spdx = _spdx_from_text(text_file.read_text(encoding="utf-8", errors="replace"))
            if spdx:
                return version, spdx
        return version, licence or "UNKNOWN"
    raise CollectError(f"{server.package} is not installed in {bin_dir.parent}")


def npm_metadata(server: Server, bin_dir: Path) -> tuple[str, str]:
    """(installed version, licence) from the package's package.json ("license"; a
    "SEE LICENSE IN FILE" is resolved by reading that file)."""
    root = bin_dir.parent / server.package
    manifest = json.loads((root / "package.json").read_text(encoding="utf-8"))
    licence = manifest.get("license") or ""
    if isinstance(licence, dict):
        licence = licence.get("type", "")
    match = re.match(r"SEE LICEN[CS]E IN (.+)", licence)
    if match:
        text_file = root / match.group(1).strip()
        text = text_file.read_text(encoding="utf-8", errors="replace") if text_file.exists() else ""
        licence = _spdx_from_text(text) or licence
    return str(manifest.get("version", "")), licence or "UNKNOWN"


def is_permissive(licence: str) -> bool:
    """True when the licence is permissive: for an SPDX expression, one ``OR`` alternative whose
    ``AND`` terms all are."""
    alternatives = re.split(r"\s+OR\s+|\s*/\s*", licence.strip("() ").upper())
    return any(all(term.strip("() ") in PERMISSIVE for term in re.split(r"\s+AND\s+", alt))
               for alt in alternatives)


def resolve_licence(server: Server, metadata_licence: str) -> tuple[str, str]:
    """(licence, where it was read): the package metadata's when it states a permissive one,
    else the entry's ``licence`` when the entry says where that was read (``licence_source``)."""
    if is_permissive(metadata_licence):
        if metadata_licence != server.licence:
            print(f"  note: servers.json says licence {server.licence!r}, "
                  f"the metadata says {metadata_licence!r}")
        return metadata_licence, "package metadata"
    stated = metadata_licence == "UNKNOWN" or metadata_licence.upper().startswith("SEE LICEN")
    if stated and server.licence_source and is_permissive(server.licence):
        return server.licence, server.licence_source
    raise CollectError(f"licence {metadata_licence!r} (package metadata) does not permit "
                       "redistribution, or cannot be read and servers.json gives no source")


# --------------------------------------------------------------------------- the MCP session

def prepare_work(cache: Path) -> Path:
    """The scratch folder ``{work}``: a git repository with one commit and a files folder."""
    work = cache / "work"
    repo = work / "repo"
    if not (repo / ".git").exists():
        repo.mkdir(parents=True, exist_ok=True)
        (repo / "a.txt").write_text("hello\n")
        git = ["git", "-C", str(repo), "-c", "user.email=a@b.c", "-c", "user.name=corpus"]
        _run(["git", "init", "-q", str(repo)], what="git init")
        _run([*git, "add", "a.txt"], what="git add")
        _run([*git, "commit", "-qm", "init"], what="git commit")
    (work / "files").mkdir(exist_ok=True)
    (work / "files" / "README.md").write_text("# corpus fixture\n")
    return work


def _expand(text: str, work: Path, bin_dir: Path) -> str:
    return text.replace("{work}", str(work)).replace("{bin}", str(bin_dir))


async def list_tools(server: Server, bin_dir: Path, work: Path, timeout: float,
                     errlog: Any) -> list[dict[str, Any]]:
    """initialize + every page of ``tools/list``; the tool objects as the server sent them."""
    from mcp import ClientSession, StdioServerParameters, types
    from mcp.client.stdio import stdio_client
    from pydantic import BaseModel, ConfigDict

    class RawToolsPage(BaseModel):
        model_config = ConfigDict(extra="allow")
        tools: list[dict[str, Any]]
        nextCursor: str | None = None  # the wire name

    for relative, content in server.files.items():
        target = work / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    command = _expand(server.command, work, bin_dir)
    if not os.path.isabs(command) and (bin_dir / command).exists():
        command = str(bin_dir / command)
    elif not os.path.isabs(command) and command not in ("node", "python"):
        available = sorted(p.name for p in bin_dir.iterdir()) if bin_dir.is_dir() else []
        raise CollectError(f"no command {command!r} in {bin_dir}; there are {available[:20]}")
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.update({k: _expand(v, work, bin_dir) for k, v in server.env.items()})
    params = StdioServerParameters(command=command, args=[_expand(a, work, bin_dir)
                                                          for a in server.args],
                                   env=env, cwd=str(work))
    tools: list[dict[str, Any]] = []
    async with (asyncio.timeout(timeout),
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session):
        await session.initialize()
        cursor: str | None = None
        for _page in range(100):
            request = types.ListToolsRequest(
                params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
            page = await session.send_request(request, RawToolsPage)
            tools.extend(page.tools)
            cursor = page.nextCursor
            if not cursor:
                break
    return tools


# --------------------------------------------------------------------------- driver

def _leaf(exc: BaseException) -> str:
    """The first innermost exception of a task-group failure, as "Type: message" (one line)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}"


def collect_one(server: Server, cache: Path, work: Path, timeout: float, today: str) -> int:
    """Install, check the licence, list; writes ``tools/<slug>.json`` and returns the tool count."""
    if server.registry == "pypi":
        bin_dir = install_pypi(server, cache)
        version, licence = pypi_metadata(server, bin_dir)
    else:
        bin_dir = install_npm(server, cache)
        version, licence = npm_metadata(server, bin_dir)
    if version != server.version:
        raise CollectError(f"installed version {version} is not the pinned {server.version}")
    licence, source = resolve_licence(server, licence)
    log_path = cache / "logs" / f"{server.slug}.stderr"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w", encoding="utf-8") as errlog:
        try:
            tools = asyncio.run(list_tools(server, bin_dir, work, timeout, errlog))
        except CollectError:
            raise
        except TimeoutError as exc:
            raise CollectError(f"no tools/list answer within {timeout:.0f} s "
                               f"(stderr in {log_path})") from exc
        except Exception as exc:  # any failure of a foreign server
            raise CollectError(f"session failed: {_leaf(exc)} (stderr in {log_path})") from exc
    if not tools:
        raise CollectError("tools/list returned no tools")
    record: dict[str, Any] = {"server": server.slug, "package": server.package,
                              "registry": server.registry, "version": version,
                              "licence": licence, "licence_source": source,
                              "collected": today, "tools": tools}
    out = TOOLS_DIR / f"{server.slug}.json"
    out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return len(tools)


def summary_table() -> str:
    """The README's table of the collected servers (slug, package, version, licence, tools, with
    and without ``outputSchema``), totals, and the requests per split."""
    rows = ["| slug | registry | package | version | licence | tools | with outputSchema "
            "| without |", "|---|---|---|---|---|---|---|---|"]
    total = with_output = 0
    for path in sorted(TOOLS_DIR.glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        tools = record["tools"]
        declared = sum(1 for tool in tools if tool.get("outputSchema"))
        total, with_output = total + len(tools), with_output + declared
        rows.append(f"| {record['server']} | {record['registry']} | `{record['package']}` | "
                    f"{record['version']} | {record['licence']} | {len(tools)} | {declared} | "
                    f"{len(tools) - declared} |")
    servers = len(rows) - 2
    share = (total - with_output) / total if total else 0.0
    rows.append("")
    rows.append(f"{servers} servers, {total} tools; {with_output} declare an outputSchema, "
                f"{total - with_output} ({share:.0%}) do not.")
    requests_file = HERE / "requests.json"
    if requests_file.exists():
        requests = json.loads(requests_file.read_text(encoding="utf-8"))["requests"]
        for split in ("dev", "heldout"):
            chosen = [r for r in requests if r["split"] == split]
            chains = sum(1 for r in chosen if len(r["gold"]) >= 2)
            guarded = sum(1 for r in chosen if r.get("must_not"))
            rows.append(f"- {split}: {len(chosen)} requests, {chains} needing 2+ tools, "
                        f"{guarded} with must_not tools")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated slugs to collect")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                        help=f"install and scratch directory (default {DEFAULT_CACHE})")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds a server gets to start and answer tools/list")
    parser.add_argument("--retry-skipped", action="store_true",
                        help="also try the entries marked skip (tried before and failed)")
    parser.add_argument("--summary", action="store_true",
                        help="print the README table of the collected tools files and exit")
    args = parser.parse_args(argv)
    if args.summary:
        print(summary_table())
        return 0
    servers = load_servers()
    if args.only:
        wanted = {s.strip() for s in args.only.split(",") if s.strip()}
        unknown = wanted - {s.slug for s in servers}
        if unknown:
            parser.error(f"unknown slugs: {sorted(unknown)}")
        servers = [s for s in servers if s.slug in wanted]
    if not args.retry_skipped:
        for server in servers:
            if server.skip:
                print(f"skipped {server.slug} (--retry-skipped tries it): {server.skip}")
        servers = [s for s in servers if not s.skip]
    cache = args.cache.expanduser().resolve()
    cache.mkdir(parents=True, exist_ok=True)
    TOOLS_DIR.mkdir(exist_ok=True)
    work = prepare_work(cache)
    today = dt.date.today().isoformat()
    failed: list[tuple[str, str]] = []
    for number, server in enumerate(servers, 1):
        print(f"[{number}/{len(servers)}] {server.slug}: {server.registry} "
              f"{server.package} {server.version}", flush=True)
        try:
            count = collect_one(server, cache, work, args.timeout, today)
        except CollectError as exc:
            failed.append((server.slug, str(exc)))
            print(f"  FAILED: {exc}", flush=True)
            continue
        print(f"  {count} tools", flush=True)
    print(f"done: {len(servers) - len(failed)} collected, {len(failed)} failed")
    for slug, reason in failed:
        print(f"  {slug}: {reason}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
