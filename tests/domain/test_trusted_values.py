"""TrustedBuilder: unvalidated construction that must equal pydantic's own, field by field."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ragsift.domain.models import Chunk, KnowledgeBase, Locator
from ragsift.domain.results import FusedHit, RetrievalHit
from ragsift.domain.trusted import TrustedBuilder

CHUNK = {
    "id": "c1", "document_id": "d1", "kb_id": "kb1", "parent_id": "p1", "level": 1,
    "ordinal": 4, "heading_path": ("Travel", "Hotels"), "text": "hotel limit", "token_count": 3,
    "asset_ids": ("a1",), "valid_from_seq": 2, "valid_to_seq": 0,
}


def test_a_built_chunk_equals_the_validated_one_with_the_same_fields_set() -> None:
    locator = TrustedBuilder(Locator)({"page": 3, "boxes": ((1.0, 2.0, 3.0, 4.0),)})
    built = TrustedBuilder(Chunk)({**CHUNK, "locator": locator})
    validated = Chunk(**CHUNK, locator=Locator(page=3, boxes=((1.0, 2.0, 3.0, 4.0),)))
    assert built == validated
    assert built.model_dump() == validated.model_dump()
    assert built.model_fields_set == validated.model_fields_set
    assert hash(built) == hash(validated)
    assert locator.model_fields_set == {"page", "boxes"}


def test_defaults_fill_the_fields_not_given() -> None:
    built = TrustedBuilder(Chunk)({k: v for k, v in CHUNK.items() if k != "asset_ids"})
    assert built.asset_ids == () and built.locator == Locator()
    assert built == Chunk(**{k: v for k, v in CHUNK.items() if k != "asset_ids"})
    assert "asset_ids" not in built.model_fields_set


def test_a_built_value_stays_frozen() -> None:
    built = TrustedBuilder(Locator)({"page": 1})
    with pytest.raises(ValidationError):
        built.page = 2  # type: ignore[misc]


def test_values_that_do_not_fit_fall_back_to_model_construct() -> None:
    builder = TrustedBuilder(Locator)
    assert builder({"page": 1, "legacy_key": 9}) == Locator.model_construct(page=1, legacy_key=9)
    hit = TrustedBuilder(RetrievalHit)({"rank": 1})  # required fields missing
    assert hit == RetrievalHit.model_construct(rank=1)


def test_a_model_with_a_mutable_default_is_refused() -> None:
    # KnowledgeBase.analyzer defaults to a fresh dict: sharing one would leak between values
    with pytest.raises(TypeError, match="analyzer"):
        TrustedBuilder(KnowledgeBase)


FUSED = {"chunk_id": "c1", "document_id": "d1", "fusion_score": 0.5, "best_rank": 2,
         "ranks": {"dense:original": 2}, "scores": {"dense:original": 0.8},
         "retrieval_sources": ("dense:original",)}


def test_a_model_of_required_fields_only_is_built_from_exactly_its_fields() -> None:
    builder = TrustedBuilder(FusedHit)  # no defaults: the one-comparison path
    values = dict(FUSED)
    built = builder(values)
    assert built == FusedHit(**FUSED)
    assert built.model_fields_set == set(FUSED)
    values["fusion_score"] = 9.0  # the instance holds its own copy of the values
    assert built.fusion_score == 0.5
    short = {k: v for k, v in FUSED.items() if k != "best_rank"}
    assert builder(short) == FusedHit.model_construct(**short)
    assert builder({**FUSED, "extra": 1}) == FusedHit.model_construct(**FUSED, extra=1)
