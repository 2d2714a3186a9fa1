"""Cross-lingual queries (ragsift.retrieval.cross_lingual) and the second dense channel."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ragsift.config.concern import Concern


class CrossLingualSettings(Concern):
    """Cross-lingual search."""

    # cross-lingual queries (ragsift.retrieval.cross_lingual): the rewrite stage's one variant
    # is a translation when little of the KB is in the query's script
    cross_lingual: bool = Field(
        default=True, description="translate a query whose script covers little of the KB "
        "(needs a rewriter; runs even when rewrite is off)",
    )
    cross_lingual_min_share: float = Field(
        default=0.5, ge=0, le=1, description="the least share of the KB's text (CJK characters "
        "vs Latin words) in the query's script that needs no translation",
    )
    cross_lingual_mixed_share: float = Field(
        default=0.1, gt=0, le=1, description="a KB holding at least this share of its "
        "sampled documents in the other language than a query's is mixed: the second dense "
        "channel searches that language's chunks for the query (1: only a KB wholly in it)",
    )
    cross_lingual_sample_documents: int = Field(
        default=20, ge=1, le=1000, description="documents sampled for a KB's script share"
    )
    cross_lingual_sample_chars: int = Field(
        default=2000, ge=100, description="characters read per sampled document"
    )
    cross_lingual_ttl_s: float = Field(
        default=600.0, ge=0, description="how long a KB's sampled script share is reused"
    )
    # the second dense channel (USE multilingual, the `use` extra): the embedded index encodes
    # every chunk with it too (~+5% of e5's ingest CPU); searched for the queries chosen below
    second_dense: Literal["auto", "use", "off"] = Field(
        default="auto", description="a second dense channel in the embedded index: auto = USE "
        "multilingual when the `use` extra is installed; use = required; off",
    )
    second_dense_queries: Literal["cross-lingual", "all"] = Field(
        default="cross-lingual", description="which queries search it: those whose script "
        "covers little of the KB (RAGSIFT_CROSS_LINGUAL_MIN_SHARE), or all",
    )
    # 2: on the samples, 1 left most English questions' Chinese answers below the top 3 and 3
    # pushed a same-language answer down (docs/quality.md, research/second_dense_weights.py)
    second_dense_weight: float = Field(
        default=2.0, ge=0, description="its fusion weight for a cross-lingual query"
    )
    second_dense_mixed_weight: float = Field(
        default=1.0, ge=0, description="its fusion weight for a query over a mixed KB "
        "(RAGSIFT_CROSS_LINGUAL_MIXED_SHARE), its list holding the other language's chunks",
    )
    second_dense_all_weight: float = Field(
        default=0.2, ge=0, description="its fusion weight for other queries (with `all`)"
    )
