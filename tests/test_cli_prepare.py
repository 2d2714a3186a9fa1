"""`ingest`, `sync` and `serve` build the embedder's graph at start-up, saying so."""

from __future__ import annotations

import pytest

from ragsift.cli.prepare import MESSAGE, prepare_embedder


class _Embedder:
    def __init__(self, needs: bool) -> None:
        self.needs = needs
        self.prepared = 0

    def needs_build(self) -> bool:
        return self.needs

    def prepare(self) -> bool:
        self.prepared += 1
        return True


def test_a_missing_graph_is_built_once_with_a_line_on_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    embedder = _Embedder(needs=True)
    assert prepare_embedder(embedder) is True
    assert embedder.prepared == 1
    lines = capsys.readouterr().err
    assert MESSAGE in lines and "e5 model graph ready" in lines


def test_a_cached_graph_is_neither_built_nor_announced(
    capsys: pytest.CaptureFixture[str],
) -> None:
    embedder = _Embedder(needs=False)
    assert prepare_embedder(embedder) is False
    assert embedder.prepared == 0 and capsys.readouterr().err == ""
