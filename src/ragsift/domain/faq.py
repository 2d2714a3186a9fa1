"""FAQ entries: curated question/answer pairs searched in their own collection.

An entry carries the data scope of a document (source, tenant, dataset, visibility, allowed
roles) and the validity window of a chunk (`valid_from_seq`, `valid_to_seq`: the KB versions
it belongs to; 0/0 = every version, as for entries stored before versions).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from pydantic import Field

from ragsift.domain.errors import InvalidInput
from ragsift.domain.filters import SearchFilter, roles_allow, valid_at
from ragsift.domain.models import DocumentScope, Frozen
from ragsift.domain.versions import KbVersion


class FaqEntry(Frozen):
    """One question with its standard answer; `source` says where the answer comes from.

    `allowed_roles` empty = no role restriction; `valid_to_seq` 0 = still valid.
    """

    id: str
    kb_id: str
    question: str = Field(min_length=1)
    answer: str = Field(min_length=1)
    source: str | None = None
    tenant_id: str | None = None
    dataset_id: str | None = None
    visibility: str | None = None
    allowed_roles: tuple[str, ...] = ()
    valid_from_seq: int = Field(default=0, ge=0)
    valid_to_seq: int = Field(default=0, ge=0)
    created_at: datetime | None = None

    @property
    def scope(self) -> DocumentScope:
        return DocumentScope(
            source=self.source, tenant_id=self.tenant_id, dataset_id=self.dataset_id,
            visibility=self.visibility, allowed_roles=self.allowed_roles,
        )

    @property
    def sha256(self) -> str:
        """Content key: question, answer and the access scope (tenant, dataset, visibility,
        roles; not the source). A KB holds one live entry per key."""
        return faq_key(self.question, self.answer, self.scope)

    @property
    def live(self) -> bool:
        """Still part of the draft (not retired by a delete or an update)."""
        return self.valid_to_seq == 0

    @property
    def content(self) -> FaqContent:
        """What the entry says and who may see it, without its id and window."""
        return FaqContent(
            question=self.question, answer=self.answer, source=self.source,
            tenant_id=self.tenant_id, dataset_id=self.dataset_id, visibility=self.visibility,
            allowed_roles=self.allowed_roles, created_at=self.created_at,
        )


class FaqContent(Frozen):
    """An entry before it is written into a draft: its id depends on the draft's version.

    `created_at` None = the time it is stored (an update keeps the original's).
    """

    question: str = Field(min_length=1)
    answer: str = Field(min_length=1)
    source: str | None = None
    tenant_id: str | None = None
    dataset_id: str | None = None
    visibility: str | None = None
    allowed_roles: tuple[str, ...] = ()
    created_at: datetime | None = None

    @property
    def scope(self) -> DocumentScope:
        return DocumentScope(
            source=self.source, tenant_id=self.tenant_id, dataset_id=self.dataset_id,
            visibility=self.visibility, allowed_roles=self.allowed_roles,
        )

    def entry(self, kb_id: str, draft_seq: int) -> FaqEntry:
        """The entry this content becomes in draft `draft_seq` of `kb_id`."""
        return FaqEntry(
            id=faq_entry_id(kb_id, self.question, self.answer, self.scope, draft_seq),
            kb_id=kb_id, question=self.question, answer=self.answer, source=self.source,
            tenant_id=self.tenant_id, dataset_id=self.dataset_id, visibility=self.visibility,
            allowed_roles=self.allowed_roles, valid_from_seq=draft_seq,
            created_at=self.created_at,
        )

    def same_as(self, other: FaqContent) -> bool:
        """Equal question, answer, source and scope (the creation time aside)."""
        return (self.model_copy(update={"created_at": None})
                == other.model_copy(update={"created_at": None}))


def clean_text(value: str | None) -> str | None:
    """A stripped scope or source value; None for nothing but whitespace."""
    if value is None:
        return None
    return value.strip() or None


def clean_roles(roles: Iterable[str] | None) -> tuple[str, ...]:
    """Stripped, non-empty roles without repeats, in the order given."""
    return tuple(dict.fromkeys(r.strip() for r in roles or () if r.strip()))


class FaqChanges(Frozen):
    """An update of an entry: a field left out keeps its value; None clears source and the
    scope fields (question and answer cannot be cleared); allowed_roles () = every role."""

    question: str | None = Field(default=None, min_length=1)
    answer: str | None = Field(default=None, min_length=1)
    source: str | None = None
    tenant_id: str | None = None
    dataset_id: str | None = None
    visibility: str | None = None
    allowed_roles: tuple[str, ...] | None = None

    def apply(self, content: FaqContent) -> FaqContent:
        """`content` with these changes, values cleaned like an import's."""
        given = self.model_dump(exclude_unset=True)
        for name in ("question", "answer"):
            if name in given and (given[name] is None or not given[name].strip()):
                raise InvalidInput(f"{name} cannot be empty")
        values = {**content.model_dump(), **given}
        return FaqContent(
            question=values["question"].strip(), answer=values["answer"].strip(),
            source=clean_text(values["source"]), tenant_id=clean_text(values["tenant_id"]),
            dataset_id=clean_text(values["dataset_id"]),
            visibility=clean_text(values["visibility"]),
            allowed_roles=clean_roles(values["allowed_roles"]), created_at=content.created_at,
        )


def faq_sha256(question: str, answer: str) -> str:
    """Hash of the stripped question and answer, with a separator no text contains."""
    payload = f"{question.strip()}\x1f{answer.strip()}"
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _access(scope: DocumentScope) -> tuple[str | None, str | None, str | None, list[str]]:
    return (scope.tenant_id, scope.dataset_id, scope.visibility,
            sorted(set(scope.allowed_roles)))


def faq_key(question: str, answer: str, scope: DocumentScope | None = None) -> str:
    """The content key of an entry: faq_sha256 for an entry without access scope (so entries
    stored before scopes keep their key), else a hash of the pair and the scope."""
    content = faq_sha256(question, answer)
    if scope is None or _access(scope) == (None, None, None, []):
        return content
    payload = json.dumps([content, *_access(scope)], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def faq_entry_id(
    kb_id: str, question: str, answer: str, scope: DocumentScope | None = None,
    version_seq: int = 0,
) -> str:
    """Id of an entry written into draft `version_seq` of a KB.

    Derived from its content key and the version, so a re-run of an interrupted import maps
    to the same ids, and an entry written again after its old row was retired (kept for
    older versions) gets a new one. Version 0 without scope is the id of entries stored
    before versions.
    """
    key = f"{kb_id}:{faq_key(question, answer, scope)}"
    if version_seq:
        key += f":{version_seq}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def faq_visible(entry: FaqEntry, search_filter: SearchFilter) -> bool:
    """Whether a search with this filter may return `entry` (the document whitelist does not
    apply to FAQ entries): its KB, scope values, roles and validity at the version."""
    if entry.kb_id != search_filter.kb_id:
        return False
    values = {"source": entry.source, "tenant_id": entry.tenant_id,
              "dataset_id": entry.dataset_id, "visibility": entry.visibility}
    for name, accepted in search_filter.scope_fields().items():
        if values[name] not in accepted:
            return False
    if not roles_allow(entry.allowed_roles, search_filter.roles):
        return False
    version = search_filter.version_seq
    return version is None or valid_at(entry.valid_from_seq, entry.valid_to_seq, version)


@dataclass(frozen=True, slots=True)
class FaqCommit:
    """FAQ changes to one KB's draft, planned against its live entries, stored atomically.

    `add`: new entries (valid_from_seq == draft_seq); one whose key is already live in the
    KB is skipped, unless `strict`, which refuses it (FaqConflict). `retire`: live entries of
    sealed versions, which get valid_to_seq = draft_seq. `drop`: live entries only the draft
    holds, deleted outright. The commit checks that the draft is still `draft_seq` and that
    every retired or dropped entry is still live; otherwise DraftMoved, nothing stored.
    """

    kb_id: str
    draft_seq: int
    add: tuple[FaqEntry, ...] = ()
    retire: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()
    strict: bool = False


@dataclass(frozen=True, slots=True)
class FaqCommitted:
    """What a FaqCommit stored: the ids added (in order) and the version sealed, if any."""

    added: tuple[str, ...]
    sealed: KbVersion | None = None


class FaqConflict(InvalidInput):
    """An update would make an entry identical (question, answer, scope) to another live
    entry of the KB (CLI exit 2, HTTP 409)."""

    code = "faq_conflict"
