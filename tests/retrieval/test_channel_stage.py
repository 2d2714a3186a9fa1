"""When the second dense channel is searched and at what weight; how bootstrap wires it."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsift.bootstrap import build_search_index, second_dense_encoder
from ragsift.config import Settings
from ragsift.retrieval.channel_stage import SecondDensePolicy
from ragsift.retrieval.cross_lingual import CrossLingual

CROSS = CrossLingual(target="zh", query_share=0.0, kb_share=0.8)
SAME = CrossLingual(target=None, query_share=1.0, kb_share=0.8)


def test_cross_lingual_policy_searches_only_cross_lingual_queries_at_their_weight() -> None:
    policy = SecondDensePolicy("cross-lingual", cross_lingual_weight=1.0, other_weight=0.2)
    assert policy.weight(CROSS) == 1.0
    assert policy.weight(SAME) is None
    assert policy.weight(None) is None  # not decided: not searched


def test_all_policy_searches_every_query_with_the_other_weight_unless_cross_lingual() -> None:
    policy = SecondDensePolicy("all", cross_lingual_weight=1.0, other_weight=0.2)
    assert policy.weight(CROSS) == 1.0
    assert policy.weight(SAME) == 0.2
    assert policy.weight(None) == 0.2


def test_the_second_channel_can_be_switched_off(tmp_path: Path) -> None:
    assert second_dense_encoder(Settings(data_dir=tmp_path, second_dense="off")) is None


def test_requiring_the_second_channel_with_the_milvus_index_is_a_clear_error(
    tmp_path: Path,
) -> None:
    settings = Settings(data_dir=tmp_path, second_dense="use",
                        index_uri=str(tmp_path / "milvus.db"))
    with pytest.raises(ValueError, match="needs the embedded index"):
        build_search_index(settings, "chunks", 384)


def test_the_faq_index_has_no_second_channel(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, second_dense="auto")
    faq = build_search_index(settings, "faq", 384)
    try:
        assert faq.second_dense_model is None  # type: ignore[attr-defined]
    finally:
        faq.close()


def test_a_request_can_force_the_second_channel_on_or_off_whatever_the_policy() -> None:
    policy = SecondDensePolicy("cross-lingual", cross_lingual_weight=1.0, other_weight=0.2)
    assert policy.weight(SAME, requested=True) == 0.2
    assert policy.weight(CROSS, requested=True) == 1.0
    assert policy.weight(CROSS, requested=False) is None
    assert policy.weight(SAME, requested=None) is None


MIXED = CrossLingual(target=None, query_share=1.0, kb_share=0.8, mixed="en", zh_documents=0.5)


def test_a_mixed_kb_searches_the_other_languages_chunks_at_the_mixed_weight() -> None:
    policy = SecondDensePolicy("cross-lingual", cross_lingual_weight=2.0, other_weight=0.2,
                               mixed_weight=1.0)
    assert (policy.weight(MIXED), policy.language(MIXED)) == (1.0, "en")
    assert (policy.weight(CROSS), policy.language(CROSS)) == (2.0, None)  # the whole list
    assert (policy.weight(SAME), policy.language(SAME)) == (None, None)
    assert policy.weight(MIXED, requested=False) is None


def test_without_a_mixed_weight_a_mixed_kb_is_searched_as_any_other() -> None:
    policy = SecondDensePolicy("cross-lingual", cross_lingual_weight=2.0, other_weight=0.2)
    assert (policy.weight(MIXED), policy.language(MIXED)) == (None, None)
    every = SecondDensePolicy("all", cross_lingual_weight=2.0, other_weight=0.2)
    assert (every.weight(MIXED), every.language(MIXED)) == (0.2, None)
