"""`ragsift faq import` killed between the index and the facts: a re-run finishes it."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from faults.crash_helpers import run, settings_for
from ragsift.bootstrap import build


def test_a_rerun_of_a_killed_faq_import_stores_every_entry_once(tmp_path: Path) -> None:
    faq = tmp_path / "faq.jsonl"
    faq.write_text("".join(
        json.dumps({"question": f"问题 {i} marker{i}q?", "answer": f"答案 {i}"},
                   ensure_ascii=False) + "\n" for i in range(5)), "utf-8")
    data = tmp_path / "data"
    killed = run(data, "faq", "import", str(faq), "--kb", "docs", crash_at="index_written")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    again = run(data, "faq", "import", str(faq), "--kb", "docs")
    assert again.returncode == 0, again.stderr
    container = build(settings_for(data))
    try:
        kb = container.repository.get_kb_by_name("docs")
        assert kb is not None
        assert container.repository.count_faq_entries(kb.id) == 5
        assert container.faq_index.count() == 5
    finally:
        container.close()
