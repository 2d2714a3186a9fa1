"""The script rules of cross-lingual queries, and the KB sample's cache (ragsift.retrieval.
cross_lingual), without models: the samples KB test is test_cross_lingual.py."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from ragsift.domain.models import CHILD_LEVEL, Chunk, Document, DocumentStatus
from ragsift.retrieval.cross_lingual import KbScripts, cjk_share, translation_target


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
