"""OCR: RapidOCR on drawn text, the time budget, availability, and lines grouped into blocks."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from PIL import Image

from ragsift.domain.errors import DocumentRejected
from ragsift.ingestion.parsers import ocr
from ragsift.ingestion.parsers.limits import ParseLimits
from ragsift.ingestion.parsers.ocr import OcrBudget, OcrLine, lines_to_blocks, read_lines
from support.text_images import cjk_font_path, draw_text

pytest.importorskip("rapidocr_onnxruntime", reason="needs the ocr extra")


def budget(seconds: float = 60.0) -> OcrBudget:
    return OcrBudget(ParseLimits(ocr_timeout_s=seconds))


def line(text: str, x0: float, y0: float, x1: float, y1: float) -> OcrLine:
    return OcrLine(text, (x0, y0, x1, y1), 0.99)


def squeezed(text: str) -> str:
    """Text without spaces: PP-OCR sometimes drops the space between a number and a word."""
    return "".join(text.split())


def near(actual: tuple[float, ...], expected: tuple[float, ...], tolerance: float) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(actual, expected, strict=True))


# --- read_lines ------------------------------------------------------------------------------


def test_english_text_is_read_and_boxes_are_near_where_it_was_drawn() -> None:
    placed = [("password changes every Monday", (60, 50)), ("Room 4711 second floor", (300, 250))]
    image, drawn = draw_text(placed, size=(1000, 360), font_size=40)
    lines = read_lines(image, budget())
    assert [squeezed(found.text) for found in lines] == [squeezed(text) for text, _ in placed]
    assert lines[0].text == "password changes every Monday"
    for found, box in zip(lines, drawn, strict=True):
        assert near(found.box, box, tolerance=12), (found.box, box)
        assert found.score >= ocr.MIN_SCORE


@pytest.mark.skipif(cjk_font_path() is None, reason="no CJK font on this machine (fc-list)")
def test_chinese_text_is_read_and_boxes_are_near_where_it_was_drawn() -> None:
    placed = [("访客无线网络每周一更换密码", (80, 60)), ("请向前台索取", (80, 200))]
    image, drawn = draw_text(placed, size=(900, 320), font_size=44, cjk=True)
    lines = read_lines(image, budget())
    assert [found.text for found in lines] == [text for text, _ in placed]
    for found, box in zip(lines, drawn, strict=True):
        assert near(found.box, box, tolerance=12), (found.box, box)


def test_grey_and_transparent_images_are_read_as_rgb() -> None:
    image, _ = draw_text([("Visitor badge required", (40, 40))], size=(700, 140))
    assert [found.text for found in read_lines(image.convert("L"), budget())] == [
        "Visitor badge required"
    ]


class FakeEngine:
    """Stands in for RapidOCR: returns fixed results and counts its calls."""

    def __init__(self, results: list[list[Any]] | None) -> None:
        self.results = results
        self.calls = 0

    def __call__(self, image: Image.Image) -> tuple[list[list[Any]] | None, list[float]]:
        self.calls += 1
        assert image.mode == "RGB"
        return self.results, [0.0]


def test_lines_scored_below_the_threshold_are_dropped_and_boxes_are_axis_aligned() -> None:
    engine = FakeEngine([
        [[[10, 20], [110, 18], [112, 40], [9, 42]], "kept", ocr.MIN_SCORE + 0.01],
        [[[10, 60], [110, 60], [110, 80], [10, 80]], "noise", ocr.MIN_SCORE - 0.01],
        [[[10, 90], [110, 90], [110, 99], [10, 99]], "   ", 0.99],
    ])
    lines = read_lines(Image.new("L", (200, 120), 255), budget(), engine=engine)
    assert lines == [OcrLine("kept", (9.0, 18.0, 112.0, 42.0), ocr.MIN_SCORE + 0.01)]


def test_an_image_without_text_gives_no_lines() -> None:
    assert read_lines(Image.new("RGB", (64, 64), "white"), budget(), engine=FakeEngine(None)) == []


def test_ocr_taking_longer_than_its_limit_stops_before_the_next_image() -> None:
    engine = FakeEngine([])
    spent = budget(1e-9)
    assert spent.exhausted()
    with pytest.raises(ocr.OcrTimeout):
        read_lines(Image.new("RGB", (64, 64), "white"), spent, engine=engine)
    assert engine.calls == 0
    assert "RAGSIFT_OCR_TIMEOUT_S" in spent.skipped_warning(3)
    assert "3 pages" in spent.skipped_warning(3)


def test_a_fresh_budget_is_not_exhausted() -> None:
    assert not budget(30).exhausted()


def test_the_shared_engine_runs_one_onnx_thread_per_session() -> None:
    read_lines(Image.new("RGB", (64, 64), "white"), budget())
    engine = ocr._shared_engine()
    assert engine is ocr._shared_engine()  # once per process
    sessions = [engine.text_det.infer.session, engine.text_rec.session.session]
    for session in sessions:
        options = session.get_session_options()
        assert (options.intra_op_num_threads, options.inter_op_num_threads) == (1, 1)


# --- availability ----------------------------------------------------------------------------


def test_ocr_is_available_when_the_engine_is_installed() -> None:
    assert ocr.ocr_unavailable_reason(ParseLimits()) is None


def test_ocr_turned_off_names_the_setting() -> None:
    reason = ocr.ocr_unavailable_reason(ParseLimits(ocr="off"))
    assert reason is not None and "RAGSIFT_OCR=off" in reason


def test_ocr_without_the_engine_installed_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "rapidocr_onnxruntime", None)  # import raises ImportError
    reason = ocr.ocr_unavailable_reason(ParseLimits())
    assert reason is not None and "pip install 'ragsift[ocr]'" in reason


def test_an_engine_that_cannot_be_loaded_rejects_the_document_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(threads: int = 1) -> None:
        raise OSError("model file ch_PP-OCRv4_det_infer.onnx is missing")

    monkeypatch.setattr(ocr, "_engine", None)  # restored after the test
    monkeypatch.setattr(ocr, "create_engine", broken)
    with pytest.raises(DocumentRejected, match=r"could not be loaded.*ragsift\[ocr\]"):
        read_lines(Image.new("RGB", (64, 64), "white"), budget())


# --- lines_to_blocks -------------------------------------------------------------------------


def test_lines_of_one_paragraph_form_one_block_joined_as_wrapped_text() -> None:
    lines = [
        line("Guests connect to", 100, 100, 500, 130),
        line("XH-Guest at the desk.", 100, 140, 505, 170),
    ]
    [block] = lines_to_blocks(lines)
    assert block.text == "Guests connect to XH-Guest at the desk."
    assert block.locator.boxes == tuple(item.box for item in lines)
    assert block.locator.page is None


def test_wrapped_chinese_lines_join_without_a_space() -> None:
    lines = [line("访客无线网络每周一", 100, 100, 500, 130), line("更换密码", 100, 140, 500, 170)]
    assert [block.text for block in lines_to_blocks(lines)] == ["访客无线网络每周一更换密码"]


def test_a_gap_of_a_blank_line_starts_a_new_block() -> None:
    lines = [
        line("First paragraph", 100, 100, 500, 130),
        line("Second paragraph", 100, 160, 500, 190),  # gap 30 = one line height
    ]
    assert [block.text for block in lines_to_blocks(lines)] == [
        "First paragraph", "Second paragraph",
    ]


def test_an_indented_line_starts_a_block_and_its_continuation_stays_in_it() -> None:
    lines = [
        line("end of the first.", 100, 100, 500, 130),
        line("Indented start", 160, 140, 500, 170),  # 60 px = 2 line heights right
        line("continues here", 100, 180, 500, 210),
    ]
    assert [block.text for block in lines_to_blocks(lines)] == [
        "end of the first.", "Indented start continues here",
    ]


def test_each_list_item_is_a_block_and_its_hanging_indent_continues_it() -> None:
    lines = [
        line("· The committee approves the policy and meets", 100, 100, 900, 130),
        line("every quarter.", 130, 140, 400, 170),  # under the item's text, not the bullet
        line("· The CISO runs the programme.", 100, 180, 700, 210),
        line("2. Staff report incidents at once.", 100, 220, 700, 250),
        line("3.5 mm is not a list item", 100, 260, 700, 290),
    ]
    assert [block.text for block in lines_to_blocks(lines)] == [
        "· The committee approves the policy and meets every quarter.",
        "· The CISO runs the programme.",
        "2. Staff report incidents at once. 3.5 mm is not a list item",
    ]


def test_a_taller_line_is_a_block_of_its_own() -> None:
    lines = [line("Heading", 100, 100, 300, 150), line("body text", 100, 155, 500, 180)]
    assert [block.text for block in lines_to_blocks(lines)] == ["Heading", "body text"]


def test_lines_side_by_side_read_left_to_right_as_one_row() -> None:
    lines = [line("right", 400, 102, 500, 131), line("left", 100, 100, 200, 130)]
    [block] = lines_to_blocks(lines)
    assert block.text == "left right"
    assert block.locator.boxes == ((100, 100, 200, 130), (400, 102, 500, 131))


def test_a_line_ending_early_keeps_its_line_break() -> None:
    lines = [
        line("Network: XH-Guest", 100, 100, 300, 130),  # ends 200 px (> 2 heights) short
        line("Password changes every Monday", 100, 140, 500, 170),
    ]
    assert [block.text for block in lines_to_blocks(lines)] == [
        "Network: XH-Guest\nPassword changes every Monday",
    ]


def test_a_wide_line_step_starts_a_block_on_pages_of_regular_lines() -> None:
    # Steps of 40 px, then one of 56 (gap 26 px: under the gap rule's 0.8 x 30, over 1.3 x 40).
    tops = [100, 140, 180, 220, 276, 316]
    lines = [line(f"line {index}", 100, top, 500, top + 30) for index, top in enumerate(tops)]
    assert [block.text for block in lines_to_blocks(lines)] == [
        "line 0 line 1 line 2 line 3", "line 4 line 5",
    ]


def test_boxes_are_divided_by_the_scale_and_carry_the_page() -> None:
    scale = 150 / 72
    lines = [line("Scanned notice", 300, 150, 900, 210)]
    [block] = lines_to_blocks(lines, scale=scale, page=4)
    assert block.locator.page == 4
    [box] = block.locator.boxes
    assert box == pytest.approx((300 / scale, 150 / scale, 900 / scale, 210 / scale))


def test_no_lines_give_no_blocks() -> None:
    assert lines_to_blocks([]) == []
