"""A full disk is recognised however a store reports it, and the CLI tells it (exit 2) with
where and how much, never as an internal error or with a library's documentation link."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.exc import OperationalError

from ragsift import cli
from ragsift.domain.errors import StorageFull
from ragsift.storage_full import StorageSpace, describe, is_storage_full


def _wrapped(driver_error: Exception) -> OperationalError:
    return OperationalError("INSERT INTO chunks ...", {}, driver_error)


@pytest.mark.parametrize("exc", [
    OSError(errno.ENOSPC, "No space left on device"),
    OSError(errno.EDQUOT, "Disk quota exceeded"),
    _wrapped(sqlite3.OperationalError("database or disk is full")),
    _wrapped(psycopg.errors.DiskFull("could not extend file \"base/16384/2619\"")),
    ValueError("An IO error occurred: 'No space left on device (os error 28)'"),  # tantivy
    StorageFull("no space left"),
], ids=["enospc", "edquot", "sqlite", "postgres", "tantivy", "ours"])
def test_each_store_s_full_disk_error_is_recognised(exc: Exception) -> None:
    assert is_storage_full(exc)


def test_a_full_disk_under_another_error_is_recognised_through_its_cause() -> None:
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as inner:
            raise RuntimeError("writing the dense log failed") from inner
    except RuntimeError as outer:
        assert is_storage_full(outer)


@pytest.mark.parametrize("exc", [
    OSError(errno.EACCES, "Permission denied"),
    _wrapped(sqlite3.OperationalError("database is locked")),
    ValueError("An IO error occurred: 'Permission denied (os error 13)'"),
])
def test_other_errors_are_not_taken_for_a_full_disk(exc: Exception) -> None:
    assert not is_storage_full(exc)


def test_the_no_space_message_names_the_directory_its_free_space_and_the_need(
    tmp_path: Path,
) -> None:
    error = StorageSpace(tmp_path).error(OSError(errno.ENOSPC, "full"), needed=2_400_000)
    text = str(error)
    assert text.startswith(f"no space left on the data directory {tmp_path} (needed ~2.4 MB, ")
    assert " free)" in text
    assert error.needed_bytes == 2_400_000 and error.free_bytes is not None


def test_a_postgres_full_disk_names_the_database_server() -> None:
    exc = _wrapped(psycopg.errors.DiskFull("could not extend file"))
    assert "PostgreSQL server" in StorageSpace(Path("/tmp")).reason(exc)


def test_a_failure_reason_carries_no_library_link() -> None:
    exc = _wrapped(sqlite3.OperationalError("no such table: chunks"))
    assert "sqlalche.me" in str(exc)  # what SQLAlchemy appends
    assert "sqlalche.me" not in describe(exc)
    assert describe(exc).startswith("OperationalError: (sqlite3.OperationalError) no such table")


def _run_main(monkeypatch: pytest.MonkeyPatch, exc: Exception) -> int:
    def app() -> None:
        raise exc

    monkeypatch.setattr(cli, "app", app)
    with pytest.raises(SystemExit) as done:
        cli.main()
    code = done.value.code
    assert isinstance(code, int)
    return code


def test_the_cli_reports_a_full_disk_as_exit_2_without_a_library_link(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    code = _run_main(monkeypatch, _wrapped(sqlite3.OperationalError("database or disk is full")))
    stderr = capsys.readouterr().err
    assert code == 2
    assert "no space left on the data directory" in stderr
    assert "internal error" not in stderr and "sqlalche.me" not in stderr


def test_the_cli_reports_storage_full_as_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    code = _run_main(monkeypatch, StorageFull("no space left on the data directory /d"))
    assert code == 2
    assert "no space left on the data directory /d" in capsys.readouterr().err


def test_an_internal_error_names_no_library_link(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    code = _run_main(monkeypatch, _wrapped(sqlite3.OperationalError("no such table: chunks")))
    stderr = capsys.readouterr().err
    assert code == 1
    assert "internal error" in stderr and "no such table: chunks" in stderr
    assert "sqlalche.me" not in stderr and "Background on this error" not in stderr
