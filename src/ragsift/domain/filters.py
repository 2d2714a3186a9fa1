"""The one typed search filter every backend compiles; kb_id is always part of it."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
)

from ragsift.domain.metadata_terms import MetadataTerms

# Big frozensets already checked, by id (each held, so its id is not reused meanwhile);
# a small one is checked again, at no noticeable cost.
_CHECKED: dict[int, frozenset[str]] = {}
_CHECKED_MAX = 16
_CHECKED_MIN_SIZE = 256


def _kept_if_frozen(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """A frozenset of strings is taken as it is, the same object, its elements checked once
    per object: validating it would copy it element by element (2-8 ms for a metadata
    filter's 9,900 document ids, each search), and a new object makes the indexes' caches
    keyed on the filter compare it element by element where they would compare one
    reference. Anything else is validated."""
    if type(value) is not frozenset:
        return handler(value)
    if _CHECKED.get(id(value)) is value:
        return value
    if not set(map(type, value)) <= {str}:
        return handler(value)  # the validation error names the element
    if len(value) >= _CHECKED_MIN_SIZE:
        if len(_CHECKED) >= _CHECKED_MAX:
            _CHECKED.clear()
        _CHECKED[id(value)] = value
    return value


# A set of accepted values (see SearchFilter).
Accepted = Annotated[frozenset[str], WrapValidator(_kept_if_frozen)]


class SearchFilter(BaseModel):
    """Restricts a search to one knowledge base and, optionally, to documents, scope values,
    caller roles and one knowledge-base version.

    `document_ids=None` means no whitelist; an empty frozenset means "nothing allowed".
    Each other set field, when set, is a set of accepted values (OR within a field, AND across).

    `roles`: the caller's roles. A chunk passes when its `allowed_roles` is empty (unrestricted)
    or shares a role with the set. Fails closed: the default, an empty set, is a caller without
    roles, who sees only unrestricted chunks. None (every role) must be asked for explicitly and
    only by paths that are not a caller's search (a key's own reach, maintenance).

    `version_seq`: None = no version constraint. An int v keeps the chunks valid in version v:
    `valid_from_seq <= v and (valid_to_seq == 0 or valid_to_seq > v)`.

    `metadata_terms`: the metadata filter that `document_ids` answers, as terms, for an index
    holding metadata terms (domain/metadata_terms.py); `document_ids` stays the whitelist
    every hit is checked against, and what an index without the terms filters by.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    kb_id: str
    document_ids: Accepted | None = None
    sources: Accepted | None = None
    tenant_ids: Accepted | None = None
    dataset_ids: Accepted | None = None
    visibilities: Accepted | None = None
    roles: frozenset[str] | None = frozenset()
    version_seq: int | None = Field(default=None, ge=0)
    metadata_terms: MetadataTerms | None = Field(default=None, exclude=True)

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


def valid_at(valid_from_seq: int, valid_to_seq: int, version_seq: int) -> bool:
    """Whether a chunk with this validity window belongs to version `version_seq`."""
    return valid_from_seq <= version_seq and (valid_to_seq == 0 or valid_to_seq > version_seq)


def roles_allow(allowed_roles: tuple[str, ...] | frozenset[str], roles: frozenset[str] | None
                ) -> bool:
    """Whether a caller with `roles` (None: every role) may see a chunk restricted to
    `allowed_roles` (empty: unrestricted)."""
    return roles is None or not allowed_roles or not roles.isdisjoint(allowed_roles)
