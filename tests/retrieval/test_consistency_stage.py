import asyncio
from collections.abc import Sequence

from ragsift.config import Settings
from ragsift.domain.models import Chunk
from ragsift.domain.requests import SearchRequest
from ragsift.domain.results import FusedHit
from ragsift.retrieval.candidates import Candidate, StageContext
from ragsift.retrieval.consistency_stage import ConsistencyStage
from ragsift.retrieval.options import resolve_options


def candidate(chunk_id: str, text: str, score: float) -> Candidate:
    chunk = Chunk(id=chunk_id, document_id="d" + chunk_id, kb_id="kb", parent_id=None, level=1,
                  ordinal=0, text=text, token_count=len(text))
    fused = FusedHit(chunk_id=chunk_id, document_id="d" + chunk_id, fusion_score=score,
                     best_rank=1, ranks={}, scores={}, retrieval_sources=("dense",))
    return Candidate(fused=fused, chunk=chunk, filename="f.txt")


def context(settings: Settings | None = None) -> StageContext:
    """The stage's switch comes from the request's options (the settings' default)."""
    settings = settings or Settings(consistency_rescoring=True)
    options = resolve_options(SearchRequest(kb_id="kb", query="q"), settings)
    return StageContext(kb_id="kb", options=options, version=None, query_tokens=0)


CANDIDATES = [candidate("a", "打完狂犬疫苗30天能喝酒吗", 2.0),
              candidate("b", "打完狂犬疫苗多久能喝酒", 1.5)]


def run(stage: ConsistencyStage, query: str, candidates: Sequence[Candidate]) -> list[str]:
    outcome = asyncio.run(stage.run(query, candidates, context()))
    return [c.chunk.id for c in outcome.candidates]


def test_the_stage_is_off_unless_switched_on() -> None:
    outcome = asyncio.run(ConsistencyStage(Settings()).run(
        "打完狂犬疫苗3天能喝酒吗", CANDIDATES, context(Settings())))
    assert not outcome.ran and [c.chunk.id for c in outcome.candidates] == ["a", "b"]


def test_a_contradicting_number_lowers_the_fusion_score_and_is_traced() -> None:
    stage = ConsistencyStage(Settings(consistency_rescoring=True))
    outcome = asyncio.run(stage.run("打完狂犬疫苗3天能喝酒吗", CANDIDATES, context()))
    assert [c.chunk.id for c in outcome.candidates] == ["b", "a"]
    assert outcome.candidates[1].fused.fusion_score == 1.0
    assert outcome.trace.detail == {"penalised": 1, "notes": "a: number 3天->30天 -1"}


def test_swaps_use_the_kbs_idf_from_term_stats() -> None:
    asked: list[tuple[str, list[str]]] = []

    def stats(kb_id: str, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        asked.append((kb_id, list(terms)))
        return 1000, {"胃炎": 1}  # rare: idf about 6.5

    settings = Settings(consistency_rescoring=True, consistency_swap_penalty=1.0)
    swapped = [candidate("x", "肠炎能吃核桃吗", 2.0), candidate("y", "胃炎吃什么", 1.5)]
    assert run(ConsistencyStage(settings, stats), "胃炎能吃核桃吗", swapped) == ["y", "x"]
    assert asked == [("kb", ["胃炎"])]
    common = ConsistencyStage(settings, lambda kb, terms: (1000, {"胃炎": 900}))
    assert run(common, "胃炎能吃核桃吗", swapped) == ["x", "y"]
