"""A tiny bilingual BEIR-style folder written fresh for each test module."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

CORPUS = [
    {"id": "p1", "title": "年假", "text": "员工每年有十天带薪年假，未用完的年假最多结转五天。"},
    {"id": "p2", "title": "报销", "text": "出差住宿每晚报销上限为五百元。"},
    {"id": "p3", "title": "Wi-Fi", "text": "Error E-104 means Wi-Fi authentication failed."},
    {"id": "p4", "title": "", "text": "The warranty covers two years from the date of purchase."},
    {"id": "p5", "title": "Hotel", "text": "The hotel limit per night is 150 dollars."},
    {"id": "p6", "title": "保修", "text": "本产品保修两年，人为损坏不在保修范围内。"},
    {"id": "p7", "title": "Parking", "text": "Employees park for free in lot B."},
    {"id": "p8", "title": "食堂", "text": "公司食堂早餐七点开始供应。"},
]
QUERIES = [
    {"id": "q1", "text": "年假可以结转几天？"},
    {"id": "q2", "text": "what does error E-104 mean"},
    {"id": "q3", "text": "hotel limit per night"},
    {"id": "q4", "text": "保修多久"},
]
# q9 is judged but not published in the queries file: it must be ignored.
QRELS = (
    "query-id\tcorpus-id\tscore\n"
    "q1\tp1\t1\nq2\tp3\t1\nq3\tp5\t2\nq3\tp2\t1\nq4\tp6\t1\nq9\tp7\t1\n"
)


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def write_dataset(root: Path) -> Path:
    """Write corpus.jsonl, queries.dev.jsonl and qrels.tsv under `root`; returns `root`."""
    root.mkdir(parents=True, exist_ok=True)
    write_jsonl(root / "corpus.jsonl", list(CORPUS))
    write_jsonl(root / "queries.dev.jsonl", list(QUERIES))
    (root / "qrels.tsv").write_text(QRELS, encoding="utf-8")
    return root


JsonlWriter = Callable[[Path, list[dict[str, object]]], Path]


@pytest.fixture
def dataset_dir(tmp_path: Path) -> Path:
    """The tiny dataset in a fresh folder named `tinyset`."""
    return write_dataset(tmp_path / "tinyset")


@pytest.fixture
def jsonl() -> JsonlWriter:
    """Writes objects as JSON lines."""
    return write_jsonl


@pytest.fixture(scope="session")
def shared_dataset_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny dataset, written once; tests must not modify it."""
    return write_dataset(tmp_path_factory.mktemp("shared") / "tinyset")


HANDBOOK = {
    "leave.md": "# 年假\n\n员工每年有十天带薪年假，未用完的年假最多结转五天。\n\n"
                "## 病假\n\n病假需要医院开具的证明，每年最多三十天。\n",
    "travel.md": "# Travel\n\nThe hotel limit per night is 150 dollars on business trips.\n",
    "wifi.md": "# Wi-Fi\n\nError E-104 means Wi-Fi authentication failed; re-enter the "
               "password.\n",
    "warranty.md": "# 保修\n\n本产品保修两年，人为损坏不在保修范围内。\n",
}
# one filename under two keys: a label naming it alone is ambiguous
NOTES = {"team-a/notes.md": "# Parking\n\nEmployees park for free in lot B.\n",
         "team-b/notes.md": "# 食堂\n\n公司食堂早餐七点开始供应。\n"}


def build_handbook_kb(data_dir: Path, source_dir: Path) -> None:
    """KB "handbook" in `data_dir`: four files and two notes.md under different keys."""
    from ragsift.bootstrap import build
    from ragsift.config import Settings

    container = build(Settings(data_dir=data_dir))
    try:
        kb = container.ingestion.ensure_kb("handbook")
        source_dir.mkdir(parents=True, exist_ok=True)
        for name, text in HANDBOOK.items():
            (source_dir / name).write_text(text, encoding="utf-8")
            container.ingestion.ingest_path(kb, source_dir / name)
        for key, text in NOTES.items():
            accepted = container.ingestion.accept(kb, "notes.md", text.encode(), key=key)
            container.ingestion.process(accepted.document.id)
    finally:
        container.close()
