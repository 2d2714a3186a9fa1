"""Quantities in Chinese and English text: a number (Arabic or Chinese) with its unit.

两岁半 -> 2.5 岁, 一个半月 -> 1.5 月, 半年 -> 0.5 年, 3-5天 -> the range 3..5 天, 10mg, 20%.
Durations (天, 周, 月, 年, and their English names) share one dimension in days, so 1周
equals 7天; every other unit is its own dimension. A bare number without a unit is not a
quantity: it is too often an id, a year or a count of something unnamed.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6,
              "七": 7, "八": 8, "九": 9}
_CN_SCALES = {"十": 10, "百": 100, "千": 1000}
# unit as written -> (dimension, factor to the dimension's base unit)
_UNITS: dict[str, tuple[str, float]] = {
    "周岁": ("age", 1), "岁": ("age", 1), "years old": ("age", 1), "year old": ("age", 1),
    "天": ("days", 1), "日": ("days", 1), "周": ("days", 7), "星期": ("days", 7),
    "礼拜": ("days", 7), "个月": ("days", 30), "月": ("days", 30), "年": ("days", 365),
    "days": ("days", 1), "day": ("days", 1), "weeks": ("days", 7), "week": ("days", 7),
    "months": ("days", 30), "month": ("days", 30), "years": ("days", 365),
    "year": ("days", 365),
    "个小时": ("hours", 1), "小时": ("hours", 1), "钟头": ("hours", 1), "hours": ("hours", 1),
    "hour": ("hours", 1), "h": ("hours", 1), "分钟": ("minutes", 1), "minutes": ("minutes", 1),
    "min": ("minutes", 1),
    "mg": ("mass", 0.001), "毫克": ("mass", 0.001), "g": ("mass", 1), "克": ("mass", 1),
    "kg": ("mass", 1000), "公斤": ("mass", 1000), "斤": ("mass", 500),
    "ml": ("volume", 1), "毫升": ("volume", 1), "l": ("volume", 1000), "升": ("volume", 1000),
    "%": ("percent", 1), "度": ("degrees", 1), "℃": ("degrees", 1),
    "cm": ("length", 1), "厘米": ("length", 1), "公分": ("length", 1), "mm": ("length", 0.1),
    "毫米": ("length", 0.1), "米": ("length", 100),
    "元": ("money", 1), "块": ("money", 1), "万元": ("money", 10_000), "期": ("instalments", 1),
    "次": ("times", 1), "胎": ("births", 1),
}
_NUM = r"(?:\d+(?:\.\d+)?|[零〇一二两三四五六七八九十百千万]+)"
_UNIT = "|".join(sorted((re.escape(u) for u in _UNITS), key=len, reverse=True))
# (from)(-|到|至 to)? (个)? (半)? unit (半)?; the unit must not run on into a longer word.
_QUANTITY = re.compile(
    rf"(?P<low>{_NUM})?(?:\s*(?:-|~|到|至|to)\s*(?P<high>{_NUM}))?\s*(?P<ge>个)?(?P<half>半)?"
    rf"\s*(?P<unit>{_UNIT})(?P<after>半)?(?![a-z])",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Quantity:
    """A value (or inclusive range) in its dimension's base unit, with the text it came from."""

    dimension: str
    low: float
    high: float
    span: str

    def overlaps(self, other: Quantity) -> bool:
        """Same dimension and the two ranges share a value (within rounding)."""
        tolerance = 1e-6 * max(1.0, abs(self.high), abs(other.high))
        return (self.dimension == other.dimension and self.low <= other.high + tolerance
                and other.low <= self.high + tolerance)


def chinese_number(text: str) -> float | None:
    """两 -> 2, 十二 -> 12, 二十五 -> 25, 一百零五 -> 105, 三万 -> 30000, 一五 -> 15."""
    if not text:
        return None
    if all(ch in _CN_DIGITS for ch in text):  # digit by digit: 一五 = 15, 二〇二三 = 2023
        return float("".join(str(_CN_DIGITS[ch]) for ch in text))
    total, section, digit = 0, 0, None
    for ch in text:
        if ch in _CN_DIGITS:
            digit = _CN_DIGITS[ch]
        elif ch in _CN_SCALES:
            section += (1 if digit is None else digit) * _CN_SCALES[ch]
            digit = None
        elif ch == "万":
            total += (section + (digit or 0)) * 10_000
            section, digit = 0, None
        else:
            return None
    return float(total + section + (digit or 0))


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    if text[0].isdigit():
        return float(text)
    return chinese_number(text)


def quantities(text: str) -> tuple[Quantity, ...]:
    """Every quantity of `text` in order; see the module docstring."""
    normalized = unicodedata.normalize("NFKC", text).lower()
    found: list[Quantity] = []
    for match in _QUANTITY.finditer(normalized):
        low = _number(match["low"])
        half = match["half"] is not None or match["after"] is not None
        if low is None and not (match["half"] and match["low"] is None and not match["high"]):
            continue  # a unit without a number (今天, 每月) is not a quantity
        high = _number(match["high"])
        base = 0.0 if low is None else low
        value_low = base + (0.5 if half else 0.0)
        value_high = (high + (0.5 if half else 0.0)) if high is not None else value_low
        dimension, factor = _UNITS[match["unit"].lower()]
        found.append(Quantity(dimension, value_low * factor, value_high * factor,
                              match.group(0).strip()))
    return tuple(found)


def contradicts(
    asked: tuple[Quantity, ...], stated: tuple[Quantity, ...]
) -> tuple[Quantity, Quantity] | None:
    """(query quantity, candidate quantity) when the candidate states a dimension of the
    query only with values the query has in none of its quantities of that dimension (38周4天
    agrees with 38周); None when it agrees or never states that dimension."""
    for dimension in dict.fromkeys(q.dimension for q in asked):
        mine = [q for q in asked if q.dimension == dimension]
        theirs = [q for q in stated if q.dimension == dimension]
        if theirs and not any(a.overlaps(b) for a in mine for b in theirs):
            return mine[0], theirs[0]
    return None
