import pytest

from ragsift.retrieval.consistency import (
    Candidate,
    ConsistencyConfig,
    ConsistencyRescorer,
    substitution,
)


def rescore(query: str, texts: list[str], **config: float) -> list[str]:
    rescorer = ConsistencyRescorer(ConsistencyConfig(**config))  # type: ignore[arg-type]
    candidates = [Candidate(f"c{i}", t, 10.0 - 0.5 * i) for i, t in enumerate(texts)]
    return [c.id for c in rescorer.run(query, candidates).candidates]


def test_two_and_a_half_years_against_one_and_a_half_is_penalised() -> None:
    order = rescore("宝宝两岁半还不会说话", ["宝宝一岁半还不会说话", "两岁半的宝宝不会说话"],
                    substitution_penalty=0)
    assert order == ["c1", "c0"]


def test_three_days_against_thirty_days_is_penalised_and_recorded() -> None:
    rescorer = ConsistencyRescorer(ConsistencyConfig(number_penalty=1.5))
    result = rescorer.run("打完狂犬疫苗3天能喝酒吗", [
        Candidate("a", "打完狂犬疫苗30天能喝酒吗", 2.0), Candidate("b", "狂犬疫苗期间喝酒", 1.0)])
    first, second = result.candidates
    assert (first.id, second.id) == ("b", "a")
    assert second.score == pytest.approx(0.5) and second.original_score == 2.0
    assert [(n.kind, n.query_span, n.candidate_span) for n in second.notes] == [
        ("number", "3天", "30天")]
    assert result.penalised == 1


def test_same_numbers_and_queries_without_numbers_are_untouched() -> None:
    assert rescore("宝宝3个月不会翻身", ["3个月宝宝不会翻身", "宝宝不会翻身"]) == ["c0", "c1"]
    rescorer = ConsistencyRescorer(ConsistencyConfig(substitution_penalty=0))
    result = rescorer.run("宝宝不会翻身", [Candidate("a", "宝宝5个月不会翻身", 1.0)])
    assert result.candidates[0].score == 1.0 and not result.candidates[0].notes


def test_a_substituted_word_is_penalised_unless_the_query_word_is_there() -> None:
    assert substitution("胃炎能吃核桃吗", "肠炎能吃核桃吗") == ("胃炎", "肠炎")
    assert substitution("借呗逾期怎么办", "花呗逾期了怎么办") == ("借呗", "花呗")
    assert substitution("胃炎能吃核桃吗", "胃炎和肠炎能吃核桃吗") is None  # an insertion
    assert substitution("花呗能分期吗", "花呗能分期嘛") is None  # a particle, one character
    assert rescore("胃炎能吃核桃吗", ["肠炎能吃核桃吗", "胃炎吃什么好"], number_penalty=0) == [
        "c1", "c0"]


def test_long_candidates_and_candidates_past_top_k_are_left_alone() -> None:
    long_text = "宝宝一岁半还不会说话" + "。" * 300
    assert rescore("宝宝两岁半还不会说话", [long_text, "宝宝说话"]) == ["c0", "c1"]
    assert rescore("宝宝两岁半还不会说话", ["宝宝说话", "宝宝一岁半还不会说话"], top_k=1) == [
        "c0", "c1"]


def test_min_idf_keeps_swaps_of_common_words() -> None:
    rescorer = ConsistencyRescorer(ConsistencyConfig(min_idf=3.0), idf=lambda word: 1.0)
    result = rescorer.run("胃炎能吃核桃吗", [Candidate("a", "肠炎能吃核桃吗", 1.0)])
    assert not result.candidates[0].notes


@pytest.mark.parametrize("bad", [
    {"top_k": 0}, {"number_penalty": -1}, {"max_span": 0}, {"min_shared": 0}, {"min_idf": -1},
])
def test_invalid_configuration_is_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        ConsistencyConfig(**bad)  # type: ignore[arg-type]


def test_settings_configure_the_rescorer() -> None:
    from ragsift.config import Settings
    from ragsift.retrieval.consistency import config_from_settings

    config = config_from_settings(Settings(consistency_top_k=7, consistency_swap_min_idf=0))
    assert (config.top_k, config.min_idf) == (7, 0.0)


def test_a_rare_query_word_missing_from_the_candidate_is_penalised_when_asked() -> None:
    idf = {"孕晚期": 6.0, "抽筋": 3.0}
    rescorer = ConsistencyRescorer(ConsistencyConfig(missing_penalty=0.5, missing_min_idf=5),
                                   idf=lambda w: idf.get(w, 0.0))
    result = rescorer.run("孕晚期脚抽筋", [Candidate("a", "晚上睡觉脚抽筋", 1.0),
                                        Candidate("b", "孕晚期腿抽筋怎么办", 0.8)])
    assert result.order == ("b", "a")
    assert [(n.kind, n.query_span) for n in result.candidates[1].notes] == [("missing", "孕晚期")]
