"""RateBudget's arithmetic on a fake clock: what waits how long, in closed form."""

from __future__ import annotations

import math
import threading
import time

import pytest

from ragsift.adapters.rate_budget import BudgetWaitTooLong, RateBudget, Reservation


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def admitted(result: Reservation | float) -> Reservation:
    assert isinstance(result, Reservation), f"expected admission, got a wait of {result}"
    return result


def test_requests_past_the_budget_wait_until_the_oldest_finished_one_leaves_the_window() -> None:
    clock = FakeClock()
    budget = RateBudget(requests=2, window_s=60.0, clock=clock)
    first, second = admitted(budget.try_acquire(0)), admitted(budget.try_acquire(0))
    clock.now = 1.0
    first.finish()
    clock.now = 3.0
    second.finish()
    clock.now = 10.0
    assert budget.try_acquire(0) == pytest.approx(51.0)  # first leaves at 1 + 60
    clock.now = 61.0
    admitted(budget.try_acquire(0))
    assert budget.try_acquire(0) == pytest.approx(2.0)  # second leaves at 3 + 60


def test_a_request_counts_while_in_flight_however_long_it_takes() -> None:
    clock = FakeClock()
    budget = RateBudget(requests=1, window_s=60.0, clock=clock)
    slow = admitted(budget.try_acquire(0))
    clock.now = 500.0
    assert budget.try_acquire(0) == math.inf  # not before it finishes
    slow.finish()
    assert budget.try_acquire(0) == pytest.approx(60.0)  # then a window after its answer


def test_tokens_wait_for_enough_finished_tokens_to_leave_the_window() -> None:
    clock = FakeClock()
    budget = RateBudget(tokens=100, window_s=60.0, clock=clock)
    for at, tokens in ((0.0, 30), (5.0, 30), (7.0, 30)):
        clock.now = at
        admitted(budget.try_acquire(tokens)).finish()
    clock.now = 8.0
    assert isinstance(budget.try_acquire(10), Reservation)  # 100 of 100: fits exactly
    # 50 more need 60 freed: the entries done at 0 and 5 leave at 60 and 65
    assert budget.wait_s(50) == pytest.approx(57.0)


def test_the_providers_count_replaces_the_estimate_when_the_request_finishes() -> None:
    clock = FakeClock()
    budget = RateBudget(tokens=100, window_s=60.0, clock=clock)
    admitted(budget.try_acquire(10)).finish(tokens=95)  # the provider counted more
    assert budget.wait_s(10) == pytest.approx(60.0)
    assert budget.wait_s(5) == 0.0


def test_both_limits_apply_and_the_longer_wait_wins() -> None:
    clock = FakeClock()
    budget = RateBudget(requests=3, tokens=100, window_s=10.0, clock=clock)
    admitted(budget.try_acquire(90)).finish()  # done at 0
    clock.now = 4.0
    admitted(budget.try_acquire(1)).finish()  # done at 4
    admitted(budget.try_acquire(1)).finish()  # done at 4
    assert budget.wait_s(1) == pytest.approx(6.0)  # requests: the first leaves at 10
    clock.now = 11.0
    assert budget.wait_s(99) == pytest.approx(3.0)  # tokens: the two of 4 leave at 14


def test_a_pause_holds_every_admission_until_it_ends() -> None:
    clock = FakeClock()
    budget = RateBudget(clock=clock)  # unlimited, yet a Retry-After pauses it
    assert not budget.limited
    admitted(budget.try_acquire(10**9))
    budget.pause(2.5)
    clock.now = 1.0
    assert budget.try_acquire(1) == pytest.approx(1.5)
    budget.pause(0.5)  # a shorter pause does not end the longer one early
    assert budget.wait_s(1) == pytest.approx(1.5)
    clock.now = 2.5
    admitted(budget.try_acquire(1))


def test_a_request_larger_than_the_whole_token_budget_is_refused_with_the_reason() -> None:
    budget = RateBudget(tokens=100)
    with pytest.raises(ValueError, match="101 tokens exceeds the whole budget of 100"):
        budget.try_acquire(101)


@pytest.mark.parametrize("kwargs", [{"requests": 0}, {"tokens": -1}, {"window_s": 0.0}])
def test_a_budget_that_admits_nothing_is_rejected_at_construction(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RateBudget(**kwargs)  # type: ignore[arg-type]


def test_acquire_gives_up_when_the_wait_exceeds_its_timeout() -> None:
    clock = FakeClock()
    budget = RateBudget(requests=1, window_s=60.0, clock=clock)
    admitted(budget.try_acquire(0)).finish()
    with pytest.raises(BudgetWaitTooLong, match=r"in 60\.0 s, more than the 5\.0 s"):
        budget.acquire(0, timeout_s=5.0)


def test_a_waiting_acquire_is_woken_by_a_finish() -> None:
    budget = RateBudget(requests=1, window_s=0.05)
    first = budget.acquire(0)
    got: list[float] = []

    def second() -> None:
        with budget.acquire(0, timeout_s=5.0):
            got.append(time.monotonic())

    thread = threading.Thread(target=second)
    thread.start()
    time.sleep(0.05)
    assert not got  # in flight: the second waits
    finished = time.monotonic()
    first.finish()
    thread.join(5.0)
    assert got and got[0] - finished >= 0.05 - 1e-3  # a window after the first finished
