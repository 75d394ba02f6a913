"""Print the command-line reference (Markdown) generated from the Typer app, or with
``--write [docs/cli.md]`` rewrite the generated section of docs/cli.md in place.

    python scripts/cli_reference.py            # print it
    python scripts/cli_reference.py --write    # update docs/cli.md (tests/test_readme.py checks it)
"""

from __future__ import annotations

import sys
from pathlib import Path

from hyperplan.cli.reference import reference, update


def main(argv: list[str]) -> None:
    if argv[:1] == ["--write"]:
        page = Path(argv[1] if len(argv) > 1 else Path(__file__).parents[1] / "docs" / "cli.md")
        page.write_text(update(page.read_text(encoding="utf-8")), encoding="utf-8")
        return
    sys.stdout.write(reference())


if __name__ == "__main__":
    main(sys.argv[1:])
