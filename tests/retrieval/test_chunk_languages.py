"""ChunkLanguages: a hit's chunk language read from its text once (ragsift.retrieval.
chunk_languages); the mixed-KB search over the real stack is test_cross_lingual_mixed_kb.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from ragsift.domain.models import CHILD_LEVEL, Chunk
from ragsift.domain.results import ChannelHit
from ragsift.retrieval.chunk_languages import ChunkLanguages


@dataclass
class _Repository:
    """get_chunks over a dict of texts, each call's ids recorded."""

    texts: dict[str, str]
    reads: list[list[str]] = field(default_factory=list)

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        self.reads.append(list(chunk_ids))
        return [Chunk(id=i, document_id="d", kb_id="kb", parent_id=None, level=CHILD_LEVEL,
                      ordinal=0, text=self.texts[i], token_count=1)
                for i in chunk_ids if i in self.texts]


def _hits(*ids: str) -> list[ChannelHit]:
    return [ChannelHit(chunk_id=i, document_id="d", score=1.0 - n / 10)
            for n, i in enumerate(ids)]


def test_keep_returns_the_hits_in_one_language_in_their_order() -> None:
    languages = ChunkLanguages(_Repository({  # type: ignore[arg-type]
        "a": "The meal allowance is 60 USD a day.", "b": "每月发放 600 元餐补。",
        "c": "Hotels: 180 USD a night.", "d": "2024-06-18"}))

    kept = languages.keep(_hits("a", "b", "c", "d"), "en")

    assert [hit.chunk_id for hit in kept] == ["a", "c"]  # "d" is neither script
    assert [hit.chunk_id for hit in languages.keep(_hits("a", "b"), "zh")] == ["b"]


def test_a_chunks_language_is_read_once_and_an_unknown_chunk_is_asked_again() -> None:
    repository = _Repository({"a": "annual leave", "b": "年假"})
    languages = ChunkLanguages(repository, capacity=2)  # type: ignore[arg-type]

    assert languages.languages(["a", "b", "x"]) == {"a": "en", "b": "zh", "x": None}
    assert languages.languages(["a", "b", "x"]) == {"a": "en", "b": "zh", "x": None}
    assert repository.reads == [["a", "b", "x"], ["x"]]


def test_the_oldest_languages_are_forgotten_beyond_the_capacity() -> None:
    repository = _Repository({"a": "annual leave", "b": "年假", "c": "sick leave"})
    languages = ChunkLanguages(repository, capacity=2)  # type: ignore[arg-type]

    languages.languages(["a", "b", "c"])
    languages.languages(["a"])

    assert repository.reads == [["a", "b", "c"], ["a"]]
    with pytest.raises(ValueError, match="capacity"):
        ChunkLanguages(repository, capacity=0)  # type: ignore[arg-type]
