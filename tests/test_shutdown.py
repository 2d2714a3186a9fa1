"""ShutdownClock: the budget of graceful waits and the watchdog that ends a stuck shutdown."""

from __future__ import annotations

import threading

import pytest

from ragsift.shutdown import ShutdownClock


class FakeTime:
    """A monotonic clock that moves only when told; sleeping is recorded, never waited."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []
        self.exited: list[int] = []
        self.done = threading.Event()

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)

    def exit(self, code: int) -> None:
        self.exited.append(code)
        self.done.set()


def never_exit(code: int) -> None:
    raise AssertionError(f"the watchdog exited with {code}")


def test_graceful_waits_get_the_timeout_less_a_reserve_counted_from_the_start() -> None:
    fake = FakeTime()
    # the watchdog is parked: it only runs once started, and then on the fake clock
    shutdown = ShutdownClock(30.0, exit_code=1, exit=fake.exit, now=fake, sleep=fake.sleep)
    assert shutdown.remaining() == pytest.approx(27.0)  # not started: the whole budget
    fake.now += 50
    assert shutdown.remaining() == pytest.approx(27.0)

    shutdown.start()
    fake.now += 10
    assert shutdown.remaining() == pytest.approx(17.0)
    shutdown.start()  # a second signal does not restart the clock
    assert shutdown.remaining() == pytest.approx(17.0)
    fake.now += 20
    assert shutdown.remaining() == 0.0


def test_the_watchdog_exits_at_the_deadline_naming_what_still_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake = FakeTime()
    shutdown = ShutdownClock(30.0, exit_code=3, describe=lambda: "document d1",
                             exit=fake.exit, now=fake, sleep=fake.sleep)

    shutdown.start()

    assert fake.done.wait(timeout=30)
    assert fake.slept == [30.0] and fake.exited == [3]
    assert "document d1" in caplog.text


def test_a_cancelled_clock_never_exits() -> None:
    shutdown = ShutdownClock(0.01, exit_code=1, exit=never_exit)
    shutdown.cancel()
    shutdown.start()  # too late to count: nothing happens
    assert not shutdown.started
