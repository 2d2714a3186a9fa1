"""Where the data lives: the chunk and FAQ indexes (embedded or Milvus), the originals
(the data directory or S3) and the job queue."""

from __future__ import annotations

import logging
from typing import Literal

from ragsift.adapters.embedded_index import EmbeddedIndex
from ragsift.adapters.embedded_index.dense_ann import AnnSettings
from ragsift.adapters.local_object_store import LocalObjectStore
from ragsift.config import Settings
from ragsift.ports import JobQueue, ObjectStore, SearchIndex, TextEncoder

logger = logging.getLogger(__name__)


def build_search_index(
    settings: Settings, kind: Literal["chunks", "faq"], dimension: int,
    upgrade_sparse_layout: bool = False, follow: bool = False,
) -> SearchIndex:
    """The chunk or FAQ index: embedded under data_dir, or a Milvus collection.

    With RAGSIFT_INDEX_URI set, both live in one Milvus database (or milvus-lite file) as the
    collections PREFIX_chunks and PREFIX_faq; pymilvus is imported only then. `follow`: the
    embedded index opens read-only beside the process that writes it (a Milvus server
    serves many processes as it is).
    """
    if not settings.index_uri:
        directory = "index" if kind == "chunks" else "faq_index"
        return EmbeddedIndex(
            settings.data_dir / directory, dimension=dimension,
            upgrade_sparse_layout=upgrade_sparse_layout, ann=ann_settings(settings),
            second=second_dense_encoder(settings) if kind == "chunks" else None,
            checkpoint_rows=settings.dense_checkpoint_rows, follow=follow,
        )
    if settings.second_dense == "use":
        raise ValueError("RAGSIFT_SECOND_DENSE=use needs the embedded index; the Milvus index "
                         "(RAGSIFT_INDEX_URI) has no second dense channel")
    from ragsift.adapters.milvus import MilvusIndex

    return MilvusIndex(
        settings.index_uri,
        f"{settings.index_collection_prefix}_{kind}",
        dimension,
        token=settings.index_token,
        consistency=settings.index_consistency,
        timeout_s=settings.http_timeout_s,
    )


def second_dense_encoder(settings: Settings) -> TextEncoder | None:
    """USE multilingual for the embedded index's second dense channel (RAGSIFT_SECOND_DENSE):
    auto = when the `use` extra is installed; use = required (an error without it)."""
    from ragsift.adapters.use_encoder import UseEncoder, use_available

    if settings.second_dense == "off":
        return None
    if settings.second_dense == "auto" and not use_available():
        logger.info("no second dense channel: the `use` extra is not installed")
        return None
    return UseEncoder(cache_dir=settings.embedder_cache_dir)


def ann_settings(settings: Settings) -> AnnSettings:
    """The embedded dense store's approximate-index settings (RAGSIFT_DENSE_ANN_*)."""
    return AnnSettings(
        enabled=settings.dense_ann, min_rows=settings.dense_ann_min_rows,
        exact_max_rows=settings.dense_ann_exact_max_rows,
        ef_search=settings.dense_ann_ef_search,
        filter_ef_boost=settings.dense_ann_filter_ef_boost,
        filter_ef_exponent=settings.dense_ann_filter_ef_exponent,
        oversample=settings.dense_ann_oversample,
        connectivity=settings.dense_ann_connectivity,
        ef_construction=settings.dense_ann_ef_construction,
        tail_rows=settings.dense_ann_tail_rows, save_rows=settings.dense_ann_save_rows,
        simd_level=settings.dense_ann_simd_level,
    )


def build_object_store(settings: Settings) -> ObjectStore:
    """Where originals are kept: S3/MinIO when RAGSIFT_OBJECT_STORE_URL is set, else DATA_DIR."""
    if settings.object_store_url is None:
        return LocalObjectStore(settings.data_dir / "objects")
    # imported here: boto3 is the optional `s3` extra
    from ragsift.adapters.s3_object_store import S3ObjectStore

    return S3ObjectStore(
        settings.object_store_url, endpoint_url=settings.s3_endpoint_url,
        region=settings.s3_region, access_key_id=settings.s3_access_key_id,
        secret_access_key=settings.s3_secret_access_key,
    )


def build_job_queue(settings: Settings) -> JobQueue:
    """The database job queue that `ragsift worker` processes lease from."""
    from ragsift.adapters.sql.job_queue import SqlJobQueue  # SQLAlchemy: not on a CLI search

    return SqlJobQueue(settings.resolved_database_url)
