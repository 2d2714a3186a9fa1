"""Damage a knowledge base's BM25 index on disk the ways a crash or a full disk does."""

from __future__ import annotations

from pathlib import Path

from ragsift.adapters.embedded_index.bm25_layout import kb_directory_name

# every file emptied / meta.json gone / the segment files cut short
DAMAGES = ("emptied", "no_meta", "truncated")


def bm25_directory(index_root: Path, kb_id: str) -> Path:
    """The tantivy directory of one kb under an embedded index (DATA_DIR/index, say)."""
    return index_root / "sparse" / kb_directory_name(kb_id)


def damage_bm25(directory: Path, how: str) -> None:
    """Damage the tantivy index in `directory` (closed by every process first)."""
    if how not in DAMAGES:
        raise ValueError(f"unknown damage {how!r}")
    files = [entry for entry in directory.iterdir() if entry.is_file()]
    assert any(entry.name == "meta.json" for entry in files), f"no index in {directory}"
    for entry in files:
        if how == "emptied":
            entry.write_bytes(b"")
        elif how == "no_meta" and entry.name == "meta.json":
            entry.unlink()
        elif how == "truncated" and entry.suffix in (".term", ".idx", ".store"):
            data = entry.read_bytes()
            entry.write_bytes(data[: len(data) // 3])
