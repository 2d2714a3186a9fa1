"""The BM25 analyzer on Chinese, English and mixed text."""

from __future__ import annotations

import pytest

from ragsift.adapters.embedded_index.analyzer import (
    CURRENT_VERSION,
    analyze,
    analyze_v1,
    analyze_v2,
    analyzer_for,
)


def test_mixed_chinese_english_text_yields_words_lowercased() -> None:
    tokens = analyze("苹果手机iPhone15 Pro的价格是多少？")
    for expected in ("苹果", "手机", "iphone15", "pro", "价格", "多少"):
        assert expected in tokens
    assert all(token == token.lower() for token in tokens)


def test_chinese_compounds_keep_the_word_and_its_sub_words() -> None:
    tokens = analyze("中华人民共和国")
    assert "中华人民共和国" in tokens
    assert "共和国" in tokens
    assert "人民" in tokens


def test_version_numbers_and_codes_stay_whole() -> None:
    tokens = analyze("Upgrade to v2.1 before 2024-05-01")
    assert "v2.1" in tokens
    assert "upgrade" in tokens


def test_fullwidth_characters_are_nfkc_normalised() -> None:
    assert analyze("ＡＢＣ１２３") == ["abc123"]


def test_punctuation_symbols_and_whitespace_only_tokens_are_dropped() -> None:
    assert analyze("，。！？…… !!! --- ©® \t\n\u3000 \u2028") == []
    assert analyze("") == []


def test_no_token_contains_whitespace_so_the_whitespace_tokenizer_cannot_split_it() -> None:
    tokens = analyze("a\u2028b x\u00a0y 表\u3000格 tab\there")
    assert tokens
    assert not any(ch.isspace() for token in tokens for ch in token)


def test_analyzer_is_deterministic() -> None:
    text = "Kubernetes 集群升级指南：从 v1.28 升级到 v1.29"
    assert analyze(text) == analyze(text)


def test_v2_adds_every_cjk_character_and_bigram_after_the_jieba_words() -> None:
    assert analyze_v2("保修多久") == [
        *analyze_v1("保修多久"), "保", "修", "多", "久", "保修", "修多", "多久",
    ]


def test_v2_stems_english_words_and_drops_stop_words_but_keeps_codes() -> None:
    assert analyze_v2("The studies of running engines") == ["studi", "run", "engin"]
    # codes and versions are not stemmed; "in" is a stop word
    assert analyze_v2("Error E-104 in v2.1") == ["error", "e-104", "v2", "v2.1"]
    assert analyze_v2("no not") == ["no", "not"]  # negations are not stop words


def test_v2_mixed_text_keeps_cjk_runs_apart_from_english() -> None:
    tokens = analyze_v2("苹果iPhone价格")
    assert "iphon" in tokens and "果i" not in tokens
    assert {"苹", "果", "苹果", "价格", "价", "格"} <= set(tokens)


def test_v2_drops_punctuation_like_v1() -> None:
    assert analyze_v2("，。！？ --- ©®") == []


def test_analyzer_for_picks_the_version_an_index_was_built_with() -> None:
    assert analyzer_for(1) is analyze_v1
    assert analyzer_for(CURRENT_VERSION) is analyze_v2
    assert analyze is not analyze_v2 and analyze("Running") == ["running"]
    with pytest.raises(ValueError, match="unknown BM25 analyzer version 9"):
        analyzer_for(9)
