"""A KB's own settings (ragsift/kb_settings.py): validated by the process settings' own
fields and cross-checks, and what ingestion and search take of them."""

from __future__ import annotations

import pytest

from ragsift import kb_settings
from ragsift.config import Settings
from ragsift.domain.errors import InvalidInput
from ragsift.domain.requests import SearchRequest
from ragsift.ingestion.chunking import Chunker
from ragsift.ingestion.parsers.limits import ParseLimits
from ragsift.ingestion.profile import IngestProfile

SETTINGS = Settings()


@pytest.mark.parametrize("overrides, named", [
    ({"chunk_size": 64}, "chunk_size"),  # unknown
    ({"data_dir": "/tmp"}, "data_dir"),  # a process setting, not a KB's
    ({"chunk_tokens": 8}, "chunk_tokens"),  # under Settings' ge=16
    ({"chunk_tokens": 4096}, "chunk_tokens"),  # over le=512
    ({"ocr": "on"}, "ocr"),
    ({"mode": "semantic"}, "mode"),
    ({"faq_direct_answer_threshold": 1.5}, "faq_direct_answer_threshold"),
    ({"rerank": "maybe"}, "rerank"),
    ({"chunk_tokens": 64}, "chunk_overlap_tokens"),  # default overlap 32 >= 64 // 2
    ({"parent_max_tokens": 128}, "parent_max_tokens"),  # under chunk_tokens 256
    ({"top_k": 100}, "candidate_k"),  # top_k must not exceed candidate_k (30)
])
def test_a_bad_override_is_refused_naming_it(overrides: dict[str, object], named: str) -> None:
    with pytest.raises(InvalidInput, match=named):
        kb_settings.validate_overrides(SETTINGS, overrides)


def test_good_overrides_are_typed_as_the_settings_type_them() -> None:
    assert kb_settings.validate_overrides(SETTINGS, {
        "chunk_tokens": "128", "chunk_overlap_tokens": 16, "ocr": "off", "rerank": "false",
        "min_score": None,
    }) == {"chunk_tokens": 128, "chunk_overlap_tokens": 16, "ocr": "off", "rerank": False,
           "min_score": None}


@pytest.mark.parametrize("text, pair", [
    ("chunk_tokens=128", ("chunk_tokens", 128)),
    ("mode=dense", ("mode", "dense")),
    ("rerank=false", ("rerank", False)),
    ("min_score=null", ("min_score", None)),
    ("faq_direct_answer_threshold=0.9", ("faq_direct_answer_threshold", 0.9)),
])
def test_cli_assignments_read_json_values_else_text(text: str, pair: tuple[str, object]) -> None:
    assert kb_settings.parse_assignment(text) == pair


@pytest.mark.parametrize("text", ["chunk_tokens", "=3", "nope=1"])
def test_a_bad_cli_assignment_is_refused(text: str) -> None:
    with pytest.raises(InvalidInput):
        kb_settings.parse_assignment(text)


def test_effective_values_are_the_overrides_over_the_process_settings() -> None:
    values = kb_settings.effective(SETTINGS, {"top_k": 3})
    assert values["top_k"] == 3 and values["mode"] == SETTINGS.mode
    assert set(values) == set(kb_settings.KEYS)


def test_the_kbs_search_defaults_fill_only_what_the_request_left_unset() -> None:
    defaults = kb_settings.search_defaults(
        {"mode": "sparse", "top_k": 3, "faq_direct_answer_threshold": 0.8, "chunk_tokens": 64})
    assert defaults is not None and defaults.faq_direct_threshold == 0.8
    request = kb_settings.with_kb_defaults(
        SearchRequest(query="q", kb_id="k", top_k=7), defaults)
    assert (request.mode, request.top_k) == ("sparse", 7)
    assert kb_settings.search_defaults({"chunk_tokens": 64}) is None


def test_an_ingest_profile_resizes_the_chunker_and_sets_ocr_and_assets() -> None:
    profile = kb_settings.ingest_profile(SETTINGS, {"chunk_tokens": 64,
                                                    "chunk_overlap_tokens": 8, "ocr": "off"})
    base = Chunker(str.split, 256, 32, 1024)  # type: ignore[arg-type]
    assert profile.chunker(base) is not base
    same = IngestProfile(256, 32, 1024, "auto", 10_000)
    assert same.chunker(base) is base and same.limits(ParseLimits()) == ParseLimits()
    limits = profile.limits(None)
    assert (limits.ocr, limits.min_asset_pixels) == ("off", SETTINGS.min_asset_pixels)
