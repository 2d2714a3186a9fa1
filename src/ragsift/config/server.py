"""The HTTP server's limits: hostile or excessive requests are refused, never queued without
bound."""

from __future__ import annotations

from pydantic import Field

from ragsift.config.concern import Concern


class ServerSettings(Concern):
    """API server."""

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
    keep_alive_s: int = Field(
        default=75, ge=1, le=3600,
        description="how long the server keeps an idle HTTP connection open for the next "
        "request; longer than clients keep idle connections for reuse (httpx 5 s, aiohttp "
        "15 s, a load balancer's 60 s), so a client never sends on a connection the server "
        "is closing at that moment",
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
    # OpenAI-compatible embeddings (POST /v1/embeddings)
    embeddings_max_inputs: int = Field(
        default=256, ge=1, le=4096, description="texts one /v1/embeddings request may carry"
    )
    embeddings_max_tokens: int = Field(
        default=8192, ge=1, description="tokens one /v1/embeddings text may have"
    )
    page_preview_max_width: int = Field(
        default=2000, ge=64, le=8000, description="widest PDF page preview the API renders"
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
    web_eval_max_sets: int = Field(
        default=20, ge=1, le=1000,
        description="labelled sets a knowledge base keeps for the evaluation view "
        "(POST /api/kbs/{id}/labelled-sets)",
    )
    web_eval_set_max_bytes: int = Field(
        default=1_000_000, ge=1000, le=5_000_000,
        description="largest labels JSONL (bytes, UTF-8) saved as a labelled set",
    )
    serve_mcp: bool = Field(
        default=True, description="`ragsift serve` answers MCP (streamable HTTP) at /mcp "
        "with the same API keys, when the `mcp` extra is installed")
    api_docs: bool = Field(
        default=False, description="serve Swagger UI at /docs and ReDoc at /redoc (from the "
        "package, under the pages' CSP); /openapi.json is always served")
