"""FAQ import: JSONL and CSV parsing with line-numbered errors, dedupe, index and facts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsift.bootstrap import Container, build
from ragsift.config import Settings
from ragsift.domain.errors import InvalidInput
from ragsift.domain.filters import SearchFilter
from ragsift.domain.models import DocumentScope
from ragsift.ingestion.faq_import import FaqRow, parse_faq_file

ROWS: list[dict[str, str | None]] = [
    {"question": "How many days of annual leave do I get?",
     "answer": "Fifteen days of paid annual leave per year.", "source": "HR handbook"},
    {"question": "年假可以结转吗？", "answer": "最多可结转五天到下一年。"},
    {"question": "What does error E-104 mean?",
     "answer": "Wi-Fi authentication failed: re-enter the network password.", "source": None},
]


def jsonl(rows: list[dict[str, str | None]]) -> bytes:
    return "\n".join(json.dumps(r, ensure_ascii=False) for r in rows).encode("utf-8")


def test_jsonl_rows_keep_question_answer_source_and_line_numbers() -> None:
    data = jsonl(ROWS[:1]) + b"\n\n" + jsonl([{**ROWS[1], "category": "leave"}])
    rows = parse_faq_file("faq.jsonl", data)
    assert rows == [
        FaqRow("How many days of annual leave do I get?",
               "Fifteen days of paid annual leave per year.", "HR handbook", 1),
        FaqRow("年假可以结转吗？", "最多可结转五天到下一年。", None, 3),
    ]


def test_jsonl_errors_name_every_bad_line_and_nothing_is_returned() -> None:
    lines = [
        json.dumps(ROWS[0]),
        '{"question": "broken", "answer": ',
        json.dumps({"question": "no answer"}),
        json.dumps(["not", "an", "object"]),
        json.dumps({"question": 42, "answer": "   "}),
    ]
    with pytest.raises(InvalidInput) as info:
        parse_faq_file("faq.jsonl", "\n".join(lines).encode("utf-8"))
    message = str(info.value)
    assert "faq.jsonl: 4 malformed row(s), nothing imported" in message
    assert "line 2: invalid JSON" in message
    assert "line 3: missing answer" in message
    assert "line 4: expected a JSON object, got list" in message
    assert "line 5: question must be a string, not int, missing answer" in message


def test_csv_with_a_bom_reads_columns_in_any_order_and_case() -> None:
    text = (
        "Answer,QUESTION,source\n"
        "每年十五天带薪年假。,年假有多少天？,HR\n"
        '"Hold the reset button,\nthen wait ten seconds.",How do I reset the router?,\n'
        "Wi-Fi authentication failed.,What does E-104 mean?,manual\n"
    )
    rows = parse_faq_file("FAQ.CSV", b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert [(r.question, r.source, r.line) for r in rows] == [
        ("年假有多少天？", "HR", 2),
        ("How do I reset the router?", None, 3),
        ("What does E-104 mean?", "manual", 5),  # the quoted answer above spans two lines
    ]
    assert rows[1].answer == "Hold the reset button,\nthen wait ten seconds."


def test_rows_may_give_their_own_scope_in_jsonl() -> None:
    data = jsonl([
        {**ROWS[0], "tenant_id": " acme ", "dataset_id": "hr", "visibility": "internal",
         "allowed_roles": ["hr", " finance", "hr", ""]},
        {**ROWS[1], "allowed_roles": "hr, it"},
        {**ROWS[2], "tenant_id": "", "allowed_roles": []},
    ])
    first, second, third = parse_faq_file("faq.jsonl", data)
    assert (first.tenant_id, first.dataset_id, first.visibility, first.allowed_roles) == (
        "acme", "hr", "internal", ("hr", "finance"))
    assert second.allowed_roles == ("hr", "it") and second.tenant_id is None
    assert (third.tenant_id, third.allowed_roles) == (None, None)  # empty: the defaults


def test_rows_may_give_their_own_scope_in_csv() -> None:
    text = ("question,answer,Tenant_ID,allowed_roles\n"
            'Q1?,A1.,acme,"hr,finance"\n'
            "Q2?,A2.,,\n")
    first, second = parse_faq_file("faq.csv", text.encode("utf-8"))
    assert (first.tenant_id, first.allowed_roles) == ("acme", ("hr", "finance"))
    assert (second.tenant_id, second.allowed_roles) == (None, None)


def test_scope_values_of_the_wrong_type_are_reported_by_line() -> None:
    data = jsonl([{**ROWS[0], "tenant_id": 7}, {**ROWS[1], "allowed_roles": ["hr", 3]}])
    with pytest.raises(InvalidInput) as info:
        parse_faq_file("faq.jsonl", data)
    assert "line 1: tenant_id must be a string, not int" in str(info.value)
    assert "line 2: allowed_roles must be a list of strings" in str(info.value)


def test_a_rows_own_scope_overrides_the_import_defaults_field_by_field() -> None:
    defaults = DocumentScope(source="handbook", tenant_id="acme", dataset_id="hr",
                             visibility="internal", allowed_roles=("hr",))
    plain = FaqRow("Q?", "A.", None, 1).content(defaults)
    assert plain.scope == defaults
    own = FaqRow("Q?", "A.", "manual", 1, tenant_id="globex",
                 allowed_roles=("it",)).content(defaults)
    assert own.scope == DocumentScope(source="manual", tenant_id="globex", dataset_id="hr",
                                      visibility="internal", allowed_roles=("it",))
    assert FaqRow("Q?", "A.", None, 1).content().scope == DocumentScope()


def test_csv_without_a_bom_and_without_a_source_column() -> None:
    rows = parse_faq_file("faq.csv", b"question,answer\nQ?,A.\n\n")
    assert rows == [FaqRow("Q?", "A.", None, 2)]


def test_csv_rows_missing_a_value_are_reported_by_line() -> None:
    text = "question,answer\nQ1?,A1.\nQ2?\n,A3.\n"
    with pytest.raises(InvalidInput, match=r"line 3: missing answer; line 4: missing question"):
        parse_faq_file("faq.csv", text.encode("utf-8"))


def test_csv_header_must_name_question_and_answer() -> None:
    with pytest.raises(InvalidInput, match=r"line 1: .*missing answer"):
        parse_faq_file("faq.csv", b"question,reply\nQ?,A.\n")


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("faq.txt", b"question,answer\n", "must be .jsonl or .csv"),
        ("faq.jsonl", b"\n\n", "file is empty|no question/answer rows"),
        ("faq.csv", b"question,answer\n", "no question/answer rows"),
        ("faq.jsonl", b"\x00\x01binary", "not text"),
    ],
)
def test_unusable_files_are_rejected_with_a_reason(name: str, data: bytes, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        parse_faq_file(name, data)


def test_gb18030_csv_is_decoded() -> None:
    rows = parse_faq_file("faq.csv", "question,answer\n年假有多少天？,十五天。\n".encode("gb18030"))
    assert rows[0].question == "年假有多少天？"


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Container]:
    container = build(Settings(data_dir=tmp_path / "data", embedding_batch_size=2))
    yield container
    container.close()


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_import_embeds_new_questions_in_batches_and_stores_index_and_facts(
    app: Container, tmp_path: Path
) -> None:
    kb = app.ingestion.ensure_kb("hr")
    embedded: list[int] = []
    outcome = app.faq.import_path(kb, write(tmp_path, "faq.jsonl", jsonl(ROWS)), embedded.append)
    assert (outcome.rows, outcome.added, outcome.duplicates) == (3, 3, 0)
    assert embedded == [2, 1]  # embedding_batch_size=2
    entries = app.repository.list_faq_entries(kb.id)
    assert [e.question for e in entries] == [r["question"] for r in ROWS]
    assert app.faq_index.count() == 3 and app.index.count() == 0
    # BM25 sees the answer too: a term only the answer holds finds the entry
    hits = app.faq_index.search_sparse("password", SearchFilter(kb_id=kb.id), 5)
    assert [h.chunk_id for h in hits] == [entries[2].id]


def test_reimport_adds_nothing_and_embeds_nothing(app: Container, tmp_path: Path) -> None:
    kb = app.ingestion.ensure_kb("hr")
    path = write(tmp_path, "faq.jsonl", jsonl(ROWS))
    app.faq.import_path(kb, path)
    embedded: list[int] = []
    # the same rows again, plus one repeated inside the file and one new pair
    more = jsonl([*ROWS, ROWS[0], {"question": "New?", "answer": "Yes."}])
    outcome = app.faq.import_path(kb, write(tmp_path, "more.jsonl", more), embedded.append)
    assert (outcome.rows, outcome.added, outcome.duplicates) == (5, 1, 4)
    assert embedded == [1]
    assert app.repository.count_faq_entries(kb.id) == 4 == app.faq_index.count()


def test_a_malformed_file_stores_nothing(app: Container, tmp_path: Path) -> None:
    kb = app.ingestion.ensure_kb("hr")
    data = jsonl(ROWS) + b'\n{"question": "half"}'
    with pytest.raises(InvalidInput, match="line 4: missing answer"):
        app.faq.import_path(kb, write(tmp_path, "faq.jsonl", data))
    assert app.repository.count_faq_entries(kb.id) == 0 and app.faq_index.count() == 0


def test_files_over_the_size_limit_are_refused_before_reading(tmp_path: Path) -> None:
    container = build(Settings(data_dir=tmp_path / "data", max_file_bytes=64))
    try:
        kb = container.ingestion.ensure_kb("hr")
        with pytest.raises(InvalidInput, match="over the limit of 64"):
            container.faq.import_path(kb, write(tmp_path, "faq.jsonl", jsonl(ROWS)))
    finally:
        container.close()


def test_delete_all_clears_one_knowledge_base_from_index_and_facts(
    app: Container, tmp_path: Path
) -> None:
    hr, it = app.ingestion.ensure_kb("hr"), app.ingestion.ensure_kb("it")
    path = write(tmp_path, "faq.jsonl", jsonl(ROWS))
    app.faq.import_path(hr, path)
    app.faq.import_path(it, path)
    assert app.faq_index.count() == 6
    assert app.faq.delete_all(hr) == 3
    assert app.repository.count_faq_entries(hr.id) == 0
    assert app.repository.count_faq_entries(it.id) == 3 == app.faq_index.count()
