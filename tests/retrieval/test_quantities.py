import pytest

from ragsift.retrieval.quantities import chinese_number, contradicts, quantities


@pytest.mark.parametrize(("text", "dimension", "low", "high"), [
    ("宝宝两岁半还不会说话", "age", 2.5, 2.5),
    ("一个半月的宝宝", "days", 45.0, 45.0),
    ("半年没来月经", "days", 182.5, 182.5),
    ("打完狂犬疫苗3天能喝酒吗", "days", 3.0, 3.0),
    ("发烧3-5天", "days", 3.0, 5.0),
    ("一周", "days", 7.0, 7.0),
    ("二十五岁", "age", 25.0, 25.0),
    ("布洛芬200mg", "mass", 0.2, 0.2),
    ("38.5度", "degrees", 38.5, 38.5),
])
def test_quantities_normalise_numbers_and_units(
    text: str, dimension: str, low: float, high: float
) -> None:
    (found,) = quantities(text)
    assert found.dimension == dimension
    assert found.low == pytest.approx(low) and found.high == pytest.approx(high)


def test_units_without_numbers_and_bare_numbers_are_no_quantities() -> None:
    assert quantities("今天每月都疼") == ()
    assert quantities("订单号12345") == ()


def test_chinese_numerals() -> None:
    assert [chinese_number(t) for t in ("两", "十", "十二", "二十五", "一百零五", "三万")] == [
        2, 10, 12, 25, 105, 30_000]


def test_contradiction_needs_the_same_dimension_with_only_other_values() -> None:
    assert contradicts(quantities("3天"), quantities("30天")) is not None
    assert contradicts(quantities("7天"), quantities("一周")) is None  # same duration
    assert contradicts(quantities("4天"), quantities("3到5天")) is None  # within the range
    assert contradicts(quantities("3天"), quantities("10岁")) is None  # another dimension
    assert contradicts(quantities("3天"), quantities("30天或3天")) is None


def test_a_candidate_agreeing_with_one_of_the_querys_values_in_a_dimension_agrees() -> None:
    assert contradicts(quantities("38周4天肚子痛"), quantities("孕38周肚子痛")) is None
    assert contradicts(quantities("38周4天肚子痛"), quantities("孕34周肚子痛")) is not None
