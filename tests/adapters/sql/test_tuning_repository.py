"""Fitted fusion settings are stored with their knowledge base, replaced, and deleted with it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from adapters.sql.sql_factories import make_kb
from ragsift.adapters.sql import SqlRepository
from ragsift.domain.errors import NotFound
from ragsift.domain.tuning import TunedFusion


def tuned(kb_id: str = "kb1", sparse_weight: float = 0.3) -> TunedFusion:
    return TunedFusion(
        kb_id=kb_id, fusion="weighted", dense_weight=1.0, sparse_weight=sparse_weight,
        channel_k=50, rrf_k=60, metric="ndcg@10", queries=40, folds=5,
        baseline="rrf w=1/1 widths=30/30 k=60", baseline_score=0.5, tuned_score=0.6,
        cv_gain=0.05, cv_gain_spread=0.01, tuned_at=datetime(2026, 11, 30, 9, 0, tzinfo=UTC),
    )


def test_a_kb_never_tuned_has_no_fitted_fusion(repo: SqlRepository) -> None:
    repo.create_kb(make_kb())
    assert repo.get_tuned_fusion("kb1") is None


def test_saved_fusion_reads_back_equal_and_a_second_save_replaces_it(
    repo: SqlRepository,
) -> None:
    repo.create_kb(make_kb())
    repo.save_tuned_fusion(tuned())
    assert repo.get_tuned_fusion("kb1") == tuned()
    repo.save_tuned_fusion(tuned(sparse_weight=0.7))
    stored = repo.get_tuned_fusion("kb1")
    assert stored is not None and stored.sparse_weight == 0.7


def test_saving_for_an_unknown_kb_is_not_found(repo: SqlRepository) -> None:
    with pytest.raises(NotFound):
        repo.save_tuned_fusion(tuned("nope"))


def test_deleting_the_kb_deletes_its_fitted_fusion(repo: SqlRepository) -> None:
    repo.create_kb(make_kb())
    repo.save_tuned_fusion(tuned())
    repo.delete_kb("kb1")
    repo.create_kb(make_kb())  # same id again: nothing left over
    assert repo.get_tuned_fusion("kb1") is None
