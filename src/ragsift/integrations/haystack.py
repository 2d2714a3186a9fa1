"""ragsift as Haystack components (`pip install 'ragsift[haystack]'`: haystack-ai).

    from haystack import Pipeline
    from haystack.utils import Secret
    from ragsift.integrations.haystack import RagsiftDocumentWriter, RagsiftRetriever

    key = Secret.from_env_var("RAGSIFT_API_KEY")
    writer = RagsiftDocumentWriter(base_url="http://127.0.0.1:8000", api_key=key, kb="notes")
    writer.run(documents=[Document(id="n1", content="...", meta={"dept": "hr"})])
    pipeline = Pipeline()
    pipeline.add_component("retriever", RagsiftRetriever(base_url=..., api_key=key, kb="notes"))
    pipeline.run({"retriever": {"query": "年假？", "top_k": 3,
                                "filters": {"field": "meta.dept", "operator": "==",
                                            "value": "hr"}}})

`RagsiftRetriever.run(query, top_k=None, filters=None)` -> {"documents": [Document]}: one per
hit, id = chunk id, content = the Small2Big context or the chunk (`content`), meta =
`ragsift.integrations.search.hit_metadata`, score = the calibrated `relevance` (0..1).
`filters` are Haystack's filter dicts (`field` "meta.X" or "X", operators == != > >= < <= in
"not in", AND / OR / NOT), turned into ragsift's filter language and ANDed with a
constructor's `filter`; a filter ragsift cannot say raises ValueError.
`RagsiftDocumentWriter.run(documents)` -> {"documents_written": n}: each Document stored as a
text under its id (upsert: DuplicatePolicy OVERWRITE; NONE is OVERWRITE too, SKIP and FAIL
are not supported) and searchable when run returns. Both serialise with to_dict / from_dict;
the key must be a Secret from an environment variable (Haystack refuses to serialise a token).
"""

from __future__ import annotations

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.document_stores.types import DuplicatePolicy
from haystack.utils import Secret, deserialize_secrets_inplace

from ragsift.integrations.search import framework_score, hit_metadata
from ragsift.integrations.texts import RagsiftTexts, items

__all__ = ["RagsiftDocumentWriter", "RagsiftRetriever", "haystack_filter"]

_COMPARE = {"==": "$eq", "!=": "$ne", ">": "$gt", ">=": "$gte", "<": "$lt", "<=": "$lte",
            "in": "$in", "not in": "$nin"}
_LOGIC = {"AND": "$and", "OR": "$or"}
# the key unless one is given: $RAGSIFT_API_KEY, none when it is unset (a --no-auth server)
DEFAULT_KEY = Secret.from_env_var("RAGSIFT_API_KEY", strict=False)


def haystack_filter(filters: dict[str, Any]) -> dict[str, Any]:
    """A Haystack filter dict in ragsift's filter language (ValueError for what it cannot
    say)."""
    operator = filters.get("operator")
    if "conditions" in filters:
        parts = [haystack_filter(part) for part in filters["conditions"]]
        if operator in _LOGIC:
            return {_LOGIC[str(operator)]: parts}
        if operator == "NOT":  # Haystack's NOT negates the AND of its conditions
            return {"$not": parts[0] if len(parts) == 1 else {"$and": parts}}
        raise ValueError(f"unsupported logical operator {operator!r}")
    if operator not in _COMPARE or "field" not in filters:
        raise ValueError(f"unsupported Haystack filter {filters!r}")
    field = str(filters["field"])
    field = field.removeprefix("meta.")
    return {field: {_COMPARE[str(operator)]: filters.get("value")}}


def _settings(base_url: str, api_key: Secret | None, settings: dict[str, Any]) -> RagsiftTexts:
    key = None if api_key is None else api_key.resolve_value()
    return RagsiftTexts(base_url=base_url, api_key=key, **settings)


@component
class RagsiftRetriever:
    """Retrieves from one ragsift knowledge base through the REST API. Keywords: `kb` or
    `kb_id`, `top_k`, `content`, `timeout`, `retries` and the search options."""

    def __init__(self, base_url: str,
                 api_key: Secret | None = DEFAULT_KEY,
                 **settings: Any) -> None:
        self.base_url = base_url
        self.api_key = api_key
        self.settings = dict(settings)
        self._search = _settings(base_url, api_key, self.settings)  # validated here

    @component.output_types(documents=list[Document])
    def run(self, query: str, top_k: int | None = None,
            filters: dict[str, Any] | None = None) -> dict[str, list[Document]]:
        hits = self._search.search_hits(query, **self._options(top_k, filters))
        return {"documents": [self._document(hit) for hit in hits]}

    @component.output_types(documents=list[Document])
    async def run_async(self, query: str, top_k: int | None = None,
                        filters: dict[str, Any] | None = None) -> dict[str, list[Document]]:
        hits = await self._search.asearch_hits(query, **self._options(top_k, filters))
        return {"documents": [self._document(hit) for hit in hits]}

    def _options(self, top_k: int | None, filters: dict[str, Any] | None) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if top_k is not None:
            options["top_k"] = top_k
        if filters:
            raw = haystack_filter(filters)
            given = self._search.filter
            options["filter"] = raw if given is None else {"$and": [given, raw]}
        return options

    def _document(self, hit: Any) -> Document:
        return Document(id=hit.chunk_id, content=self._search.hit_text(hit),
                        meta=hit_metadata(hit), score=framework_score(hit))

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, base_url=self.base_url,
                               api_key=None if self.api_key is None else self.api_key.to_dict(),
                               **self.settings)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RagsiftRetriever:
        data = {**data, "init_parameters": dict(data["init_parameters"])}  # the caller's stays
        deserialize_secrets_inplace(data["init_parameters"], keys=["api_key"])
        return default_from_dict(cls, data)


@component
class RagsiftDocumentWriter:
    """Writes Documents into one ragsift knowledge base as texts under their ids."""

    def __init__(self, base_url: str,
                 api_key: Secret | None = DEFAULT_KEY,
                 policy: DuplicatePolicy = DuplicatePolicy.OVERWRITE, **settings: Any) -> None:
        if policy not in (DuplicatePolicy.OVERWRITE, DuplicatePolicy.NONE):
            raise ValueError(f"policy {policy.value!r} is not supported: ragsift overwrites "
                             "a text written again under its id")
        self.base_url = base_url
        self.api_key = api_key
        self.policy = policy
        self.settings = dict(settings)
        self._texts = _settings(base_url, api_key, self.settings)

    @component.output_types(documents_written=int)
    def run(self, documents: list[Document]) -> dict[str, int]:
        return {"documents_written": len(self._texts.write(_items(documents)))}

    def delete_documents(self, document_ids: list[str]) -> None:
        """Delete the texts stored under `document_ids` (ids no text has are ignored)."""
        self._texts.delete_keys(document_ids)

    @component.output_types(documents_written=int)
    async def run_async(self, documents: list[Document]) -> dict[str, int]:
        return {"documents_written": len(await self._texts.awrite(_items(documents)))}

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, base_url=self.base_url,
                               api_key=None if self.api_key is None else self.api_key.to_dict(),
                               policy=self.policy.name, **self.settings)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RagsiftDocumentWriter:
        data = {**data, "init_parameters": dict(data["init_parameters"])}  # the caller's stays
        deserialize_secrets_inplace(data["init_parameters"], keys=["api_key"])
        policy = data["init_parameters"].get("policy")
        if policy is not None:
            data["init_parameters"]["policy"] = DuplicatePolicy[policy]
        return default_from_dict(cls, data)


def _items(documents: list[Document]) -> list[Any]:
    for document in documents:
        if document.content is None:
            raise ValueError(f"document {document.id!r} has no text content")
    return items([d.content or "" for d in documents], [dict(d.meta) for d in documents],
                 [d.id for d in documents])
