"""Every default of ragsift in one settings object (env prefix RAGSIFT_), validated at start-up.

One module per concern holds that concern's fields and checks (storage, index, embedder, ...);
`Settings` is composed from them by inheritance, so the fields stay flat: `settings.top_k`,
environment variable RAGSIFT_TOP_K. docs/reference/settings.md is generated from them
(ragsift.config.reference).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic_settings import BaseSettings, SettingsConfigDict

from ragsift.config.auth import AuthSettings
from ragsift.config.chat import ChatSettings
from ragsift.config.context import ContextSettings
from ragsift.config.cross_lingual import CrossLingualSettings
from ragsift.config.embedder import EmbedderSettings
from ragsift.config.index import IndexSettings
from ragsift.config.ingestion import IngestionSettings
from ragsift.config.jobs import JobSettings
from ragsift.config.llm import LlmSettings
from ragsift.config.metadata import MetadataSettings
from ragsift.config.model_servers import ModelServerSettings
from ragsift.config.observability import ObservabilitySettings
from ragsift.config.parse_limits import ParseLimitSettings
from ragsift.config.plan import PlanSettings
from ragsift.config.rerank import RerankSettings
from ragsift.config.rescoring import RescoringSettings
from ragsift.config.retrieval import FusionMethod, RetrievalMode, RetrievalSettings
from ragsift.config.server import ServerSettings
from ragsift.config.storage import StorageSettings
from ragsift.config.versions import VersionSettings

if TYPE_CHECKING:
    from ragsift.domain.metadata import MetadataLimits
    from ragsift.domain.metadata_filter import FilterLimits

__all__ = ["FusionMethod", "RetrievalMode", "Settings", "filter_limits", "metadata_limits"]


class Settings(  # the concerns in the order of the settings reference
    StorageSettings, IndexSettings, EmbedderSettings, ModelServerSettings, IngestionSettings,
    ParseLimitSettings, JobSettings, MetadataSettings, VersionSettings, RetrievalSettings,
    PlanSettings, RescoringSettings, LlmSettings, CrossLingualSettings, RerankSettings,
    ContextSettings, ChatSettings, ServerSettings, AuthSettings, ObservabilitySettings,
    BaseSettings,
):
    """Defaults for every stage; a request may override the retrieval ones."""

    # built here, once for all fields (the concerns defer theirs: config/concern.py)
    model_config = SettingsConfigDict(env_prefix="RAGSIFT_", frozen=True, extra="ignore",
                                      defer_build=False)


def metadata_limits(settings: Settings) -> MetadataLimits:
    """The metadata bounds of `settings`."""
    from ragsift.domain.metadata import MetadataLimits

    return MetadataLimits(settings.metadata_max_keys, settings.metadata_max_string_chars,
                          settings.metadata_max_list_items, settings.metadata_max_bytes)


def filter_limits(settings: Settings) -> FilterLimits:
    """The filter bounds of `settings`."""
    from ragsift.domain.metadata_filter import FilterLimits

    return FilterLimits(settings.filter_max_depth, settings.filter_max_nodes)
