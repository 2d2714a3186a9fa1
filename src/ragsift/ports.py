"""Protocols the services depend on; adapters implement them."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from ragsift.domain.assets import Asset
from ragsift.domain.chat import (
    ChatMessage,
    Conversation,
    ConversationSummary,
    NewConversation,
    TokenUsage,
    Turn,
    TurnOutcome,
)
from ragsift.domain.faq import FaqCommit, FaqCommitted, FaqEntry
from ragsift.domain.feedback import FeedbackRecord, Rating, TurnFeedback
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.jobs import IngestJob, JobKind
from ragsift.domain.models import Chunk, Document, DocumentStatus, KnowledgeBase, Revision
from ragsift.domain.results import ChannelHit
from ragsift.domain.stages import RerankScore, RewriteProposal
from ragsift.domain.tuning import TunedFusion
from ragsift.domain.versions import (
    Activation,
    ActivationAction,
    Collected,
    DraftCommit,
    GateConfig,
    GateReport,
    KbVersion,
    VersionDiff,
    VersionState,
)

Vectors = NDArray[np.float32]


class Tokenizer(Protocol):
    def count_tokens(self, text: str) -> int:
        """Tokens the embedder would spend on `text` (without prefix and special tokens)."""
        ...


class TextEncoder(Protocol):
    """Texts to unit vectors: the e5 embedder, and the second dense channel's model."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        """Unit-length float32 rows, one per text."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """One unit-length float32 vector."""
        ...


class Embedder(Tokenizer, TextEncoder, Protocol):
    """The embedder of chunks and queries (its tokens bound chunk sizes)."""


@runtime_checkable
class BatchEmbedding(Protocol):
    """An encoder given many passage batches at once (a hosted one sends them concurrently)."""

    def embed_passage_batches(
        self, batches: Sequence[Sequence[str]]
    ) -> Iterator[Vectors | Exception]:
        """Each batch's rows, or the error that failed it, in order: a failed batch fails
        only its own texts."""
        ...


def passage_batches(
    encoder: TextEncoder, batches: Sequence[Sequence[str]]
) -> Iterator[Vectors | Exception]:
    """`encoder`'s embed_passage_batches, or else its batches one after the other."""
    if isinstance(encoder, BatchEmbedding):
        yield from encoder.embed_passage_batches(batches)
        return
    for batch in batches:
        try:
            yield encoder.embed_passages(batch)
        except Exception as exc:  # the caller decides what a failed batch fails
            yield exc


class QueryRewriter(Protocol):
    """Proposes at most one rewrite of a query (an LLM behind an HTTP API)."""

    def rewrite(self, query: str) -> RewriteProposal:
        """Raises UpstreamError when the server fails or answers something unusable."""
        ...


class Reranker(Protocol):
    """Scores passages against a query; scores order this batch only."""

    @property
    def model_id(self) -> str: ...

    def rerank(self, query: str, passages: Sequence[str]) -> list[RerankScore]:
        """Scores for (some of) the passages, by index; raises UpstreamError on failure.

        The caller validates the answer (indices in range, no duplicates, finite scores,
        not empty).
        """
        ...


class SearchIndex(Protocol):
    """Dense and BM25 search over child chunks, filtered by a SearchFilter."""

    def upsert(self, records: Sequence[IndexRecord], vectors: Vectors) -> None: ...

    def delete_chunks(self, chunk_ids: Iterable[str]) -> None: ...

    def delete_document(self, document_id: str) -> None: ...

    def search_dense(
        self, vector: Vectors, search_filter: SearchFilter, limit: int
    ) -> list[ChannelHit]: ...

    def search_sparse(
        self, query: str, search_filter: SearchFilter, limit: int
    ) -> list[ChannelHit]: ...

    def count(self) -> int: ...

    def close(self) -> None: ...


class Repository(Protocol):
    """The relational store: the source of truth for knowledge bases, documents, chunks, FAQ."""

    def create_kb(self, kb: KnowledgeBase) -> KnowledgeBase: ...

    def get_kb(self, kb_id: str) -> KnowledgeBase | None: ...

    def get_kb_by_name(self, name: str) -> KnowledgeBase | None: ...

    def list_kbs(self) -> list[KnowledgeBase]: ...

    def delete_kb(self, kb_id: str) -> None: ...

    def add_document(self, document: Document, owner: str | None = None) -> Document: ...

    def get_document(self, document_id: str) -> Document | None: ...

    def find_document_by_sha256(self, kb_id: str, sha256: str) -> Document | None: ...

    def list_documents(
        self, kb_id: str, status: DocumentStatus | None = None
    ) -> list[Document]: ...

    def set_status(
        self, document_id: str, status: DocumentStatus, error: str | None = None
    ) -> None: ...

    def replace_chunks(self, document_id: str, chunks: Sequence[Chunk]) -> None: ...

    # assets: images of documents (adapters/sql/asset_repository.py)

    def save_assets(self, document_id: str, assets: Sequence[Asset]) -> None: ...

    def get_asset(self, asset_id: str) -> Asset | None: ...

    def get_assets(self, asset_ids: Iterable[str]) -> dict[str, Asset]: ...

    def document_assets(self, document_id: str) -> list[Asset]: ...

    def collect_assets(self, document_id: str) -> list[tuple[str, str]]: ...

    def unused_images(self, images: Iterable[tuple[str, str]]) -> list[tuple[str, str]]: ...

    def kb_images(self, kb_id: str) -> set[tuple[str, str]]: ...

    def sweep_assets(self, kb_id: str) -> int: ...

    def set_warnings(self, document_id: str, warnings: Sequence[str]) -> None: ...

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]: ...

    def get_ready_chunks(self, kb_id: str, chunk_ids: Sequence[str]) -> list[tuple[Chunk, str]]:
        """(chunk, document filename) for chunks whose document is READY in `kb_id`, in order.

        The READY re-check and the hydration of hits in one query.
        """
        ...

    def list_chunks(self, document_id: str) -> list[Chunk]: ...

    def get_neighbours(self, anchors: Sequence[Chunk], window: int) -> list[Chunk]:
        """Chunks within `window` ordinals of each anchor in its document, level and parent.

        One SQL statement whatever the number of anchors (up to the largest top_k); the
        anchors themselves are not returned.
        """
        ...

    def get_ancestors(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """Every ancestor (parent, grandparent, ...) of these chunks; one statement per 500 ids."""
        ...

    def delete_document(self, document_id: str) -> None: ...

    def set_owner(self, document_id: str, owner: str | None) -> None:
        """Record the process now working on the document (ragsift.processes)."""
        ...

    def document_owner(self, document_id: str) -> str | None: ...

    def find_document_by_key(self, kb_id: str, key: str) -> Document | None: ...

    def documents_by_key(self, kb_id: str) -> dict[str, Document]: ...

    def claim_replace(self, document_id: str, stale: str | None, owner: str) -> bool:
        """Start replacing a READY or FAILED document's content (atomic)."""
        ...

    def replacing_owner(self, document_id: str) -> str | None: ...

    def replacements(self, kb_id: str | None = None) -> list[tuple[str, str]]:
        """(document id, owner) of every replacement under way."""
        ...

    def set_source_mtime(self, document_id: str, source_mtime: float) -> None: ...

    def finish_replace(
        self, document_id: str, revision: Revision | None, error: str | None = None
    ) -> None: ...

    def take_over(self, document_id: str, previous: str | None, owner: str) -> bool:
        """Become the owner of an unfinished document still owned by `previous` (atomic)."""
        ...

    def unfinished_documents(self, kb_id: str | None = None) -> list[tuple[Document, str | None]]:
        """Documents in PENDING, PARSING, INDEXING or DELETING with their owners."""
        ...

    def ready_document_ids(self, kb_id: str, document_ids: Iterable[str]) -> set[str]:
        """The subset of `document_ids` that is READY in `kb_id` right now."""
        ...

    # the user's metadata (adapters/sql/metadata_repository.py), in its JSON form

    def set_metadata(self, document_id: str, metadata: Mapping[str, Any]) -> None:
        """Replace a document's (validated) metadata; NotFound when it does not exist."""
        ...

    def update_metadata(self, document_id: str,
                        change: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
        """Write `change(current metadata)` atomically (no concurrent change is lost); the
        result; NotFound when the document does not exist."""
        ...

    def filter_fields(self, kb_id: str) -> dict[str, dict[str, Any]]:
        """document id -> its metadata plus scope fields, for every document of the KB."""
        ...

    def document_metadata(self, document_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """document id -> its metadata, for those that exist."""
        ...

    def filter_stamp(self, kb_id: str) -> tuple[int, str | None]:
        """Changes whenever filter_fields(kb_id) may have changed (a cache key)."""
        ...

    # many documents per statement, for the ingest pipeline (adapters/sql/ingest_batches.py)

    def get_documents(self, document_ids: Sequence[str]) -> dict[str, Document]:
        """The documents that exist among `document_ids`, by id."""
        ...

    def claim_documents(
        self, document_ids: Sequence[str], owner: str, status: DocumentStatus
    ) -> dict[str, Document]:
        """Own these documents and move them to `status` (one transaction); as they were."""
        ...

    def set_statuses(self, document_ids: Sequence[str], status: DocumentStatus) -> None:
        """set_status() of several documents (errors cleared) in one transaction."""
        ...

    def list_chunks_of(self, document_ids: Sequence[str]) -> dict[str, list[Chunk]]:
        """list_chunks() of each document, by id."""
        ...

    def find_document_by_key_or_sha256(
        self, kb_id: str, key: str, sha256: str
    ) -> tuple[Document | None, list[Document]]:
        """(document with this key, documents with this content hash, oldest first) in
        `kb_id`: one query."""
        ...

    def add_documents(
        self, documents: Sequence[Document], owner: str | None = None
    ) -> list[Document]:
        """add_document() of several documents in one transaction (InvalidInput on a clash)."""
        ...

    def documents_by_keys_or_sha256(
        self, kb_id: str, keys: Sequence[str], shas: Sequence[str]
    ) -> tuple[set[str], set[str]]:
        """(keys, sha256s) among these that documents of `kb_id` hold already."""
        ...

    def add_faq_entries(self, entries: Sequence[FaqEntry]) -> int:
        """Store the new entries, skipping pairs (by content hash) already held; how many added."""
        ...

    def commit_faq(
        self, commit: FaqCommit, seal: bool = False, activate: bool = False,
        note: str | None = None,
    ) -> FaqCommitted:
        """Store FAQ changes to a KB's draft in one transaction (and seal / activate it);
        DraftMoved when the plan is outdated."""
        ...

    def get_faq_entries(self, ids: Sequence[str]) -> list[FaqEntry]:
        """The FAQ entries that exist among `ids` (retired ones too), in the order given."""
        ...

    def live_faq_keys(self, kb_id: str, keys: Sequence[str]) -> dict[str, str]:
        """Content key -> id of the live FAQ entries of `kb_id` among `keys`."""
        ...

    def list_faq_entries(self, kb_id: str, live_only: bool = False) -> list[FaqEntry]: ...

    def count_faq_entries(self, kb_id: str, version_seq: int | None = None) -> int:
        """Live FAQ entries of `kb_id`, or those valid in `version_seq`."""
        ...

    def delete_faq_entries(self, kb_id: str) -> int: ...

    def ping(self) -> None: ...


class ObjectStore(Protocol):
    """Keeps original files so documents can be re-parsed without re-upload."""

    def put(self, key: str, data: bytes) -> None: ...

    def get(self, key: str) -> bytes: ...

    def delete_prefix(self, prefix: str) -> None: ...


class TunedFusionStore(Protocol):
    """Where the fusion settings fitted to a knowledge base (`ragsift tune`) are kept."""

    def get_tuned_fusion(self, kb_id: str) -> TunedFusion | None: ...

    def save_tuned_fusion(self, tuned: TunedFusion) -> None: ...


class JobQueue(Protocol):
    """Ingestion jobs in the database, leased by any number of worker processes."""

    def enqueue(self, document_id: str, kind: JobKind, max_attempts: int) -> IngestJob:
        """Queue a job for the document; one already queued or leased is returned as is."""
        ...

    def claim(self, worker_id: str, lease_s: float) -> IngestJob | None:
        """Lease the oldest claimable job (queued, or leased with an expired lease) or None.

        Jobs whose lease expired on their last attempt are given up first: the job and
        its document end FAILED with the reason.
        """
        ...

    def heartbeat(self, job_id: str, worker_id: str, lease_s: float) -> bool:
        """Extend the lease; False when this worker no longer holds it."""
        ...

    def complete(self, job_id: str, worker_id: str) -> bool:
        """Mark the job done; False when this worker no longer held the lease."""
        ...

    def fail(self, job_id: str, worker_id: str, reason: str, retry: bool) -> IngestJob | None:
        """Queue the job again (`retry` and attempts left) or give up: job and document FAILED.

        None when this worker no longer held the lease.
        """
        ...

    def active(self) -> int:
        """Jobs queued or leased (an expired lease counts until another worker takes it)."""
        ...

    def get(self, document_id: str) -> IngestJob | None: ...

    def close(self) -> None: ...


class SparseRebuild(Protocol):
    """A BM25 index being built beside the live one (see SparseRebuildable)."""

    def add(self, records: Sequence[IndexRecord]) -> None: ...


@runtime_checkable
class SparseRebuildable(Protocol):
    """An index whose BM25 side can be rebuilt from the facts without re-embedding."""

    def rebuild_sparse(self, kb_id: str) -> AbstractContextManager[SparseRebuild]:
        """Build a new BM25 index of one kb from what the block adds, then switch to it.

        Writes made meanwhile reach the live index and are replayed onto the new one
        before the switch; searches keep running on the live one until then. An exception
        in the block discards the new index.
        """
        ...

    @property
    def sparse_upgrade_pending(self) -> bool:
        """Whether an outdated BM25 layout was set aside and every kb must be rebuilt."""
        ...

    def finish_sparse_upgrade(self) -> None:
        """Every kb was rebuilt after a layout upgrade: the index opens normally again."""
        ...


class ChatModel(Protocol):
    """A chat model that streams its answer (an OpenAI-compatible server)."""

    @property
    def model_name(self) -> str: ...

    def stream(
        self, messages: Sequence[ChatMessage]
    ) -> AsyncGenerator[str | TokenUsage, None]:
        """The answer's text deltas as they arrive, then the call's TokenUsage when the server
        reported it; raises UpstreamError when the server fails.

        Closing the generator early (the client went away) closes the upstream stream.
        """
        ...


class ConversationStore(Protocol):
    """Conversations and their turns in the relational store."""

    def get_summary(self, conversation_id: str) -> ConversationSummary | None: ...

    def recent_turns(self, conversation_id: str, limit: int) -> list[Turn]:
        """The last `limit` complete turns, oldest first."""
        ...

    def start_turn(self, turn: Turn, new_conversation: NewConversation | None = None) -> None:
        """Store a generating turn (creating the conversation with it when new).

        NotFound when the conversation does not exist; ConversationBusy when another of
        its turns is still generating.
        """
        ...

    def finish_turn(self, turn_id: str, outcome: TurnOutcome) -> None: ...

    def conversation_owner(self, conversation_id: str) -> tuple[bool, str | None]:
        """(whether the conversation exists, the API key it belongs to)."""
        ...

    def list_conversations(
        self, owner_key: str | None = None, kb_id: str | None = None, text: str | None = None,
    ) -> list[ConversationSummary]:
        """Every conversation (filtered when given), most recently updated first."""
        ...

    def get_conversation(self, conversation_id: str) -> Conversation | None: ...

    def get_turn(self, conversation_id: str, turn_id: str) -> Turn | None: ...

    def rename_conversation(self, conversation_id: str, title: str) -> None:
        """NotFound when unknown."""
        ...

    def set_feedback(
        self, conversation_id: str, turn_id: str, feedback: TurnFeedback | None
    ) -> None:
        """Replace the turn's feedback; NotFound, or ConversationBusy while it generates."""
        ...

    def list_feedback(
        self, owner_key: str | None = None, kb_id: str | None = None,
        rating: Rating | None = None, offset: int = 0, limit: int | None = None,
    ) -> tuple[list[FeedbackRecord], int]:
        """Rated turns, newest feedback first: one page and the total."""
        ...

    def delete_conversation(self, conversation_id: str) -> None:
        """NotFound when unknown; ConversationBusy while one of its turns is generating."""
        ...

    def fail_generating(self, reason: str) -> int:
        """Mark turns a stopped process left generating as failed; how many."""
        ...


class VersionReader(Protocol):
    """What a search reads of KB versions: which version, and the chunks valid in it."""

    def searchable_version(self, kb_id: str, pinned: int | None = None) -> int:
        """The active version, or `pinned` when it is retained (else NotFound)."""
        ...

    def get_chunks_at(
        self, kb_id: str, chunk_ids: Sequence[str], version_seq: int
    ) -> list[tuple[Chunk, str]]:
        """(chunk, filename) for the chunks valid in `version_seq` whose document may be shown
        (READY, or RETIRED: kept for older versions), in the order given."""
        ...

    def searchable_document_ids(self, kb_id: str, document_ids: Iterable[str]) -> set[str]:
        """The subset of `document_ids` that is READY or RETIRED in `kb_id`."""
        ...

    def version_metadata(self, kb_id: str, seq: int) -> dict[str, dict[str, Any]] | None:
        """Document id -> metadata as version `seq` was sealed with it (documents without
        any left out); None when the version kept none (sealed before 0016, or not sealed)."""
        ...


class VersionStore(Repository, VersionReader, Protocol):
    """The relational store with KB versions: state, draft commits, seals, activations."""

    def get_version_state(self, kb_id: str) -> VersionState | None: ...

    def ensure_version_state(self, kb_id: str, mode: str, retention: int) -> None: ...

    def configure_versions(
        self, kb_id: str, mode: str | None = None, retention: int | None = None,
        gate: GateConfig | None = ...,
    ) -> VersionState:
        """Change the policy; `gate` left out keeps the gate, None clears it."""
        ...

    def list_versions(self, kb_id: str) -> list[KbVersion]: ...

    def get_version(self, kb_id: str, seq: int) -> KbVersion | None: ...

    def list_activations(self, kb_id: str, limit: int = 50) -> list[Activation]: ...

    def version_diff(self, kb_id: str, from_seq: int, to_seq: int) -> VersionDiff: ...

    def commit_draft(
        self, commits: Sequence[DraftCommit], seal: bool = False, activate: bool = False,
        note: str | None = None,
    ) -> KbVersion | None:
        """Store documents' changes in one transaction; with `seal` (and `activate`) the
        draft becomes a version (the active one). DraftMoved when the plan is outdated."""
        ...

    def seal_draft(
        self, kb_id: str, note: str | None = None, expected_seq: int | None = None
    ) -> KbVersion | None: ...

    def activate_version(
        self, kb_id: str, seq: int, action: ActivationAction, forced: bool = False,
        gate: GateReport | None = None,
    ) -> int:
        """One atomic switch of the active version; returns the version active before."""
        ...

    def collect_versions(self, kb_id: str, retention: int) -> Collected: ...


@runtime_checkable
class RemoteEmbedder(Protocol):
    """An embedder behind a network (a hosted model server): it can be down while the rest
    of the service works, and it may learn its dimension instead of being told it."""

    @property
    def known_dimension(self) -> int | None:
        """The dimension when configured, adopted or probed already; None before."""
        ...

    def adopt_dimension(self, dimension: int) -> None:
        """Take the dimension a knowledge base recorded for this model (no probe needed)."""
        ...

    def ping(self) -> None:
        """One short attempt at embedding; UpstreamError when the server does not answer."""
        ...


@runtime_checkable
class SparseHealthReporting(Protocol):
    """An index whose BM25 side can be unreadable for some kbs while the rest works."""

    def sparse_problems(self, kb_ids: Iterable[str]) -> dict[str, str]:
        """kb_id -> why its BM25 index cannot be read, for those of `kb_ids` that cannot."""
        ...


@runtime_checkable
class RecordUpdatable(Protocol):
    """An index that can rewrite the filter fields of chunks it holds without their vectors."""

    def update_records(self, records: Sequence[IndexRecord]) -> None: ...


@runtime_checkable
class ChunkListable(Protocol):
    """An index that can list what it holds of one document (to remove half-written rows)."""

    def document_chunk_ids(self, kb_id: str, document_id: str) -> set[str]: ...


@runtime_checkable
class SparsePreAnalyzable(Protocol):
    """An index whose BM25 analysis can run before the write, in a worker process.

    Returns (analyzer version, analyzer) for a kb; the analyzer must pickle (a module-level
    function). Records carry the result as `IndexRecord.analyzed`.
    """

    def sparse_analyzer(self, kb_id: str) -> tuple[int, Callable[[str], list[str]]]: ...
