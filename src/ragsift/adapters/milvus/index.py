"""A SearchIndex on Milvus (a server, or a milvus-lite data file): dense HNSW + BM25 function.

One collection per index (chunks, FAQ), kb_id as its partition key. Dense and BM25 are two
separate searches, so ragsift fuses them itself and the trace keeps per-channel ranks and
scores; `search_hybrid` runs Milvus' own hybrid_search instead, for comparison.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import numpy as np

from ragsift.adapters.milvus.connection import connect
from ragsift.adapters.milvus.filter_expr import compile_filter, one_of
from ragsift.adapters.milvus.schema import (
    DENSE,
    DOCUMENT,
    MIN_EF,
    PRIMARY,
    SPARSE,
    build_index_params,
    build_schema,
    check_description,
    check_records,
    has_searchable_text,
    normalize_text,
    rows_of,
)
from ragsift.adapters.vector_checks import checked_query, checked_rows
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import ChannelHit
from ragsift.ports import Vectors

logger = logging.getLogger(__name__)

WRITE_BATCH = 256  # rows per insert/upsert call; keeps each gRPC message small
DELETE_BATCH = 1000  # ids per delete expression

Consistency = Literal["Strong", "Bounded", "Session", "Eventually"]


class MilvusIndex:
    """SearchIndex over one Milvus collection; creates it (and loads it) when missing."""

    def __init__(
        self,
        uri: str,
        collection: str,
        dimension: int,
        *,
        token: str | None = None,
        consistency: Consistency = "Strong",
        timeout_s: float = 30.0,
    ) -> None:
        if dimension <= 0:
            raise ValueError(f"dimension must be positive, got {dimension}")
        self._dimension = dimension
        self._collection = collection
        self._consistency = consistency
        self._connection = connect(uri, token, timeout_s)
        self._client = self._connection.client
        try:
            self._open_collection()
        except BaseException:
            self._connection.close()
            raise

    @property
    def dimension(self) -> int:
        """Length of the vectors this index stores."""
        return self._dimension

    @property
    def collection(self) -> str:
        """Name of the Milvus collection."""
        return self._collection

    # ---- writes -------------------------------------------------------------------------

    def upsert(self, records: Sequence[IndexRecord], vectors: Vectors) -> None:
        """Insert or replace chunks by chunk_id; the last occurrence wins inside one batch.

        The whole batch is validated before the first write; a chunk whose kb changed
        leaves its old partition (Milvus upserts by primary key across partitions).
        """
        matrix = self._check_vectors(vectors, len(records))
        check_records(records)
        if not records:
            return
        last = {record.chunk_id: i for i, record in enumerate(records)}
        keep = sorted(last.values())
        rows = rows_of([records[i] for i in keep], matrix[keep])
        for start in range(0, len(rows), WRITE_BATCH):
            self._client.upsert(self._collection, rows[start : start + WRITE_BATCH])

    def delete_chunks(self, chunk_ids: Iterable[str]) -> None:
        """Remove chunks by id; unknown ids are ignored."""
        ids = sorted(set(chunk_ids))
        for start in range(0, len(ids), DELETE_BATCH):
            batch = ids[start : start + DELETE_BATCH]
            self._client.delete(self._collection, filter=one_of(PRIMARY, batch))

    def delete_document(self, document_id: str) -> None:
        """Remove every chunk of one document."""
        self._client.delete(self._collection, filter=one_of(DOCUMENT, [document_id]))

    def document_chunk_ids(self, kb_id: str, document_id: str) -> set[str]:
        """The chunk ids the collection holds for one document."""
        rows = self._client.query(self._collection, filter=one_of(DOCUMENT, [document_id]),
                                  output_fields=[PRIMARY])
        return {str(row[PRIMARY]) for row in rows}

    # ---- search -------------------------------------------------------------------------

    def search_dense(
        self, vector: Vectors, search_filter: SearchFilter, limit: int
    ) -> list[ChannelHit]:
        """Cosine top-k (HNSW) among the chunks the filter allows."""
        query = self._check_query(vector)
        expr = compile_filter(search_filter)
        if expr is None or limit <= 0:
            return []
        result = self._client.search(
            self._collection,
            data=[query],
            anns_field=DENSE,
            filter=expr,
            limit=limit,
            output_fields=[DOCUMENT],
            search_params=_dense_params(limit),
            consistency_level=self._consistency,
        )
        return _hits(result[0], negate=False)

    def search_sparse(
        self, query: str, search_filter: SearchFilter, limit: int
    ) -> list[ChannelHit]:
        """BM25 top-k among the chunks the filter allows, scores as Milvus computes them.

        milvus-lite's BM25 statistics are per segment, so its scores (and ties) differ from
        Milvus' and from the embedded index's: never compare BM25 scores across engines.
        """
        expr = compile_filter(search_filter)
        if expr is None or limit <= 0 or not has_searchable_text(query):
            return []
        result = self._client.search(
            self._collection,
            data=[normalize_text(query)],
            anns_field=SPARSE,
            filter=expr,
            limit=limit,
            output_fields=[DOCUMENT],
            search_params={"metric_type": "BM25"},
            consistency_level=self._consistency,
        )
        return _hits(result[0], negate=True)

    def search_hybrid(
        self,
        vector: Vectors,
        query: str,
        search_filter: SearchFilter,
        limit: int,
        *,
        ranker: Literal["rrf", "weighted"] = "rrf",
        rrf_k: int = 60,
        weights: tuple[float, float] = (1.0, 1.0),
        channel_limit: int | None = None,
    ) -> list[ChannelHit]:
        """Milvus' own hybrid_search (RRFRanker or WeightedRanker) over dense and BM25.

        An option next to ragsift's fusion: the hits carry the fused score only, so the
        per-channel ranks and scores of the trace are lost. The filter goes inside each
        request, since a top-level filter on hybrid_search was ignored by milvus-lite.
        """
        from pymilvus import AnnSearchRequest, RRFRanker, WeightedRanker

        dense_query = self._check_query(vector)
        expr = compile_filter(search_filter)
        if expr is None or limit <= 0:
            return []
        per_channel = channel_limit or limit
        requests = [
            AnnSearchRequest(
                data=[dense_query], anns_field=DENSE, param=_dense_params(per_channel),
                limit=per_channel, expr=expr,
            )
        ]
        if has_searchable_text(query):
            requests.append(
                AnnSearchRequest(
                    data=[normalize_text(query)], anns_field=SPARSE,
                    param={"metric_type": "BM25"}, limit=per_channel, expr=expr,
                )
            )
        if ranker == "rrf":
            fusion: Any = RRFRanker(rrf_k)
        else:
            fusion = WeightedRanker(*weights[: len(requests)])
        result = self._client.hybrid_search(
            self._collection,
            requests,
            ranker=fusion,
            limit=limit,
            output_fields=[DOCUMENT],
            consistency_level=self._consistency,
        )
        return _hits(result[0], negate=False)

    def count(self) -> int:
        """Number of live chunks."""
        result = self._client.query(
            self._collection, filter="", output_fields=["count(*)"],
            consistency_level=self._consistency,
        )
        return int(result[0]["count(*)"])

    def close(self) -> None:
        """Close the client (and a milvus-lite file's server once nothing else uses it)."""
        self._connection.close()

    # ---- internals ----------------------------------------------------------------------

    def _open_collection(self) -> None:
        client = self._client
        if client.has_collection(self._collection):
            check_description(client.describe_collection(self._collection), self._dimension)
            # A restarted server (or milvus-lite in a new process) has it released.
            client.load_collection(self._collection)
            return
        client.create_collection(
            self._collection,
            schema=build_schema(client, self._dimension),
            consistency_level=self._consistency,
        )
        # An empty collection's indexes are built at once; not waiting skips pymilvus'
        # polling (half a second per index, and a call milvus-lite does not implement).
        client.create_index(self._collection, build_index_params(client), sync=False)
        client.load_collection(self._collection)
        logger.info("created Milvus collection %s (dim %d)", self._collection, self._dimension)

    def _check_vectors(self, vectors: Any, expected_rows: int) -> np.ndarray[Any, Any]:
        return checked_rows(vectors, expected_rows, self._dimension)

    def _check_query(self, vector: Any) -> list[float]:
        values: list[float] = checked_query(vector, self._dimension).tolist()
        return values


def _dense_params(limit: int) -> dict[str, Any]:
    # HNSW needs ef >= k to return k hits.
    return {"metric_type": "COSINE", "params": {"ef": max(MIN_EF, limit)}}


def _hits(rows: Iterable[Any], *, negate: bool) -> list[ChannelHit]:
    """ChannelHits in score order, ties by chunk id (as the embedded index orders them).

    milvus-lite reports BM25 as a negative distance, Milvus as a positive score; BM25 is
    never negative, so its magnitude is the score on both (`negate` marks BM25 lists).
    """
    hits = [
        ChannelHit(
            chunk_id=str(row[PRIMARY]),
            document_id=str(row["entity"][DOCUMENT]),
            score=abs(float(row["distance"])) if negate else float(row["distance"]),
        )
        for row in rows
    ]
    hits.sort(key=lambda hit: (-hit.score, hit.chunk_id))
    return hits
