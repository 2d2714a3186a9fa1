"""Every API operation as a `Call`: method, path, body and how to read the answer.

The sync and async clients differ only in how they send a Call, so each route's path, body
validation and response model is written once, here. Bodies are validated with the API's own
request models (SearchBody, ChatBody) before anything is sent, and answers are read into the
models the API returns.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, TypeAdapter, ValidationError

from ragsift.api.schemas import (
    DocumentPatch,
    ExplainOut,
    FaqImportOut,
    KbCreate,
    KbOut,
    SearchBody,
    UploadedDocument,
    UploadOut,
)
from ragsift.api.schemas_chat import ChatBody, ChatOut, ConversationDetailOut, ConversationOut
from ragsift.client.errors import ClientValidationError, WaitTimeoutError, error_from_response
from ragsift.client.uploads import FileInput, ProgressCallback, Upload, UploadScope
from ragsift.domain.models import Document, DocumentStatus
from ragsift.domain.results import RetrievalHit

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

# what every document is on its way to, one way or the other
SETTLED = frozenset({DocumentStatus.READY, DocumentStatus.FAILED})


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One request and the reading of its successful answer."""

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    json: Any = None
    params: Mapping[str, str | list[str]] | None = None
    upload: Upload | None = None
    # sending it twice has the effect of sending it once (decides retries of lost connections)
    idempotent: bool = False

    @property
    def what(self) -> str:
        return f"{self.method} {self.path}"

    def request(self, client: httpx.Client | httpx.AsyncClient, stack: ExitStack) -> httpx.Request:
        if self.upload is not None:
            return self.upload.request(client, self.path, stack)
        return client.build_request(self.method, self.path, json=self.json, params=self.params)

    def result(self, response: httpx.Response) -> T:
        """The parsed answer, or the error it is (the body must have been read)."""
        if response.is_error:
            raise error_from_response(response)
        return self.parse(response)


def _model(model: type[M]) -> Callable[[httpx.Response], M]:
    return lambda response: model.model_validate_json(response.content)


def _list_of(adapter: TypeAdapter[list[M]]) -> Callable[[httpx.Response], list[M]]:
    return lambda response: adapter.validate_json(response.content)


def _nothing(response: httpx.Response) -> None:
    return None


def _documents(response: httpx.Response) -> list[UploadedDocument]:
    return UploadOut.model_validate_json(response.content).documents


def _segment(value: str) -> str:
    """An id as one path segment (a slash or `?` in it cannot reach another route)."""
    if not value:
        raise ClientValidationError("an id must not be empty")
    return quote(value, safe="")


def _validated(model: type[M], data: Mapping[str, Any]) -> M:
    """`data` as the API's request model, or the ClientValidationError the server's 422 is."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ClientValidationError.from_pydantic(exc) from exc


def _status(status: DocumentStatus | str) -> DocumentStatus:
    try:
        return DocumentStatus(status)
    except ValueError:
        known = ", ".join(s.value for s in DocumentStatus)
        raise ClientValidationError(f"status: {status!r} is not one of {known}") from None


def _body(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json", exclude_none=True)


_kbs, _kb = _list_of(TypeAdapter(list[KbOut])), _model(KbOut)
_docs, _doc = _list_of(TypeAdapter(list[Document])), _model(Document)
_hits = _list_of(TypeAdapter(list[RetrievalHit]))
_conversations = _list_of(TypeAdapter(list[ConversationOut]))


def list_kbs() -> Call[list[KbOut]]:
    return Call("GET", "/api/kbs", _kbs, idempotent=True)


def get_kb(kb_id: str) -> Call[KbOut]:
    return Call("GET", f"/api/kbs/{_segment(kb_id)}", _kb, idempotent=True)


def create_kb(name: str) -> Call[KbOut]:
    return Call("POST", "/api/kbs", _kb, json=_body(_validated(KbCreate, {"name": name})))


def delete_kb(kb_id: str) -> Call[None]:
    return Call("DELETE", f"/api/kbs/{_segment(kb_id)}", _nothing)


def upload_documents(
    kb_id: str, files: Sequence[FileInput], progress: ProgressCallback | None,
    scope: UploadScope,
) -> Call[list[UploadedDocument]]:
    roles = scope.get("allowed_roles")
    fields = {
        "source": scope.get("source"), "tenant_id": scope.get("tenant_id"),
        "dataset_id": scope.get("dataset_id"), "visibility": scope.get("visibility"),
        # the roles travel as one comma-separated field
        "allowed_roles": None if roles is None else ",".join(roles),
    }
    metadata = scope.get("metadata")
    if metadata is not None:
        fields["metadata"] = json.dumps(metadata, ensure_ascii=False)
    data = {name: value for name, value in fields.items() if value is not None}
    upload = Upload("files", files, data, progress)
    return Call("POST", f"/api/kbs/{_segment(kb_id)}/documents", _documents, upload=upload)


def get_document(document_id: str) -> Call[Document]:
    return Call("GET", f"/api/documents/{_segment(document_id)}", _doc, idempotent=True)


def list_documents(kb_id: str, status: DocumentStatus | str | None) -> Call[list[Document]]:
    params = None if status is None else {"status": _status(status).value}
    return Call("GET", f"/api/kbs/{_segment(kb_id)}/documents", _docs, params=params,
                idempotent=True)


def delete_document(document_id: str) -> Call[None]:
    return Call("DELETE", f"/api/documents/{_segment(document_id)}", _nothing)


def patch_document(document_id: str, metadata: Mapping[str, Any], replace: bool
                   ) -> Call[Document]:
    body = DocumentPatch(metadata=dict(metadata), replace=replace)
    return Call("PATCH", f"/api/documents/{_segment(document_id)}", _doc, json=_body(body),
                idempotent=True)


def reindex_document(document_id: str) -> Call[Document]:
    return Call("POST", f"/api/documents/{_segment(document_id)}/reindex", _doc)


def search_body(query: str, kb: str | None, kb_id: str | None,
                options: Mapping[str, Any]) -> SearchBody:
    return _validated(SearchBody, {"query": query, "kb": kb, "kb_id": kb_id, **options})


def search(body: SearchBody) -> Call[list[RetrievalHit]]:
    return Call("POST", "/api/retrieval/search", _hits, json=_body(body), idempotent=True)


def explain(body: SearchBody) -> Call[ExplainOut]:
    return Call("POST", "/api/retrieval/explain", _model(ExplainOut), json=_body(body),
                idempotent=True)


def chat_body(message: str, kb: str | None, kb_id: str | None, conversation_id: str | None,
              options: Mapping[str, Any]) -> ChatBody:
    return _validated(ChatBody, {"message": message, "kb": kb, "kb_id": kb_id,
                                 "conversation_id": conversation_id, **options})


def chat(body: ChatBody) -> Call[ChatOut]:
    return Call("POST", "/api/chat", _model(ChatOut), json=_body(body))


def chat_stream(body: ChatBody) -> Call[None]:
    """The opening of the stream; the events are read from the response as they come."""
    return Call("POST", "/api/chat/stream", _nothing, json=_body(body))


def list_conversations() -> Call[list[ConversationOut]]:
    return Call("GET", "/api/conversations", _conversations, idempotent=True)


def get_conversation(conversation_id: str) -> Call[ConversationDetailOut]:
    return Call("GET", f"/api/conversations/{_segment(conversation_id)}",
                _model(ConversationDetailOut), idempotent=True)


def delete_conversation(conversation_id: str) -> Call[None]:
    return Call("DELETE", f"/api/conversations/{_segment(conversation_id)}", _nothing)


def import_faq(kb_id: str, file: FileInput) -> Call[FaqImportOut]:
    return Call("POST", f"/api/kbs/{_segment(kb_id)}/faq", _model(FaqImportOut),
                upload=Upload("file", [file]))


def document_ids(documents: str | UploadedDocument | Iterable[str | UploadedDocument]) -> list[str]:
    """The ids to wait for, once each, in the order given."""
    items = [documents] if isinstance(documents, (str, UploadedDocument)) else documents
    return list(dict.fromkeys(d if isinstance(d, str) else d.id for d in items))


def unsettled(latest: Mapping[str, Document]) -> dict[str, str]:
    """Each document still on its way, with its status."""
    return {i: d.status.value for i, d in latest.items() if d.status not in SETTLED}


def wait_timeout(timeout_s: float, pending: dict[str, str]) -> WaitTimeoutError:
    listed = ", ".join(f"{i} ({status})" for i, status in pending.items())
    return WaitTimeoutError(f"not READY or FAILED after {timeout_s:g} s: {listed}", pending)
