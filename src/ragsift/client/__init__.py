"""A Python client of the ragsift REST API (`ragsift serve`), sync and asyncio.

    from ragsift.client import RagsiftClient

    with RagsiftClient("http://127.0.0.1:8000", api_key="rs_...") as client:
        kb = client.create_kb("handbook")
        uploaded = client.upload_documents(kb.id, ["samples/hr-handbook-zh.md"])
        client.wait_until_ready(uploaded)
        for hit in client.search("年假可以结转几天？", kb_id=kb.id, top_k=3):
            print(hit.rank, hit.filename, hit.text[:80])

Answers are the API's own models (KbOut, Document, RetrievalHit, ExplainOut, ChatOut, the chat
stream events, ...), re-exported here; errors are RagsiftApiError subclasses.
"""

from ragsift.api.error_body import ErrorBody
from ragsift.api.schemas import ExplainOut, FaqImportOut, KbOut, UploadedDocument
from ragsift.api.schemas_chat import (
    ChatOut,
    CitationsEvent,
    ConversationDetailOut,
    ConversationOut,
    DeltaEvent,
    DoneEvent,
    TraceEvent,
    TurnOut,
)
from ragsift.client.aio import AsyncRagsiftClient
from ragsift.client.errors import (
    AuthError,
    ClientValidationError,
    ConflictError,
    ForbiddenError,
    InvalidRequestError,
    NotFoundError,
    RagsiftApiError,
    RagsiftClientError,
    RagsiftConnectionError,
    RateLimitedError,
    ServerError,
    UnauthorizedError,
    UnavailableError,
    WaitTimeoutError,
)
from ragsift.client.events import ChatEvent
from ragsift.client.sync import RagsiftClient
from ragsift.client.uploads import FileInput, ProgressCallback, UploadScope
from ragsift.domain.chat import Citation, Evidence
from ragsift.domain.models import Document, DocumentStatus
from ragsift.domain.results import FaqHit, RetrievalHit
from ragsift.domain.trace import RetrievalTrace

__all__ = [
    "AsyncRagsiftClient",
    "AuthError",
    "ChatEvent",
    "ChatOut",
    "Citation",
    "CitationsEvent",
    "ClientValidationError",
    "ConflictError",
    "ConversationDetailOut",
    "ConversationOut",
    "DeltaEvent",
    "Document",
    "DocumentStatus",
    "DoneEvent",
    "ErrorBody",
    "Evidence",
    "ExplainOut",
    "FaqHit",
    "FaqImportOut",
    "FileInput",
    "ForbiddenError",
    "InvalidRequestError",
    "KbOut",
    "NotFoundError",
    "ProgressCallback",
    "RagsiftApiError",
    "RagsiftClient",
    "RagsiftClientError",
    "RagsiftConnectionError",
    "RateLimitedError",
    "RetrievalHit",
    "RetrievalTrace",
    "ServerError",
    "TraceEvent",
    "TurnOut",
    "UnauthorizedError",
    "UnavailableError",
    "UploadScope",
    "UploadedDocument",
    "WaitTimeoutError",
]
