"""The one typed search filter every backend compiles; kb_id is always part of it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, field_validator


class SearchFilter(BaseModel):
    """Restricts a search to one knowledge base and, optionally, to documents and scope values.

    `document_ids=None` means no whitelist; an empty frozenset means "nothing allowed".
    Each other field, when set, is a set of accepted values (OR within a field, AND across).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kb_id: str
    document_ids: frozenset[str] | None = None
    sources: frozenset[str] | None = None
    tenant_ids: frozenset[str] | None = None
    dataset_ids: frozenset[str] | None = None
    visibilities: frozenset[str] | None = None

    @field_validator("kb_id")
    @classmethod
    def _kb_id_present(cls, value: str) -> str:
        if not value:
            raise ValueError("kb_id is required in every search filter")
        return value

    def scope_fields(self) -> dict[str, frozenset[str]]:
        """The set-valued scope restrictions that are present, by chunk field name."""
        pairs = {
            "source": self.sources,
            "tenant_id": self.tenant_ids,
            "dataset_id": self.dataset_ids,
            "visibility": self.visibilities,
        }
        return {name: values for name, values in pairs.items() if values is not None}
