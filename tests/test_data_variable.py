"""One variable names the benchmark data folder: ``HYPERPLAN_DATA``; the old
``HYPERPLAN_SHARED_DATA`` still works when it is unset, with one deprecation line."""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperplan_bench.eval import suite_api
from hyperplan_bench.eval.replay_suite import default_data_path


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HYPERPLAN_DATA", raising=False)
    monkeypatch.delenv("HYPERPLAN_SHARED_DATA", raising=False)
    suite_api._warn_old_variable.cache_clear()


def test_default_is_shared_data_beside_the_working_directory(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert suite_api.data_variable() is None
    assert suite_api.data_root() == Path("../shared/data")
    assert capsys.readouterr().err == ""


def test_hyperplan_data_names_the_folder_every_suite_reads(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HYPERPLAN_DATA", str(tmp_path))
    monkeypatch.setenv("HYPERPLAN_SHARED_DATA", "/elsewhere")  # the new name wins
    assert suite_api.data_root() == tmp_path
    assert default_data_path("nestools").is_relative_to(tmp_path)
    assert capsys.readouterr().err == ""


def test_old_variable_still_works_with_one_warning(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HYPERPLAN_SHARED_DATA", str(tmp_path))
    assert suite_api.data_root() == tmp_path
    assert suite_api.data_root() == tmp_path
    err = capsys.readouterr().err
    assert err == "warning: HYPERPLAN_SHARED_DATA is deprecated; use HYPERPLAN_DATA\n"
