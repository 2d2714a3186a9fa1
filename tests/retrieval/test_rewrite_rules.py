import pytest

from ragsift.domain.stages import RewriteProposal
from ragsift.retrieval.rewrite import accept_rewrite, protected_terms

QUERY = "Aurora X200 报错 E-104 是 2024-03-18 升级 v2.4.1 后出现的吗？“星河办公”"


def proposal(text: str, method: str = "expand") -> RewriteProposal:
    return RewriteProposal.model_validate({"method": method, "text": text})


def test_protected_terms_are_quoted_names_dates_codes_and_numbers() -> None:
    assert protected_terms(QUERY) == ["星河办公", "X200", "E-104", "2024-03-18", "v2.4.1"]
    assert protected_terms("住宿 500元 每晚, \"Travel Policy\"") == ["Travel Policy", "500"]


def test_a_rewrite_keeping_every_protected_term_is_accepted() -> None:
    text = "Aurora X200 温控器 E-104 Wi-Fi 认证失败 2024-03-18 v2.4.1 固件 “星河办公”"
    variant, reason = accept_rewrite(QUERY, proposal(text, "hyde"), 4000)
    assert reason is None and variant is not None
    assert (variant.text, variant.method) == (text, "hyde")


@pytest.mark.parametrize(
    ("text", "method", "reason"),
    [
        ("Aurora X200 报错 E-104 2024-03-18 v2.4.1 Wi-Fi 认证失败", "expand", "dropped '星河办公'"),
        ("Aurora 报错 E104 是 2024-03-18 升级 v2.4.1 后出现的吗 星河办公", "expand", "'X200'"),
        ("  ", "expand", "empty"),
        ("aurora x200 报错 e-104 是 2024-03-18 升级 v2.4.1 后出现的吗 “星河办公”", "expand",
         "identical"),
        ("whatever", "none", "no rewrite"),
    ],
)
def test_bad_rewrites_are_dropped_with_the_reason(text: str, method: str, reason: str) -> None:
    variant, why = accept_rewrite(QUERY, proposal(text, method), 4000)
    assert variant is None and why is not None and reason in why


def test_an_overlong_rewrite_is_dropped() -> None:
    variant, why = accept_rewrite("annual leave", proposal("annual leave " * 50), 100)
    assert variant is None and why is not None and "over 100" in why
