"""Images in chat answers: the prompt lists each evidence item's images as `asset://ID`, the
answer keeps only image links to this turn's evidence (exact expected texts), the extractive
answer shows the top item's image, and the service stores the shown images with the turn."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence

import pytest

from chat.chat_factories import FIRMWARE, HOTEL, evidence, hit, trace
from ragsift.adapters.sql.conversation_repository import SqlConversationStore
from ragsift.chat.assets import (
    caption_text,
    image_link,
    strip_assets,
    validate_answer,
    validate_assets,
)
from ragsift.chat.evidence import evidence_from_hits
from ragsift.chat.extractive import extractive_answer
from ragsift.chat.prompt import SYSTEM_PROMPT, build_messages, render_evidence
from ragsift.chat.service import ChatRequest, ChatService, TurnFinished
from ragsift.domain.assets import AssetRef
from ragsift.domain.chat import ChatMessage, Evidence
from ragsift.domain.requests import SearchRequest
from ragsift.domain.results import RetrievalResult

CHART = AssetRef(id="a" * 32, media_type="image/png", width=640, height=480,
                 caption="Hotel limits by city", page=1)
MAP = AssetRef(id="b" * 32, media_type="image/jpeg", width=300, height=200, caption="", slide=4)
OTHER = "c" * 32  # an image of another evidence set (or another KB)


def _with(item: Evidence, *refs: AssetRef) -> Evidence:
    return item.model_copy(update={"assets": refs})


EVIDENCE = [_with(evidence(1), CHART), _with(evidence(2, FIRMWARE, "fw.txt"), MAP), evidence(3)]


def _linked(text: str) -> tuple[str, list[str]]:
    checked = validate_assets(text, EVIDENCE)
    return checked.answer, [ref.id for ref in checked.assets]


def test_image_links_to_images_of_the_evidence_stay_each_shown_once_in_first_linked_order() -> None:
    text = (f"Limits:\n\n![Hotel limits](asset://{MAP.id})\n\n![chart](asset://{CHART.id}) "
            f"and again ![chart](asset://{MAP.id})")
    assert _linked(text) == (text, [MAP.id, CHART.id])


@pytest.mark.parametrize(("text", "expected"), [
    # an image of another evidence set, or an id nobody issued: removed with its spaces
    (f"See ![other](asset://{OTHER}).", "See."),
    (f"a ![x](asset://{OTHER}) b", "a b"),
    ("made up ![x](asset://deadbeef)", "made up"),
    ("image last:\n\n![x](asset://deadbeef)", "image last:"),
    ("trailing newline kept\n![x](asset://deadbeef)\n", "trailing newline kept\n\n"),
    # malformed: a title, spaces, a plain link, an empty id, a cut link, a bare URL
    (f'a ![x](asset://{CHART.id} "t") b', "a b"),
    (f"a ![x]( asset://{CHART.id}) b", "a b"),
    (f"a [see](asset://{CHART.id}) b", "a b"),
    ("a ![x](asset://) b", "a b"),
    (f"cut ![x](asset://{CHART.id}", "cut"),
    (f"bare asset://{CHART.id} here", "bare here"),
    (f"angle <asset://{CHART.id}>.", "angle."),
    ("a ![x](asset:javascript:alert(1)) b", "a) b"),  # the link ends at the first ")"
    # not the scheme: untouched
    ("an asset: the house; ![x](https://example.com/x.png)",
     "an asset: the house; ![x](https://example.com/x.png)"),
])
def test_other_or_malformed_asset_links_are_removed(text: str, expected: str) -> None:
    answer, shown = _linked(text)
    assert answer == expected
    assert shown == []


def test_kept_links_are_normalised_and_an_empty_caption_becomes_the_images_own() -> None:
    checked = validate_assets(f"![](ASSET://{CHART.id}) ![  two\tspaces ](asset://{MAP.id})",
                              EVIDENCE)
    assert checked.answer == (f"![Hotel limits by city](asset://{CHART.id}) "
                              f"![two spaces](asset://{MAP.id})")
    assert checked.removed == ()


def test_image_and_citation_links_are_checked_together_and_removals_reported() -> None:
    text = (f"150 dollars [1](citation://1) [7](citation://7)\n\n![chart](asset://{CHART.id})"
            f" ![x](asset://{OTHER})\n\nfirmware [2](citation://2)")
    checked = validate_answer(text, EVIDENCE)
    assert checked.answer == (f"150 dollars [1](citation://1)\n\n![chart](asset://{CHART.id})"
                              "\n\nfirmware [2](citation://2)")
    assert [c.n for c in checked.citations] == [1, 2]
    assert checked.assets == (CHART,)
    assert checked.removed == (f"![x](asset://{OTHER})", "[7](citation://7)")


def test_an_image_of_another_evidence_set_is_removed_even_when_it_exists() -> None:
    # the same image id is fine for the turn whose evidence holds it, not for another
    text = f"![chart](asset://{CHART.id})"
    assert validate_assets(text, [evidence(1)]).answer == ""
    assert validate_assets(text, [_with(evidence(1), CHART)]).answer == text


def test_without_evidence_every_asset_link_goes() -> None:
    assert validate_answer(f"x ![c](asset://{CHART.id})", []).answer == "x"


def test_captions_become_one_line_alt_texts_without_brackets() -> None:
    assert caption_text(CHART) == "Hotel limits by city"
    assert caption_text(MAP) == "image, slide 4"
    assert caption_text(CHART.model_copy(update={"caption": "", "page": 3})) == "image, page 3"
    assert caption_text(CHART.model_copy(update={"caption": "", "page": None})) == "image"
    odd = CHART.model_copy(update={"caption": "Fig [2]\n](asset://x) " + "long " * 40})
    alt = caption_text(odd)
    assert "[" not in alt and "]" not in alt and "\n" not in alt and len(alt) == 120
    # a link made from it is kept whole by the filter
    assert validate_assets(image_link(odd), [_with(evidence(1), odd)]).answer == image_link(odd)


def test_the_prompt_lists_each_items_images_as_asset_links_with_their_caption() -> None:
    assert render_evidence(EVIDENCE[0]) == (
        f"[1] hotels.md › Travel policy › Hotels (page 1)\n{HOTEL}\n"
        f"Image: ![Hotel limits by city](asset://{CHART.id})")
    assert render_evidence(EVIDENCE[1]).endswith(f"\nImage: ![image, slide 4](asset://{MAP.id})")
    assert "Image:" not in render_evidence(EVIDENCE[2])
    assert "asset://ID" in SYSTEM_PROMPT and "never write any other" in SYSTEM_PROMPT


def test_earlier_answers_are_replayed_without_their_image_links() -> None:
    earlier = f"Chart [1](citation://1):\n\n![chart](asset://{CHART.id})"
    messages = build_messages("and Tokyo?", EVIDENCE[2:], history=[("limits?", earlier)])
    assert messages[2] == ChatMessage(role="assistant", content="Chart :")
    assert strip_assets(f"a ![x](asset://{OTHER}) b asset://{OTHER}") == "a  b "


def test_evidence_keeps_the_images_of_its_hit() -> None:
    first, second = evidence_from_hits([hit(1, "a").model_copy(update={"assets": (CHART,)}),
                                        hit(2, "b")])
    assert (first.assets, second.assets) == ((CHART,), ())


def test_the_extractive_answer_shows_the_top_items_first_image() -> None:
    top = _with(evidence(1), CHART, MAP)
    answer = extractive_answer("hotel limit in Tokyo", [top, evidence(2)])
    assert answer.endswith(f")\n\n![Hotel limits by city](asset://{CHART.id})")
    assert answer.count("asset://") == 1
    assert validate_answer(answer, [top]).assets == (CHART,)


def test_the_extractive_answer_has_no_image_when_the_top_item_has_none() -> None:
    answer = extractive_answer("hotel limit", [evidence(1), _with(evidence(2), CHART)])
    assert "asset://" not in answer


class Retriever:
    """Every search finds the hotel hit with the chart, then the firmware hit."""

    async def search(self, request: SearchRequest) -> RetrievalResult:
        hits = (hit(1, HOTEL).model_copy(update={"assets": (CHART,)}), hit(2, FIRMWARE))
        return RetrievalResult(hits=hits, trace=trace(request.query, request.kb_id))


class Model:
    model_name = "fake-chat"

    def __init__(self, deltas: Sequence[str]) -> None:
        self.deltas = deltas

    async def stream(self, messages: Sequence[ChatMessage]) -> AsyncGenerator[str, None]:
        for delta in self.deltas:
            yield delta


def _run(service: ChatService) -> tuple[TurnFinished, str]:
    async def run() -> tuple[TurnFinished, str]:
        turn = await service.prepare(ChatRequest(kb_id="kb1", message="hotel limit"))
        events = [event async for event in service.run(turn)]
        final = events[-1]
        assert isinstance(final, TurnFinished)
        return final, turn.conversation_id

    return asyncio.run(run())


def test_a_model_answer_keeps_and_stores_only_the_images_of_its_evidence(
    store: SqlConversationStore,
) -> None:
    deltas = ["150 [1](citation://1)\n\n![chart](asset://", f"{CHART.id})\n\n",
              f"![x](asset://{OTHER})"]
    final, conversation_id = _run(ChatService(Retriever(), store, Model(deltas)))

    assert final.answer == f"150 [1](citation://1)\n\n![chart](asset://{CHART.id})"
    assert final.assets == (CHART,)
    conversation = store.get_conversation(conversation_id)
    assert conversation is not None
    [stored] = conversation.turns
    assert (stored.answer, stored.assets) == (final.answer, (CHART,))
    assert stored.evidence[0].assets == (CHART,) and stored.evidence[1].assets == ()


def test_an_extractive_turn_stores_the_image_it_shows(store: SqlConversationStore) -> None:
    final, conversation_id = _run(ChatService(Retriever(), store, None))
    assert final.extractive and final.assets == (CHART,)
    assert final.answer.endswith(f"![Hotel limits by city](asset://{CHART.id})")
    conversation = store.get_conversation(conversation_id)
    assert conversation is not None and conversation.turns[0].assets == (CHART,)
