"""AsyncRagsiftClient: RagsiftClient for asyncio, over one httpx.AsyncClient."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Iterable, Mapping, Sequence
from contextlib import ExitStack
from types import TracebackType
from typing import Any, TypeVar, Unpack

import httpx

from ragsift.api.schemas import ExplainOut, FaqImportOut, KbOut, UploadedDocument
from ragsift.api.schemas_chat import ChatOut, ConversationDetailOut, ConversationOut
from ragsift.api.schemas_texts import TextOut
from ragsift.client import calls
from ragsift.client import texts as texts_calls
from ragsift.client.calls import Call
from ragsift.client.connection import DEFAULT_TIMEOUT_S, client_headers
from ragsift.client.errors import RagsiftConnectionError, error_from_response
from ragsift.client.events import ChatEvent, ChatEventReader
from ragsift.client.retry import RetryPolicy, transport_failure
from ragsift.client.uploads import FileInput, ProgressCallback, UploadScope
from ragsift.domain.models import Document, DocumentStatus
from ragsift.domain.results import RetrievalHit

T = TypeVar("T")


class AsyncRagsiftClient:
    """RagsiftClient with coroutines; `async with` it, or `await aclose()` it.

    `api_key` goes in `Authorization: Bearer KEY` (leave it out for a `--no-auth` server).
    `timeout` (seconds, or an httpx.Timeout) bounds connecting and each wait for data, also
    between the events of a chat stream. 429 and 503 answers are retried up to `retries`
    times after the server's Retry-After (see ragsift.client.retry); errors raise a
    RagsiftApiError subclass carrying the server's status, code and message.
    """

    def __init__(
        self, base_url: str, api_key: str | None = None, *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT_S, retries: int = 3,
        max_retry_wait_s: float = 30.0, headers: Mapping[str, str] | None = None,
    ) -> None:
        self._policy = RetryPolicy(retries=retries, max_wait_s=max_retry_wait_s)
        self._http = httpx.AsyncClient(base_url=base_url, timeout=timeout,
                                       headers=client_headers(api_key, headers))

    async def __aenter__(self) -> AsyncRagsiftClient:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connections."""
        await self._http.aclose()

    # knowledge bases

    async def list_kbs(self) -> list[KbOut]:
        """The knowledge bases the key may use."""
        return await self._run(calls.list_kbs())

    async def get_kb(self, kb_id: str) -> KbOut:
        return await self._run(calls.get_kb(kb_id))

    async def create_kb(self, name: str) -> KbOut:
        """A new knowledge base (admin); ConflictError `kb_exists` if the name is taken."""
        return await self._run(calls.create_kb(name))

    async def delete_kb(self, kb_id: str) -> None:
        """Delete a knowledge base with its documents and FAQ entries (admin)."""
        await self._run(calls.delete_kb(kb_id))

    # documents

    async def upload_documents(
        self, kb_id: str, files: Sequence[FileInput], *,
        progress: ProgressCallback | None = None, **scope: Unpack[UploadScope],
    ) -> list[UploadedDocument]:
        """Upload files in one request; each becomes a PENDING document (or a duplicate).

        `files` are paths or `(filename, bytes or binary file)`. `progress(sent, total)` is
        called as the body goes out. The scope fields (source, tenant_id, dataset_id,
        visibility, allowed_roles) apply to every file of the upload.
        """
        return await self._run(calls.upload_documents(kb_id, files, progress, scope))

    async def upload_document(
        self, kb_id: str, file: FileInput, *, progress: ProgressCallback | None = None,
        **scope: Unpack[UploadScope],
    ) -> UploadedDocument:
        """Upload one file (see upload_documents for the scope fields)."""
        return (await self.upload_documents(kb_id, [file], progress=progress, **scope))[0]

    async def get_document(self, document_id: str) -> Document:
        return await self._run(calls.get_document(document_id))

    async def list_documents(
        self, kb_id: str, status: DocumentStatus | str | None = None
    ) -> list[Document]:
        """The documents of a knowledge base, oldest first, optionally only one status."""
        return await self._run(calls.list_documents(kb_id, status))

    async def delete_document(self, document_id: str) -> None:
        await self._run(calls.delete_document(document_id))

    async def write_texts(self, kb_id: str, texts: Sequence[Mapping[str, Any]]
                    ) -> list[UploadedDocument]:
        """Store plain texts under the caller's keys (`{"key", "text", "metadata"}` each): a
        key written again is replaced (upsert). Ingested in the background, like uploads."""
        return await self._run(texts_calls.write_texts(kb_id, texts))

    async def read_texts(self, kb_id: str, keys: Sequence[str]) -> list[TextOut]:
        """The stored texts of `keys` (keys no document holds are left out)."""
        return await self._run(texts_calls.read_texts(kb_id, keys))

    async def delete_texts(self, kb_id: str, keys: Sequence[str]) -> list[str]:
        """Delete the documents of `keys`; the keys that named one come back."""
        return await self._run(texts_calls.delete_texts(kb_id, keys))

    async def set_metadata(self, document_id: str, metadata: Mapping[str, Any], *,
                           replace: bool = False) -> Document:
        """Change a document's metadata: merged (a key set to None is removed), or replaced
        whole with `replace`; nothing is re-embedded."""
        return await self._run(calls.patch_document(document_id, metadata, replace))

    async def reindex_document(self, document_id: str) -> Document:
        """Re-parse a READY or FAILED document (ConflictError `document_busy` otherwise)."""
        return await self._run(calls.reindex_document(document_id))

    async def wait_until_ready(
        self, documents: str | UploadedDocument | Iterable[str | UploadedDocument],
        timeout: float = 120.0, poll_interval: float = 0.5,
    ) -> list[Document]:
        """Poll until every document is READY or FAILED; they come back in the order given.

        A FAILED document is returned, not raised (its `error` says why); WaitTimeoutError
        when some are still on their way after `timeout` seconds.
        """
        ids = calls.document_ids(documents)
        deadline = time.monotonic() + timeout
        latest: dict[str, Document] = {}
        while True:
            for document_id in ids:
                if document_id not in latest or document_id in calls.unsettled(latest):
                    latest[document_id] = await self.get_document(document_id)
            pending = calls.unsettled(latest)
            left = deadline - time.monotonic()
            if not pending:
                return [latest[document_id] for document_id in ids]
            if left <= 0:
                raise calls.wait_timeout(timeout, pending)
            await asyncio.sleep(min(poll_interval, left))

    # retrieval

    async def search(self, query: str, *, kb: str | None = None, kb_id: str | None = None,
               **options: Any) -> list[RetrievalHit]:
        """The document hits for a query in the KB named `kb` or with id `kb_id`.

        `options` are the fields of the API's SearchBody (top_k, mode, document_ids,
        rerank, ...), validated before sending (ClientValidationError).
        """
        return await self._run(calls.search(calls.search_body(query, kb, kb_id, options)))

    async def explain(self, query: str, *, kb: str | None = None, kb_id: str | None = None,
                **options: Any) -> ExplainOut:
        """Document hits, FAQ hits and the retrieval trace (options as for search)."""
        return await self._run(calls.explain(calls.search_body(query, kb, kb_id, options)))

    # chat and conversations

    async def chat(self, message: str, *, kb: str | None = None, kb_id: str | None = None,
             conversation_id: str | None = None, **options: Any) -> ChatOut:
        """One turn: a new conversation unless `conversation_id` continues one.

        `options` are ChatBody's: mode, top_k (at most 20), document_ids, rewrite, rerank,
        small2big.
        """
        body = calls.chat_body(message, kb, kb_id, conversation_id, options)
        return await self._run(calls.chat(body))

    async def chat_stream(
        self, message: str, *, kb: str | None = None, kb_id: str | None = None,
        conversation_id: str | None = None, **options: Any,
    ) -> AsyncGenerator[ChatEvent, None]:
        """The same turn as events: TraceEvent, DeltaEvent..., CitationsEvent, DoneEvent, or
        an ErrorBody instead of the rest.

        Nothing is sent until the first event is asked for; errors before the answer starts
        raise then. Closing the generator (`contextlib.aclosing` around an early exit)
        closes the connection, which stops the answer (stored `cancelled`).
        """
        call = calls.chat_stream(calls.chat_body(message, kb, kb_id, conversation_id, options))
        response: httpx.Response = await self._policy.async_retrying(call.what)(
            self._open_stream, call)
        try:
            reader = ChatEventReader()
            try:
                async for line in response.aiter_lines():
                    event = reader.feed(line)
                    if event is not None:
                        yield event
                    if reader.ended:
                        return
            except httpx.TransportError as exc:
                raise RagsiftConnectionError(f"chat stream broke off: {exc}") from exc
            raise reader.cut_short()
        finally:
            await response.aclose()

    async def list_conversations(self) -> list[ConversationOut]:
        """The key's conversations, newest first."""
        return await self._run(calls.list_conversations())

    async def get_conversation(self, conversation_id: str) -> ConversationDetailOut:
        """A conversation with every stored turn."""
        return await self._run(calls.get_conversation(conversation_id))

    async def delete_conversation(self, conversation_id: str) -> None:
        await self._run(calls.delete_conversation(conversation_id))

    # FAQ

    async def import_faq(self, kb_id: str, file: FileInput) -> FaqImportOut:
        """Import a JSONL or CSV file of question/answer pairs (known pairs are skipped)."""
        return await self._run(calls.import_faq(kb_id, file))

    # sending

    async def _run(self, call: Call[T]) -> T:
        result: T = await self._policy.async_retrying(call.what)(self._once, call)
        return result

    async def _once(self, call: Call[T]) -> T:
        with ExitStack() as stack:
            request = call.request(self._http, stack)
            try:
                response = await self._http.send(request)
            except httpx.TransportError as exc:
                raise transport_failure(exc, call.idempotent, call.what) from exc
        return call.result(response)

    async def _open_stream(self, call: Call[None]) -> httpx.Response:
        """The response once its status says the events follow; the error otherwise."""
        request = call.request(self._http, ExitStack())  # a JSON body: nothing to close
        try:
            response = await self._http.send(request, stream=True)
            if not response.is_error:
                return response
            try:
                await response.aread()
            finally:
                await response.aclose()
        except httpx.TransportError as exc:
            raise transport_failure(exc, call.idempotent, call.what) from exc
        raise error_from_response(response)
