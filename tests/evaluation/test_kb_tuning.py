"""Fitting a KB's fusion: label resolution, the grid, and the choice over channel lists."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import pytest

from ragsift.config import Settings
from ragsift.domain.errors import InvalidInput
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.models import Document, DocumentStatus, KnowledgeBase
from ragsift.domain.results import ChannelHit
from ragsift.evaluation.datasets import EvalQuery
from ragsift.evaluation.fusion_tuning import FusionConfig
from ragsift.evaluation.kb_tuning import FusionTuner, baseline_config, resolve_labels, tuning_grid
from ragsift.ports import Vectors


def document(doc_id: str, filename: str) -> Document:
    return Document(id=doc_id, kb_id="kb", filename=filename, media_type="text/plain",
                    sha256=None, size=1, status=DocumentStatus.READY)


def test_labels_resolve_by_document_id_filename_and_chunk_id() -> None:
    documents = [document("d1", "a.md"), document("d2", "b.md"), document("d3", "b.md")]
    qrels = {"q1": {"d1": 1, "a.md": 2, "c9": 1, "b.md": 1, "ghost": 3}}
    resolved, unknown = resolve_labels(qrels, documents, {"c9": "d2"})
    # a.md is d1 (highest grade kept); b.md names two documents, so only its chunk resolves
    assert resolved == {"q1": {"d1": 2, "d2": 1}}
    assert unknown == ["b.md", "ghost"]


def test_the_grid_has_equal_widths_the_baseline_and_no_zero_weight_rrf() -> None:
    baseline = baseline_config(Settings())
    configs = tuning_grid(baseline)
    assert baseline in configs and baseline == FusionConfig("zscore", 1.0, 0.7, 100, 100, 60)
    assert all(c.dense_k == c.sparse_k for c in configs)
    assert all(c.sparse_weight > 0 for c in configs if c.method == "rrf")
    assert FusionConfig("weighted", 1.0, 0.0, 100, 100) in configs  # dense order
    # weighted and zscore at 7 weights, rrf at 6 weights and two k, per width; the
    # default baseline (zscore 1/0.7 at 100) is one of them
    assert len(configs) == 3 * (7 + 7 + 6 * 2)


class ListsIndex:
    """Serves fixed dense and sparse lists per query text (the code under test is the tuner)."""

    def __init__(self, lists: dict[str, tuple[list[str], list[str]]]) -> None:
        self._lists = lists
        self._last_query = ""

    def _hits(self, docs: Sequence[str], limit: int) -> list[ChannelHit]:
        return [ChannelHit(chunk_id=f"c-{d}", document_id=d, score=1.0 - i / 100)
                for i, d in enumerate(docs[:limit])]

    def search_dense(self, vector: Vectors, search_filter: SearchFilter, limit: int
                     ) -> list[ChannelHit]:
        return self._hits(self._lists[self._last_query][0], limit)

    def search_sparse(self, query: str, search_filter: SearchFilter, limit: int
                      ) -> list[ChannelHit]:
        return self._hits(self._lists[query][1], limit)

    def upsert(self, records: Sequence[IndexRecord], vectors: Vectors) -> None: ...
    def delete_chunks(self, chunk_ids: Iterable[str]) -> None: ...
    def delete_document(self, document_id: str) -> None: ...
    def count(self) -> int: return 0
    def close(self) -> None: ...


class RecordingEmbedder:
    """Remembers the query so ListsIndex.search_dense knows which list to serve."""

    model_id = "fake"
    dimension = 2

    def __init__(self, index: ListsIndex) -> None:
        self._index = index

    def count_tokens(self, text: str) -> int:
        return len(text)

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        return np.zeros((len(texts), 2), dtype=np.float32)

    def embed_query(self, text: str) -> Vectors:
        self._index._last_query = text
        return np.zeros(2, dtype=np.float32)


KB = KnowledgeBase(id="kb", name="kb", embedding_model="fake", embedding_dim=2)


def test_the_tuner_keeps_the_best_fusion_and_reports_held_out_gain() -> None:
    # Dense has the relevant r third, sparse first; x is first in dense and second in sparse.
    # Baseline RRF 1/1 (k=60): x = 1/61 + 1/62 > r = 1/63 + 1/61, so r is second. Convex
    # fusion (min-max) puts r first once the sparse weight exceeds the dense one.
    lists = {f"q{i}": ([f"x{i}", f"y{i}", f"r{i}"], [f"r{i}", f"x{i}"]) for i in range(10)}
    index = ListsIndex(lists)
    queries = [EvalQuery(f"q{i}", f"q{i}") for i in range(10)]
    qrels = {f"q{i}": {f"r{i}": 1} for i in range(10)}
    tuner = FusionTuner(index, RecordingEmbedder(index), Settings(), folds=2)
    result = tuner.tune(KB, queries, qrels)
    tuned = result.tuned
    assert tuned.tuned_score == 1.0 and tuned.queries == 10 and tuned.folds == 2
    # equal weights tie x and r, and the tie goes to r's chunk id; among the configurations
    # that score 1.0 the first of the grid (narrowest width, lowest weight) is kept
    assert (tuned.fusion, tuned.sparse_weight, tuned.channel_k) == ("weighted", 1.0, 20)
    assert tuned.baseline_score == pytest.approx(1 / math.log2(3))
    assert result.cross_validation.held_out == (1.0, 1.0)
    assert tuned.cv_gain == pytest.approx(1 - 1 / math.log2(3)) and tuned.cv_gain_spread == 0


def test_the_tuner_refuses_too_few_queries_a_bad_metric_and_one_fold() -> None:
    index = ListsIndex({})
    with pytest.raises(InvalidInput, match="at least 2 folds"):
        FusionTuner(index, RecordingEmbedder(index), Settings(), folds=1)
    with pytest.raises(InvalidInput, match="metric must be one of"):
        FusionTuner(index, RecordingEmbedder(index), Settings(), metric="ndcg@7")
    tuner = FusionTuner(index, RecordingEmbedder(index), Settings(), folds=5)
    with pytest.raises(InvalidInput, match="needs at least 10"):
        tuner.tune(KB, [EvalQuery("q1", "q1")], {"q1": {"d": 1}})
