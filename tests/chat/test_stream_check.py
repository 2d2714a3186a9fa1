"""Streamed deltas carry the same citation and image check as the final answer: held back
while a link may still be open, together exactly the final answer, however the model splits
its text."""

from __future__ import annotations

import pytest

from chat.chat_factories import evidence
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
