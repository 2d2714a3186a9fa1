"""The search index backend and the embedded index's dense store."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, model_validator

from ragsift.config.concern import Concern


class IndexSettings(Concern):
    """Search index."""

    index_uri: str | None = Field(
        default=None,
        description="unset: the embedded index; a path ending in .db: a milvus-lite data file "
        "(one process per file); http(s)://host:19530[/db_name]: a Milvus 2.5+ server",
    )
    index_token: str | None = Field(
        default=None, description="Milvus token: 'user:password' or an API key"
    )
    index_collection_prefix: str = Field(
        default="ragsift",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,200}$",
        description="Milvus collections are PREFIX_chunks and PREFIX_faq",
    )
    index_consistency: Literal["Strong", "Bounded", "Session", "Eventually"] = Field(
        default="Strong",
        description="Milvus consistency level of searches; Strong sees every finished write",
    )
    blas_threads: str = Field(
        default="auto", pattern=r"^(auto|off|[1-9][0-9]{0,2})$",
        description="BLAS threads of dense scans: auto = every core for a big scan running "
        "alone, one beside other searches (two BLAS threads under load made small scans 50x "
        "slower); a number = always that many; off = numpy's own default. The ragsift "
        "command starts OpenBLAS with one thread (raised for a big scan) unless this is off "
        "in its environment or OPENBLAS_NUM_THREADS, GOTO_NUM_THREADS or OMP_NUM_THREADS is set",
    )
    dense_checkpoint_rows: int = Field(
        default=2_000, ge=1, description="rows added or deleted in an embedded dense store "
        "before its rows are checkpointed (also at least 1/20 of its rows); an open reads the "
        "checkpoint and replays only the log after it")
    # approximate dense index of the embedded store (HNSW, faiss-cpu: the `ann` extra)
    dense_ann: bool = Field(default=True, description="false: dense search always exact")
    dense_ann_min_rows: int = Field(
        default=20_000, ge=1, description="live rows of one kb from which that kb gets its own "
        "HNSW graph; below, its searches scan exactly")
    dense_ann_exact_max_rows: int = Field(
        default=20_000, ge=0, description="a filter allowing at most this many rows is scanned "
        "exactly (cheaper than the graph, and exact)")
    dense_ann_ef_search: int = Field(
        default=192, ge=1, le=65_536, description="graph search effort of a kb holding all "
        "the store's rows; a kb holding a share k of them searches with ef x k^-0.6")
    dense_ann_filter_ef_boost: float = Field(
        default=20.0, ge=1, le=1024, description="most that ef grows by for a filter passing "
        "a share s of a graph's rows and for a small kb")
    dense_ann_filter_ef_exponent: float = Field(
        default=1.0, ge=0.5, le=3.0, description="a filter passing a share s of a graph's rows "
        "searches it with ef x s^-exponent (up to the boost); higher: more recall under "
        "selective filters, more CPU")
    dense_ann_oversample: float = Field(
        default=2.0, ge=1, le=64, description="graph hits per result, re-scored exactly")
    dense_ann_connectivity: int = Field(
        default=32, ge=4, le=256,
        description="HNSW graph links per node (M); more: better recall, bigger graph",
    )
    dense_ann_ef_construction: int = Field(
        default=80, ge=8, le=4096, description="graph build effort (each kb has its own "
        "graph; docs/benchmarks.md measures recall@30 and build rate by this)")
    dense_ann_tail_rows: int = Field(
        default=4_096, ge=1, description="new rows scanned exactly before they join the graph")
    dense_ann_save_rows: int = Field(
        default=100_000, ge=1, description="rows added to the graph between saves (and on close)")
    dense_ann_simd_level: str = Field(
        default="auto", pattern=r"^(auto|library|[A-Z][A-Z0-9_]*)$", description="faiss's SIMD "
        "kernels: auto (faiss's choice, but AVX512 instead of AVX512_SPR: faster for the "
        "graphs' SQ8 here), library (faiss's choice), or a level such as AVX2 or AVX512")

    @model_validator(mode="after")
    def _index_backend(self) -> Self:
        uri = self.index_uri
        if uri and not (uri.endswith(".db") or uri.split("://", 1)[0] in ("http", "https", "tcp")):
            raise ValueError(
                f"RAGSIFT_INDEX_URI={uri!r} is neither a milvus-lite file (a path ending in "
                "'.db') nor a Milvus server URL (http(s)://host:19530)"
            )
        return self
