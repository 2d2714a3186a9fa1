"""The script rules of cross-lingual queries, and the KB sample's cache (ragsift.retrieval.
cross_lingual), without models: the samples KB test is test_cross_lingual.py."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

from ragsift.domain.models import CHILD_LEVEL, Chunk, Document, DocumentStatus
from ragsift.retrieval.cross_lingual import (
    KbScripts,
    cjk_share,
    mixed_language,
    translation_target,
)


def test_cjk_share_counts_a_cjk_character_and_a_latin_word_as_one_unit_each() -> None:
    assert cjk_share("年假") == 1.0
    assert cjk_share("annual leave") == 0.0
    assert cjk_share("年假 annual leave") == pytest.approx(0.5)  # 2 characters, 2 words
    assert cjk_share("2024-06-18 !") is None  # digits and punctuation are neither


@pytest.mark.parametrize(("query_share", "kb_share", "expected"), [
    (0.0, 0.9, "zh"),   # English question, Chinese KB
    (1.0, 0.1, "en"),   # Chinese question, English KB
    (0.0, 0.3, None),   # English question, mostly English KB
    (1.0, 0.64, None),  # Chinese question, mostly Chinese KB
    (0.0, None, None),  # a KB without text yet
    (None, 0.9, None),  # a query of digits only
])
def test_translation_target_is_the_other_script_when_most_of_the_kb_is_in_it(
    query_share: float | None, kb_share: float | None, expected: str | None
) -> None:
    assert translation_target(query_share, kb_share, 0.5) == expected


def test_min_share_sets_how_little_of_the_kb_in_the_query_script_still_needs_no_translation(
) -> None:
    assert translation_target(0.0, 0.64, 0.5) == "zh"  # 36% English
    assert translation_target(0.0, 0.64, 0.3) is None


@dataclass
class _Repository:
    """The two repository reads KbScripts makes, counted."""

    texts: dict[str, str]
    reads: list[str] = field(default_factory=list)

    def list_documents(self, kb_id: str, status: DocumentStatus | None = None) -> list[Document]:
        self.reads.append(kb_id)
        assert status is DocumentStatus.READY
        return [Document(id=name, kb_id=kb_id, filename=name, media_type="text/plain",
                         sha256=None, size=1, status=DocumentStatus.READY)
                for name in self.texts]

    def list_chunks(self, document_id: str) -> list[Chunk]:
        text = self.texts[document_id]
        parent = Chunk(id=f"{document_id}-p", document_id=document_id, kb_id="kb",
                       parent_id=None, level=0, ordinal=0, text="English parent text " * 50,
                       token_count=1)
        child = Chunk(id=f"{document_id}-c", document_id=document_id, kb_id="kb",
                      parent_id=None, level=CHILD_LEVEL, ordinal=0, text=text, token_count=1)
        return [parent, child]


def test_the_kb_share_is_sampled_from_child_chunks_once_per_ttl() -> None:
    repository = _Repository({"a": "年假 病假 事假", "b": "年假"})
    now = [0.0]
    scripts = KbScripts(repository, sample_documents=20, sample_chars=2000,  # type: ignore[arg-type]
                        ttl_s=60, clock=lambda: now[0])

    assert scripts.share("kb") == 1.0  # parents (English here) are not read
    now[0] = 59.0
    assert scripts.share("kb") == 1.0
    assert repository.reads == ["kb"]
    now[0] = 61.0
    scripts.share("kb")
    assert repository.reads == ["kb", "kb"]


def test_the_sample_spreads_over_the_kb_and_reads_at_most_sample_chars_per_document() -> None:
    texts = {f"d{i}": ("年" * 10 if i % 2 else "word " * 10) for i in range(10)}
    scripts = KbScripts(_Repository(texts), sample_documents=5, sample_chars=5,  # type: ignore[arg-type]
                        ttl_s=60)
    # every other document: d0, d2, ... are all English, 5 characters each ("word ")
    assert scripts.share("kb") == 0.0


def test_a_kb_whose_older_documents_are_english_still_samples_its_chinese_third() -> None:
    # 26 English documents ingested first, then 13 Chinese ones: a third of the KB. The old
    # sample (a slice step of 39 // 20 = 1, the first 20) read only English: kb_cjk_share=0.0
    texts = {f"en{i:02}": "the travel policy sets a meal allowance " * 5 for i in range(26)}
    texts.update({f"zh{i:02}": "员工手册规定了年假和病假的天数" * 3 for i in range(13)})
    scripts = KbScripts(_Repository(texts), sample_documents=20, sample_chars=2000,  # type: ignore[arg-type]
                        ttl_s=60)

    share = scripts.share("kb")

    assert share is not None and share > 0.3
    languages = scripts.languages("kb")
    assert languages.documents == 20
    assert languages.zh_documents == pytest.approx(6 / 20)  # every 39/20th document


def test_the_kb_sample_is_read_again_when_the_kb_version_changes() -> None:
    repository = _Repository({"a": "annual leave"})
    now = [0.0]
    scripts = KbScripts(repository, sample_documents=20, sample_chars=2000,  # type: ignore[arg-type]
                        ttl_s=600, clock=lambda: now[0])

    assert scripts.share("kb", version=3) == 0.0
    repository.texts["b"] = "年假 病假 事假 婚假 产假"  # ingested: the KB's version moves on
    assert scripts.share("kb", version=3) == 0.0  # same version: the cached sample
    assert scripts.share("kb", version=4) == pytest.approx(10 / 12)
    assert repository.reads == ["kb", "kb"]


@pytest.mark.parametrize(("query_share", "zh_documents", "expected"), [
    (1.0, 0.5, "en"),   # a Chinese question, half the documents English
    (0.0, 0.5, "zh"),   # an English question, half the documents Chinese
    (1.0, 0.95, None),  # 5% English: below the share
    (0.0, 0.0, None),   # an English question over English documents only
    (1.0, 1.0, None),   # a Chinese question over Chinese documents only
    (None, 0.5, None),  # a query of digits only
    (1.0, None, None),  # a KB without text yet
])
def test_a_kb_is_mixed_for_a_query_when_enough_of_its_documents_are_in_the_other_language(
    query_share: float | None, zh_documents: float | None, expected: str | None,
) -> None:
    assert mixed_language(query_share, zh_documents, 0.1) == expected


def test_the_decision_names_the_mixed_kbs_other_language_only_when_no_translation_is_due(
) -> None:
    half = {"en": "the travel policy sets a meal allowance " * 5, "zh": "员工手册规定年假" * 5}
    scripts = KbScripts(_Repository(half), sample_documents=20, sample_chars=2000,  # type: ignore[arg-type]
                        ttl_s=60)

    decided = asyncio.run(scripts.decide("kb", "出差的餐补标准是多少？", 0.5, 0.1))
    assert (decided.target, decided.mixed, decided.zh_documents) == (None, "en", 0.5)
    assert decided.detail()["mixed_kb_other"] == "en"
    without = asyncio.run(scripts.decide("kb", "出差的餐补标准是多少？", 0.5))
    assert without.mixed is None  # no mixed share asked (no second dense channel)
    english = KbScripts(_Repository({"en": half["en"]}), sample_documents=20,  # type: ignore[arg-type]
                        sample_chars=2000, ttl_s=60)
    minority = asyncio.run(english.decide("kb", "出差的餐补标准是多少？", 0.5, 0.1))
    assert (minority.target, minority.mixed) == ("en", None)  # the minority rule wins
