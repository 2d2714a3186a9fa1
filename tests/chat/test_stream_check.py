"""Streamed deltas carry the same citation and image check as the final answer: held back
while a link may still be open, together exactly the final answer, however the model splits
its text."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from chat.chat_factories import evidence
from ragsift.chat import assets
from ragsift.chat.assets import validate_answer
from ragsift.chat.citations import trim_unfinished_link
from ragsift.chat.stream_check import CheckedStream, settled_prefix
from ragsift.domain.assets import AssetRef

CHART = AssetRef(id="c" * 32, media_type="image/png", width=640, height=480, caption="chart",
                 page=1)
EVIDENCE = (evidence(1).model_copy(update={"assets": (CHART,)}), evidence(2))
ANSWERS = [
    "Limit 150 [1](citation://1); Tokyo 220 [9](citation://9). Also [Source 2,7](citation://2,7)",
    "a [9](citation://9) b [来源 01](citation://1)\n\n![x](asset://deadbeef)",
    f"See ![chart](asset://{CHART.id}) and asset://bad, [note] (x) [1](citat",
    "ends with a removed link [9](citation://9)  \n",
    "<asset://zz> [](citation:) [2](<citation://2>) as is!",
]


def _streamed(pieces: list[str]) -> tuple[list[str], str]:
    stream = CheckedStream(EVIDENCE)
    sent = [stream.feed(piece) for piece in pieces]
    final = validate_answer(trim_unfinished_link("".join(pieces)), EVIDENCE).answer
    sent.append(stream.finish(final))
    return sent, final


@pytest.mark.parametrize("answer", ANSWERS)
def test_the_deltas_together_are_the_final_answer_however_the_text_is_split(answer: str) -> None:
    splits = [[answer[:cut], answer[cut:]] for cut in range(1, len(answer))]
    splits += [[answer[i : i + size] for i in range(0, len(answer), size)]  # token-like
               for size in range(1, 8)]
    for pieces in splits:
        sent, final = _streamed(pieces)
        assert "".join(sent) == final, pieces


def test_a_marker_to_missing_evidence_is_never_sent_and_text_is_not_held_longer() -> None:
    pieces = ["The limit is 150 [", "9](cit", "ation://9). In Tokyo 220 [1](citation://1)", "."]
    stream = CheckedStream(EVIDENCE)

    sent = [stream.feed(piece) for piece in pieces]

    assert sent == ["The limit is 150", "", ". In Tokyo 220 [1](citation://1)", "."]
    assert "citation://9" not in "".join(sent)


@pytest.mark.parametrize(("raw", "settled"), [
    ("text [来源 1](citati", "text"),
    ("text [note]", "text"),
    ("text [note] more", "text [note] more"),
    ("see ass", "see"),
    ("see asset://abc", "see"),
    ("wow!", "wow"),
    ("done [1](citation://1)  ", "done [1](citation://1)"),
])
def test_the_settled_prefix_stops_before_whatever_may_still_become_a_link(
    raw: str, settled: str,
) -> None:
    assert settled_prefix(raw) == settled


class _CountingPattern:
    """The image-link pattern, counting the characters it is asked to scan."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.scanned = 0

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        self.scanned += len(text)
        return self.pattern.finditer(text)

    def sub(self, replacement: str, text: str) -> str:
        return self.pattern.sub(replacement, text)


def test_the_check_of_a_long_streamed_answer_costs_its_length_not_its_square(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Checking the whole text again at every delta made an 8,000-character answer scan
    ~8,000,000 characters (a 28,000-character one: a minute of event-loop CPU)."""
    line = "The hotel limit is 150 per night in most cities, 220 in Tokyo [来源 1](citation://1).\n"
    answer = line * (8000 // len(line))
    counting = _CountingPattern(assets._ASSET_LINKS)
    monkeypatch.setattr(assets, "_ASSET_LINKS", counting)
    sent, final = _streamed([answer[i : i + 4] for i in range(0, len(answer), 4)])
    assert "".join(sent) == final
    assert counting.scanned < 100 * len(answer)
