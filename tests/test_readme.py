"""The README's library example runs as written (keeps the README true)."""

from __future__ import annotations

from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def test_library_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    text = README.read_text("utf-8")
    code = text[text.index("## Library use"):].split("```python")[1].split("```")[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "music.like_song" in printed
    assert (tmp_path / "out" / "demo.json").exists() and (tmp_path / "out" / "demo.npz").exists()
