"""Extractive answers (no chat model) over the bundled samples keep their structure: the
spreadsheet's matching rows under its header as a Markdown table, list items as one bullet."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from api.api_helpers import Api
from api.chat_helpers import chat_settings
from api.conftest import open_api

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    data = tmp_path_factory.mktemp("extractive_samples") / "data"
    # the default chunk sizes, as `ragsift ingest samples` builds them (the API tests' small
    # chunks cut a sheet's header row)
    settings = chat_settings(None, rewrite=False, chunk_tokens=256, chunk_overlap_tokens=32)
    with open_api(data, **settings) as app:
        kb_id = app.create_kb("samples")
        app.ingest(kb_id, {name: (SAMPLES / name).read_bytes()
                           for name in ("price-limits.xlsx", "hr-handbook-zh.md")})
        yield app


def test_the_hotel_limit_question_quotes_the_price_sheets_rows_as_a_table(api: Api) -> None:
    body = api.client.post("/api/chat", json={"kb": "samples",
                                              "message": "酒店住宿标准每晚上限"}).json()
    answer = body["answer"]

    header = next(line for line in answer.splitlines() if line.startswith("| 城市类别"))
    assert "住宿上限" in header
    rows = [line for line in answer.splitlines()
            if line.startswith("| ") and "---" not in line and line != header]
    assert any(any(ch.isdigit() for ch in row) for row in rows)  # the numbers, not the header
    assert "| --- |" in answer and "[来源 1](citation://1)" in answer
    assert not any(line.startswith(("- |", "- - ")) for line in answer.splitlines())
