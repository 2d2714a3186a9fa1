"""The relational store's SQLAlchemy layer: tables, conversions to domain values, the engine.

tables (the mapped rows), conversions (rows <-> domain values, storable), engine (make_engine).
Import from here: `from ragsift.adapters.sql.orm import Base, ChunkRow, make_engine`.
"""

from ragsift.adapters.chunk_values import (
    CHUNK_VALUE_COLUMNS,
    chunk_from_values,
    locator_from_json,
)
from ragsift.adapters.sql.orm.conversions import (
    CHUNK_TABLE,
    DOCUMENT_SELECT,
    chunk_from_row,
    chunk_values,
    document_from_row,
    document_row,
    document_values,
    faq_from_row,
    kb_from_row,
    locator_json,
    storable,
    storable_message,
    to_utc,
)
from ragsift.adapters.sql.orm.engine import SQLITE_BUSY_TIMEOUT_MS, make_engine
from ragsift.adapters.sql.orm.tables import (
    ID,
    NAMING_CONVENTION,
    AssetRow,
    Base,
    ChunkRow,
    ConversationRow,
    ConversationTurnRow,
    DocumentRow,
    FaqEntryRow,
    IngestJobRow,
    KbActivationRow,
    KbFusionTuningRow,
    KbSettingsRow,
    KbVersionRow,
    KbVersionStateRow,
    KnowledgeBaseRow,
    LabelledSetRow,
    QueryHistoryRow,
)

__all__ = [
    "CHUNK_TABLE", "CHUNK_VALUE_COLUMNS", "DOCUMENT_SELECT", "ID", "NAMING_CONVENTION",
    "SQLITE_BUSY_TIMEOUT_MS", "AssetRow", "Base", "ChunkRow", "ConversationRow",
    "ConversationTurnRow", "DocumentRow", "FaqEntryRow", "IngestJobRow", "KbActivationRow",
    "KbFusionTuningRow", "KbSettingsRow", "KbVersionRow", "KbVersionStateRow", "KnowledgeBaseRow",
    "LabelledSetRow", "QueryHistoryRow",
    "chunk_from_row", "chunk_from_values", "chunk_values", "document_from_row", "document_row",
    "document_values", "faq_from_row", "kb_from_row", "locator_from_json", "locator_json",
    "make_engine", "storable", "storable_message", "to_utc",
]
