"""The CLI's tables: the second dense channel's score columns when it was searched, and the
switches the command line asked for beside those that were on and ran."""

from __future__ import annotations

from rich.console import Console

from chat.chat_factories import hit, trace
from ragsift.cli.render import render_scores, render_trace
from ragsift.domain.results import RetrievalResult
from ragsift.domain.trace import ChannelRun, Switches


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


def _trace_text(asked: dict[str, bool | None] | None) -> str:
    console = Console(record=True, width=240)
    # the settings' defaults: rewrite, rerank and Small2Big on; only Small2Big could run
    ran = trace().model_copy(update={
        "switches_requested": Switches(rewrite=True, rerank=True, small2big=True),
        "switches_applied": Switches(small2big=True)})
    render_trace(console, ran, asked)
    return console.export_text()


def _row(text: str, label: str) -> str:
    return next(line for line in text.splitlines() if label in line).split(label)[1].strip(" │|")


def test_explain_says_no_switch_was_asked_when_the_command_line_set_none() -> None:
    text = _trace_text({"rewrite": None, "rerank": None, "small2big": None, "auto_merge": None})

    assert _row(text, "switches asked") == "none"
    assert _row(text, "switches on / ran") == "rewrite, rerank, small2big / small2big"


def test_explain_lists_the_switches_the_command_line_set_on_and_off() -> None:
    text = _trace_text({"rewrite": None, "rerank": True, "small2big": False,
                        "auto_merge": None})

    assert _row(text, "switches asked") == "rerank, no small2big"
