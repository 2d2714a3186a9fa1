"""A conversation store over a fresh SQLite file holding one KB ("kb1"), for the chat tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsift.adapters.sql import SqlRepository
from ragsift.adapters.sql.conversation_repository import SqlConversationStore
from ragsift.domain.models import KnowledgeBase


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqlConversationStore]:
    url = f"sqlite:///{tmp_path / 'chat.sqlite'}"
    repository = SqlRepository(url)
    repository.create_kb(KnowledgeBase(id="kb1", name="docs", embedding_model="e5",
                                       embedding_dim=384))
    conversations = SqlConversationStore(url, migrate=False)
    yield conversations
    conversations.close()
    repository.close()
