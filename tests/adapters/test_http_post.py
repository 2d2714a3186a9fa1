"""The one retry policy of model-server calls: against the real model-server process (what is
retried, Retry-After, budget, attempts), and its budget arithmetic on a stepped clock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from itertools import pairwise
from typing import Any

import httpx
import pytest

from ragsift.adapters.http_post import (
    RetryableUpstreamError,
    RetryPolicy,
    call_with_retries,
    parse_retry_after,
    post_json,
)
from ragsift.bootstrap import retry_policy
from ragsift.config import Settings
from ragsift.domain.errors import UpstreamError
from ragsift.domain.retries import counting_retries
from support.fixtures import LLMServer
from support.serve import free_port

BODY = {"model": "m", "query": "hotel limit", "documents": ["hotel limit", "meals"], "top_n": 2}
QUICK = RetryPolicy(max_attempts=5, backoff_s=0.01, backoff_max_s=0.05, budget_s=20.0)


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5.0) as made:
        yield made


def _rerank(server: LLMServer, client: httpx.Client, policy: RetryPolicy) -> httpx.Response:
    return post_json(client, f"{server.url}/v1/rerank", BODY, "reranker", policy)


def _answers(server: LLMServer, group: str = "rerank") -> list[Any]:
    return [attempt["answer"] for attempt in server.attempts(group)]


def _gaps(server: LLMServer, group: str = "rerank") -> list[float]:
    return [b["t"] - a["t"] for a, b in pairwise(server.attempts(group))]


# --- what is retried -------------------------------------------------------------------------


@pytest.mark.parametrize("status", [429, 502, 503, 504])
def test_overload_answers_are_retried_until_the_server_answers(
    llm_server: LLMServer, client: httpx.Client, status: int
) -> None:
    llm_server.control(faults={"rerank": {"status": status, "times": 2}})
    response = _rerank(llm_server, client, QUICK)
    assert [row["index"] for row in response.json()["results"]] == [0, 1]
    assert _answers(llm_server) == [status, status, 200]


def test_a_connection_reset_without_an_answer_is_retried(
    llm_server: LLMServer, client: httpx.Client
) -> None:
    llm_server.control(faults={"rerank": {"status": "reset", "times": 2}})
    assert _rerank(llm_server, client, QUICK).status_code == 200
    assert _answers(llm_server) == ["reset", "reset", 200]


@pytest.mark.parametrize("status", [400, 401, 404, 413, 422, 500])
def test_other_error_answers_are_final_and_sent_once(
    llm_server: LLMServer, client: httpx.Client, status: int
) -> None:
    llm_server.control(faults={"rerank": {"status": status, "times": 3}})
    with pytest.raises(UpstreamError, match=f"reranker answered HTTP {status}") as caught:
        _rerank(llm_server, client, QUICK)
    assert "gave up" not in str(caught.value)
    assert _answers(llm_server) == [status]


def test_a_refused_connection_is_retried_up_to_max_attempts(client: httpx.Client) -> None:
    port = free_port()  # bound once and released: nothing listens there
    with counting_retries() as tally, pytest.raises(
        UpstreamError, match=r"reranker unreachable.*gave up after 3 attempts"
    ):
        post_json(client, f"http://127.0.0.1:{port}/rerank", BODY, "reranker",
                  RetryPolicy(max_attempts=3, backoff_s=0.01, budget_s=20.0))
    assert tally.retries == 2


# --- how long it waits -----------------------------------------------------------------------


def test_retry_after_in_seconds_is_waited_before_the_next_attempt(
    llm_server: LLMServer, client: httpx.Client
) -> None:
    llm_server.control(faults={"rerank": {"status": 429, "retry_after": "1", "times": 2}})
    _rerank(llm_server, client, QUICK)  # without Retry-After QUICK would wait 0.01-0.05 s
    assert _answers(llm_server) == [429, 429, 200]
    assert all(gap >= 1.0 for gap in _gaps(llm_server))


def test_retry_after_as_an_http_date_is_waited_until(
    llm_server: LLMServer, client: httpx.Client
) -> None:
    # HTTP dates have whole seconds: three seconds ahead is at least two from now, so the
    # first attempt may start up to a second late (a loaded machine) and the retry still
    # has to wait a second for the date
    when = (datetime.now(UTC) + timedelta(seconds=3)).replace(microsecond=0)
    llm_server.control(faults={"rerank": {
        "status": 503, "retry_after": format_datetime(when, usegmt=True), "times": 1,
    }})
    _rerank(llm_server, client, QUICK)
    assert datetime.now(UTC) >= when
    assert _answers(llm_server) == [503, 200]
    assert _gaps(llm_server)[0] >= 1.0


# --- when it stops ---------------------------------------------------------------------------


def test_max_attempts_stops_retrying_with_the_last_answer_in_the_message(
    llm_server: LLMServer, client: httpx.Client
) -> None:
    llm_server.control(faults={"rerank": {"status": 429}})  # every request
    with pytest.raises(UpstreamError, match=r"HTTP 429.*gave up after 5 attempts"):
        _rerank(llm_server, client, QUICK)
    assert _answers(llm_server) == [429] * 5


def test_the_budget_stops_retrying_before_a_wait_would_end_past_it(
    llm_server: LLMServer, client: httpx.Client
) -> None:
    llm_server.control(faults={"rerank": {"status": 503, "retry_after": "1"}})
    policy = RetryPolicy(max_attempts=50, backoff_s=0.01, budget_s=2.5)
    with pytest.raises(UpstreamError, match="gave up after 3 attempts"):
        _rerank(llm_server, client, policy)
    # attempts at 0, 1 and 2 s; a fourth would start at 3 s, past the 2.5 s budget
    assert _answers(llm_server) == [503] * 3


def test_a_retry_after_beyond_the_budget_fails_at_once(
    llm_server: LLMServer, client: httpx.Client
) -> None:
    llm_server.control(faults={"rerank": {"status": 429, "retry_after": "30"}})
    with pytest.raises(UpstreamError, match="gave up after 1 attempts"):
        _rerank(llm_server, client, RetryPolicy(max_attempts=5, budget_s=5.0))
    assert _answers(llm_server) == [429]


def test_retries_are_counted_in_the_current_tally(
    llm_server: LLMServer, client: httpx.Client
) -> None:
    llm_server.control(faults={"rerank": {"status": 502, "times": 2}})
    with counting_retries() as tally:
        _rerank(llm_server, client, QUICK)
    assert tally.retries == 2


# --- Retry-After parsing ---------------------------------------------------------------------

NOW = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("3", 3.0),
        (" 120 ", 120.0),
        ("0.25", 0.25),  # not RFC 9110, but some gateways send it
        ("0", 0.0),
        ("-4", 0.0),
        ("Sat, 01 Mar 2025 12:00:10 GMT", 10.0),
        ("Sat, 01 Mar 2025 11:59:00 GMT", 0.0),  # a date in the past: now
        ("soon", None),
        ("", None),
        (None, None),
        ("nan", None),
        ("inf", None),
    ],
)
def test_retry_after_is_read_as_seconds_or_an_http_date(
    header: str | None, seconds: float | None
) -> None:
    assert parse_retry_after(header, now=NOW) == seconds


# --- the budget arithmetic, on a clock that only moves when told -----------------------------


class SteppedClock:
    """A clock for `call_with_retries`: sleeping advances it, so a minute passes at once."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def rate_limited_until(
    clock: SteppedClock, until_s: float, retry_after_s: float | None,
    request_s: float = 0.05,
) -> tuple[Any, list[float | None]]:
    """A `send` answering 429 until `until_s` on `clock`; also the time_left each attempt got."""
    given: list[float | None] = []

    def send(time_left: float | None) -> str:
        given.append(time_left)
        clock.now += request_s
        if clock.now < until_s:
            raise RetryableUpstreamError("embedding server answered HTTP 429", retry_after_s)
        return "embedded"

    return send, given


def test_the_default_ingest_policy_waits_out_a_minute_of_429s() -> None:
    settings = Settings()
    policy = retry_policy(settings, settings.embed_retry_budget_s,
                          settings.embed_retry_max_attempts)
    clock = SteppedClock()
    send, given = rate_limited_until(clock, until_s=60.0, retry_after_s=1.0)
    assert call_with_retries(send, policy, "embedding server", clock.sleep, clock) == "embedded"
    assert 55 <= len(given) <= 60  # one attempt a second (plus jitter) for a minute
    assert all(wait >= 1.0 for wait in clock.sleeps)
    assert given[0] is None  # the first attempt keeps the client's own timeouts
    assert all(left is not None and 0 < left <= policy.budget_s for left in given[1:])


def test_the_default_ingest_policy_gives_up_inside_its_budget() -> None:
    settings = Settings()
    policy = retry_policy(settings, settings.embed_retry_budget_s,
                          settings.embed_retry_max_attempts)
    clock = SteppedClock()
    send, given = rate_limited_until(clock, until_s=float("inf"), retry_after_s=2.0)
    with pytest.raises(UpstreamError, match="gave up after"):
        call_with_retries(send, policy, "embedding server", clock.sleep, clock)
    # the last wait ended inside the budget (the last attempt itself then took 0.05 s)
    last_wait_ended = clock.now - 0.05
    assert policy.budget_s - 2.5 <= last_wait_ended <= policy.budget_s
    assert len(given) < policy.max_attempts  # the budget, not the attempts, stopped it


def test_the_default_query_embedding_policy_gives_up_within_a_few_seconds() -> None:
    settings = Settings()
    policy = retry_policy(settings, settings.embed_query_retry_budget_s)
    clock = SteppedClock()
    send, given = rate_limited_until(clock, until_s=60.0, retry_after_s=None)
    with pytest.raises(UpstreamError, match="gave up after"):
        call_with_retries(send, policy, "embedding server", clock.sleep, clock)
    assert len(given) <= settings.http_retry_max_attempts
    assert clock.now < settings.embed_query_retry_budget_s


def test_without_retry_after_the_backoff_doubles_with_jitter_up_to_its_cap() -> None:
    policy = RetryPolicy(max_attempts=7, backoff_s=0.5, backoff_max_s=4.0, budget_s=1000.0)
    clock = SteppedClock()
    send, _ = rate_limited_until(clock, until_s=float("inf"), retry_after_s=None)
    with pytest.raises(UpstreamError):
        call_with_retries(send, policy, "reranker", clock.sleep, clock)
    floors = [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert len(clock.sleeps) == len(floors)
    assert all(low <= wait <= low + 0.5 for wait, low in zip(clock.sleeps, floors, strict=True))


def test_a_retry_gets_only_what_is_left_of_the_budget() -> None:
    policy = RetryPolicy(max_attempts=10, backoff_s=0.01, budget_s=10.0)
    clock = SteppedClock()
    send, given = rate_limited_until(clock, until_s=7.5, retry_after_s=2.0, request_s=0.5)
    assert call_with_retries(send, policy, "reranker", clock.sleep, clock) == "embedded"
    assert given[0] is None
    left = [value for value in given[1:] if value is not None]
    assert len(left) == len(given) - 1 and left == sorted(left, reverse=True)
    assert left[0] == pytest.approx(10.0 - 2.5, abs=0.25)


@pytest.mark.parametrize(
    "fields",
    [{"max_attempts": 0}, {"backoff_s": -1.0}, {"backoff_max_s": -1.0}, {"budget_s": 0.0}],
)
def test_a_policy_out_of_range_is_refused(fields: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**fields)
