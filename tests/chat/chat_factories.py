"""Values shared by the chat tests: evidence items, a retrieval trace and result."""

from __future__ import annotations

from ragsift.domain.chat import Evidence
from ragsift.domain.models import Locator
from ragsift.domain.results import RetrievalHit, RetrievalResult
from ragsift.domain.trace import RetrievalTrace

HOTEL = ("The hotel limit per night is 150 dollars in most cities. In London and Tokyo the "
         "hotel limit per night rises to 220 dollars.")
LEAVE = "员工每年享有十五天带薪年假。未休完的年假最多可结转五天到下一年。"
FIRMWARE = "Firmware v2.4.1 fixes error E-104 when Wi-Fi authentication fails."


def evidence(n: int, text: str = HOTEL, filename: str = "hotels.md") -> Evidence:
    return Evidence(
        n=n, chunk_id=f"chunk{n}", document_id=f"doc{n}", filename=filename,
        heading_path=("Travel policy", "Hotels"), locator=Locator(page=n), text=text,
        context_text=None, score=round(1 / (60 + n), 6),
    )


def trace(query: str = "hotel limit", kb_id: str = "kb1") -> RetrievalTrace:
    return RetrievalTrace(request_id="r1", kb_id=kb_id, query=query, mode="hybrid", fusion="rrf")


def hit(rank: int, text: str, filename: str = "hotels.md", page: int | None = 1) -> RetrievalHit:
    return RetrievalHit(
        rank=rank, chunk_id=f"chunk{rank}", document_id=f"doc{rank}", filename=filename,
        text=text, heading_path=("Policy",), locator=Locator(page=page), parent_id=None,
        dense_rank=rank, dense_score=0.9, sparse_rank=None, sparse_score=None,
        fusion_score=round(1 / (60 + rank), 6), retrieval_sources=("dense:original",),
    )


def result(*texts: str, query: str = "hotel limit", kb_id: str = "kb1") -> RetrievalResult:
    hits = tuple(hit(rank, text) for rank, text in enumerate(texts, start=1))
    return RetrievalResult(hits=hits, trace=trace(query, kb_id).model_copy(
        update={"returned_count": len(hits)}
    ))
