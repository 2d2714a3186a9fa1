"""ragsift as a LlamaIndex vector store (`pip install 'ragsift[llama-index]'`).

    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from ragsift.integrations.llama_store import RagsiftVectorStore

    store = RagsiftVectorStore("http://127.0.0.1:8000", api_key="rs_...", kb="notes")
    # the server embeds: LlamaIndex's own embedding is computed on insert but never used
    index = VectorStoreIndex.from_vector_store(store, embed_model=MockEmbedding(embed_dim=1))
    index.insert(Document(text="...", metadata={"dept": "hr"}))
    index.as_query_engine(llm=my_llm, similarity_top_k=3).query("年假可以结转几天？")
    index.delete_ref_doc(doc_id)

Each node becomes a plain-text document of the KB under the node id (`/api/kbs/{id}/texts`,
an editor key), with the node's metadata and its source document's id as `ref_doc_id`;
`add` returns once the nodes are searchable. A query is ragsift's hybrid search of
`query_str` (is_embedding_query False: LlamaIndex does not embed the query), one hit per node;
the similarity is the hit's calibrated `relevance` (0..1). `filters` (MetadataFilters) become
ragsift's filter language, `doc_ids` a filter on `ref_doc_id`, `node_ids` a document
whitelist. Query modes: default and hybrid search hybrid, sparse and text_search BM25 only;
others raise NotImplementedError. `delete(ref_doc_id)` lists the KB's documents to find that
source's nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import (
    BaseNode,
    MetadataMode,
    NodeRelationship,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)
from pydantic import SecretStr

from ragsift.api.schemas_texts import TextOut
from ragsift.integrations.llama_filters import filter_options
from ragsift.integrations.search import framework_score
from ragsift.integrations.texts import RagsiftTexts, TextHit, TextItem

__all__ = ["REF_DOC_KEY", "RagsiftVectorStore"]

# the metadata field that holds a node's source document id
REF_DOC_KEY = "ref_doc_id"
_MODES = {VectorStoreQueryMode.DEFAULT: None, VectorStoreQueryMode.HYBRID: "hybrid",
          VectorStoreQueryMode.SPARSE: "sparse", VectorStoreQueryMode.TEXT_SEARCH: "sparse"}


class RagsiftVectorStore(BasePydanticVectorStore):
    """A LlamaIndex vector store over one ragsift knowledge base; keywords as for the
    LlamaIndex RagsiftRetriever (kb or kb_id, timeout, retries, search options) and
    `wait_timeout`."""

    stores_text: bool = True
    is_embedding_query: bool = False
    flat_metadata: bool = True
    texts: RagsiftTexts

    def __init__(self, base_url: str, api_key: str | SecretStr | None = None,
                 **settings: Any) -> None:
        if api_key is not None:
            settings["api_key"] = api_key
        # `texts` is this subclass's field; the plugin checks against the base's fields
        super().__init__(texts=RagsiftTexts(base_url=base_url, **settings))  # type: ignore[call-arg]

    @classmethod
    def class_name(cls) -> str:
        return "RagsiftVectorStore"

    @property
    def client(self) -> RagsiftTexts:
        return self.texts

    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        return self.texts.write([_item(node) for node in nodes])

    async def async_add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        return await self.texts.awrite([_item(node) for node in nodes])

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        keys = self.texts.keys_where(REF_DOC_KEY, ref_doc_id)
        if keys:
            self.texts.delete_keys(keys)

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        keys = await self.texts.akeys_where(REF_DOC_KEY, ref_doc_id)
        if keys:
            await self.texts.adelete_keys(keys)

    def delete_nodes(self, node_ids: list[str] | None = None,
                     filters: MetadataFilters | None = None, **delete_kwargs: Any) -> None:
        if node_ids is None or filters is not None:
            raise NotImplementedError("delete nodes by their ids")
        self.texts.delete_keys(node_ids)

    async def adelete_nodes(self, node_ids: list[str] | None = None,
                            filters: MetadataFilters | None = None,
                            **delete_kwargs: Any) -> None:
        if node_ids is None or filters is not None:
            raise NotImplementedError("delete nodes by their ids")
        await self.texts.adelete_keys(node_ids)

    def get_nodes(self, node_ids: list[str] | None = None,
                  filters: MetadataFilters | None = None) -> list[BaseNode]:
        if node_ids is None or filters is not None:
            raise NotImplementedError("get nodes by their ids")
        return [_stored(text) for text in self.texts.read(node_ids)]

    async def aget_nodes(self, node_ids: list[str] | None = None,
                         filters: MetadataFilters | None = None) -> list[BaseNode]:
        if node_ids is None or filters is not None:
            raise NotImplementedError("get nodes by their ids")
        return [_stored(text) for text in await self.texts.aread(node_ids)]

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        options = _options(query, self.texts.read(query.node_ids) if query.node_ids else None)
        hits = self.texts.search_texts(_query_text(query), query.similarity_top_k, **options)
        return _result(hits)

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        known = await self.texts.aread(query.node_ids) if query.node_ids else None
        hits = await self.texts.asearch_texts(_query_text(query), query.similarity_top_k,
                                              **_options(query, known))
        return _result(hits)


def _item(node: BaseNode) -> TextItem:
    metadata = dict(node.metadata)
    if node.ref_doc_id is not None:
        metadata[REF_DOC_KEY] = node.ref_doc_id
    return TextItem(key=node.node_id, text=node.get_content(MetadataMode.NONE),
                    metadata=metadata)


def _node(key: str, text: str, stored: dict[str, Any]) -> TextNode:
    metadata = dict(stored)
    ref = metadata.pop(REF_DOC_KEY, None)
    relationships = ({NodeRelationship.SOURCE: RelatedNodeInfo(node_id=str(ref))}
                     if ref is not None else {})
    return TextNode(id_=key, text=text, metadata=metadata, relationships=relationships)


def _stored(text: TextOut) -> TextNode:
    return _node(text.key, text.text, text.metadata)


def _query_text(query: VectorStoreQuery) -> str:
    if not query.query_str:
        raise ValueError("ragsift searches by text: the query needs query_str")
    return query.query_str


def _options(query: VectorStoreQuery, nodes: list[TextOut] | None) -> dict[str, Any]:
    if query.mode not in _MODES:
        raise NotImplementedError(f"query mode {query.mode.value!r} is not supported "
                                  "(default, hybrid, sparse, text_search)")
    options = filter_options(query.filters) if query.filters is not None else {}
    if query.doc_ids:
        by_source = {REF_DOC_KEY: {"$in": list(query.doc_ids)}}
        given = options.get("filter")
        options["filter"] = by_source if given is None else {"$and": [given, by_source]}
    if nodes is not None:
        options["document_ids"] = [n.document_id for n in nodes]
    mode = _MODES[query.mode]
    if mode is not None:
        options["mode"] = mode
    return options


def _result(hits: list[TextHit]) -> VectorStoreQueryResult:
    nodes = [_node(h.key, h.hit.text, dict(h.hit.metadata or {})) for h in hits]
    return VectorStoreQueryResult(nodes=list(nodes),
                                  similarities=[framework_score(h.hit) for h in hits],
                                  ids=[h.key for h in hits])
