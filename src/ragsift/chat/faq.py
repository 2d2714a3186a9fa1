"""FAQ entries in a chat turn (DESIGN: "FAQ 提供标准口径").

A direct answer (the plan's route `faq_direct`: the top entry's dense cosine reached
RAGSIFT_FAQ_DIRECT_ANSWER_THRESHOLD within the caller's scope) ends the turn: the answer is
the entry's own answer, word for word, cited as the entry; no model is asked and no document
is shown. Below the threshold, the entries whose cosine reaches
RAGSIFT_CHAT_FAQ_EVIDENCE_MIN_SCORE join the evidence the model sees, before the documents
(the standard wording first). An entry found by BM25 alone has no cosine to judge it by and
stays out: the FAQ search returns its top-k whatever they are, and an unrelated standard
answer in the evidence invites the model to quote it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragsift.chat.citations import citation_link, label_word
from ragsift.domain.chat import FAQ_FILENAME, Evidence
from ragsift.domain.results import FaqHit, RetrievalResult


def faq_evidence(hit: FaqHit, n: int) -> Evidence:
    """A FAQ entry as evidence number `n` (kind "faq"): its question as the heading, its
    answer as the text."""
    return Evidence(
        n=n, chunk_id=hit.faq_id, document_id=hit.faq_id, filename=FAQ_FILENAME,
        heading_path=(hit.question,), text=hit.answer, kind="faq", question=hit.question,
        source=hit.source, score=hit.fusion_score if hit.dense_score is None else hit.dense_score,
        dense_score=hit.dense_score, sparse_score=hit.sparse_score,
        fusion_score=hit.fusion_score,
    )


def direct_answer_hit(result: RetrievalResult) -> FaqHit | None:
    """The entry that answers the turn by itself: the top FAQ hit of a `faq_direct` plan."""
    if result.trace.route.route != "faq_direct" or not result.faq_hits:
        return None
    top = result.faq_hits[0]
    return top if top.direct_answer else None


def supporting_hits(hits: Sequence[FaqHit], min_score: float) -> tuple[FaqHit, ...]:
    """The entries close enough to the question to show the model (dense cosine >= min)."""
    return tuple(hit for hit in hits
                 if hit.dense_score is not None and hit.dense_score >= min_score)


def direct_answer_text(evidence: Evidence, chinese: bool) -> str:
    """The entry's answer as written, then its citation link in the conversation's language."""
    return f"{evidence.text.rstrip()} {citation_link(evidence.n, label_word(chinese))}"
