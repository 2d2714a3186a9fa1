"""`ragsift ingest` of the same bytes for several scopes: each scope holds its own copy, a
duplicate within one scope is reported as such (never as ingested), and a key held by
another scope's document is refused. Real process, SQLite and the real index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.cli import ragsift

HR = "# 年假制度\n\n员工每年享有十五天带薪年假，入职满一年后生效。\n"


@pytest.fixture
def hr(tmp_path: Path) -> Path:
    path = tmp_path / "hr.md"
    path.write_text(HR, "utf-8")
    return path


def _found(data: Path, tenant: str) -> list[str]:
    """The document ids a search as `tenant` returns."""
    done = ragsift(data, "search", "年假", "--kb", "k1", "--tenant-id", tenant, "--mode",
                   "sparse", "--json")
    assert done.returncode == 0, done.stderr
    return [hit["document_id"] for hit in json.loads(done.stdout)]


def test_a_second_tenant_ingesting_the_same_bytes_gets_its_own_document(
    tmp_path: Path, hr: Path
) -> None:
    data = tmp_path / "data"
    first = ragsift(data, "ingest", str(hr), "--kb", "k1", "--tenant-id", "t1")
    assert first.returncode == 0, first.stderr
    second = ragsift(data, "ingest", str(hr), "--kb", "k1", "--tenant-id", "t2",
                     "--key", "t2/hr.md")
    assert second.returncode == 0, second.stderr
    assert "duplicate" not in second.stdout
    assert "1 of 1 documents ingested" in second.stdout

    t1, t2 = _found(data, "t1"), _found(data, "t2")
    assert t1 and t2 and set(t1).isdisjoint(t2)  # t2 finds its own copy, not t1's


def test_the_same_bytes_again_in_the_same_scope_are_a_duplicate_not_an_ingest(
    tmp_path: Path, hr: Path
) -> None:
    data = tmp_path / "data"
    assert ragsift(data, "ingest", str(hr), "--kb", "k1", "--tenant-id", "t1").returncode == 0
    again = ragsift(data, "ingest", str(hr), "--kb", "k1", "--tenant-id", "t1",
                    "--key", "copy/hr.md")
    assert again.returncode == 0, again.stderr
    assert "0 of 1 documents ingested" in again.stdout
    assert "1 duplicate(s)" in again.stdout
    assert "already in this KB for this scope" in again.stdout and "'hr.md'" in again.stdout
    assert len(_found(data, "t1")) >= 1

    same_key = ragsift(data, "ingest", str(hr), "--kb", "k1", "--tenant-id", "t1")
    assert "unchanged" in same_key.stdout and "1 of 1 documents ingested" in same_key.stdout


def test_other_roles_are_another_scope_but_another_source_label_is_not(
    tmp_path: Path, hr: Path
) -> None:
    data = tmp_path / "data"
    assert ragsift(data, "ingest", str(hr), "--kb", "k1", "--tenant-id", "t1",
                   "--source", "wiki").returncode == 0
    relabelled = ragsift(data, "ingest", str(hr), "--kb", "k1", "--tenant-id", "t1",
                         "--source", "drive", "--key", "drive/hr.md")
    assert "1 duplicate(s)" in relabelled.stdout
    for_hr = ragsift(data, "ingest", str(hr), "--kb", "k1", "--tenant-id", "t1",
                     "--role", "hr", "--key", "hr-only/hr.md")
    assert for_hr.returncode == 0, for_hr.stderr
    assert "1 of 1 documents ingested" in for_hr.stdout and "duplicate" not in for_hr.stdout


def test_a_key_held_by_another_tenants_document_is_refused_and_left_alone(
    tmp_path: Path, hr: Path
) -> None:
    data = tmp_path / "data"
    assert ragsift(data, "ingest", str(hr), "--kb", "k1", "--tenant-id", "t1").returncode == 0
    before = _found(data, "t1")
    hr.write_text(HR.replace("十五天", "二十天"), "utf-8")  # other bytes under t1's key
    taken = ragsift(data, "ingest", str(hr), "--kb", "k1", "--tenant-id", "t2")
    assert taken.returncode == 2
    assert "NOT INGESTED" in taken.stderr and "another scope (tenant 't1')" in taken.stderr
    assert "0 of 1 documents ingested" in taken.stdout
    assert _found(data, "t2") == [] and _found(data, "t1") == before


def test_a_content_failure_does_not_list_the_supported_types(tmp_path: Path) -> None:
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4 garbage")
    done = ragsift(tmp_path / "data", "ingest", str(broken), "--kb", "k")
    assert done.returncode == 2
    assert "1 document(s) failed" in done.stderr
    assert "supported:" not in done.stderr


def test_an_unsupported_type_still_lists_the_supported_types(tmp_path: Path) -> None:
    odd = tmp_path / "notes.xyz"
    odd.write_text("?", "utf-8")
    done = ragsift(tmp_path / "data", "ingest", str(odd), "--kb", "k")
    assert done.returncode == 2
    assert "unsupported file type '.xyz'; supported: .csv" in done.stderr
