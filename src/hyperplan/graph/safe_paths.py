"""Files hyperplan writes and reads on a user's behalf, handled so they never destroy data
(fault item 8 of docs/benchmarks.md, "Runtime trust under faults") and never hang or exhaust
memory on a hostile path (item 7).

* :func:`check_output_path` refuses, in one line, an output that exists and is not a regular
  file (a device such as ``/dev/full``, a fifo, a directory, a symbolic link to one of those or
  to nothing), whose parent is not a directory, or that is one of the files a command reads
  (its source catalog, the graph it exports) or lies inside a source directory. Any writer can
  use it: ``graph build``/``export -o``, ``--trace``, report outputs.
* :func:`atomic_write` writes through a temporary file in the target's directory and renames
  it over the target: a reader sees the old file or the new one, never a part, and a failure
  leaves the old file as it was. The target is checked again just before the rename, so a
  device node put there meanwhile is not replaced either.
* :func:`read_regular` reads a file only if it is a regular file no larger than a bound; it
  opens without blocking (a fifo swapped in after a check cannot hang the reader) and checks
  the opened file itself, not the name.

Every refusal is a :class:`~hyperplan.errors.HyperplanError` (or the subclass the caller
names) whose message starts with the path.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

from hyperplan.errors import HyperplanError

ErrorType = type[HyperplanError]


def check_output_path(path: str | Path, sources: Iterable[str | Path] = (), *,
                      option: str = "-o", error: ErrorType = HyperplanError) -> Path:
    """``path`` as a :class:`Path` if writing it destroys nothing it should not (module doc);
    otherwise ``error`` naming ``path`` and, for a source, the source and ``option``."""
    target = Path(path)
    _refuse_non_regular(target, error)
    for source in sources:
        _refuse_source(target, Path(source), option, error)
    return target


def _refuse_non_regular(target: Path, error: ErrorType) -> None:
    """Refuse a target that exists and is not a regular file (symbolic links followed)."""
    try:
        info = os.stat(target)
    except FileNotFoundError:
        if os.path.islink(target):
            raise error(f"{target}: is a symbolic link to nothing ({os.readlink(target)}); "
                        "refusing to write through it") from None
        return
    except NotADirectoryError:
        raise error(f"{target}: a parent of it is not a directory") from None
    except OSError as exc:
        raise error(f"{target}: cannot check it ({exc.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise error(f"{target}: exists and is not a regular file; refusing to replace it")


def _refuse_source(target: Path, source: Path, option: str, error: ErrorType) -> None:
    """Refuse a target that is ``source`` (same resolved path or same inode, so hard and
    symbolic links count) or lies inside ``source`` when it is a directory."""
    if not source.exists():
        return
    resolved, guarded = target.resolve(), source.resolve()
    same = resolved == guarded or (target.exists() and os.path.samefile(target, source))
    if same:
        raise error(f"{target}: is the source {source}; refusing to overwrite it: "
                    f"choose another {option}")
    if source.is_dir() and guarded in resolved.parents:
        raise error(f"{target}: is inside the source directory {source}; refusing to "
                    f"write there: choose another {option}")


def atomic_write(path: str | Path, write: Callable[[BinaryIO], object], *,
                 error: ErrorType = HyperplanError) -> Path:
    """Write ``path`` with ``write(file)`` through a temporary sibling renamed over it (module
    doc). The new file gets the usual permissions (0666 less the umask). An ``OSError`` while
    writing becomes ``error`` naming ``path``; nothing is left behind on any failure."""
    target = Path(path)
    _refuse_non_regular(target, error)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise error(f"{target}: cannot create its directory ({exc.strerror})") from None
    tmp = target.parent / f".{target.name}.{secrets.token_hex(6)}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        raise error(f"{target}: cannot write it ({exc.strerror})") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        _refuse_non_regular(target, error)
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise error(f"{target}: cannot write it ({exc.strerror or exc})") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def write_text(path: str | Path, text: str, *, error: ErrorType = HyperplanError) -> Path:
    """:func:`atomic_write` of ``text`` as UTF-8."""
    data = text.encode("utf-8")

    def write(fh: BinaryIO) -> None:
        fh.write(data)

    return atomic_write(path, write, error=error)


def read_regular(path: str | Path, limit: Callable[[int], str | None], *, what: str = "it",
                 error: ErrorType = HyperplanError) -> bytes:
    """The bytes of ``path`` if it is a regular file and ``limit(size)`` returns ``None``;
    otherwise ``error`` naming the file (``limit``'s text says why the size is refused;
    ``what`` names the file in "cannot read ..."). A missing file raises
    :class:`FileNotFoundError` for the caller to word."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise error(f"{p}: cannot read {what} ({exc.strerror})") from None
    info = os.fstat(fd)
    refused = (f"cannot read {what} (Is a directory)" if stat.S_ISDIR(info.st_mode)
               else "not a regular file; refusing to read it"
               if not stat.S_ISREG(info.st_mode) else limit(info.st_size))
    if refused:
        os.close(fd)
        raise error(f"{p}: {refused}")
    with os.fdopen(fd, "rb") as fh:
        try:
            data = fh.read(info.st_size)
        except OSError as exc:
            raise error(f"{p}: cannot read {what} ({exc.strerror})") from None
    return data


def make_private_dirs(path: Path, mode: int = 0o700) -> None:
    """Create ``path`` and its missing parents with exactly ``mode`` whatever the umask
    (directories that exist are left as they are): where caches keep what a user's tools
    said."""
    missing: list[Path] = []
    probe = path
    while not probe.exists() and probe.parent != probe:
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=mode)
        except FileExistsError:
            continue  # made meanwhile by a concurrent writer
        os.chmod(directory, mode)
