"""Background ingestion for the API: uploads are accepted at once and processed later.

In-process (the embedded default) a thread pool here parses and indexes them; with a job
queue (RAGSIFT_INGEST_QUEUE=database) they are queued in the database instead, for
`ragsift worker` processes to lease.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait

from ragsift.domain.errors import NotFound
from ragsift.domain.jobs import JobKind
from ragsift.domain.models import Document, DocumentScope, DocumentStatus, KnowledgeBase
from ragsift.ingestion.pipeline import IngestionService, IngestOutcome
from ragsift.ports import JobQueue, Repository

logger = logging.getLogger(__name__)

UNFINISHED = (DocumentStatus.PENDING, DocumentStatus.PARSING, DocumentStatus.INDEXING)


class IngestionWorker:
    """A thread pool moving accepted documents PENDING -> PARSING -> INDEXING -> READY|FAILED.

    With a `queue`, documents are queued there as jobs (each may take `max_attempts`
    leases) and this process never processes them itself.
    """

    def __init__(
        self, ingestion: IngestionService, repository: Repository, workers: int = 1,
        on_finished: Callable[[Document], None] | None = None,
        queue: JobQueue | None = None, max_attempts: int = 3,
    ) -> None:
        self._ingestion = ingestion
        self._repository = repository
        self._queue = queue
        self._max_attempts = max_attempts
        self._on_finished = on_finished
        self._workers = workers
        self._pool = self._new_pool()
        self._accept_lock = threading.Lock()  # sha256 dedupe and insert as one step
        self._lock = threading.Lock()  # the futures and the closed flag
        self._futures: set[Future[None]] = set()
        self._closed = False

    def _new_pool(self) -> ThreadPoolExecutor:
        return ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix="ragsift-ingest")

    def start(self) -> None:
        """Accept work again after a shutdown (an app may be started more than once)."""
        with self._lock:
            if self._closed:
                self._pool = self._new_pool()
                self._closed = False

    def accept(
        self, kb: KnowledgeBase, filename: str, data: bytes, scope: DocumentScope
    ) -> IngestOutcome:
        """Store the original, create the document PENDING and queue it; duplicates are not."""
        with self._accept_lock:
            outcome = self._ingestion.accept(kb, filename, data, scope)
        if not outcome.duplicate and outcome.document.status == DocumentStatus.PENDING:
            self.submit(outcome.document.id)
        return outcome

    def submit(self, document_id: str, reindex: bool = False) -> None:
        """Queue a PENDING document (or a reindex from its stored original)."""
        if self._queue is not None:
            kind = JobKind.REINDEX if reindex else JobKind.PROCESS
            self._queue.enqueue(document_id, kind, self._max_attempts)
            return
        with self._lock:
            if self._closed:
                raise RuntimeError("the ingestion worker is shut down")
            future = self._pool.submit(self._run, document_id, reindex)
            self._futures.add(future)
        future.add_done_callback(self._forget)

    def recover(self) -> int:
        """Queue documents a previous process left unfinished; how many.

        With a job queue, a document that already has an active job keeps it (enqueue is
        idempotent), so a restarted API never takes work from a running worker.
        """
        count = 0
        for kb in self._repository.list_kbs():
            for status in UNFINISHED:
                for document in self._repository.list_documents(kb.id, status):
                    # a half-indexed document starts again from its stored original
                    self.submit(document.id, reindex=status != DocumentStatus.PENDING)
                    count += 1
        if count:
            logger.info("resumed %d unfinished document(s)", count)
        return count

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until every queued document is finished; False on timeout."""
        with self._lock:
            pending = set(self._futures)
        _, not_done = wait(pending, timeout=timeout)
        return not not_done

    def shutdown(self) -> None:
        """Finish the running documents, drop the queued ones (they stay PENDING for recover)."""
        with self._lock:
            self._closed = True
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _forget(self, future: Future[None]) -> None:
        with self._lock:
            self._futures.discard(future)

    def _run(self, document_id: str, reindex: bool) -> None:
        try:
            if reindex:
                outcome = self._ingestion.reindex(document_id)
            else:
                outcome = self._ingestion.process(document_id)
        except NotFound as exc:
            self._fail_if_present(document_id, str(exc))
            return
        except Exception as exc:
            logger.exception("background ingestion of %s failed", document_id)
            self._fail_if_present(document_id, f"{type(exc).__name__}: {exc}")
            return
        logger.info("document %s is %s", document_id, outcome.document.status.value)
        if self._on_finished is not None:
            self._on_finished(outcome.document)

    def _fail_if_present(self, document_id: str, reason: str) -> None:
        """A document deleted meanwhile is fine; one that still exists must not stay unfinished."""
        try:
            document = self._repository.get_document(document_id)
            if document is None or document.status == DocumentStatus.DELETING:
                logger.info("document %s was deleted while queued", document_id)
                return
            self._repository.set_status(document_id, DocumentStatus.FAILED, reason)
            if self._on_finished is not None:
                self._on_finished(document.model_copy(update={"status": DocumentStatus.FAILED}))
        except Exception:
            logger.exception("could not mark document %s FAILED", document_id)
