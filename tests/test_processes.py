"""Process identity: a live owner is told apart from a dead one and from a reused pid."""

from __future__ import annotations

import subprocess
import sys

from ragsift.processes import Owner, is_dead, this_process


def test_this_process_is_alive_and_its_token_parses_back() -> None:
    me = this_process()
    assert Owner.parse(me.token()) == me
    assert not is_dead(me.token())


def test_a_process_that_exited_is_dead() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    me = this_process()
    gone = Owner(me.host, me.boot_id, child.pid, 1)
    assert is_dead(gone.token())


def test_a_reused_pid_started_at_another_time_is_dead() -> None:
    me = this_process()
    assert is_dead(Owner(me.host, me.boot_id, me.pid, me.start_ticks + 1).token())


def test_an_owner_from_before_a_reboot_is_dead() -> None:
    me = this_process()
    assert is_dead(Owner(me.host, "another-boot", me.pid, me.start_ticks).token())


def test_an_owner_on_another_host_is_not_taken_for_dead() -> None:
    me = this_process()
    assert not is_dead(Owner("elsewhere.example", me.boot_id, 1, 1).token())


def test_no_owner_or_garbage_is_nobody() -> None:
    assert is_dead(None)
    assert is_dead("not a token")
