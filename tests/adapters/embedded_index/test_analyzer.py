"""The BM25 analyzer on Chinese, English and mixed text."""

from __future__ import annotations

from ragsift.adapters.embedded_index.analyzer import analyze


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
