"""ragsift as a LlamaIndex retriever (`pip install 'ragsift[llama-index]'`: llama-index-core).

    from llama_index.core.query_engine import RetrieverQueryEngine
    from ragsift.integrations.llama_index import RagsiftRetriever

    retriever = RagsiftRetriever("http://127.0.0.1:8000", api_key="rs_...", kb="handbook",
                                 top_k=4, rerank=True)
    engine = RetrieverQueryEngine.from_args(retriever)        # Settings.llm, or llm=...
    response = engine.query("年假可以结转几天？")             # response.source_nodes

Each hit becomes a `NodeWithScore`: a TextNode (id = chunk id, source = the document, parent =
the section chunk) whose text is the Small2Big context window when Small2Big ran for it, else
the chunk text (`content="chunk"`: always the chunk), with the metadata of
`ragsift.integrations.search.hit_metadata`, and score = the final score (rerank when it ran,
else fused). Of the metadata only `citation` (file › headings, page) is shown to the chat model
and none of it is embedded. Error answers raise the `ragsift.client` exceptions.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import (
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)
from pydantic import SecretStr

from ragsift.client import RetrievalHit
from ragsift.integrations.search import (
    LLM_METADATA_KEYS,
    RagsiftSearch,
    final_score,
    hit_metadata,
)

__all__ = ["RagsiftRetriever", "to_node"]


class RagsiftRetriever(BaseRetriever):
    """A LlamaIndex retriever over one ragsift knowledge base, through the REST API.

    `api_key` defaults to $RAGSIFT_API_KEY. The keywords are RagsiftSearch's fields, the same
    as the LangChain retriever's: `kb` or `kb_id`, `content`, `timeout`, `retries` and the
    search options (mode, top_k, document_ids, tenant_ids, dataset_ids, visibilities, roles,
    rewrite, rerank, small2big, auto_merge, min_score, ...); unknown keywords and invalid
    options raise pydantic.ValidationError here. `config` is the validated RagsiftSearch.
    """

    def __init__(
        self, base_url: str, api_key: str | SecretStr | None = None, *,
        callback_manager: CallbackManager | None = None, verbose: bool = False,
        **options: Any,
    ) -> None:
        if api_key is not None:
            options["api_key"] = api_key
        self.config = RagsiftSearch(base_url=base_url, **options)
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = self.config.search_hits(query_bundle.query_str)
        return [to_node(hit, self.config.hit_text(hit)) for hit in hits]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = await self.config.asearch_hits(query_bundle.query_str)
        return [to_node(hit, self.config.hit_text(hit)) for hit in hits]


def to_node(hit: RetrievalHit, text: str) -> NodeWithScore:
    """A hit as a scored TextNode with `text` as its text."""
    metadata = hit_metadata(hit)
    relationships = {NodeRelationship.SOURCE: RelatedNodeInfo(node_id=hit.document_id)}
    if hit.parent_id is not None:
        relationships[NodeRelationship.PARENT] = RelatedNodeInfo(node_id=hit.parent_id)
    node = TextNode(
        id_=hit.chunk_id, text=text, metadata=metadata,
        excluded_llm_metadata_keys=[key for key in metadata if key not in LLM_METADATA_KEYS],
        excluded_embed_metadata_keys=list(metadata),
        relationships=relationships,
    )
    return NodeWithScore(node=node, score=final_score(hit))
