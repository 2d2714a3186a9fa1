"""User metadata per document (domain/metadata.py) and the filter language on it
(domain/metadata_filter.py): sizes bounded so a document's row and a filter stay small."""

from __future__ import annotations

from pydantic import Field

from ragsift.config.concern import Concern


class MetadataSettings(Concern):
    """Metadata and filters."""

    metadata_max_keys: int = Field(
        default=64, ge=1, le=1024,
        description="keys of one document's metadata",
    )
    metadata_max_string_chars: int = Field(
        default=1024, ge=1, le=65536,
        description="characters of one string value in a document's metadata",
    )
    metadata_max_list_items: int = Field(
        default=100, ge=1, le=10000,
        description="items of one list value in a document's metadata",
    )
    metadata_max_bytes: int = Field(default=16384, ge=64, le=1 << 20,
                                    description="a document's metadata as UTF-8 JSON")
    filter_max_depth: int = Field(default=8, ge=1, le=64,
                                  description="nesting of $and / $or / $not in a filter")
    filter_max_nodes: int = Field(default=256, ge=1, le=10000,
                                  description="conditions and operators in one filter")
