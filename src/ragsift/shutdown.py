"""A bound on how long a process takes to stop once asked to (SIGTERM, SIGINT).

The clock starts at the first stop signal. Each graceful wait (open requests, the document
being ingested) is given `remaining()`, which ends a little before the deadline so that closing
the data directory still fits. A watchdog thread ends the process at the deadline should
anything hold it longer; it logs `describe()` first, so the log names what was abandoned.
Ending the process there does to the work in progress what a crash would, which ingestion is
built to survive: the document keeps its PARSING/INDEXING status and is resumed (in-process)
or retried once its lease expires (database queue).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable

logger = logging.getLogger(__name__)

# Share of the timeout kept after the graceful waits, for closing the stores and exiting.
CLOSE_RESERVE = 0.1


def hard_exit(code: int) -> None:
    """Flush the logs and end the process at once: no atexit handler, no thread joined."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)


class ShutdownClock:
    """Counts RAGSIFT_SHUTDOWN_TIMEOUT_S from `start()`; exits the process at the deadline.

    `start()` only assigns an attribute and writes one byte to a pipe, so it is safe in a
    signal handler (no lock the interrupted code might hold); the watchdog thread waits on
    that pipe from construction on.
    """

    def __init__(
        self, timeout_s: float, exit_code: int, describe: Callable[[], str] = lambda: "",
        *, exit: Callable[[int], None] = hard_exit,
        now: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        self.timeout_s = timeout_s
        self._exit_code = exit_code
        self._describe = describe
        self._exit = exit
        self._now = now
        self._sleep = sleep
        self._deadline: float | None = None
        self._cancelled = False
        self._wake_read, self._wake_write = os.pipe()
        self._watchdog = threading.Thread(
            target=self._watch, name="ragsift-shutdown-watchdog", daemon=True
        )
        self._watchdog.start()

    @property
    def started(self) -> bool:
        return self._deadline is not None

    def start(self) -> None:
        """Start counting; later calls change nothing."""
        if self._deadline is not None or self._cancelled:
            return
        self._deadline = self._now() + self.timeout_s
        os.write(self._wake_write, b"!")

    def remaining(self) -> float:
        """Seconds a graceful wait may still take (the whole budget before `start()`)."""
        reserve = self.timeout_s * CLOSE_RESERVE
        if self._deadline is None:
            return self.timeout_s - reserve
        return max(0.0, self._deadline - reserve - self._now())

    def cancel(self) -> None:
        """Stop the watchdog without exiting (a process that keeps running, a test)."""
        if self._deadline is not None or self._cancelled:
            return
        self._cancelled = True
        os.write(self._wake_write, b"!")
        self._watchdog.join()

    def _watch(self) -> None:
        try:
            os.read(self._wake_read, 1)
        finally:
            os.close(self._wake_read)
            os.close(self._wake_write)
        if self._cancelled or self._deadline is None:
            return
        delay = self._deadline - self._now()
        if delay > 0:
            self._sleep(delay)
        what = self._describe()
        logger.error("shutdown: still running %.1f s after the stop signal; exiting now%s",
                     self.timeout_s, f" ({what})" if what else "")
        self._exit(self._exit_code)
