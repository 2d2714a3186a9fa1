"""ragsift as a LangChain VectorStore (`pip install 'ragsift[langchain]'`: langchain-core).

    from ragsift.integrations.langchain_store import RagsiftVectorStore

    store = RagsiftVectorStore(base_url="http://127.0.0.1:8000", api_key="rs_...", kb="notes")
    ids = store.add_documents([Document(page_content="...", metadata={"dept": "hr"})])
    store.similarity_search_with_score("年假可以结转几天？", k=4, filter={"dept": "hr"})
    store.as_retriever(search_kwargs={"k": 2, "filter": {"year": {"$gte": 2024}}})
    store.delete(ids); store.get_by_ids(ids)

Each text becomes a plain-text document of the KB under its id (a given id is replaced:
upsert), written through the REST API (`/api/kbs/{kb_id}/texts`, an editor key) and embedded
by the server's own embedder; `add_*` return once the texts are searchable. A search is
ragsift's hybrid search (options as for RagsiftRetriever, per call too) with one hit per text:
Document(id=the text's id, page_content=its best chunk, which is the whole text for a text of
one chunk, metadata=the text's metadata). The score is the hit's calibrated `relevance`
(0..1, higher is better); `filter` is ragsift's filter language
(docs/how-to/metadata-filters.md). Not supported: `embedding` (the server embeds; an
embedding given to `from_texts` is ignored), search by vector and MMR (NotImplementedError),
metadata keys outside ragsift's rules (a 400 naming the key), and two ids for one identical
text (DuplicateTextError).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

from ragsift.api.schemas_texts import TextOut
from ragsift.integrations.search import framework_score
from ragsift.integrations.texts import RagsiftTexts, TextHit, items

__all__ = ["RagsiftVectorStore"]


class RagsiftVectorStore(VectorStore):
    """A LangChain vector store over one ragsift knowledge base.

    Keywords are RagsiftRetriever's (base_url, api_key, kb or kb_id, timeout, retries, the
    search options) and `wait_timeout` (seconds `add_*` waits for its texts).
    """

    def __init__(self, **settings: Any) -> None:
        self.texts = RagsiftTexts(**settings)

    @property
    def embeddings(self) -> Embeddings | None:
        return None  # the server embeds

    def add_texts(self, texts: Iterable[str], metadatas: list[dict[str, Any]] | None = None,
                  *, ids: list[str] | None = None, **kwargs: Any) -> list[str]:
        return self.texts.write(items(list(texts), metadatas, ids))

    async def aadd_texts(self, texts: Iterable[str],
                         metadatas: list[dict[str, Any]] | None = None, *,
                         ids: list[str] | None = None, **kwargs: Any) -> list[str]:
        return await self.texts.awrite(items(list(texts), metadatas, ids))

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        if ids is None:
            raise ValueError("give the ids to delete (deleting everything is not supported)")
        self.texts.delete_keys(ids)
        return True

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        if ids is None:
            raise ValueError("give the ids to delete (deleting everything is not supported)")
        await self.texts.adelete_keys(ids)
        return True

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        return [_stored(t) for t in self.texts.read(list(ids))]

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        return [_stored(t) for t in await self.texts.aread(list(ids))]

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return [doc for doc, _ in self.similarity_search_with_score(query, k, **kwargs)]

    async def asimilarity_search(self, query: str, k: int = 4,
                                 **kwargs: Any) -> list[Document]:
        return [doc for doc, _ in await self.asimilarity_search_with_score(query, k, **kwargs)]

    def similarity_search_with_score(self, query: str, k: int = 4, **kwargs: Any
                                     ) -> list[tuple[Document, float]]:
        """(Document, relevance in 0..1) of the `k` texts that match best; `filter` and
        ragsift search options as keywords."""
        return [_scored(h) for h in self.texts.search_texts(query, k, **_options(kwargs))]

    async def asimilarity_search_with_score(self, query: str, k: int = 4, **kwargs: Any
                                            ) -> list[tuple[Document, float]]:
        hits = await self.texts.asearch_texts(query, k, **_options(kwargs))
        return [_scored(h) for h in hits]

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        return lambda score: score  # `relevance` is already 0..1, higher is better

    def similarity_search_by_vector(self, embedding: list[float], k: int = 4,
                                    **kwargs: Any) -> list[Document]:
        raise NotImplementedError("ragsift embeds queries itself: search by text")

    @classmethod
    def from_texts(cls, texts: list[str], embedding: Embeddings | None = None,
                   metadatas: list[dict[str, Any]] | None = None, *,
                   ids: list[str] | None = None, **kwargs: Any) -> RagsiftVectorStore:
        """A store on the KB of `kwargs` with `texts` added (`embedding` is not used)."""
        store = cls(**kwargs)
        store.add_texts(texts, metadatas, ids=ids)
        return store


def _options(kwargs: dict[str, Any]) -> dict[str, Any]:
    """LangChain's keywords as ragsift search options (a None filter is none)."""
    options = {name: value for name, value in kwargs.items()
               if name not in ("score_threshold",)}
    if options.get("filter") is None:
        options.pop("filter", None)
    return options


def _stored(text: TextOut) -> Document:
    return Document(id=text.key, page_content=text.text, metadata=dict(text.metadata))


def _scored(found: TextHit) -> tuple[Document, float]:
    hit = found.hit
    document = Document(id=found.key, page_content=hit.text, metadata=dict(hit.metadata or {}))
    return document, framework_score(hit)
