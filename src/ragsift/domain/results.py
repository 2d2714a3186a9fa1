"""What retrieval returns: channel hits, fused candidates and final results."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from ragsift.domain.assets import AssetRef
from ragsift.domain.models import Locator
from ragsift.domain.trace import RetrievalTrace


class ChannelHit(BaseModel):
    """One hit of one channel (dense or sparse); its rank is its position in the list."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    document_id: str
    score: float


class RankedList(BaseModel):
    """A ranked list from one (channel x variant), named like `dense:original`."""

    model_config = ConfigDict(frozen=True)

    name: str
    hits: tuple[ChannelHit, ...]

    @property
    def channel(self) -> str:
        return self.name.split(":", 1)[0]


class FusedHit(BaseModel):
    """A candidate after fusion, with its per-channel best ranks and raw scores."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    document_id: str
    fusion_score: float
    best_rank: int
    ranks: dict[str, int]
    scores: dict[str, float]
    retrieval_sources: tuple[str, ...]

    def channel_hit(self, channel: str) -> tuple[int, float] | None:
        """(best rank, its raw score) this chunk had in any list of `channel` (dense/sparse)."""
        best: tuple[int, float] | None = None
        for name, rank in self.ranks.items():
            if (best is None or rank < best[0]) and name.split(":", 1)[0] == channel:
                best = (rank, self.scores[name])
        return best

    def channel_rank(self, channel: str) -> int | None:
        """Best rank this chunk had in any list of `channel` (dense/sparse), if any."""
        best = self.channel_hit(channel)
        return None if best is None else best[0]

    def channel_score(self, channel: str) -> float | None:
        """Raw score that went with `channel_rank(channel)`."""
        best = self.channel_hit(channel)
        return None if best is None else best[1]


class RetrievalHit(BaseModel):
    """One piece of evidence returned to the caller."""

    model_config = ConfigDict(frozen=True)

    rank: int
    chunk_id: str
    document_id: str
    filename: str
    text: str
    heading_path: tuple[str, ...]
    locator: Locator
    parent_id: str | None
    dense_rank: int | None
    dense_score: float | None
    sparse_rank: int | None
    sparse_score: float | None
    fusion_score: float
    rerank_score: float | None = None
    # calibrated 0..1 (ragsift.retrieval.relevance): monotone in fusion_score within a request;
    # None only in hits built elsewhere
    relevance: float | None = None
    retrieval_sources: tuple[str, ...]
    merged_from: tuple[str, ...] = ()
    # the second dense channel's (USE) rank and cosine, when it was searched and found the hit
    second_dense_rank: int | None = None
    second_dense_score: float | None = None
    context_chunk_ids: tuple[str, ...] = ()
    context_text: str | None = None
    # the images the chunk's text belongs with (GET /api/assets/{id} serves them)
    assets: tuple[AssetRef, ...] = ()
    # the document's metadata (JSON form: dates as {"$date": ...}), as the user set it;
    # every search fills it ({} for none), None only in hits built elsewhere
    metadata: dict[str, Any] | None = None
    # the knowledge base the hit comes from (a search over several names each hit's)
    kb_id: str | None = None


class FaqHit(BaseModel):
    """One FAQ entry found for a query; `direct_answer` marks a high-confidence standard answer."""

    model_config = ConfigDict(frozen=True)

    rank: int
    faq_id: str
    question: str
    answer: str
    source: str | None
    dense_rank: int | None
    dense_score: float | None
    sparse_rank: int | None
    sparse_score: float | None
    fusion_score: float
    retrieval_sources: tuple[str, ...]
    direct_answer: bool = False


class RetrievalResult(BaseModel):
    """The evidence chosen for one query and the trace of how it was chosen.

    `hits` are document chunks only; FAQ entries come separately in `faq_hits`.
    """

    model_config = ConfigDict(frozen=True)

    hits: tuple[RetrievalHit, ...]
    trace: RetrievalTrace
    faq_hits: tuple[FaqHit, ...] = ()
