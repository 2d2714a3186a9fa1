"""Loading BEIR folders, JSONL labels and qrels, with line-numbered errors for bad input."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ragsift.domain.errors import InvalidInput
from ragsift.evaluation.datasets import (
    Passage,
    load_beir_folder,
    load_jsonl_labels,
    read_qrels,
)

JsonlWriter = Callable[[Path, list[dict[str, object]]], Path]


def test_beir_folder_loads_corpus_queries_and_qrels_of_loaded_queries_only(
    dataset_dir: Path,
) -> None:
    data = load_beir_folder(dataset_dir)
    assert data.name == "tinyset"
    assert len(data.corpus) == 8
    assert data.corpus[0] == Passage(
        "p1", "年假", "员工每年有十天带薪年假，未用完的年假最多结转五天。"
    )
    assert [q.id for q in data.queries] == ["q1", "q2", "q3", "q4"]
    assert "q9" not in data.qrels  # judged in qrels.tsv, absent from the queries file
    assert data.qrels["q3"] == {"p5": 2, "p2": 1}
    assert data.judged_queries() == 4


def test_queries_default_falls_back_to_queries_jsonl(dataset_dir: Path) -> None:
    (dataset_dir / "queries.dev.jsonl").rename(dataset_dir / "queries.jsonl")
    assert len(load_beir_folder(dataset_dir).queries) == 4
    (dataset_dir / "queries.jsonl").unlink()
    with pytest.raises(InvalidInput, match=r"queries\.dev\.jsonl or queries\.jsonl"):
        load_beir_folder(dataset_dir)


def test_malformed_corpus_line_is_reported_with_its_line_number(dataset_dir: Path) -> None:
    corpus = dataset_dir / "corpus.jsonl"
    lines = corpus.read_text(encoding="utf-8").splitlines()
    lines.insert(2, '{"id": "bad", "text": ')
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match=r"corpus\.jsonl:3: not valid JSON"):
        load_beir_folder(dataset_dir)


def test_query_without_text_field_is_reported_with_its_line_number(
    dataset_dir: Path, jsonl: JsonlWriter
) -> None:
    jsonl(dataset_dir / "queries.dev.jsonl", [{"id": "q1", "text": "ok"}, {"id": "q2"}])
    with pytest.raises(InvalidInput, match=r"queries\.dev\.jsonl:2: field 'text'"):
        load_beir_folder(dataset_dir)


def test_duplicate_corpus_id_is_rejected(dataset_dir: Path, jsonl: JsonlWriter) -> None:
    jsonl(dataset_dir / "corpus.jsonl", [{"id": "a", "text": "x"}, {"id": "a", "text": "y"}])
    with pytest.raises(InvalidInput, match=r"corpus\.jsonl:2: duplicate corpus id 'a'"):
        load_beir_folder(dataset_dir)


def test_numeric_ids_become_strings_and_empty_passages_are_skipped(
    dataset_dir: Path, jsonl: JsonlWriter
) -> None:
    jsonl(dataset_dir / "corpus.jsonl",
          [{"id": 7, "title": "T", "text": "body"}, {"id": "e", "title": "", "text": " "}])
    data = load_beir_folder(dataset_dir)
    assert data.corpus == (Passage("7", "T", "body"),)


def test_qrels_header_is_optional_and_bad_scores_name_their_line(tmp_path: Path) -> None:
    path = tmp_path / "qrels.tsv"
    path.write_text("q1\td1\t1\nq1\td2\t2\n", encoding="utf-8")
    assert read_qrels(path) == {"q1": {"d1": 1, "d2": 2}}
    path.write_text("query-id\tcorpus-id\tscore\nq1\td1\tyes\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match=r"qrels\.tsv:2: score 'yes' is not an integer"):
        read_qrels(path)
    path.write_text("query-id\tcorpus-id\tscore\nq1\td1\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match=r"qrels\.tsv:2: expected 3"):
        read_qrels(path)


def test_trec_four_column_qrels_are_read(tmp_path: Path) -> None:
    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 d1 1\nq1 0 d2 0\n", encoding="utf-8")
    assert read_qrels(path) == {"q1": {"d1": 1, "d2": 0}}


def test_jsonl_labels_get_ids_q1_to_qn(tmp_path: Path, jsonl: JsonlWriter) -> None:
    path = jsonl(tmp_path / "labels.jsonl", [
        {"query": "年假", "relevant": {"p1": 1}},
        {"query": "hotel", "relevant": {"p5": 2, "p2": 1}},
    ])
    queries, qrels = load_jsonl_labels(path)
    assert [(q.id, q.text) for q in queries] == [("q1", "年假"), ("q2", "hotel")]
    assert qrels == {"q1": {"p1": 1}, "q2": {"p5": 2, "p2": 1}}


def test_jsonl_labels_with_non_integer_grade_name_their_line(
    tmp_path: Path, jsonl: JsonlWriter
) -> None:
    path = jsonl(tmp_path / "labels.jsonl",
                 [{"query": "a", "relevant": {"p1": 1}}, {"query": "b", "relevant": {"p1": "1"}}])
    with pytest.raises(InvalidInput, match=r"labels\.jsonl:2: field 'relevant'"):
        load_jsonl_labels(path)


def test_labels_file_as_queries_brings_its_own_judgments(
    dataset_dir: Path, jsonl: JsonlWriter
) -> None:
    (dataset_dir / "qrels.tsv").unlink()  # not needed with labels
    labels = jsonl(dataset_dir / "labels.jsonl", [{"query": "保修多久", "relevant": {"p6": 1}}])
    data = load_beir_folder(dataset_dir, queries_file=labels)
    assert [q.text for q in data.queries] == ["保修多久"]
    assert data.qrels == {"q1": {"p6": 1}}


def test_limited_keeps_the_first_queries_and_their_judgments(dataset_dir: Path) -> None:
    data = load_beir_folder(dataset_dir).limited(2)
    assert [q.id for q in data.queries] == ["q1", "q2"]
    assert set(data.qrels) == {"q1", "q2"}
    assert len(data.corpus) == 8  # the corpus is never limited


def test_queries_without_any_judgment_are_an_error_not_an_empty_score(dataset_dir: Path) -> None:
    (dataset_dir / "qrels.tsv").write_text("x1\tp1\t1\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match="none of the 4 queries"):
        load_beir_folder(dataset_dir)
