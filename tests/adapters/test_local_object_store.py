"""LocalObjectStore keeps originals under its root and nowhere else."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsift.adapters.local_object_store import LocalObjectStore
from ragsift.domain.errors import NotFound


@pytest.fixture
def store(tmp_path: Path) -> LocalObjectStore:
    return LocalObjectStore(tmp_path / "objects")


def test_put_then_get_returns_the_same_bytes(store: LocalObjectStore) -> None:
    data = bytes(range(256)) * 10
    store.put("kb1/doc1/report.pdf", data)
    assert store.get("kb1/doc1/report.pdf") == data


def test_put_replaces_an_existing_object_without_leaving_temp_files(
    store: LocalObjectStore,
) -> None:
    store.put("kb1/doc1/a.txt", b"old")
    store.put("kb1/doc1/a.txt", b"new")
    assert store.get("kb1/doc1/a.txt") == b"new"
    assert sorted(p.name for p in (store.root / "kb1" / "doc1").iterdir()) == ["a.txt"]


def test_unicode_and_dotted_filenames_are_valid_keys(store: LocalObjectStore) -> None:
    store.put("kb1/doc1/报告..v2.pdf", b"x")
    assert store.get("kb1/doc1/报告..v2.pdf") == b"x"


def test_get_of_a_missing_key_raises_not_found(store: LocalObjectStore) -> None:
    with pytest.raises(NotFound):
        store.get("kb1/doc1/missing.pdf")
    store.put("kb1/doc1/a.txt", b"x")
    with pytest.raises(NotFound):
        store.get("kb1/doc1")  # a folder is not an object


@pytest.mark.parametrize(
    "key",
    [
        "../escape.txt",
        "kb1/../../escape.txt",
        "kb1/..",
        "/etc/passwd",
        "kb1\\doc1\\a.txt",
        "",
        "kb1//a.txt",
        "kb1/./a.txt",
    ],
)
def test_keys_that_could_leave_the_root_are_rejected(
    store: LocalObjectStore, key: str, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match="invalid object key"):
        store.put(key, b"x")
    with pytest.raises(ValueError, match="invalid object key"):
        store.get(key)
    with pytest.raises(ValueError, match="invalid object key"):
        store.delete_prefix(key)
    assert not (tmp_path / "escape.txt").exists()


def test_a_symlink_pointing_outside_the_root_is_rejected(
    store: LocalObjectStore, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (store.root / "kb1").symlink_to(outside)
    with pytest.raises(ValueError, match="escapes the store"):
        store.put("kb1/a.txt", b"x")
    assert list(outside.iterdir()) == []


def test_delete_prefix_removes_a_whole_document_folder(store: LocalObjectStore) -> None:
    store.put("kb1/doc1/a.pdf", b"a")
    store.put("kb1/doc1/b.pdf", b"b")
    store.put("kb1/doc2/c.pdf", b"c")
    store.delete_prefix("kb1/doc1/")
    with pytest.raises(NotFound):
        store.get("kb1/doc1/a.pdf")
    assert store.get("kb1/doc2/c.pdf") == b"c"


def test_delete_prefix_removes_a_single_file(store: LocalObjectStore) -> None:
    store.put("kb1/doc1/a.pdf", b"a")
    store.put("kb1/doc1/b.pdf", b"b")
    store.delete_prefix("kb1/doc1/a.pdf")
    with pytest.raises(NotFound):
        store.get("kb1/doc1/a.pdf")
    assert store.get("kb1/doc1/b.pdf") == b"b"


def test_delete_prefix_of_nothing_is_a_no_op(store: LocalObjectStore) -> None:
    store.delete_prefix("kb9")
    store.delete_prefix("kb9/doc9/x.pdf")


def test_a_symlink_deeper_in_the_key_or_at_its_file_is_rejected_too(
    store: LocalObjectStore, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(b"not yours")
    (store.root / "kb1").mkdir()
    (store.root / "kb1" / "doc1").symlink_to(outside)
    with pytest.raises(ValueError, match="escapes the store"):
        store.get("kb1/doc1/secret.txt")
    (store.root / "kb1" / "file.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(ValueError, match="escapes the store"):
        store.get("kb1/file.txt")
    # a link that stays inside the store is followed, as before
    store.put("kb2/doc/a.txt", b"a")
    (store.root / "kb3").symlink_to(store.root / "kb2")
    assert store.get("kb3/doc/a.txt") == b"a"
