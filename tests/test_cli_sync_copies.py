"""`ragsift sync` over a folder holding copies: one document per content, the copies said to
be duplicates on every run (never "add" again), and a pruned original's copy kept."""

from __future__ import annotations

from pathlib import Path

from faults.crash_helpers import run
from ragsift.bootstrap import build
from ragsift.config import Settings


def _folder(root: Path) -> Path:
    docs = root / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# 停车\n\n员工停车每天 10 CNY。\n", "utf-8")
    (docs / "b.md").write_text("# 停车\n\n员工停车每天 10 CNY。\n", "utf-8")
    (docs / "c.md").write_text("# 食堂\n\n食堂午餐十二点开始。\n", "utf-8")
    return docs


def _keys(data: Path) -> dict[str, str]:
    container = build(Settings(data_dir=data))
    try:
        kb = container.repository.get_kb_by_name("hr")
        assert kb is not None
        return {d.key or "?": d.status.value for d in container.repository.list_documents(kb.id)}
    finally:
        container.close()


def test_a_copy_in_one_run_is_a_duplicate_not_a_second_added_document(tmp_path: Path) -> None:
    docs, data = _folder(tmp_path), tmp_path / "data"
    first = run(data, "sync", str(docs), "--kb", "hr")
    assert first.returncode == 0, first.stderr
    assert "2 added, 0 replaced, 0 deleted, 0 unchanged, 1 duplicate(s)" in first.stdout
    assert "duplicate" in first.stdout and "b.md: not added" in first.stdout
    assert _keys(data) == {"a.md": "READY", "c.md": "READY"}


def test_the_next_sync_plans_the_copy_as_a_duplicate_not_an_add(tmp_path: Path) -> None:
    docs, data = _folder(tmp_path), tmp_path / "data"
    assert run(data, "sync", str(docs), "--kb", "hr").returncode == 0
    again = run(data, "sync", str(docs), "--kb", "hr")
    assert again.returncode == 0, again.stderr
    assert ("plan: 0 to add, 0 to replace, 0 to delete, 2 unchanged, 0 skipped, "
            "1 duplicate(s)") in again.stdout
    assert "  add b.md" not in again.stdout
    assert "0 added, 0 replaced, 0 deleted, 2 unchanged, 1 duplicate(s)" in again.stdout


def test_pruning_the_original_keeps_its_copy_searchable(tmp_path: Path) -> None:
    docs, data = _folder(tmp_path), tmp_path / "data"
    assert run(data, "sync", str(docs), "--kb", "hr").returncode == 0
    (docs / "a.md").unlink()
    pruned = run(data, "sync", str(docs), "--kb", "hr", "--prune")
    assert pruned.returncode == 0, pruned.stderr
    assert "1 added, 0 replaced, 1 deleted" in pruned.stdout
    assert _keys(data) == {"b.md": "READY", "c.md": "READY"}
    found = run(data, "search", "停车", "--kb", "hr", "--mode", "sparse")
    assert "b.md" in found.stdout


def test_a_copy_of_a_files_old_bytes_stays_findable_when_the_original_changes(
        tmp_path: Path) -> None:
    docs, data = _folder(tmp_path), tmp_path / "data"
    assert run(data, "sync", str(docs), "--kb", "hr").returncode == 0
    (docs / "a.md").write_text("# 停车\n\n员工停车每天 15 CNY。\n", "utf-8")
    changed = run(data, "sync", str(docs), "--kb", "hr")
    assert changed.returncode == 0, changed.stderr
    assert "1 added, 1 replaced" in changed.stdout
    assert _keys(data) == {"a.md": "READY", "b.md": "READY", "c.md": "READY"}
    old = run(data, "search", "停车 10 CNY", "--kb", "hr", "--mode", "sparse", "--top-k", "1")
    assert "b.md" in old.stdout
