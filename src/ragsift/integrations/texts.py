"""What the LangChain and LlamaIndex vector stores share: texts written under the caller's
ids into one knowledge base through the REST API (`/api/kbs/{kb_id}/texts`), waited for, read
back, deleted, and searched with each hit named by its text's id. Nothing here imports
LangChain or LlamaIndex.

The server embeds (with its configured embedder): a framework's `embedding` is not used. A
text is a plain-text document: a long one is chunked, and a search returns its best chunk
(one hit per text, so `k` counts texts). ragsift keeps one document per content: a text equal
to one stored under another id is refused (DuplicateTextError) instead of aliased.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import PrivateAttr

from ragsift.api.schemas import UploadedDocument
from ragsift.api.schemas_texts import MAX_KEYS, MAX_TEXTS, TextOut
from ragsift.client import AsyncRagsiftClient, RagsiftClient, RetrievalHit
from ragsift.client.errors import RagsiftClientError, WaitTimeoutError
from ragsift.domain.models import Document, DocumentStatus
from ragsift.integrations.search import RagsiftSearch

__all__ = ["DuplicateTextError", "RagsiftTexts", "TextFailedError", "TextHit", "TextItem"]

POLL_S = 0.1
# hits fetched per text wanted: a long text has several chunks among the hits
OVERFETCH = 3
MAX_TOP_K = 200


class DuplicateTextError(RagsiftClientError, ValueError):
    """A text equal to one the KB holds under another id (ragsift stores a content once)."""


class TextFailedError(RagsiftClientError):
    """A text the server could not ingest (its document FAILED)."""


@dataclass(frozen=True, slots=True)
class TextItem:
    key: str
    text: str
    metadata: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class TextHit:
    """A search hit named by the id of the text it is a chunk of."""

    key: str
    hit: RetrievalHit


def items(texts: Sequence[str], metadatas: Sequence[Mapping[str, Any] | None] | None,
          ids: Sequence[str | None] | None) -> list[TextItem]:
    """Texts with their metadata and ids (a missing id becomes a fresh uuid4)."""
    if metadatas is not None and len(metadatas) != len(texts):
        raise ValueError(f"{len(metadatas)} metadatas for {len(texts)} texts")
    if ids is not None and len(ids) != len(texts):
        raise ValueError(f"{len(ids)} ids for {len(texts)} texts")
    return [TextItem(key=(ids[i] if ids is not None else None) or str(uuid.uuid4()),
                     text=text, metadata=dict((metadatas[i] if metadatas else None) or {}))
            for i, text in enumerate(texts)]


def _batches(values: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [values[i:i + size] for i in range(0, len(values), size)]


def _payload(batch: Sequence[TextItem]) -> list[dict[str, Any]]:
    return [{"key": i.key, "text": i.text, "metadata": dict(i.metadata)} for i in batch]


def _check_written(batch: Sequence[TextItem], written: Sequence[UploadedDocument]) -> None:
    for item, document in zip(batch, written, strict=True):
        if document.key != item.key:
            raise DuplicateTextError(
                f"the text of id {item.key!r} is already stored under "
                f"id {document.key!r}; ragsift keeps one document per content")


def _settled(document: Document) -> bool:
    return document.status in (DocumentStatus.READY, DocumentStatus.FAILED) and not (
        document.replacing)


def _failed(documents: Sequence[Document]) -> None:
    bad = [d for d in documents if d.status == DocumentStatus.FAILED]
    if bad:
        raise TextFailedError("texts not ingested: " + "; ".join(
            f"{d.key}: {d.error}" for d in bad))


class RagsiftTexts(RagsiftSearch):
    """A RagsiftSearch that also writes, reads and deletes texts by id. `wait_timeout`:
    seconds a write waits for its texts to be searchable."""

    wait_timeout: float = 120.0
    # document id -> the id of its text (a document keeps its key for life)
    _names: dict[str, str] = PrivateAttr(default_factory=dict)

    # ---- sync

    def _client(self) -> RagsiftClient:
        return RagsiftClient(self.base_url, api_key=self._secret(), timeout=self.timeout,
                             retries=self.retries)

    def _kb_of(self, client: RagsiftClient) -> str:
        if self.kb_id is not None:
            return self.kb_id
        return _named(self.kb, client.list_kbs())

    def write(self, texts: Sequence[TextItem]) -> list[str]:
        """Store `texts` (a known id is replaced) and wait until they are searchable."""
        with self._client() as client:
            kb_id = self._kb_of(client)
            ids: list[str] = []
            for batch in _batches(texts, MAX_TEXTS):
                written = client.write_texts(kb_id, _payload(batch))
                _check_written(batch, written)
                ids += [d.id for d in written]
            deadline = time.monotonic() + self.wait_timeout
            pending = list(dict.fromkeys(ids))
            while True:
                documents = [client.get_document(i) for i in pending]
                _failed(documents)
                pending = [d.id for d in documents if not _settled(d)]
                if not pending:
                    return [t.key for t in texts]
                if time.monotonic() > deadline:
                    raise WaitTimeoutError(f"texts not searchable after {self.wait_timeout:g}"
                                           " s", {i: "waiting" for i in pending})
                time.sleep(POLL_S)

    def read(self, keys: Sequence[str]) -> list[TextOut]:
        with self._client() as client:
            kb_id = self._kb_of(client)
            return [t for batch in _batches(keys, MAX_KEYS)
                    for t in client.read_texts(kb_id, batch)]

    def delete_keys(self, keys: Sequence[str]) -> list[str]:
        with self._client() as client:
            kb_id = self._kb_of(client)
            return [k for batch in _batches(keys, MAX_KEYS)
                    for k in client.delete_texts(kb_id, batch)]

    def keys_where(self, name: str, value: Any) -> list[str]:
        """The keys of the KB's documents whose metadata `name` is `value` (lists the KB)."""
        with self._client() as client:
            documents = client.list_documents(self._kb_of(client))
        return [d.key for d in documents if d.key and d.metadata.get(name) == value]

    def search_texts(self, query: str, k: int, **overrides: Any) -> list[TextHit]:
        """The best hit of each of the `k` texts that match `query` best."""
        hits = self.search_hits(query, **{**overrides, "top_k": _fetch(k)})
        unknown = [d for d in _documents(hits) if d not in self._names]
        if unknown:
            with self._client() as client:
                self._names.update({d: client.get_document(d).key or d for d in unknown})
        return _per_text(hits, self._names, k)

    # ---- async

    def _aclient(self) -> AsyncRagsiftClient:
        return AsyncRagsiftClient(self.base_url, api_key=self._secret(), timeout=self.timeout,
                                  retries=self.retries)

    async def _akb_of(self, client: AsyncRagsiftClient) -> str:
        if self.kb_id is not None:
            return self.kb_id
        return _named(self.kb, await client.list_kbs())

    async def awrite(self, texts: Sequence[TextItem]) -> list[str]:
        async with self._aclient() as client:
            kb_id = await self._akb_of(client)
            ids: list[str] = []
            for batch in _batches(texts, MAX_TEXTS):
                written = await client.write_texts(kb_id, _payload(batch))
                _check_written(batch, written)
                ids += [d.id for d in written]
            deadline = time.monotonic() + self.wait_timeout
            pending = list(dict.fromkeys(ids))
            while True:
                documents = [await client.get_document(i) for i in pending]
                _failed(documents)
                pending = [d.id for d in documents if not _settled(d)]
                if not pending:
                    return [t.key for t in texts]
                if time.monotonic() > deadline:
                    raise WaitTimeoutError(f"texts not searchable after {self.wait_timeout:g}"
                                           " s", {i: "waiting" for i in pending})
                await asyncio.sleep(POLL_S)

    async def aread(self, keys: Sequence[str]) -> list[TextOut]:
        async with self._aclient() as client:
            kb_id = await self._akb_of(client)
            return [t for batch in _batches(keys, MAX_KEYS)
                    for t in await client.read_texts(kb_id, batch)]

    async def adelete_keys(self, keys: Sequence[str]) -> list[str]:
        async with self._aclient() as client:
            kb_id = await self._akb_of(client)
            return [k for batch in _batches(keys, MAX_KEYS)
                    for k in await client.delete_texts(kb_id, batch)]

    async def akeys_where(self, name: str, value: Any) -> list[str]:
        async with self._aclient() as client:
            documents = await client.list_documents(await self._akb_of(client))
        return [d.key for d in documents if d.key and d.metadata.get(name) == value]

    async def asearch_texts(self, query: str, k: int, **overrides: Any) -> list[TextHit]:
        hits = await self.asearch_hits(query, **{**overrides, "top_k": _fetch(k)})
        unknown = [d for d in _documents(hits) if d not in self._names]
        if unknown:
            async with self._aclient() as client:
                self._names.update({d: (await client.get_document(d)).key or d
                                    for d in unknown})
        return _per_text(hits, self._names, k)


def _named(name: str | None, kbs: Sequence[Any]) -> str:
    for kb in kbs:
        if kb.name == name:
            return str(kb.id)
    raise ValueError(f"no knowledge base named {name!r} on the server")


def _fetch(k: int) -> int:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return min(MAX_TOP_K, k * OVERFETCH)


def _documents(hits: Sequence[RetrievalHit]) -> list[str]:
    return list(dict.fromkeys(h.document_id for h in hits))


def _per_text(hits: Sequence[RetrievalHit], names: Mapping[str, str], k: int) -> list[TextHit]:
    """The first (best) hit of each document, at most `k`."""
    seen: set[str] = set()
    out: list[TextHit] = []
    for hit in hits:
        if hit.document_id not in seen:
            seen.add(hit.document_id)
            out.append(TextHit(names[hit.document_id], hit))
    return out[:k]
