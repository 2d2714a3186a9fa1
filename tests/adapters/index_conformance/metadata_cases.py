"""Generated metadata and filters for the metadata-filter property test (test_filters.py),
and the grid KB's documents in SQLite that carry the metadata."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from index_corpus import HOSTILE, grid

from ragsift.adapters.sql.repository import SqlRepository
from ragsift.domain.models import Document, DocumentStatus, KnowledgeBase

KB = "grid1"
CHUNKS = {r.chunk_id: r.document_id for r in grid()[0] if r.kb_id == KB}
DOCUMENTS = sorted(set(CHUNKS.values()))
KEYS = ("dept", "year", "tags", "issued", "final")

# the scope tests' injection strings among the values: they must match only themselves
words = st.sampled_from(("hr", "it", "legal", "人事", "", *HOSTILE[:6]))
dates = st.sampled_from(("2023-12-31", "2024-01-01", "2024-06-30")).map(lambda d: {"$date": d})
scalars = st.one_of(words, st.integers(2022, 2025), st.sampled_from((2023.5, 0.0)),
                    st.booleans(), dates)
values = st.one_of(scalars, st.lists(words, max_size=3))
metadata = st.dictionaries(st.sampled_from(KEYS), values, max_size=4)


def _condition() -> st.SearchStrategy[dict[str, Any]]:
    field = st.sampled_from((*KEYS, "document_id"))
    ops = st.one_of(
        st.tuples(st.sampled_from(("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")),
                  scalars.filter(lambda v: not isinstance(v, bool))),
        st.tuples(st.sampled_from(("$eq", "$ne")), st.booleans() | st.sampled_from(DOCUMENTS)),
        st.tuples(st.sampled_from(("$in", "$nin")), st.lists(scalars, max_size=3)),
        st.tuples(st.just("$exists"), st.booleans()),
        st.tuples(st.sampled_from(("$contains", "$startswith", "$endswith")), words),
    )
    return st.builds(lambda name, op: {name: {op[0]: op[1]}}, field, ops)


filters = st.recursive(
    _condition(),
    lambda inner: st.one_of(
        st.builds(lambda parts: {"$and": parts}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda parts: {"$or": parts}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda part: {"$not": part}, inner),
    ),
    max_leaves=6,
)


def grid_documents(directory: Path) -> SqlRepository:
    """The grid KB's documents in SQLite (no scope, so only metadata and ids filter)."""
    repository = SqlRepository(f"sqlite:///{directory / 'facts.db'}")
    repository.create_kb(KnowledgeBase(id=KB, name=KB, embedding_model="m", embedding_dim=8))
    for doc_id in DOCUMENTS:
        repository.add_document(Document(id=doc_id, kb_id=KB, filename=f"{doc_id}.md",
                                         media_type="text/markdown", sha256=None, size=0,
                                         status=DocumentStatus.READY))
    return repository
