"""Search defaults: mode, top-k, candidates, fusion, exact matches, request bounds; a request may
override the search ones."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, model_validator

from ragsift.config.concern import Concern

RetrievalMode = Literal["dense", "sparse", "hybrid"]
FusionMethod = Literal["rrf", "weighted", "zscore"]


class RetrievalSettings(Concern):
    """Retrieval."""

    mode: RetrievalMode = Field(
        default="hybrid",
        description="channels searched: dense (embeddings), sparse (BM25) or hybrid (both, "
        "fused)",
    )
    top_k: int = Field(default=5, ge=1, le=200, description="results returned; at most candidate_k")
    candidate_k: int = Field(
        default=30, ge=1, le=1000,
        description="fused candidates kept for rerank and the later stages",
    )
    channel_k: int = Field(
        default=100, ge=1, le=1000, description="candidates each channel returns before fusion"
    )
    # Defaults chosen on the dev queries of four labelled sets (docs/quality.md): z-score
    # convex fusion with BM25 at 0.7 of dense over 100 candidates per channel was the one
    # configuration at or above every set's target; plain RRF 1/1 lost to dense alone on two.
    fusion: FusionMethod = Field(
        default="zscore",
        description="how the channels' lists are fused: rrf (reciprocal rank), weighted "
        "(min-max scores) or zscore (z-scores), weighted by dense_weight and "
        "sparse_weight",
    )
    rrf_k: int = Field(
        default=60, ge=1,
        description="the k of reciprocal rank fusion: a hit at rank r scores 1/(k + r)",
    )
    dense_weight: float = Field(
        default=1.0, ge=0,
        description="weight of the dense channel in fusion",
    )
    sparse_weight: float = Field(
        default=0.7, ge=0,
        description="weight of the BM25 channel in fusion (not both weights 0)",
    )
    use_tuned_fusion: bool = Field(
        default=False,
        description="use the fusion `ragsift tune` fitted to a KB (where one is stored) instead of "
        "the fusion settings above; a request may opt in or out itself",
    )
    # Rare exact matches (issue 34, docs/quality.md "Exact identifiers"): a short BM25 list is
    # normalised as if channel_k long with score 0 for the rest, and a candidate holding a
    # query term the KB holds in few chunks is kept on top, whatever the fusion method.
    fusion_pad_short_lists: bool = Field(
        default=True, description="z-score and min-max fusion normalise a BM25 list shorter "
        "than channel_k as if padded with score-0 hits (its only hit keeps its meaning)")
    exact_match_max_df: int = Field(
        default=3, ge=0, le=1000, description="a query term (a code, number or name) held by "
        "at most this many chunks of the KB puts the candidates holding it first; 0 = off")
    exact_match_words: bool = Field(
        default=False, description="the exact-match lane counts rare Latin words of 4+ letters "
        "(names) too, not only terms with a digit; off: on English prose (scifact) rare words "
        "were not the answer's (docs/quality.md)")
    min_score: float | None = Field(
        default=None,
        description=(
            "drop hits scoring below this; compared with the rerank score when rerank ran, "
            "else with the fusion score. zscore scores are weighted sums of z-scores (about -2 "
            "to 5; a hit one standard deviation above both lists' means scores 1 + 0.7). RRF "
            "scores top out near n_lists/(rrf_k+1): 2/61 = 0.0328 with two lists and k=60"
        ),
    )
    max_query_chars: int = Field(
        default=1000, ge=1,
        description="characters of a query; a longer one is refused",
    )
    max_document_ids: int = Field(
        default=50, ge=1,
        description="document ids a search may be restricted to",
    )
    search_max_kbs: int = Field(
        default=8, ge=1, le=64,
        description="KBs one search (`kbs`) may name",
    )

    @model_validator(mode="after")
    def _retrieval_checks(self) -> Self:
        if self.top_k > self.candidate_k:
            raise ValueError(
                f"top_k ({self.top_k}) must not exceed candidate_k ({self.candidate_k})"
            )
        if self.dense_weight == 0 and self.sparse_weight == 0:
            raise ValueError("dense_weight and sparse_weight cannot both be 0")
        return self
