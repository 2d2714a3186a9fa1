"""ragsift as a LangChain retriever (`pip install 'ragsift[langchain]'`: langchain-core).

    from ragsift.integrations.langchain import RagsiftRetriever

    retriever = RagsiftRetriever(base_url="http://127.0.0.1:8000", api_key="rs_...",
                                 kb="handbook", k=4, rerank=True)
    chain = retriever | RunnableLambda(format_docs) | prompt | llm
    docs = retriever.invoke("年假可以结转几天？")      # or await retriever.ainvoke(...)
    docs = retriever.invoke("年假可以结转几天？", k=1, document_ids=[...])  # this call only

`k` is LangChain's name for the result count and an alias of ragsift's `top_k` (give either).
Keywords of `invoke` / `ainvoke` are search options for that call only (`k` or `top_k`,
`rerank`, `document_ids`, ...), validated like the constructor's (ValueError).

Each hit becomes a `Document` (id = chunk id) whose page_content is the Small2Big context
window when Small2Big ran for it, else the chunk text (`content="chunk"`: always the chunk);
its metadata is `ragsift.integrations.search.hit_metadata` (ids, file, locator, heading path,
citation, every stage's scores, final score, `chunk_text`, `context_text`). Error answers raise
the `ragsift.client` exceptions (UnauthorizedError for a bad key, ...).
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, model_validator

from ragsift.client import RetrievalHit
from ragsift.integrations.search import RagsiftSearch, hit_metadata, rename_count

__all__ = ["RagsiftRetriever", "to_document"]


class RagsiftRetriever(BaseRetriever, RagsiftSearch):
    """A LangChain retriever over one ragsift knowledge base, through the REST API.

    Fields: `base_url`, `api_key` (SecretStr; default $RAGSIFT_API_KEY), `kb` or `kb_id`,
    `content`, `timeout`, `retries`, and the search options (mode, top_k or k, document_ids,
    tenant_ids, dataset_ids, visibilities, roles, rewrite, rerank, small2big, auto_merge,
    min_score, ...; None = the server's default). Unknown fields and invalid options are
    refused when the retriever is made.
    """

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _k_is_top_k(cls, values: Any) -> Any:
        return rename_count(values, "k")

    @property
    def k(self) -> int | None:
        """The result count (`top_k`; None = the server's default)."""
        return self.top_k

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **options: Any
    ) -> list[Document]:
        hits = self.search_hits(query, **_call_options(options))
        return [to_document(hit, self.hit_text(hit)) for hit in hits]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **options: Any
    ) -> list[Document]:
        hits = await self.asearch_hits(query, **_call_options(options))
        return [to_document(hit, self.hit_text(hit)) for hit in hits]


def _call_options(options: dict[str, Any]) -> dict[str, Any]:
    """The keywords of one invoke() as search options: `k` is `top_k`; `verbose` is
    LangChain's own (its callback manager reads it) and passed on to us as well."""
    options = {name: value for name, value in options.items() if name != "verbose"}
    renamed: dict[str, Any] = rename_count(options, "k")
    return renamed


def to_document(hit: RetrievalHit, text: str) -> Document:
    """A hit as a LangChain Document with `text` as its page content."""
    return Document(id=hit.chunk_id, page_content=text, metadata=hit_metadata(hit))
