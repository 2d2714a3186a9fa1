"""Reading and changing a knowledge base's own settings (ragsift/kb_settings.py), and what
ingestion and search take of them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

from ragsift import kb_settings
from ragsift.config import Settings
from ragsift.domain.errors import InvalidInput
from ragsift.domain.kb_settings import KbSettingsRecord
from ragsift.domain.models import Document

if TYPE_CHECKING:  # built lazily: a search process never loads the parsers
    from ragsift.ingestion.profile import IngestProfile


class KbSettingsStore(Protocol):
    """Where a KB's own settings are kept (adapters/sql/kb_settings_repository.py)."""

    def get_kb_settings(self, kb_id: str) -> KbSettingsRecord: ...

    def save_kb_settings(
        self, kb_id: str, overrides: dict[str, Any], built: dict[str, Any] | None
    ) -> KbSettingsRecord: ...

    def list_documents(self, kb_id: str) -> list[Document]: ...


@dataclass(frozen=True, slots=True)
class KbSettingsView:
    """A KB's settings as shown: effective values, its overrides, the process defaults, the
    keys that need a reindex, and those changed since its documents were built."""

    kb_id: str
    effective: dict[str, Any]
    overrides: dict[str, Any]
    defaults: dict[str, Any]
    built_with: dict[str, Any] | None
    changed_since_build: tuple[str, ...]

    @property
    def reindex_required(self) -> bool:
        """Its documents were built with other chunking, OCR or asset settings."""
        return bool(self.changed_since_build)


class KbSettingsService:
    """A KB's overrides validated against the process settings, which stay the defaults."""

    def __init__(self, store: KbSettingsStore, settings: Settings) -> None:
        self._store = store
        self._settings = settings

    def view(self, kb_id: str) -> KbSettingsView:
        """The KB's settings (an unknown KB shows the defaults: callers check it exists)."""
        return self._view(self._store.get_kb_settings(kb_id))

    def update(
        self, kb_id: str, values: Mapping[str, Any], unset: Sequence[str] = ()
    ) -> KbSettingsView:
        """Override `values`, drop the overrides in `unset`; InvalidInput naming a bad key
        or value (nothing is stored then)."""
        for key in unset:
            if key not in kb_settings.KEYS:
                kb_settings.validate_value(key, None)  # raises: unknown key
            if key in values:
                raise InvalidInput(f"{key!r} is both set and unset")
        record = self._store.get_kb_settings(kb_id)
        merged = {k: v for k, v in record.overrides.items() if k not in unset}
        merged.update(values)
        overrides = kb_settings.validate_overrides(self._settings, merged)
        built = record.built
        if not self._store.list_documents(kb_id):
            built = None  # nothing built: no document waits for a reindex
        elif built is None:  # built before settings were recorded: with those in force
            built = kb_settings.ingest_values(self._settings, record.overrides)
        return self._view(self._store.save_kb_settings(kb_id, overrides, built))

    def mark_built(self, kb_id: str) -> None:
        """Record that every document of the KB is (being) rebuilt with its settings now."""
        record = self._store.get_kb_settings(kb_id)
        self._store.save_kb_settings(
            kb_id, record.overrides, kb_settings.ingest_values(self._settings, record.overrides))

    def profile(self, kb_id: str) -> IngestProfile | None:
        """The KB's chunking and parsing settings; None when it overrides none of them."""
        overrides = self._store.get_kb_settings(kb_id).overrides
        if not any(key in overrides for key in kb_settings.INGEST_KEYS):
            return None
        return kb_settings.ingest_profile(self._settings, overrides)

    def search_defaults(self, kb_id: str) -> kb_settings.SearchDefaults | None:
        """The KB's defaults of a search of it; None when it has none."""
        return kb_settings.search_defaults(self._store.get_kb_settings(kb_id).overrides)

    def _view(self, record: KbSettingsRecord) -> KbSettingsView:
        now = kb_settings.ingest_values(self._settings, record.overrides)
        built = record.built
        changed = () if built is None else tuple(
            key for key in kb_settings.INGEST_KEYS if built.get(key) != now[key])
        return KbSettingsView(
            kb_id=record.kb_id,
            effective=kb_settings.effective(self._settings, record.overrides),
            overrides=dict(record.overrides), defaults=kb_settings.defaults(self._settings),
            built_with=built, changed_since_build=changed,
        )


class ReindexHint(BaseModel):
    """How the documents get the current settings: the reindex endpoint and command."""

    endpoint: str
    command: str


class KbSettingsOut(BaseModel):
    """Effective values, the KB's overrides, the defaults (process settings), the keys that
    need a reindex, the settings its documents were built with and what changed since."""

    kb_id: str
    effective: dict[str, Any]
    overrides: dict[str, Any]
    defaults: dict[str, Any]
    overridden: list[str]
    reindex_keys: list[str]
    search_keys: list[str]
    built_with: dict[str, Any] | None
    changed_since_build: list[str]
    reindex_required: bool
    reindex: ReindexHint | None


def settings_out(view: KbSettingsView, kb_name: str) -> KbSettingsOut:
    """The response body of a KB's settings (the CLI's --json prints the same)."""
    hint = ReindexHint(
        endpoint=f"POST /api/kbs/{view.kb_id}/reindex",
        command=f"ragsift reindex --kb {kb_name}",
    ) if view.reindex_required else None
    return KbSettingsOut(
        kb_id=view.kb_id, effective=view.effective, overrides=view.overrides,
        defaults=view.defaults, overridden=sorted(view.overrides),
        reindex_keys=list(kb_settings.INGEST_KEYS), search_keys=list(kb_settings.SEARCH_KEYS),
        built_with=view.built_with, changed_since_build=list(view.changed_since_build),
        reindex_required=view.reindex_required, reindex=hint,
    )
