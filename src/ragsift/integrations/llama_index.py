"""ragsift as a LlamaIndex retriever (`pip install 'ragsift[llama-index]'`: llama-index-core).

    from llama_index.core.query_engine import RetrieverQueryEngine
    from ragsift.integrations.llama_index import RagsiftRetriever

    retriever = RagsiftRetriever("http://127.0.0.1:8000", api_key="rs_...", kb="handbook",
                                 similarity_top_k=4, rerank=True,
                                 filters=MetadataFilters(filters=[MetadataFilter(
                                     key="tenant_id", value=["acme"], operator="in")]))
    engine = RetrieverQueryEngine.from_args(retriever)        # Settings.llm, or llm=...
    response = engine.query("年假可以结转几天？")             # response.source_nodes

Each hit becomes a `NodeWithScore`: a TextNode (id = chunk id, source = the document, parent =
the section chunk) whose text is the Small2Big context window when Small2Big ran for it, else
the chunk text (`content="chunk"`: always the chunk), with the metadata of
`ragsift.integrations.search.hit_metadata`, and score = the hit's calibrated `relevance`
(0..1, so SimilarityPostprocessor cut-offs work; the raw scores stay in the metadata).
`similarity_top_k` (LlamaIndex's name) is an alias of `top_k`; `filters`
(`MetadataFilters`) become scope options as `ragsift.integrations.llama_filters` describes
(EQ / IN on document_id, source, tenant_id, dataset_id, visibility; anything else raises
UnsupportedFilterError). Of the metadata only `citation` (file › headings, page) is shown to
the chat model and none of it is embedded. Error answers raise the `ragsift.client` exceptions.
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
from llama_index.core.vector_stores.types import MetadataFilters
from pydantic import SecretStr

from ragsift.client import RetrievalHit
from ragsift.integrations.llama_filters import filter_options
from ragsift.integrations.search import (
    LLM_METADATA_KEYS,
    RagsiftSearch,
    framework_score,
    hit_metadata,
    rename_count,
)

__all__ = ["RagsiftRetriever", "to_node"]


class RagsiftRetriever(BaseRetriever):
    """A LlamaIndex retriever over one ragsift knowledge base, through the REST API.

    `api_key` defaults to $RAGSIFT_API_KEY. The keywords are RagsiftSearch's fields, the same
    as the LangChain retriever's: `kb` or `kb_id`, `content`, `timeout`, `retries` and the
    search options (mode, top_k or similarity_top_k, document_ids, tenant_ids, dataset_ids,
    visibilities, roles, rewrite, rerank, small2big, auto_merge, min_score, ...); unknown
    keywords and invalid options raise pydantic.ValidationError here, unsupported `filters`
    UnsupportedFilterError (a ValueError). `config` is the validated RagsiftSearch, with the
    filters in its scope options (intersected with the same options given as keywords).
    """

    def __init__(
        self, base_url: str, api_key: str | SecretStr | None = None, *,
        filters: MetadataFilters | None = None,
        callback_manager: CallbackManager | None = None, verbose: bool = False,
        **options: Any,
    ) -> None:
        if api_key is not None:
            options["api_key"] = api_key
        options = rename_count(options, "similarity_top_k")
        options.update(filter_options(filters, options))
        self.config = RagsiftSearch(base_url=base_url, **options)
        self.filters = filters
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @property
    def similarity_top_k(self) -> int | None:
        """The result count (`top_k`; None = the server's default)."""
        return self.config.top_k

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
    return NodeWithScore(node=node, score=framework_score(hit))
