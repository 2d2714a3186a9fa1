"""`ragsift ingest` killed at every phase: the next run finishes every document, honestly."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from faults.crash_helpers import CORPUS, check_consistent, env_for, run, write_corpus
from ragsift.faults import ENV

KILLED = -signal.SIGKILL


@pytest.mark.parametrize("point", [
    "originals_stored", "registered", "parsed:3", "dense_written", "second_dense_written",
    "index_written", "committed",
])
def test_a_rerun_after_a_kill_finishes_every_document_and_counts_agree(
    tmp_path: Path, point: str
) -> None:
    folder = write_corpus(tmp_path / "corpus")
    data = tmp_path / "data"
    killed = run(data, "ingest", str(folder), "--kb", "docs", crash_at=point)
    assert killed.returncode == KILLED, killed.stderr

    again = run(data, "ingest", str(folder), "--kb", "docs")
    assert again.returncode == 0, again.stderr
    assert f"{len(CORPUS)} of {len(CORPUS)} documents ingested" in again.stdout
    # what the killed run stored is either finished now or was READY already: never a
    # "duplicate" of a document that is not searchable
    check_consistent(data, "docs", len(CORPUS))


def test_a_rerun_with_other_files_still_finishes_what_the_killed_run_left(
    tmp_path: Path,
) -> None:
    folder = write_corpus(tmp_path / "corpus")
    data = tmp_path / "data"
    assert run(data, "ingest", str(folder), "--kb", "docs",
               crash_at="registered").returncode == KILLED
    other = tmp_path / "other.md"
    other.write_text("# Other\n\nnothing to do with the rest.\n", "utf-8")
    again = run(data, "ingest", str(other), "--kb", "docs")
    assert again.returncode == 0, again.stderr
    assert f"resumed {len(CORPUS)} document(s)" in again.stdout
    check_consistent(data, "docs", len(CORPUS) + 1)


def test_a_killed_reindex_is_finished_by_the_next_command(tmp_path: Path) -> None:
    folder = write_corpus(tmp_path / "corpus")
    data = tmp_path / "data"
    assert run(data, "ingest", str(folder), "--kb", "docs").returncode == 0
    killed = run(data, "reindex", "--kb", "docs", crash_at="parsed:2")
    assert killed.returncode == KILLED, killed.stderr
    assert "PARSING" in run(data, "docs", "list", "--kb", "docs").stdout
    again = run(data, "ingest", str(folder), "--kb", "docs")
    assert again.returncode == 0, again.stderr
    check_consistent(data, "docs", len(CORPUS))


def test_killed_ingest_leaves_no_process_and_the_next_command_works_at_once(
    tmp_path: Path,
) -> None:
    folder = write_corpus(tmp_path / "corpus")
    data = tmp_path / "data"
    env = env_for(data, **{ENV: "parsed:2:pause", "RAGSIFT_PREPARE_WORKERS": "2"})
    process = subprocess.Popen(
        [sys.executable, "-m", "ragsift.cli", "ingest", str(folder), "--kb", "docs"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert process.stderr is not None
        for line in process.stderr:
            if "paused at parsed" in line:
                break
        children = _children(process.pid)
        assert children, "the preparation workers should be running"
        process.send_signal(signal.SIGKILL)
        assert process.wait(timeout=30) == KILLED
    finally:
        process.kill()
        process.wait()
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in children), "orphaned preparation workers"
    started = time.monotonic()
    listed = run(data, "docs", "list", "--kb", "docs")
    assert listed.returncode == 0, listed.stderr
    assert time.monotonic() - started < 60  # not held up by a lock (imports dominate)
    again = run(data, "ingest", str(folder), "--kb", "docs")
    assert again.returncode == 0, again.stderr
    check_consistent(data, "docs", len(CORPUS))


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for init to reap it holds nothing)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_a_killed_rebuild_sparse_keeps_the_live_index_and_runs_again(tmp_path: Path) -> None:
    folder = write_corpus(tmp_path / "corpus")
    data = tmp_path / "data"
    assert run(data, "ingest", str(folder), "--kb", "docs").returncode == 0
    killed = run(data, "rebuild-sparse", "--kb", "docs", crash_at="sparse_built")
    assert killed.returncode == KILLED, killed.stderr
    check_consistent(data, "docs", len(CORPUS))  # the live BM25 index serves on
    again = run(data, "rebuild-sparse", "--kb", "docs")
    assert again.returncode == 0, again.stderr
    check_consistent(data, "docs", len(CORPUS))


def test_a_killed_fill_second_dense_is_finished_by_running_it_again(tmp_path: Path) -> None:
    folder = write_corpus(tmp_path / "corpus")
    data = tmp_path / "data"
    off = {"RAGSIFT_SECOND_DENSE": "off"}
    assert run(data, "ingest", str(folder), "--kb", "docs", env=off).returncode == 0
    small = {"RAGSIFT_SECOND_DENSE": "use", "RAGSIFT_EMBEDDING_BATCH_SIZE": "8"}
    killed = run(data, "fill-second-dense", crash_at="second_dense_filled:2", env=small)
    assert killed.returncode == KILLED, killed.stderr

    again = run(data, "fill-second-dense", "--json", env=small)
    assert again.returncode == 0, again.stderr
    (report,) = json.loads(again.stdout)
    assert report["kb"] == "docs" and report["filled"] > 0  # what the kill left undone
    assert json.loads(run(data, "fill-second-dense", "--json", env=small).stdout) == [
        {"kb": "docs", "filled": 0}]
    check_consistent(data, "docs", len(CORPUS))


@pytest.mark.parametrize("nth", [1, 2])
def test_a_kill_while_a_dense_checkpoint_is_written_loses_nothing(
    tmp_path: Path, nth: int
) -> None:
    folder = write_corpus(tmp_path / "corpus")
    data = tmp_path / "data"
    often = {"RAGSIFT_DENSE_CHECKPOINT_ROWS": "1"}  # a checkpoint after every write
    killed = run(data, "ingest", str(folder), "--kb", "docs",
                 crash_at=f"dense_checkpoint:{nth}", env=often)
    assert killed.returncode == KILLED, killed.stderr
    assert list((data / "index").glob("*/columns-*.npz.tmp"))  # killed mid-write

    again = run(data, "ingest", str(folder), "--kb", "docs", env=often)
    assert again.returncode == 0, again.stderr
    assert not list((data / "index").glob("*/columns-*.tmp"))
    assert list((data / "index" / "dense").glob("columns-*.npz"))
    check_consistent(data, "docs", len(CORPUS))  # opened from the checkpoint
