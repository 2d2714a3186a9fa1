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
from ragsift.ingestion.job_worker import pause_once
from ragsift.ingestion.pipeline import IngestionService, IngestOutcome
from ragsift.ports import JobQueue, Repository
from ragsift.storage_full import describe, log_failure

logger = logging.getLogger(__name__)



class IngestionWorker:
    """A thread pool moving accepted documents PENDING -> PARSING -> INDEXING -> READY|FAILED.

    With a `queue`, documents are queued there as jobs (each may take `max_attempts`
    leases) and this process never processes them itself.

    `pause_after_parse_s` is a TEST HOOK (RAGSIFT_TEST_WORKER_PAUSE_S in `ragsift serve`):
    each document sleeps that long once its first batch is embedded, before the index or the
    facts are written, so a test can stop the server mid-document.
    """

    def __init__(
        self, ingestion: IngestionService, repository: Repository, workers: int = 1,
        on_finished: Callable[[Document], None] | None = None,
        queue: JobQueue | None = None, max_attempts: int = 3, pause_after_parse_s: float = 0.0,
    ) -> None:
        self._ingestion = ingestion
        self._repository = repository
        self._queue = queue
        self._max_attempts = max_attempts
        self._on_finished = on_finished
        self._workers = workers
        self._pause_s = pause_after_parse_s
        self._pool = self._new_pool()
        self._accept_lock = threading.Lock()  # sha256 dedupe and insert as one step
        self._lock = threading.Lock()  # the futures and the closed flag
        self._futures: dict[Future[None], str] = {}  # -> the document id
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
        self, kb: KnowledgeBase, filename: str, data: bytes, scope: DocumentScope | None,
        key: str | None = None, replace: bool = False,
    ) -> IngestOutcome:
        """Store the original, create the document PENDING and queue it; duplicates are not.

        A file whose key exists with other bytes is claimed for a replacement (`replacing`:
        the caller submits it with `submit_replace`), or a `conflict` without `replace` or
        when another access scope holds the key. `scope` None: none given (IngestionService.accept).
        """
        with self._accept_lock:
            outcome = self._ingestion.accept(kb, filename, data, scope, key=key,
                                             replace=replace)
        waiting = not (outcome.duplicate or outcome.busy or outcome.conflict
                       or outcome.replacing)
        if waiting and outcome.document.status == DocumentStatus.PENDING:
            self.submit(outcome.document.id)
        return outcome

    def submit_replace(self, document_id: str, filename: str, data: bytes) -> None:
        """Write a claimed replacement in this process's pool (also with a job queue: the
        bytes are only here). A restart before it ends keeps the old content; see
        IngestionService.recover."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the ingestion worker is shut down")
            future = self._pool.submit(self._replace, document_id, filename, data)
            self._futures[future] = document_id
        future.add_done_callback(self._forget)

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
            self._futures[future] = document_id
        future.add_done_callback(self._forget)

    def recover(self) -> int:
        """Queue the documents a dead process left unfinished; how many.

        Only documents whose owner is gone are taken over (IngestionService.recover), so a
        restarted API never takes work from a live process. With a job queue, a document
        that already has an active job keeps it (enqueue is idempotent).
        """
        resumed = self._ingestion.recover()
        for document_id in resumed:
            self.submit(document_id)
        if resumed:
            logger.info("resumed %d unfinished document(s)", len(resumed))
        return len(resumed)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until every queued document is finished; False on timeout."""
        with self._lock:
            pending = set(self._futures)
        _, not_done = wait(pending, timeout=timeout)
        return not not_done

    def running(self) -> list[str]:
        """The ids of the documents being processed right now (queued ones not counted)."""
        with self._lock:
            return sorted(d for f, d in self._futures.items() if f.running())

    def shutdown(self, timeout_s: float | None = None) -> list[str]:
        """Stop taking work and wait up to `timeout_s` for the running documents.

        Queued documents are dropped (they stay PENDING for recover). A document still running
        after `timeout_s` is abandoned: never waited for, left PARSING/INDEXING for the next
        start to resume. Its thread goes on until the process ends, so a caller that gets ids
        back should end the process rather than close the stores under it. Those ids.
        """
        with self._lock:
            self._closed = True
            pending = dict(self._futures)
        self._pool.shutdown(wait=False, cancel_futures=True)
        # wait() never counts a future cancelled in the queue as done: leave those out
        running = [f for f in pending if not f.cancelled()]
        _, not_done = wait(running, timeout=timeout_s)
        return sorted(pending[f] for f in not_done)

    def _forget(self, future: Future[None]) -> None:
        with self._lock:
            self._futures.pop(future, None)

    def _run(self, document_id: str, reindex: bool) -> None:
        progress = pause_once(self._pause_s, document_id) if self._pause_s > 0 else None
        try:
            if reindex:
                outcome = self._ingestion.reindex(document_id, progress)
            else:
                outcome = self._ingestion.process(document_id, progress)
        except NotFound as exc:
            self._fail_if_present(document_id, str(exc))
            return
        except Exception as exc:
            log_failure(logger, exc, "background ingestion of %s failed", document_id)
            self._fail_if_present(document_id, describe(exc))
            return
        logger.info("document %s is %s", document_id, outcome.document.status.value)
        if self._on_finished is not None:
            self._on_finished(outcome.document)

    def _replace(self, document_id: str, filename: str, data: bytes) -> None:
        try:
            outcome = self._ingestion.replace(document_id, filename, data)
        except Exception:
            logger.exception("replacing the content of %s failed", document_id)
            return
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
