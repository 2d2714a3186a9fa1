"""TEST HOOK: kill or pause this process at a named point, so crash recovery can be tested.

`RAGSIFT_TEST_CRASH_AT=POINT[:N][:pause]` sends SIGKILL to this process the N-th time (default
1) it reaches POINT; with `:pause` it writes `paused at POINT` to stderr and sleeps instead,
for a test that kills it from outside. Unset (always, outside tests) it costs one lookup.

Points: `originals_stored` (a batch of new files' originals stored, before their documents
are created), `registered` (files accepted, nothing parsed), `parsed` (a document prepared,
before any index write), `dense_written` (between the dense and the BM25 write of the
embedded index), `second_dense_written` (after the second dense store's write, before BM25's),
`second_dense_filled` (a batch of `fill-second-dense` written), `dense_checkpoint` (a dense
store's row checkpoint in its temporary file, before it replaces the last), `index_written`
(a batch in the index, before the facts commit), `committed` (the facts committed, before the
index is finished), `sparse_built` (a BM25 rebuild written beside the live index, before the
switch).
"""

from __future__ import annotations

import os
import signal
import sys
import time

ENV = "RAGSIFT_TEST_CRASH_AT"
_seen: dict[str, int] = {}


def crash_point(point: str) -> None:
    """Die (or pause) here when the test hook names this point."""
    spec = os.environ.get(ENV)
    if not spec:
        return
    name, *rest = spec.split(":")
    if name != point:
        return
    nth = int(rest[0]) if rest and rest[0].isdigit() else 1
    _seen[point] = _seen.get(point, 0) + 1
    if _seen[point] != nth:
        return
    if "pause" in rest:
        sys.stderr.write(f"paused at {point}\n")
        sys.stderr.flush()
        time.sleep(3600)
    os.kill(os.getpid(), signal.SIGKILL)
