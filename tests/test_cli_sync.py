"""`ragsift sync`: a folder kept in step with a KB: add, replace, prune, dry run, resume."""

from __future__ import annotations

import asyncio
import os
import signal
import unicodedata
from pathlib import Path

from faults.crash_helpers import run
from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.domain.models import CHILD_LEVEL, DocumentStatus
from ragsift.domain.requests import SearchRequest


def _folder(root: Path) -> Path:
    docs = root / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "parking.md").write_text("# 停车\n\n员工停车每天 10 CNY。\n", "utf-8")
    (docs / "canteen.md").write_text("# 食堂\n\n食堂午餐十二点开始。\n", "utf-8")
    (docs / "sub" / "leave.md").write_text("# 年假\n\n年假十五天。\n", "utf-8")
    return docs


def _state(data: Path) -> dict[str, list[str]]:
    """key -> the texts of its live chunks, for every document (all must be READY)."""
    container = build(Settings(data_dir=data))
    try:
        kb = container.repository.get_kb_by_name("hr")
        assert kb is not None
        found: dict[str, list[str]] = {}
        for document in container.repository.list_documents(kb.id):
            assert document.status == DocumentStatus.READY, document
            found[document.key or "?"] = [
                c.text for c in container.repository.list_chunks(document.id)
                if c.level == CHILD_LEVEL and c.valid_to_seq == 0]
        hits = asyncio.run(container.retrieval.search(SearchRequest(
            query="停车 CNY", kb_id=kb.id, mode="sparse"))).hits
        found["search"] = [hit.text for hit in hits]
        return found
    finally:
        container.close()


def test_an_edit_and_a_delete_end_with_one_current_document_each(tmp_path: Path) -> None:
    docs, data = _folder(tmp_path), tmp_path / "data"
    assert run(data, "sync", str(docs), "--kb", "hr").returncode == 0
    (docs / "parking.md").write_text("# 停车\n\n员工停车每天 15 CNY。\n", "utf-8")
    (docs / "canteen.md").unlink()
    (docs / ".draft.md").write_text("hidden", "utf-8")
    (docs / "notes.xyz").write_text("?", "utf-8")

    dry = run(data, "sync", str(docs), "--kb", "hr", "--prune", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "plan: 0 to add, 1 to replace, 1 to delete, 1 unchanged, 2 skipped" in dry.stdout
    assert "skipped" in dry.stderr and ".draft.md: hidden" in dry.stderr
    assert "notes.xyz: unsupported type .xyz" in dry.stderr
    assert set(_state(data)) == {"parking.md", "canteen.md", "sub/leave.md", "search"}

    done = run(data, "sync", str(docs), "--kb", "hr", "--prune")
    assert done.returncode == 0, done.stderr
    assert "1 replaced, 1 deleted, 1 unchanged" in done.stdout
    state = _state(data)
    assert set(state) == {"parking.md", "sub/leave.md", "search"}
    assert state["parking.md"] == ["停车\n\n员工停车每天 15 CNY。"] or all(
        "15 CNY" in text for text in state["parking.md"])
    assert all("10 CNY" not in text for text in state["search"])

    again = run(data, "sync", str(docs), "--kb", "hr", "--prune")
    assert again.returncode == 0
    assert "0 added, 0 replaced, 0 deleted, 2 unchanged" in again.stdout
    os.utime(docs / "sub" / "leave.md")  # touched, same bytes: unchanged, not replaced
    touched = run(data, "sync", str(docs), "--kb", "hr")
    assert "0 replaced" in touched.stdout and "2 unchanged" in touched.stdout


def test_include_and_exclude_choose_the_files_and_bound_the_prune(tmp_path: Path) -> None:
    docs, data = _folder(tmp_path), tmp_path / "data"
    assert run(data, "sync", str(docs), "--kb", "hr", "--include", "sub/*").returncode == 0
    assert set(_state(data)) == {"sub/leave.md", "search"}
    assert run(data, "sync", str(docs), "--kb", "hr", "--exclude", "canteen.md").returncode == 0
    assert set(_state(data)) == {"sub/leave.md", "parking.md", "search"}
    pruned = run(data, "sync", str(docs), "--kb", "hr", "--prune", "--include", "sub/*")
    assert "0 deleted" in pruned.stdout  # parking.md is outside the include: kept


def test_two_files_with_one_key_both_fail_and_nothing_is_ingested_for_it(tmp_path: Path) -> None:
    docs, data = tmp_path / "docs", tmp_path / "data"
    docs.mkdir()
    nfc, nfd = (unicodedata.normalize(form, "café.md") for form in ("NFC", "NFD"))
    (docs / nfc).write_text("# one\n\nfirst\n", "utf-8")
    (docs / nfd).write_text("# two\n\nsecond\n", "utf-8")
    (docs / "fine.md").write_text("# fine\n\nfine\n", "utf-8")
    done = run(data, "sync", str(docs), "--kb", "hr")
    assert done.returncode == 2
    assert done.stderr.count("is given by 2 files") == 2
    assert set(_state(data)) == {"fine.md", "search"}


def test_a_killed_sync_is_finished_by_the_next_one(tmp_path: Path) -> None:
    docs, data = _folder(tmp_path), tmp_path / "data"
    assert run(data, "sync", str(docs), "--kb", "hr").returncode == 0
    (docs / "parking.md").write_text("# 停车\n\n员工停车每天 15 CNY。\n", "utf-8")
    (docs / "new.md").write_text("# 新\n\n新的制度。\n", "utf-8")
    killed = run(data, "sync", str(docs), "--kb", "hr", crash_at="parsed")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    again = run(data, "sync", str(docs), "--kb", "hr")
    assert again.returncode == 0, again.stderr
    state = _state(data)
    assert set(state) == {"parking.md", "canteen.md", "sub/leave.md", "new.md", "search"}
    assert all("10 CNY" not in text for text in state["search"])


def test_a_resumed_sync_counts_added_and_replaced_as_its_lines_show_them(
    tmp_path: Path,
) -> None:
    # killed while replacing parking.md, after new.md and newer.md were registered (their
    # keys taken, documents PENDING): the next run replaces one and finishes (adds) two
    docs, data = _folder(tmp_path), tmp_path / "data"
    assert run(data, "sync", str(docs), "--kb", "hr").returncode == 0
    (docs / "parking.md").write_text("# 停车\n\n员工停车每天 15 CNY。\n", "utf-8")
    (docs / "new.md").write_text("# 新\n\n新的制度。\n", "utf-8")
    (docs / "newer.md").write_text("# 更新\n\n更新的制度。\n", "utf-8")
    killed = run(data, "sync", str(docs), "--kb", "hr", crash_at="parsed")
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    again = run(data, "sync", str(docs), "--kb", "hr")
    assert again.returncode == 0, again.stderr
    lines = again.stdout.splitlines()
    assert sum(line.startswith("READY") for line in lines) == 2
    assert sum(line.startswith("REPLACED") for line in lines) == 1
    assert "plan: 2 to add, 1 to replace, 0 to delete, 2 unchanged" in again.stdout
    assert "2 added, 1 replaced, 0 deleted, 2 unchanged" in again.stdout
    assert set(_state(data)) == {"parking.md", "canteen.md", "sub/leave.md", "new.md",
                                 "newer.md", "search"}


def test_a_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    done = run(tmp_path / "data", "sync", str(tmp_path / "nope"), "--kb", "hr")
    assert done.returncode == 2 and "not a folder" in done.stderr


SYNC_PROBE = """
import json, sys
from ragsift.cli import main
folder = sys.argv[1]
sys.argv = ['ragsift', 'sync', folder, '--kb', 'hr']
try:
    main()
except SystemExit as exc:
    assert exc.code in (0, None), exc.code
print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'tokenizers')))
"""


def test_a_sync_of_a_few_small_files_does_not_load_e5s_whole_vocabulary(tmp_path: Path) -> None:
    """Its added files are tokenized from the pieces they hold (RAGSIFT_INGEST_LIGHT_...)."""
    import json
    import subprocess
    import sys

    docs = _folder(tmp_path)
    data = tmp_path / "data"
    done = subprocess.run([sys.executable, "-c", SYNC_PROBE, str(docs)], capture_output=True,
                          text=True, timeout=300, check=False,
                          env={**os.environ, "RAGSIFT_DATA_DIR": str(data)})
    assert done.returncode == 0, done.stderr
    assert "3 added" in done.stdout
    assert json.loads(done.stdout.rstrip("\n").rpartition("\n")[2]) == []
    state = _state(data)  # every document READY, with chunks, and searchable
    assert set(state) == {"parking.md", "canteen.md", "sub/leave.md", "search"}
    assert all(state.values())
