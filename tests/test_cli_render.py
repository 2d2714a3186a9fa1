"""The CLI's per-hit score table: the second dense channel's columns when it was searched."""

from __future__ import annotations

from rich.console import Console

from chat.chat_factories import hit, trace
from ragsift.cli_render import render_scores
from ragsift.domain.results import RetrievalResult
from ragsift.domain.trace import ChannelRun


def _table(result: RetrievalResult) -> str:
    console = Console(record=True, width=240)
    render_scores(console, result)
    return console.export_text()


def test_the_score_table_shows_the_second_channels_rank_and_score_when_it_ran() -> None:
    found = hit(1, "年假").model_copy(update={
        "second_dense_rank": 2, "second_dense_score": 0.8125,
        "retrieval_sources": ("dense:original", "second_dense:original")})
    missed = hit(2, "病假")
    run = ChannelRun(list_name="second_dense:original", channel="second_dense",
                     variant="original", candidates=2, latency_ms=1.0)
    searched = RetrievalResult(hits=(found, missed),
                               trace=trace().model_copy(update={"channels": (run,)}))

    text = _table(searched)

    assert "2nd dense" in text
    first = next(line for line in text.splitlines() if "chunk1" in line)
    assert "0.8125 #2" in first and "second_dense:original" in first
    second = next(line for line in text.splitlines() if "chunk2" in line)
    assert "0.9000 #2" in second  # dense: score and rank; the channels that missed it: "-"
    assert "2nd dense" not in _table(RetrievalResult(hits=(missed,), trace=trace()))
